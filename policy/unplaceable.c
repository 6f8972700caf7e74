/*
 * unplaceable.c - a gang that cannot be planned, asked about again at once.
 *
 * kube-scheduler's gang cycle (Kubernetes 1.37) filters a PodGroup's members one after the
 * other, and with TopologyAwareWorkloadScheduling does so once per candidate placement, one per
 * domain: a gang that does not fit is asked about once per placement in one cycle. The verdict
 * of its last failed plan (its reason) is the answer again as long as nothing that could make
 * room has happened since: no charge given back (a pod gone, a plan released or moved), no node
 * changed, no pod, gang or queue made or changed (the change epoch: fair shares going stale is
 * not the signal, since reading the queues brings them up to date in between), and for one
 * second at most (a queue's minimum runtime or a paused GPU running out is time alone).
 * Less room never makes a failed plan fit, but charges taken meanwhile change what its reason
 * says (the room free, who holds it): the verdict is kept only while nothing is charged either.
 */
#include "internal.h"

#define PUNPLACEABLE_MS 1000

void punplaceable_note(struct policy_cluster *c, struct pgang *g, int64_t now)
{
    /* Fair shares current now, so anything that makes them stale later is seen. */
    pfair_refresh(c);
    g->unplaceable_at = now > 0 ? now : 1;
    g->unplaceable_room = c->room_epoch;
    g->unplaceable_nodes = c->nodes_epoch;
    g->unplaceable_change = c->change_epoch;
    g->unplaceable_charge = c->charge_epoch;
}

bool punplaceable_known(const struct policy_cluster *c, const struct pgang *g, int64_t now)
{
    return g->unplaceable_at != 0 && g->why != NULL && !g->planned && !c->fair_dirty &&
           g->unplaceable_room == c->room_epoch && g->unplaceable_nodes == c->nodes_epoch &&
           g->unplaceable_change == c->change_epoch && g->unplaceable_charge == c->charge_epoch &&
           now >= g->unplaceable_at && now - g->unplaceable_at < PUNPLACEABLE_MS;
}
