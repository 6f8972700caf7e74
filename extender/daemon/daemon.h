/*
 * daemon.h - `muster serve`: the extender beside kube-scheduler, with its
 * cluster cache, gang barrier, events, queue status and housekeeping
 * (docs/architecture.md).
 */
#ifndef MUSTER_DAEMON_H
#define MUSTER_DAEMON_H

/* argv[0] is "serve". Returns the exit status: 0, 2 for bad flags or settings, 1 otherwise. */
int serve_main(int argc, char **argv);

#endif
