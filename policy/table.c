/* table.c - object tables, owned strings and selector copies. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A free slot is reused in O(1): with pods coming and going, a scan for one cost a walk over
 * every pod the engine holds. */
int32_t ptable_add(struct ptable *t, void *item)
{
    if (t->nfree > 0) {
        int32_t id = t->free_ids[--t->nfree];

        t->items[id] = item;
        return id;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        void **items = realloc(t->items, cap * sizeof(*items));
        int32_t *free_ids;

        if (!items)
            return -1;
        t->items = items;
        free_ids = realloc(t->free_ids, cap * sizeof(*free_ids));
        if (!free_ids)
            return -1; /* items grew; cap did not: the next add tries again */
        t->free_ids = free_ids;
        t->cap = cap;
    }
    t->items[t->n] = item;
    return (int32_t)t->n++;
}

void ptable_remove(struct ptable *t, int32_t id)
{
    t->items[id] = NULL;
    t->free_ids[t->nfree++] = id; /* room: nfree < n <= cap */
}

void ptable_cleanup(struct ptable *t)
{
    free(t->items);
    free(t->free_ids);
    memset(t, 0, sizeof(*t));
}

char *pstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *pstrfmt(const char *fmt, ...)
{
    va_list ap;
    char *out = NULL;

    va_start(ap, fmt);
    if (vasprintf(&out, fmt, ap) < 0)
        out = NULL;
    va_end(ap);
    return out;
}

void pset_str(char **dst, const char *text)
{
    if (*dst && text && strcmp(*dst, text) == 0)
        return;
    free(*dst);
    *dst = pstrdup(text);
}

static void labels_free(struct policy_label *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) {
        free((char *)l[i].key);
        free((char *)l[i].value);
    }
    free(l);
}

/* A copy made: none was needed (no source), or it was. A lost key must not read as none. */
bool pcopied(const char *src, const char *copy)
{
    return src == NULL || copy != NULL;
}

static int labels_copy(struct policy_label **dst, const struct policy_label *src, size_t n)
{
    *dst = NULL;
    if (n == 0)
        return POLICY_OK;
    *dst = calloc(n, sizeof(**dst));
    if (!*dst)
        return POLICY_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        (*dst)[i].key = pstrdup(src[i].key);
        (*dst)[i].value = pstrdup(src[i].value ? src[i].value : "");
        if (!pcopied(src[i].key, (*dst)[i].key) || !(*dst)[i].value)
            return POLICY_ENOMEM; /* the caller frees what is there */
    }
    return POLICY_OK;
}

static void terms_free(struct policy_selector_term *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) {
        struct policy_selector_req *reqs = (struct policy_selector_req *)t[i].reqs;

        for (size_t j = 0; j < t[i].nreqs; j++) {
            for (size_t k = 0; k < reqs[j].nvalues; k++)
                free((char *)reqs[j].values[k]);
            free((char **)reqs[j].values);
            free((char *)reqs[j].key);
        }
        free(reqs);
    }
    free(t);
}

static int terms_copy(struct policy_selector_term **dst, const struct policy_selector_term *src,
                      size_t n)
{
    *dst = NULL;
    if (n == 0)
        return POLICY_OK;
    *dst = calloc(n, sizeof(**dst));
    if (!*dst)
        return POLICY_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct policy_selector_req *reqs = calloc(src[i].nreqs ? src[i].nreqs : 1, sizeof(*reqs));

        if (!reqs)
            return POLICY_ENOMEM;
        (*dst)[i].reqs = reqs;
        (*dst)[i].nreqs = src[i].nreqs;
        for (size_t j = 0; j < src[i].nreqs; j++) {
            const struct policy_selector_req *r = &src[i].reqs[j];
            char **values = calloc(r->nvalues ? r->nvalues : 1, sizeof(*values));

            if (!values)
                return POLICY_ENOMEM;
            reqs[j].key = pstrdup(r->key);
            reqs[j].op = r->op;
            reqs[j].values = (const char *const *)values;
            reqs[j].nvalues = r->nvalues;
            if (!pcopied(r->key, reqs[j].key))
                return POLICY_ENOMEM;
            for (size_t k = 0; k < r->nvalues; k++)
                if (!pcopied(r->values[k], values[k] = pstrdup(r->values[k])))
                    return POLICY_ENOMEM;
        }
    }
    return POLICY_OK;
}

