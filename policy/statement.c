/*
 * statement.c - trial changes to what the engine has charged, kept or rolled
 * back whole (KAI's Statement). Every trial in the engine goes through one:
 * a gang planned and found not to fit, the order's dry runs of the gangs
 * ahead, a member moved within the nodes kube-scheduler offered, the victims
 * an eviction search takes away and gives back.
 *
 * A step records a pod's state before it changed (where it was charged, its
 * phase, whether it counted as an extra), so a rollback puts the pod back
 * exactly as it was, last step first.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int add_step(struct pstatement *st, struct ppod *p, bool placed)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        struct pstep *v = realloc(st->steps, cap * sizeof(*v));

        if (!v)
            return POLICY_ENOMEM;
        st->steps = v;
        st->cap = cap;
    }
    st->steps[st->n++] = (struct pstep){.pod = p,
                                        .place = p->place,
                                        .phase = p->phase,
                                        .extra = p->extra,
                                        .placed_epoch = p->placed_epoch,
                                        .placed = placed};
    return POLICY_OK;
}

int pstatement_place(struct policy_cluster *c, struct pstatement *st, struct ppod *p,
                     const struct pplace *pl)
{
    if (add_step(st, p, true) != POLICY_OK)
        return POLICY_ENOMEM;
    p->phase = POLICY_POD_PLANNED;
    p->placed_epoch = pmodel_outside_epoch(c);
    pcharge(c, p, pl);
    return POLICY_OK;
}

int pstatement_lift(struct policy_cluster *c, struct pstatement *st, struct ppod *p,
                    enum policy_pod_phase after)
{
    if (add_step(st, p, false) != POLICY_OK)
        return POLICY_ENOMEM;
    puncharge(c, p);
    p->phase = after;
    return POLICY_OK;
}

void pstatement_rollback(struct policy_cluster *c, struct pstatement *st, size_t mark)
{
    while (st->n > mark) {
        const struct pstep *s = &st->steps[--st->n];
        struct ppod *p = s->pod;

        puncharge(c, p); /* what the step charged (nothing, for a lift) */
        p->phase = s->phase;
        p->extra = s->extra;
        p->placed_epoch = s->placed_epoch;
        if (s->place.node >= 0)
            pcharge(c, p, &s->place);
    }
}

void pstatement_discard(struct policy_cluster *c, struct pstatement *st)
{
    pstatement_rollback(c, st, 0);
    free(st->steps);
    memset(st, 0, sizeof(*st));
}

void pstatement_keep(struct pstatement *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->steps[i].placed)
            pwhy_set(&st->steps[i].pod->why, NULL);
    free(st->steps);
    memset(st, 0, sizeof(*st));
}
