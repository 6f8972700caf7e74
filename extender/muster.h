/* muster.h - the subcommands main.c dispatches to. */
#ifndef MUSTER_MUSTER_H
#define MUSTER_MUSTER_H

int serve_main(int argc, char **argv);
int reserve_main(int argc, char **argv);
int simulate_main(int argc, char **argv);

#endif
