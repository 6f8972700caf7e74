/*
 * topo.h - topologies resolved for one decision, private to topology.c (the model, texts,
 * members' domains) and topo_place.c (placing a gang in domains).
 */
#ifndef MUSTER_POLICY_TOPO_H
#define MUSTER_POLICY_TOPO_H

#include <string.h>

#include "internal.h"

#define PTOPO_SHAPES 32 /* gang shapes kept; the least weighted gives way */

/* A constraint resolved against its topology: the labels, coarsest first, and the indices of
 * its required and preferred levels (-1: none; a preferred level coarser than the required one
 * is dropped: the required one is stricter). */
struct tlevels {
    const char *label[POLICY_MAX_TOPOLOGY_LEVELS];
    const char *shown[POLICY_MAX_TOPOLOGY_LEVELS]; /* its alias, else its label */
    const char *topology;                          /* NULL: a label alone */
    const char *dialect;
    int n;
    int req, pref;
};

/* The finest level it names (the preferred one, else the required one). */
static inline int tl_finest(const struct tlevels *lv)
{
    return lv->pref > lv->req ? lv->pref : lv->req;
}

/* Resolve w (a set want) into lv; false with why when it names what is not known. */
bool ptopo_resolve(const struct policy_cluster *c, const struct ptopo_want *w,
                   struct tlevels *lv, char *why, size_t len);

/* Do nodes a and b share the domain of level l (every label down to it, all present)? */
bool ptopo_same_domain(const struct pnode *a, const struct pnode *b, const struct tlevels *lv,
                       int l);
/* Does node n carry every label of lv down to level l? */
bool ptopo_in_topology(const struct pnode *n, const struct tlevels *lv, int l);
/* "rack=r07": level l of n, as lv shows it. */
void ptopo_domain_name(const struct pnode *n, const struct tlevels *lv, int l, char *buf,
                       size_t len);

/* Is p of the unit: any member (sub -1), of subgroup sub, and of replica when one is named? */
static inline bool ptopo_in_unit(const struct ppod *p, int32_t sub, const char *replica)
{
    if (sub >= 0 && p->sub != sub)
        return false;
    return !replica || (p->replica && strcmp(p->replica, replica) == 0);
}

/* The node a member holds room on or is bound to; NULL: none (or a node muster does not know). */
const struct pnode *ptopo_member_node(const struct policy_cluster *c, const struct ppod *p);

/* One gang shape seen: members of per_milli GPU each, n of them, weighed by the GPU asked. */
struct ptopo_shape {
    int64_t per_milli;
    int32_t n;
    double weight;
};

struct ptopo_shapes {
    struct ptopo_shape s[PTOPO_SHAPES];
    int nused;
    double inc;
};

#endif