void pselector_cleanup(struct pselector *s)
{
    labels_free(s->node_selector, s->nnode_selector);
    terms_free(s->affinity, s->naffinity);
    for (size_t i = 0; s->tolerations && i < s->ntolerations; i++) {
        free((char *)s->tolerations[i].key);
        free((char *)s->tolerations[i].value);
    }
    free(s->tolerations);
    memset(s, 0, sizeof(*s));
}

int pselector_copy(struct pselector *dst, const struct policy_label *ns, size_t nns,
                   const struct policy_selector_term *aff, size_t naff,
                   const struct policy_toleration *tol, size_t ntol)
{
    memset(dst, 0, sizeof(*dst));
    dst->nnode_selector = nns;
    dst->naffinity = naff;
    if (labels_copy(&dst->node_selector, ns, nns) != POLICY_OK)
        goto fail;
    if (terms_copy(&dst->affinity, aff, naff) != POLICY_OK)
        goto fail;
    if (ntol) {
        dst->tolerations = calloc(ntol, sizeof(*dst->tolerations));
        if (!dst->tolerations)
            goto fail;
        dst->ntolerations = ntol;
        for (size_t i = 0; i < ntol; i++) {
            dst->tolerations[i] = tol[i];
            dst->tolerations[i].key = pstrdup(tol[i].key);
            dst->tolerations[i].value = pstrdup(tol[i].value);
            /* A key lost here would read as "tolerates every taint". */
            if (!pcopied(tol[i].key, dst->tolerations[i].key) ||
                !pcopied(tol[i].value, dst->tolerations[i].value))
                goto fail;
        }
    }
    return POLICY_OK;
fail:
    pselector_cleanup(dst);
    return POLICY_ENOMEM;
}

static bool str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool terms_equal(const struct policy_selector_term *a, const struct policy_selector_term *b,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i].nreqs != b[i].nreqs)
            return false;
        for (size_t j = 0; j < a[i].nreqs; j++) {
            const struct policy_selector_req *x = &a[i].reqs[j], *y = &b[i].reqs[j];

            if (x->op != y->op || x->nvalues != y->nvalues || !str_eq(x->key, y->key))
                return false;
            for (size_t k = 0; k < x->nvalues; k++)
                if (!str_eq(x->values[k], y->values[k]))
                    return false;
        }
    }
    return true;
}

bool pselector_equal(const struct pselector *a, const struct pselector *b)
{
    if (a->nnode_selector != b->nnode_selector || a->naffinity != b->naffinity ||
        a->ntolerations != b->ntolerations)
        return false;
    for (size_t i = 0; i < a->nnode_selector; i++)
        if (!str_eq(a->node_selector[i].key, b->node_selector[i].key) ||
            !str_eq(a->node_selector[i].value, b->node_selector[i].value))
            return false;
    for (size_t i = 0; i < a->ntolerations; i++) {
        const struct policy_toleration *x = &a->tolerations[i], *y = &b->tolerations[i];

        if (x->op != y->op || x->effect != y->effect || !str_eq(x->key, y->key) ||
            !str_eq(x->value, y->value))
            return false;
    }
    return terms_equal(a->affinity, b->affinity, a->naffinity);
}

struct pnode *pnode_at(const struct policy_cluster *c, int32_t id)
{
    return id < 0 || (size_t)id >= c->nodes.n ? NULL : c->nodes.items[id];
}

struct ppod *ppod_at(const struct policy_cluster *c, int32_t id)
{
    return id < 0 || (size_t)id >= c->pods.n ? NULL : c->pods.items[id];
}

struct pgang *pgang_at(const struct policy_cluster *c, int32_t id)
{
    return id < 0 || (size_t)id >= c->gangs.n ? NULL : c->gangs.items[id];
}

