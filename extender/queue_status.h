/*
 * queue_status.h - writes each Queue's usage to its status subresource, so
 * `kubectl get queues` shows allocated GPUs and pending gangs. Every two
 * seconds, and only what changed.
 */
#ifndef MUSTER_QUEUE_STATUS_H
#define MUSTER_QUEUE_STATUS_H

struct ext_daemon;
struct queue_status;

struct queue_status *queue_status_start(struct ext_daemon *d);
void queue_status_stop(struct queue_status *qs);

#endif
