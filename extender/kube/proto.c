/*
 * proto.c - Pods and Nodes read as protobuf (application/vnd.kubernetes.protobuf), the form
 * kube-scheduler's informers read, so the API server encodes each pod event once for all of
 * them instead of once more in JSON for muster. Each object becomes the JSON its decoders read
 * (decode_pod.c, decode_node.c), with only the fields they read, named and left out as the API
 * server's JSON names and leaves them out (omitempty): one decoder for both forms.
 *
 * The runtime is protobuf-c (Debian's libprotobuf-c), with k8s.proto: the fields muster reads,
 * with Kubernetes' own field numbers; every other field is skipped. On the wire: a GET or LIST
 * reply is "k8s\0" then a runtime.Unknown whose raw is the object; a watch is a stream of
 * 4-byte big-endian lengths, each followed by a metav1.WatchEvent (no envelope) whose object's
 * raw is enveloped again.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "k8s.pb-c.h"
#include "kube_client_int.h"

static const unsigned char envelope[4] = {'k', '8', 's', 0};

/* ---- memory: what unpacking one reply or frame may take ---------------------------------- */

/*
 * protobuf-c allocates each message and string it unpacks; a hostile or broken reply of empty
 * messages (2 bytes each) asks for some 57 times its size. One unpack (a reply, or a watch frame
 * and the object in it) may take PROTO_BUDGET of the bytes read: a real API server's Pods and
 * Nodes take 4 to 5 times (test/fixtures/proto), the least a listed Pod can be (a name) some
 * 21 times. Past it the unpack fails like a malformed one, and the watch reads JSON (watch.c).
 * The bytes read are capped already (a watch event by max_event, a list page by max_reply); the
 * JSON built from the unpacked objects holds only the fields muster reads.
 */
#define PROTO_BUDGET(len) ((len) * 32 + 65536)
#define PROTO_HEADER 16    /* each block's size, before it: malloc's alignment kept */
#define PROTO_CHUNK 65536  /* a watch event's blocks come from chunks of this size */

/*
 * A chunk of a watch event's unpacked blocks. A watch event is small (a pod is a few KiB, some
 * 4 to 5 times that unpacked) and all of it goes at once when the event has been read: its
 * blocks are carved out of a chunk, none freed alone, and the chunk is kept by the thread for
 * the next event. One malloc per event at most, where protobuf-c asks for one per message and
 * string (and each large one made glibc consolidate its heap: 5% of muster's CPU under a burst
 * of pods). A list page is unpacked block by block instead, each freed once read (list_json),
 * so a page of thousands of pods never stands unpacked whole.
 */
struct proto_chunk {
    struct proto_chunk *next;
    size_t size, used;
    _Alignas(max_align_t) unsigned char data[];
};

/* One chunk kept per thread (a watch's) between events, freed when the thread ends. */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_key_make(void)
{
    (void)pthread_key_create(&spare_key, free);
}

static struct proto_chunk *spare_take(void)
{
    struct proto_chunk *c;

    pthread_once(&spare_once, spare_key_make);
    c = pthread_getspecific(spare_key);
    if (c)
        (void)pthread_setspecific(spare_key, NULL);
    return c;
}

/* Kept when the thread has none yet; false when it was not kept (the caller frees it). */
static bool spare_keep(struct proto_chunk *c)
{
    pthread_once(&spare_once, spare_key_make);
    return !pthread_getspecific(spare_key) && pthread_setspecific(spare_key, c) == 0;
}

struct proto_budget {
    ProtobufCAllocator a;
    size_t left;
    bool over;
    struct proto_chunk *chunks; /* a watch event's, newest first; NULL for a list page */
};

static void *budget_alloc(void *data, size_t n)
{
    struct proto_budget *b = data;
    unsigned char *p;

    if (n > b->left || b->left - n < PROTO_HEADER || !(p = malloc(n + PROTO_HEADER))) {
        b->over = b->over || n + PROTO_HEADER > b->left;
        return NULL;
    }
    b->left -= n + PROTO_HEADER;
    memcpy(p, &n, sizeof(n));
    return p + PROTO_HEADER;
}

static void budget_free(void *data, void *ptr)
{
    struct proto_budget *b = data;
    unsigned char *p = ptr;
    size_t n;

    if (!p)
        return;
    p -= PROTO_HEADER;
    memcpy(&n, p, sizeof(n));
    b->left += n + PROTO_HEADER;
    free(p);
}