struct pqueue *pqueue_at(const struct policy_cluster *c, int32_t id)
{
    return id < 0 || (size_t)id >= c->queues.n ? NULL : c->queues.items[id];
}

struct ppod *ppod_find(const struct policy_cluster *c, const char *ns, const char *name)
{
    char key[512];

    if (!ns || !name || snprintf(key, sizeof(key), "%s/%s", ns, name) >= (int)sizeof(key))
        return NULL;
    return ppod_at(c, pidx_get(&c->pod_ix, key));
}

struct pqueue *pqueue_find(const struct policy_cluster *c, const char *name)
{
    return pqueue_at(c, pidx_get(&c->queue_ix, name));
}

/* Names resolve once per change of the queue set; the ids are a cache, hence the casts. */
struct pqueue *pqueue_parent(const struct policy_cluster *c, const struct pqueue *q)
{
    struct pqueue *m = (struct pqueue *)q;

    if (!q->parent)
        return NULL;
    if (q->parent_epoch != c->queues_epoch + 1) {
        m->parent_id = pidx_get(&c->queue_ix, q->parent);
        m->parent_epoch = c->queues_epoch + 1;
    }
    return pqueue_at(c, q->parent_id);
}

void pqueue_leveled(const struct policy_cluster *c, const char *qa, const char *qb,
                    const struct pqueue **la, const struct pqueue **lb)
{
    const struct pqueue *pa[POLICY_MAX_QUEUE_DEPTH + 1], *pb[POLICY_MAX_QUEUE_DEPTH + 1];
    int na = 0, nb = 0, i = 0;

    for (const struct pqueue *q = pqueue_find(c, qa); q && na <= POLICY_MAX_QUEUE_DEPTH;
         q = pqueue_parent(c, q))
        pa[na++] = q;
    for (const struct pqueue *q = pqueue_find(c, qb); q && nb <= POLICY_MAX_QUEUE_DEPTH;
         q = pqueue_parent(c, q))
        pb[nb++] = q;
    /* From the top down: skip the common ancestors. */
    while (i < na && i < nb && pa[na - 1 - i] == pb[nb - 1 - i])
        i++;
    *la = i < na ? pa[na - 1 - i] : NULL;
    *lb = i < nb ? pb[nb - 1 - i] : NULL;
}

struct pgang *ppod_gang(const struct policy_cluster *c, const struct ppod *p)
{
    return pgang_at(c, p->gang);
}

struct pqueue *ppod_queue(const struct policy_cluster *c, const struct ppod *p)
{
    struct ppod *m = (struct ppod *)p;

    if (p->queue_epoch != c->queues_epoch + 1) {
        m->queue_id = pidx_get(&c->queue_ix, p->queue);
        m->queue_epoch = c->queues_epoch + 1;
    }
    return pqueue_at(c, p->queue_id);
}

static const char *const error_text[] = {
    [0] = "ok",
    [-POLICY_ENOMEM] = "out of memory",
    [-POLICY_EINVAL] = "invalid spec",
    [-POLICY_ENOENT] = "no such object",
    [-POLICY_ELIMIT] = "engine limit reached",
};

const char *policy_strerror(int err)
{
    if (err > 0 || -err >= (int)(sizeof(error_text) / sizeof(error_text[0])))
        return "unknown error";
    return error_text[-err];
}

const char *policy_resource_name(enum policy_resource r)
{
    static const char *const names[POLICY_RES_COUNT] = {"cpu", "memory", "gpu"};

    return r < POLICY_RES_COUNT ? names[r] : "?";
}

int pids_add(struct pids *s, int32_t id)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        int32_t *v = realloc(s->v, cap * sizeof(*v));

        if (!v)
            return POLICY_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = id;
    return POLICY_OK;
}

void pids_remove(struct pids *s, int32_t id)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i] == id) {
            s->v[i] = s->v[--s->n];
            return;
        }
    }
}

void pids_cleanup(struct pids *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}
