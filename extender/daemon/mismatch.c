/* mismatch.c - GangSpecMismatch Events, once per change; see mismatch.h. */
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "mismatch.h"

#define MISMATCH_PODS_MAX 32  /* pods of one gang told */
#define MISMATCH_ROUND_MAX 16 /* gangs told per round; the rest next round */

struct gang_mismatch {
    cJSON *told; /* gang key -> the conflict text last told */
};

struct mismatch_pod {
    char *ns, *name, *uid, *text;
};

struct round {
    struct gang_mismatch *m;
    cJSON *now;       /* gang key -> conflict text, every gang with one */
    const char *gang; /* collecting the pods of this one */
    const char *text;
    struct mismatch_pod pods[MISMATCH_ROUND_MAX * MISMATCH_PODS_MAX];
    size_t npods, ngang_pods;
    cJSON *changed[MISMATCH_ROUND_MAX]; /* items of now: new or changed */
    bool untold[MISMATCH_ROUND_MAX];    /* no pod to tell yet */
    size_t nchanged;
};

struct gang_mismatch *gang_mismatch_new(void)
{
    struct gang_mismatch *m = calloc(1, sizeof(*m));

    if (m && !(m->told = cJSON_CreateObject())) {
        free(m);
        return NULL;
    }
    return m;
}

void gang_mismatch_free(struct gang_mismatch *m)
{
    if (!m)
        return;
    cJSON_Delete(m->told);
    free(m);
}

static void visit_gang(const struct policy_gang_view *v, void *ctx)
{
    struct round *r = ctx;
    const cJSON *last;

    if (!v->conflict)
        return;
    last = cJSON_GetObjectItemCaseSensitive(r->m->told, v->key);
    if (cJSON_IsString(last) && strcmp(last->valuestring, v->conflict) == 0) {
        cJSON_AddStringToObject(r->now, v->key, v->conflict);
        return;
    }
    if (r->nchanged == MISMATCH_ROUND_MAX)
        return; /* not remembered: told next round */
    cJSON_AddStringToObject(r->now, v->key, v->conflict);
    r->changed[r->nchanged++] = cJSON_GetArrayItem(r->now, cJSON_GetArraySize(r->now) - 1);
}

static void visit_pod(const struct policy_pod_view *v, void *ctx)
{
    struct round *r = ctx;
    struct mismatch_pod *p;

    if (!v->gang || strcmp(v->gang, r->gang) != 0 || r->ngang_pods == MISMATCH_PODS_MAX)
        return;
    p = &r->pods[r->npods];
    p->ns = strdup(v->namespace_);
    p->name = strdup(v->name);
    p->uid = v->uid ? strdup(v->uid) : NULL;
    p->text = strdup(r->text);
    r->npods++;
    r->ngang_pods++;
}

size_t gang_mismatch_report(struct gang_mismatch *m, struct cache *c, struct ext_events *ev)
{
    struct round *r = calloc(1, sizeof(*r));
    size_t posted = 0;

    if (!m || !r || !(r->now = cJSON_CreateObject())) {
        free(r);
        return 0;
    }
    r->m = m;
    pthread_mutex_lock(&c->lock);
    policy_each_conflicting_gang(c->engine, visit_gang, r);
    for (size_t i = 0; i < r->nchanged; i++) {
        r->gang = r->changed[i]->string;
        r->text = r->changed[i]->valuestring;
        r->ngang_pods = 0;
        policy_each_pod(c->engine, visit_pod, r);
        if (r->ngang_pods > 0)
            ext_log_warn("gang sources disagree", "gang", r->gang, "conflict", r->text);
        r->untold[i] = r->ngang_pods == 0;
    }
    pthread_mutex_unlock(&c->lock);
    /* Not remembered, so the first pod that appears is told. */
    for (size_t i = 0; i < r->nchanged; i++)
        if (r->untold[i])
            cJSON_Delete(cJSON_DetachItemViaPointer(r->now, r->changed[i]));
    for (size_t i = 0; i < r->npods; i++) {
        struct mismatch_pod *p = &r->pods[i];

        if (p->ns && p->name && p->text) {
            ext_events_post(ev, p->ns, p->name, p->uid, "GangSpecMismatch", "Warning", p->text);
            posted++;
        }
        free(p->ns);
        free(p->name);
        free(p->uid);
        free(p->text);
    }
    /* Gangs whose conflict went away drop out: told again if it comes back. */
    cJSON_Delete(m->told);
    m->told = r->now;
    free(r);
    return posted;
}