/* A block of a watch event, counted against the same budget as budget_alloc's. */
static void *chunk_alloc(void *data, size_t n)
{
    struct proto_budget *b = data;
    size_t need = (n + PROTO_HEADER - 1) / PROTO_HEADER * PROTO_HEADER;
    struct proto_chunk *c = b->chunks;
    unsigned char *p;

    if (need < n || need > b->left) {
        b->over = true;
        return NULL;
    }
    if (!c || c->size - c->used < need) {
        size_t size = need > PROTO_CHUNK - sizeof(*c) ? need + sizeof(*c) : PROTO_CHUNK;

        if (!(size == PROTO_CHUNK && (c = spare_take()) != NULL) && !(c = malloc(size)))
            return NULL;
        c->size = size - sizeof(*c);
        c->used = 0;
        c->next = b->chunks;
        b->chunks = c;
    }
    p = c->data + c->used;
    c->used += need;
    b->left -= need;
    return p;
}

static void chunk_free(void *data, void *ptr)
{
    (void)data; /* every block goes with its chunks, in budget_done */
    (void)ptr;
}

/* For a reply (list pages: blocks freed one by one) or a watch event (chunks). */
static void budget_init(struct proto_budget *b, size_t len, bool event)
{
    *b = (struct proto_budget){{event ? chunk_alloc : budget_alloc, event ? chunk_free : budget_free,
                                b},
                               PROTO_BUDGET(len), false, NULL};
}

/* A watch event's chunks: the thread keeps one for the next event. */
static void budget_done(struct proto_budget *b)
{
    for (struct proto_chunk *c = b->chunks, *next; c; c = next) {
        next = c->next;
        if (c->size + sizeof(*c) != PROTO_CHUNK || !spare_keep(c))
            free(c);
    }
    b->chunks = NULL;
}

/* ---- JSON out: every allocation checked ---------------------------------------------------- */

/*
 * A field left out for want of memory would be a wrong object, not a smaller one (a container
 * without its GPU limit asks for no GPU): any cJSON allocation that fails marks the object
 * being built, and kube__proto_body and kube__proto_event then return NULL for it.
 */
static _Thread_local bool proto_oom;

static cJSON *chk(cJSON *v)
{
    if (!v)
        proto_oom = true;
    return v;
}

static cJSON *new_object(void) { return chk(cJSON_CreateObject()); }
static cJSON *new_array(void) { return chk(cJSON_CreateArray()); }
static cJSON *new_string(const char *v) { return chk(cJSON_CreateString(v)); }
static cJSON *add_object(cJSON *o, const char *k) { return chk(cJSON_AddObjectToObject(o, k)); }
static cJSON *add_array(cJSON *o, const char *k) { return chk(cJSON_AddArrayToObject(o, k)); }
static cJSON *add_string(cJSON *o, const char *k, const char *v)
{
    return chk(cJSON_AddStringToObject(o, k, v));
}
static cJSON *add_number(cJSON *o, const char *k, double v)
{
    return chk(cJSON_AddNumberToObject(o, k, v));
}
static cJSON *add_null(cJSON *o, const char *k) { return chk(cJSON_AddNullToObject(o, k)); }
static cJSON *add_true(cJSON *o, const char *k) { return chk(cJSON_AddTrueToObject(o, k)); }

/* item is taken (freed when it cannot be added); false when it is NULL or cannot be added. */
static bool add_item(cJSON *a, cJSON *item)
{
    if (item && cJSON_AddItemToArray(a, item))
        return true;
    cJSON_Delete(item);
    proto_oom = true;
    return false;
}

static bool add_field(cJSON *o, const char *k, cJSON *item)
{
    if (item && cJSON_AddItemToObject(o, k, item))
        return true;
    cJSON_Delete(item);
    proto_oom = true;
    return false;
}

/* ---- JSON out, as the API server writes it ------------------------------------------------ */

/* A string field; an empty one is left out where the JSON tag says omitempty (`always` false). */
static void put_str(cJSON *o, const char *key, const char *v, bool always)
{
    if (v && (*v || always))
        add_string(o, key, v);
    else if (always)
        add_string(o, key, "");
}

