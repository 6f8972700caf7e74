/*
 * simulate.h - `muster simulate`: what muster would do with a set of
 * manifests, without a cluster.
 *
 * Reads Nodes, Queues, RayClusters, PodGroups and Pods from multi-document
 * YAML, feeds them through the same engine calls the extender makes (filter,
 * prioritize, bind) in the order kube-scheduler would, and prints where every
 * pod lands or why it waits. docs/simulate.md has the output shape.
 */
#ifndef MUSTER_SIMULATE_H
#define MUSTER_SIMULATE_H

/* argv[0] is "simulate". Returns the exit status: 0, 2 for bad input or flags, 1 otherwise. */
int simulate_main(int argc, char **argv);

#endif