static void put_map(cJSON *o, const char *key, Muster__K8s__StringEntry **e, size_t n)
{
    cJSON *m;

    if (n == 0)
        return;
    m = add_object(o, key);
    for (size_t i = 0; m && i < n; i++)
        if (e[i]->key)
            add_string(m, e[i]->key, e[i]->value ? e[i]->value : "");
}

static void put_quantities(cJSON *o, const char *key, Muster__K8s__QuantityEntry **e, size_t n)
{
    cJSON *m;

    if (n == 0)
        return;
    m = add_object(o, key);
    for (size_t i = 0; m && i < n; i++)
        if (e[i]->key)
            add_string(m, e[i]->key,
                                    e[i]->value && e[i]->value->string ? e[i]->value->string : "0");
}

/* metav1.Time as RFC 3339 in UTC, whole seconds; the zero time is null, as Go writes it. */
static void put_time(cJSON *o, const char *key, const Muster__K8s__Time *t)
{
    char text[32];
    struct tm tm;
    time_t secs;

    if (!t)
        return;
    secs = (time_t)t->seconds;
    if ((t->seconds == 0 && t->nanos == 0) || !gmtime_r(&secs, &tm) ||
        !strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm)) {
        add_null(o, key);
        return;
    }
    add_string(o, key, text);
}

static void put_strings(cJSON *o, const char *key, char **v, size_t n)
{
    cJSON *a;

    if (n == 0)
        return;
    a = add_array(o, key);
    for (size_t i = 0; a && i < n; i++)
        add_item(a, new_string(v[i] ? v[i] : ""));
}

static void put_meta(cJSON *o, const Muster__K8s__ObjectMeta *m)
{
    cJSON *meta = add_object(o, "metadata");

    if (!m || !meta)
        return;
    put_str(meta, "name", m->name, false);
    put_str(meta, "namespace", m->namespace_, false);
    put_str(meta, "uid", m->uid, false);
    put_str(meta, "resourceVersion", m->resourceversion, false);
    put_time(meta, "deletionTimestamp", m->deletiontimestamp);
    put_map(meta, "labels", m->labels, m->n_labels);
    put_map(meta, "annotations", m->annotations, m->n_annotations);
}

/* ---- Pod ------------------------------------------------------------------------------------ */

static void put_resources(cJSON *o, const char *key, const Muster__K8s__ResourceRequirements *r)
{
    cJSON *res;

    if (!r || !(res = add_object(o, key)))
        return;
    put_quantities(res, "limits", r->limits, r->n_limits);
    put_quantities(res, "requests", r->requests, r->n_requests);
}

static void put_containers(cJSON *o, const char *key, Muster__K8s__Container **c, size_t n,
                           bool always)
{
    cJSON *a;

    if (n == 0 && !always)
        return;
    a = add_array(o, key);
    for (size_t i = 0; a && i < n; i++) {
        cJSON *ctr = new_object();

        if (!add_item(a, ctr))
            return;
        put_str(ctr, "name", c[i]->name, true);
        put_resources(ctr, "resources", c[i]->resources);
        put_str(ctr, "restartPolicy", c[i]->restartpolicy, false);
    }
}

static void put_requirements(cJSON *o, const char *key, Muster__K8s__NodeSelectorRequirement **r,
                             size_t n)
{
    cJSON *a;

    if (n == 0)
        return;
    a = add_array(o, key);
    for (size_t i = 0; a && i < n; i++) {
        cJSON *e = new_object();

        if (!add_item(a, e))
            return;
        put_str(e, "key", r[i]->key, true);
        put_str(e, "operator", r[i]->operator_, true);
        put_strings(e, "values", r[i]->values, r[i]->n_values);
    }
}

static void put_affinity(cJSON *spec, const Muster__K8s__Affinity *a)
{
    const Muster__K8s__NodeSelector *sel;
    cJSON *aff, *na, *req, *terms;

    if (!a || !(aff = add_object(spec, "affinity")) || !a->nodeaffinity ||
        !(na = add_object(aff, "nodeAffinity")))
        return;
    sel = a->nodeaffinity->requiredduringschedulingignoredduringexecution;
    if (!sel || !(req = add_object(na, "requiredDuringSchedulingIgnoredDuringExecution")) ||
        !(terms = add_array(req, "nodeSelectorTerms")))
        return;
    for (size_t i = 0; i < sel->n_nodeselectorterms; i++) {
        const Muster__K8s__NodeSelectorTerm *t = sel->nodeselectorterms[i];
        cJSON *term = new_object();

        if (!add_item(terms, term))
            return;
        put_requirements(term, "matchExpressions", t->matchexpressions, t->n_matchexpressions);
        put_requirements(term, "matchFields", t->matchfields, t->n_matchfields);
    }
}

static void put_tolerations(cJSON *spec, Muster__K8s__Toleration **t, size_t n)
{
    cJSON *a;

    if (n == 0 || !(a = add_array(spec, "tolerations")))
        return;
    for (size_t i = 0; i < n; i++) {
        cJSON *e = new_object();

        if (!add_item(a, e))
            return;
        put_str(e, "key", t[i]->key, false);
        put_str(e, "operator", t[i]->operator_, false);
        put_str(e, "value", t[i]->value, false);
        put_str(e, "effect", t[i]->effect, false);
    }
}

static void put_pod_spec(cJSON *pod, const Muster__K8s__PodSpec *s)
{
    cJSON *spec = add_object(pod, "spec");

    if (!s || !spec)
        return;
    put_containers(spec, "containers", s->containers, s->n_containers, true);
    put_containers(spec, "initContainers", s->initcontainers, s->n_initcontainers, false);
    put_map(spec, "nodeSelector", s->nodeselector, s->n_nodeselector);
    put_str(spec, "nodeName", s->nodename, false);
    put_affinity(spec, s->affinity);
    put_str(spec, "schedulerName", s->schedulername, false);
    put_tolerations(spec, s->tolerations, s->n_tolerations);
    put_str(spec, "priorityClassName", s->priorityclassname, false);
    if (s->has_priority)
        add_number(spec, "priority", s->priority);
    put_quantities(spec, "overhead", s->overhead, s->n_overhead);
    put_resources(spec, "resources", s->resources);
    if (s->schedulinggroup) {
        cJSON *g = add_object(spec, "schedulingGroup");

        if (g)
            put_str(g, "podGroupName", s->schedulinggroup->podgroupname, false);
    }
}

static void put_pod_status(cJSON *pod, const Muster__K8s__PodStatus *s)
{
    cJSON *status = add_object(pod, "status"), *conds;

    if (!s || !status)
        return;
    put_str(status, "phase", s->phase, false);
    if (s->n_conditions && (conds = add_array(status, "conditions"))) {
        for (size_t i = 0; i < s->n_conditions; i++) {
            const Muster__K8s__PodCondition *c = s->conditions[i];
            cJSON *e = new_object();

            if (!add_item(conds, e))
                break;
            put_str(e, "type", c->type, true);
            put_str(e, "status", c->status, true);
            put_time(e, "lastTransitionTime", c->lasttransitiontime);
            put_str(e, "reason", c->reason, false);
        }
    }
    put_time(status, "startTime", s->starttime);
    put_str(status, "nominatedNodeName", s->nominatednodename, false);
}

static cJSON *pod_json(const Muster__K8s__Pod *p)
{
    cJSON *o = new_object();

    if (!o)
        return NULL;
    add_string(o, "apiVersion", "v1");
    add_string(o, "kind", "Pod");
    put_meta(o, p->metadata);
    put_pod_spec(o, p->spec);
    put_pod_status(o, p->status);
    return o;
}

/* ---- Node ----------------------------------------------------------------------------------- */

static cJSON *node_json(const Muster__K8s__Node *n)
{
    cJSON *o = new_object(), *spec, *status, *taints;

    if (!o)
        return NULL;
    add_string(o, "apiVersion", "v1");
    add_string(o, "kind", "Node");
    put_meta(o, n->metadata);
    if (n->spec && (spec = add_object(o, "spec"))) {
        if (n->spec->has_unschedulable && n->spec->unschedulable)
            add_true(spec, "unschedulable");
        if (n->spec->n_taints && (taints = add_array(spec, "taints"))) {
            for (size_t i = 0; i < n->spec->n_taints; i++) {
                const Muster__K8s__Taint *t = n->spec->taints[i];
                cJSON *e = new_object();

                if (!add_item(taints, e))
                    break;
                put_str(e, "key", t->key, true);
                put_str(e, "value", t->value, false);
                put_str(e, "effect", t->effect, true);
            }
        }
    }
    if (n->status && (status = add_object(o, "status")))
        put_quantities(status, "allocatable", n->status->allocatable, n->status->n_allocatable);
    return o;
}

/* ---- Status (an ERROR event, an error reply) ------------------------------------------------- */

static cJSON *status_json(const Muster__K8s__Status *s)
{
    cJSON *o = new_object();

    if (!o)
        return NULL;
    add_string(o, "apiVersion", "v1");
    add_string(o, "kind", "Status");
    put_str(o, "status", s->status, false);
    put_str(o, "message", s->message, false);
    put_str(o, "reason", s->reason, false);
    if (s->has_code)
        add_number(o, "code", s->code);
    return o;
}

/* ---- the envelope and the kinds --------------------------------------------------------------- */

/* One object's raw bytes as JSON, by the kind its envelope names; NULL for a kind muster does not
 * read as protobuf, or bytes that do not unpack. */
static cJSON *object_json(const char *kind, const uint8_t *raw, size_t len,
                          ProtobufCAllocator *al)
{
    cJSON *out = NULL;

    if (!kind)
        return NULL;
    if (strcmp(kind, "Pod") == 0) {
        Muster__K8s__Pod *p = muster__k8s__pod__unpack(al, len, raw);

        out = p ? pod_json(p) : NULL;
        muster__k8s__pod__free_unpacked(p, al);
    } else if (strcmp(kind, "Node") == 0) {
        Muster__K8s__Node *n = muster__k8s__node__unpack(al, len, raw);

        out = n ? node_json(n) : NULL;
        muster__k8s__node__free_unpacked(n, al);
    } else if (strcmp(kind, "Status") == 0) {
        Muster__K8s__Status *s = muster__k8s__status__unpack(al, len, raw);

        out = s ? status_json(s) : NULL;
        muster__k8s__status__free_unpacked(s, al);
    }
    return out;
}

static cJSON *list_meta_json(const Muster__K8s__ListMeta *m)
{
    cJSON *o = new_object();

    if (o && m) {
        put_str(o, "resourceVersion", m->resourceversion, false);
        put_str(o, "continue", m->continue_, false);
    }
    return o;
}

/* A PodList or NodeList as {"metadata": {...}, "items": [...]}. */
static cJSON *list_json(const char *kind, const uint8_t *raw, size_t len, ProtobufCAllocator *al)
{
    cJSON *o = new_object(), *items = new_array(), *meta = NULL;
    bool ok = o && items;

    if (ok && strcmp(kind, "PodList") == 0) {
        Muster__K8s__PodList *l = muster__k8s__pod_list__unpack(al, len, raw);

        ok = l != NULL && (meta = list_meta_json(l->metadata)) != NULL;
        for (size_t i = 0; ok && i < l->n_items; i++)
            ok = add_item(items, pod_json(l->items[i]));
        muster__k8s__pod_list__free_unpacked(l, al);
    } else if (ok && strcmp(kind, "NodeList") == 0) {
        Muster__K8s__NodeList *l = muster__k8s__node_list__unpack(al, len, raw);

        ok = l != NULL && (meta = list_meta_json(l->metadata)) != NULL;
        for (size_t i = 0; ok && i < l->n_items; i++)
            ok = add_item(items, node_json(l->items[i]));
        muster__k8s__node_list__free_unpacked(l, al);
    } else {
        ok = false;
    }
    if (!ok) {
        cJSON_Delete(o);
        cJSON_Delete(items);
        cJSON_Delete(meta);
        return NULL;
    }
    add_field(o, "metadata", meta);
    add_field(o, "items", items);
    return o;
}

static cJSON *body_json(const void *data, size_t len, struct proto_budget *b, char *err,
                        size_t errlen)
{
    ProtobufCAllocator *al = &b->a;
    Muster__K8s__Unknown *u;
    const char *kind;
    cJSON *out = NULL;

    if (len < sizeof(envelope) || memcmp(data, envelope, sizeof(envelope)) != 0) {
        (void)ext_errf(err, errlen, EXT_EINVAL, "protobuf reply without its \"k8s\\0\" envelope");
        return NULL;
    }
    u = muster__k8s__unknown__unpack(al, len - sizeof(envelope),
                                     (const uint8_t *)data + sizeof(envelope));
    kind = u && u->typemeta ? u->typemeta->kind : NULL;
    if (!u)
        (void)ext_errf(err, errlen, EXT_EINVAL, "protobuf reply does not unpack");
    else if (kind && (strcmp(kind, "PodList") == 0 || strcmp(kind, "NodeList") == 0))
        out = list_json(kind, u->raw.data, u->raw.len, al);
    else
        out = object_json(kind, u->raw.data, u->raw.len, al);
    if (b->over)
        (void)ext_errf(err, errlen, EXT_EINVAL, "protobuf reply of %zu bytes: over %zu bytes unpacked",
                       len, (size_t)PROTO_BUDGET(len));
    else if (u && !out)
        (void)ext_errf(err, errlen, EXT_EINVAL, "protobuf %s: not one muster reads, or malformed",
                       kind ? kind : "object without a kind");
    muster__k8s__unknown__free_unpacked(u, al);
    return out;
}

/* out, or NULL if any part of it could not be allocated. */
static cJSON *whole(cJSON *out, char *err, size_t errlen)
{
    if (out && proto_oom) {
        cJSON_Delete(out);
        out = NULL;
    }
    if (!out && proto_oom)
        (void)ext_errf(err, errlen, EXT_ENOMEM, "protobuf reply: out of memory");
    return out;
}

cJSON *kube__proto_body(const void *data, size_t len, char *err, size_t errlen)
{
    struct proto_budget b;

    budget_init(&b, len, false);
    proto_oom = false;
    return whole(body_json(data, len, &b, err, errlen), err, errlen);
}

cJSON *kube__proto_event(const void *frame, size_t len, char *err, size_t errlen)
{
    struct proto_budget b;
    ProtobufCAllocator *al = &b.a;
    Muster__K8s__WatchEvent *ev;
    cJSON *out = NULL, *obj = NULL;

    budget_init(&b, len, true);
    proto_oom = false;
    ev = muster__k8s__watch_event__unpack(al, len, frame);
    if (!ev || !ev->type || !ev->object) {
        (void)ext_errf(err, errlen, EXT_EINVAL, "protobuf watch event of %zu bytes does not unpack%s",
                       len, b.over ? " within its memory budget" : "");
        budget_done(&b);
        return NULL;
    }
    obj = body_json(ev->object->raw.data, ev->object->raw.len, &b, err, errlen);
    if (obj && (out = new_object()) != NULL) {
        add_string(out, "type", ev->type);
        add_field(out, "object", obj);
        obj = NULL;
    }
    cJSON_Delete(obj);
    budget_done(&b); /* ev and all it holds */
    return whole(out, err, errlen);
}

/* ---- the watch stream's frames ---------------------------------------------------------------- */

void kube__frames_init(struct kube_frames *f, size_t max,
                       int (*on_frame)(void *arg, const void *frame, size_t len), void *arg)
{
    kube__buf_init(&f->frame, max);
    f->want = 0;
    f->have_len = false;
    f->on_frame = on_frame;
    f->arg = arg;
}

void kube__frames_cleanup(struct kube_frames *f)
{
    kube__buf_cleanup(&f->frame);
}

void kube__frames_reset(struct kube_frames *f)
{
    kube__buf_reset(&f->frame);
    f->want = 0;
    f->have_len = false;
}

int kube__frames_feed(struct kube_frames *f, const char *data, size_t len)
{
    while (len > 0) {
        /* The 4-byte big-endian length first, then that many bytes. */
        size_t need = f->have_len ? f->want + 4 - f->frame.len : 4 - f->frame.len;
        size_t take = len < need ? len : need;
        int rc = kube__buf_add(&f->frame, data, take);

        if (rc != EXT_OK)
            return rc;
        data += take;
        len -= take;
        if (!f->have_len && f->frame.len == 4) {
            const unsigned char *h = (const unsigned char *)f->frame.data;

            f->want = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
            f->have_len = true;
            if (f->want + 4 > f->frame.max)
                return EXT_ETOOBIG;
        }
        if (f->have_len && f->frame.len == f->want + 4) {
            rc = f->on_frame(f->arg, f->frame.data + 4, f->want);
            kube__frames_reset(f);
            if (rc != EXT_OK)
                return rc;
        }
    }
    return EXT_OK;
}
