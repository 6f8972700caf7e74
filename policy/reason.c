/*
 * reason.c - why a gang or pod waits, as data, and the one place it becomes words.
 *
 * A refusal is made as a struct preason (its kind and figures, strings borrowed from the
 * engine's objects), kept as a struct pwhy (one counted block: the figures, copies of their
 * strings and the rendered line), and shown by every printer from there: Events, /debug/state,
 * `muster why` and `muster simulate` print the text policy_reason_text made, and the JSON ones
 * the figures beside it. docs/why.md lists the kinds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const struct {
    const char *name;
    enum preason_kind cls; /* what the engine's decisions read of it */
} kind_table[POLICY_REASON_KINDS] = {
    [POLICY_REASON_NONE] = {"none", PREASON_NONE},
    [POLICY_REASON_UNDECLARED] = {"undeclared", PREASON_MEMBERS},
    [POLICY_REASON_MEMBERS] = {"members", PREASON_MEMBERS},
    [POLICY_REASON_INVALID] = {"invalid", PREASON_INVALID},
    [POLICY_REASON_NO_QUEUE] = {"no-queue", PREASON_QUEUE},
    [POLICY_REASON_QUEUE_LIMIT] = {"queue-limit", PREASON_QUEUE},
    [POLICY_REASON_QUEUE_QUOTA] = {"queue-quota", PREASON_QUEUE},
    [POLICY_REASON_NO_NODE] = {"no-node", PREASON_CAPACITY},
    [POLICY_REASON_GANG_ROOM] = {"gang-room", PREASON_CAPACITY},
    [POLICY_REASON_TOPOLOGY] = {"topology", PREASON_CAPACITY},
    [POLICY_REASON_AHEAD] = {"ahead", PREASON_AHEAD},
    [POLICY_REASON_YIELD] = {"yield", PREASON_AHEAD},
    [POLICY_REASON_NO_VICTIMS] = {"no-victims", PREASON_AHEAD},
    [POLICY_REASON_IN_TURN] = {"in-turn", PREASON_AHEAD},
    [POLICY_REASON_EXTRA] = {"extra", PREASON_AHEAD},
    [POLICY_REASON_VICTIMS] = {"victims-leaving", PREASON_EVICTING},
    [POLICY_REASON_ROOM_TAKEN] = {"room-taken", PREASON_CAPACITY},
    [POLICY_REASON_VICTIM_REFUSED] = {"victim-refused", PREASON_CAPACITY},
    [POLICY_REASON_PLAN_EXPIRED] = {"plan-expired", PREASON_CAPACITY},
    [POLICY_REASON_EVICTED] = {"evicted", PREASON_CAPACITY},
    [POLICY_REASON_AT_BIND] = {"at-bind", PREASON_NONE},
    [POLICY_REASON_BIND_FAILED] = {"bind-failed", PREASON_CAPACITY},
    [POLICY_REASON_NOT_OFFERED] = {"not-offered", PREASON_CAPACITY},
    [POLICY_REASON_NO_MEMORY] = {"out-of-memory", PREASON_CAPACITY},
};

static const char *const check_names[POLICY_CHECKS] = {
    [POLICY_CHECK_OK] = "ok",
    [POLICY_CHECK_CORDONED] = "cordoned",
    [POLICY_CHECK_SELECTOR] = "selector",
    [POLICY_CHECK_AFFINITY] = "affinity",
    [POLICY_CHECK_TAINT] = "taint",
    [POLICY_CHECK_CPU] = "cpu",
    [POLICY_CHECK_MEMORY] = "memory",
    [POLICY_CHECK_PODS] = "pods",
    [POLICY_CHECK_GPU] = "gpu",
    [POLICY_CHECK_GPU_SHARE] = "gpu-share",
    [POLICY_CHECK_SHARING_PAUSED] = "sharing-paused",
    [POLICY_CHECK_GPU_MEMORY_UNKNOWN] = "gpu-memory-unknown",
    [POLICY_CHECK_GPU_MEMORY_TOO_BIG] = "gpu-memory-too-big",
};

const char *policy_reason_kind_name(enum policy_reason_kind k)
{
    return k >= 0 && k < POLICY_REASON_KINDS ? kind_table[k].name : "?";
}

const char *policy_check_name(enum policy_node_check k)
{
    return k >= 0 && k < POLICY_CHECKS ? check_names[k] : "?";
}

enum preason_kind preason_class(enum policy_reason_kind k)
{
    return k >= 0 && k < POLICY_REASON_KINDS ? kind_table[k].cls : PREASON_NONE;
}

void preason_init(struct preason *r, enum policy_reason_kind kind, const char *gang)
{
    memset(r, 0, sizeof(*r));
    r->r.kind = kind;
    r->r.gang = gang;
    r->r.resource = r->r.held_resource = r->r.limit_resource = r->r.own_resource = -1;
    r->r.holder_quota = r->r.quotas = -1;
}

void preason_detail(struct preason *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
    va_end(ap);
}

void preason_ask(struct policy_ask *a, const struct ppod *p)
{
    *a = (struct policy_ask){.cpu_milli = p->cpu,
                             .memory_bytes = p->memory,
                             .gpus = p->gpus,
                             .gpu_share_milli = p->share,
                             .gpu_devices = p->devices ? p->devices : 1,
                             .gpu_memory_mib = p->gpu_memory_mib};
}

/* ---- kept reasons: one counted block ------------------------------------------ */

#define WHY_STRINGS 13

/* The string fields of a reason, to copy them into the block. */
static const char **string_slot(struct policy_reason *r, int i)
{
    const char **slots[WHY_STRINGS] = {&r->gang,   &r->pod,      &r->subgroup,
                                       &r->queue,  &r->other,    &r->other_queue,
                                       &r->detail, &r->topology, &r->domain,
                                       &r->holder, &r->owner,    &r->own_queue,
                                       &r->quota_queue};

    return slots[i];
}

/* The figures with the builder's own strings in place. */
static struct policy_reason resolved(const struct preason *from)
{
    struct policy_reason r = from->r;

    r.detail = from->detail[0] ? from->detail : NULL;
    if (from->sub[0])
        r.subgroup = from->sub;
    return r;
}

struct pwhy *pwhy_new(const struct preason *from)
{
    struct policy_reason r = resolved(from);
    size_t need = sizeof(struct pwhy), text;
    struct pwhy *w;
    char *at;

    for (int i = 0; i < WHY_STRINGS; i++)
        need += *string_slot(&r, i) ? strlen(*string_slot(&r, i)) + 1 : 0;
    text = policy_reason_text(&r, NULL, 0) + 1;
    if (!(w = malloc(need + text)))
        return NULL;
    w->refs = 1;
    w->r = r;
    at = (char *)(w + 1);
    for (int i = 0; i < WHY_STRINGS; i++) {
        const char **s = string_slot(&w->r, i);
        size_t n;

        if (!*s)
            continue;
        n = strlen(*s) + 1;
        memcpy(at, *s, n);
        *s = at;
        at += n;
    }
    w->text = at;
    policy_reason_text(&w->r, w->text, text);
    return w;
}

struct pwhy *pwhy_hold(struct pwhy *w)
{
    if (w)
        w->refs++;
    return w;
}

void pwhy_drop(struct pwhy *w)
{
    if (w && --w->refs == 0)
        free(w);
}

void pwhy_set(struct pwhy **slot, struct pwhy *w)
{
    if (*slot == w)
        return;
    pwhy_drop(*slot);
    *slot = pwhy_hold(w);
}

size_t preason_text(const struct preason *from, char *buf, size_t len)
{
    struct policy_reason r = resolved(from);

    return policy_reason_text(&r, buf, len);
}

/* ---- quantities as a person writes them ---------------------------------------- */

void policy_memory_text(int64_t v, char *buf, size_t len)
{
    static const struct {
        const char *suffix;
        int64_t unit;
    } units[] = {
        {"Ei", INT64_C(1) << 60}, {"E", INT64_C(1000000000000000000)}, {"Pi", INT64_C(1) << 50},
        {"P", INT64_C(1000000000000000)}, {"Ti", INT64_C(1) << 40}, {"T", INT64_C(1000000000000)},
        {"Gi", INT64_C(1) << 30}, {"G", INT64_C(1000000000)}, {"Mi", INT64_C(1) << 20},
        {"M", INT64_C(1000000)}, {"Ki", INT64_C(1) << 10}, {"k", INT64_C(1000)},
    };

    /* The smallest whole number of any exact suffix: 1G, 1536Mi, 3Ki, 100Mi. */
    for (size_t i = 0; v != 0 && i < sizeof(units) / sizeof(units[0]); i++) {
        if (v % units[i].unit == 0) {
            snprintf(buf, len, "%lld%s", (long long)(v / units[i].unit), units[i].suffix);
            return;
        }
    }
    snprintf(buf, len, "%lld", (long long)v);
}

/* Milli-units as a decimal: 1500 -> "1.5", 2000 -> "2". */
static void milli_text(int64_t v, char *buf, size_t len)
{
    long long a = v < 0 ? -(long long)v : v;
    char f[8];
    int n = snprintf(f, sizeof(f), ".%03lld", a % 1000);

    while (n > 1 && f[n - 1] == '0')
        f[--n] = '\0';
    snprintf(buf, len, "%s%lld%s", v < 0 ? "-" : "", a / 1000, n > 1 ? f : "");
}

void policy_amount_text(int r, int64_t v, char *buf, size_t len)
{
    char n[48];

    switch (r) {
    case POLICY_RES_GPU:
        milli_text(v, n, sizeof(n));
        snprintf(buf, len, "%s GPU%s", n, v > POLICY_GPU_MILLI || v == 0 ? "s" : "");
        return;
    case POLICY_RES_CPU:
        if (v % 1000 == 0)
            snprintf(buf, len, "%lld cpu", (long long)(v / 1000));
        else
            snprintf(buf, len, "%lldm cpu", (long long)v);
        return;
    default:
        policy_memory_text(v, n, sizeof(n));
        snprintf(buf, len, "%s memory", n);
        return;
    }
}

/* ---- the renderer ------------------------------------------------------------------- */

/* A line being written: cut at len, the whole length counted. */
struct line {
    char *buf;
    size_t len, off;
};

static void put(struct line *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct line *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(o->off < o->len ? o->buf + o->off : NULL, o->off < o->len ? o->len - o->off : 0,
                  fmt, ap);
    va_end(ap);
    if (n > 0)
        o->off += (size_t)n;
}

static const char *amount(int r, int64_t v, char *buf, size_t len)
{
    policy_amount_text(r, v, buf, len);
    return buf;
}

/* "2 GPUs", "0.5 GPU on each of 2 devices", "8Gi of GPU memory", "500m cpu, 1Gi memory" */
static void put_ask(struct line *o, const struct policy_ask *a)
{
    char t[64];

    if (a->gpus > 0)
        put(o, "%s", amount(POLICY_RES_GPU, a->gpus * POLICY_GPU_MILLI, t, sizeof(t)));
    else if (a->gpu_share_milli > 0 || a->gpu_memory_mib > 0) {
        if (a->gpu_share_milli > 0)
            put(o, "%s", amount(POLICY_RES_GPU, a->gpu_share_milli, t, sizeof(t)));
        else {
            policy_memory_text(a->gpu_memory_mib * (INT64_C(1) << 20), t, sizeof(t));
            put(o, "%s of GPU memory", t);
        }
        if (a->gpu_devices > 1)
            put(o, " on each of %d devices", a->gpu_devices);
    } else {
        put(o, "%s", amount(POLICY_RES_CPU, a->cpu_milli, t, sizeof(t)));
        if (a->memory_bytes > 0)
            put(o, ", %s", amount(POLICY_RES_MEMORY, a->memory_bytes, t, sizeof(t)));
    }
}

/* What a node that failed check k lacks, after "N nodes ": "with fewer than 2 free GPUs". */
static void put_failing(struct line *o, const struct policy_reason *r, int k)
{
    const struct policy_ask *a = &r->ask;
    char t[64];

    switch (k) {
    case POLICY_CHECK_CORDONED: put(o, "cordoned"); break;
    case POLICY_CHECK_SELECTOR: put(o, "not matching its nodeSelector"); break;
    case POLICY_CHECK_AFFINITY: put(o, "not matching its required node affinity"); break;
    case POLICY_CHECK_TAINT: put(o, "with a taint it does not tolerate"); break;
    case POLICY_CHECK_CPU:
        put(o, "with less than %s free", amount(POLICY_RES_CPU, a->cpu_milli, t, sizeof(t)));
        break;
    case POLICY_CHECK_MEMORY:
        put(o, "with less than %s free",
            amount(POLICY_RES_MEMORY, a->memory_bytes, t, sizeof(t)));
        break;
    case POLICY_CHECK_PODS: put(o, "with no room for another pod"); break;
    case POLICY_CHECK_GPU:
        put(o, "with fewer than %s free",
            amount(POLICY_RES_GPU, a->gpus * POLICY_GPU_MILLI, t, sizeof(t)));
        break;
    case POLICY_CHECK_GPU_SHARE: put(o, "with no GPU that has room for its share"); break;
    case POLICY_CHECK_SHARING_PAUSED:
        put(o, "with GPU sharing paused (a reservation pod did not report its device)");
        break;
    case POLICY_CHECK_GPU_MEMORY_UNKNOWN: put(o, "without an nvidia.com/gpu.memory label"); break;
    case POLICY_CHECK_GPU_MEMORY_TOO_BIG:
        policy_memory_text(a->gpu_memory_mib * (INT64_C(1) << 20), t, sizeof(t));
        put(o, "with GPUs of less than %s", t);
        break;
    }
}

/* The only check every node failed, said of them all: "no node has 2 free GPUs". */
static void put_all_failing(struct line *o, const struct policy_reason *r, int k)
{
    const char *of = r->offered ? " offered" : "";
    const struct policy_ask *a = &r->ask;
    char t[64];

    switch (k) {
    case POLICY_CHECK_CORDONED: put(o, "every node%s is cordoned", of); return;
    case POLICY_CHECK_SELECTOR: put(o, "no node%s matches its nodeSelector", of); return;
    case POLICY_CHECK_AFFINITY: put(o, "no node%s matches its required node affinity", of); return;
    case POLICY_CHECK_TAINT: put(o, "every node%s has a taint it does not tolerate", of); return;
    case POLICY_CHECK_CPU:
        put(o, "no node%s has %s free", of, amount(POLICY_RES_CPU, a->cpu_milli, t, sizeof(t)));
        return;
    case POLICY_CHECK_MEMORY:
        put(o, "no node%s has %s free", of,
            amount(POLICY_RES_MEMORY, a->memory_bytes, t, sizeof(t)));
        return;
    case POLICY_CHECK_PODS: put(o, "no node%s has room for another pod", of); return;
    case POLICY_CHECK_GPU:
        if (a->gpus == 1)
            put(o, "no node%s has a free GPU", of);
        else
            put(o, "no node%s has %s free", of,
                amount(POLICY_RES_GPU, a->gpus * POLICY_GPU_MILLI, t, sizeof(t)));
        return;
    case POLICY_CHECK_GPU_SHARE:
        put(o, "no GPU on a node%s has room for its share", of);
        return;
    case POLICY_CHECK_SHARING_PAUSED:
        put(o, "no node%s may open a shared GPU now (sharing paused: a reservation pod did not "
               "report its device)", of);
        return;
    case POLICY_CHECK_GPU_MEMORY_UNKNOWN:
        put(o, "no node%s has an nvidia.com/gpu.memory label, which a gpu-memory ask needs", of);
        return;
    case POLICY_CHECK_GPU_MEMORY_TOO_BIG:
        policy_memory_text(a->gpu_memory_mib * (INT64_C(1) << 20), t, sizeof(t));
        put(o, "no node%s has GPUs of %s", of, t);
        return;
    }
}

/* The resource a check is about, -1 for none. */
static int resource_of(int k)
{
    return k == POLICY_CHECK_CPU      ? POLICY_RES_CPU
           : k == POLICY_CHECK_MEMORY ? POLICY_RES_MEMORY
           : k == POLICY_CHECK_GPU    ? POLICY_RES_GPU
                                      : -1;
}

static bool resource_check(int k)
{
    return resource_of(k) >= 0 || k == POLICY_CHECK_GPU_SHARE;
}

/* After a resource check: the most there is on one node the pod may use (none: nothing). */
static void put_most(struct line *o, const struct policy_reason *r, int k)
{
    char t[64];

    if ((k == POLICY_CHECK_GPU_SHARE && r->most_device_room <= 0) ||
        (k != POLICY_CHECK_GPU_SHARE && resource_of(k) >= 0 && r->most_free.v[resource_of(k)] <= 0))
        return;
    if (k == POLICY_CHECK_CPU)
        put(o, " (at most %s on a node it may use)",
            amount(POLICY_RES_CPU, r->most_free.v[POLICY_RES_CPU], t, sizeof(t)));
    else if (k == POLICY_CHECK_MEMORY)
        put(o, " (at most %s on a node it may use)",
            amount(POLICY_RES_MEMORY, r->most_free.v[POLICY_RES_MEMORY], t, sizeof(t)));
    else if (k == POLICY_CHECK_GPU)
        put(o, " (at most %s on a node it may use)",
            amount(POLICY_RES_GPU, r->most_free.v[POLICY_RES_GPU], t, sizeof(t)));
    else if (k == POLICY_CHECK_GPU_SHARE)
        put(o, " (at most %s free on one GPU of a node it may use)",
            amount(POLICY_RES_GPU, r->most_device_room, t, sizeof(t)));
}


/* Why no node took the pod: one check, or how many nodes failed each. */
static void put_nodes(struct line *o, const struct policy_reason *r)
{
    int kinds = 0, last = POLICY_CHECK_OK, most = POLICY_CHECK_OK;
    const char *sep = "";

    if (r->nodes == 0) {
        put(o, "no nodes%s to choose from", r->offered ? " offered" : "");
        return;
    }
    for (int k = 1; k < POLICY_CHECKS; k++) {
        if (!r->failing[k])
            continue;
        kinds++;
        last = k;
        if (resource_check(k) && most == POLICY_CHECK_OK)
            most = k;
    }
    if (kinds == 1) {
        put_all_failing(o, r, last);
        put_most(o, r, last);
        return;
    }
    put(o, "0 of %d nodes%s fit:", r->nodes, r->offered ? " offered" : "");
    for (int k = 1; k < POLICY_CHECKS; k++) {
        if (!r->failing[k])
            continue;
        put(o, "%s %d ", sep, r->failing[k]);
        put_failing(o, r, k);
        sep = ";";
    }
    put_most(o, r, most);
}

static void put_holders(struct line *o, const struct policy_reason *r)
{
    char a[64], b[64];

    int res = r->held_resource;

    if (!r->holder || res < 0 || res >= POLICY_RES_COUNT || r->never)
        return;
    put(o, "; no eviction may make room for it: queue %s holds %s", r->holder,
        amount(res, r->held, a, sizeof(a)));
    if (r->holder_quota >= 0)
        put(o, ", %s its quota of %s", r->held <= r->holder_quota ? "within" : "over",
            amount(res, r->holder_quota, b, sizeof(b)));
    put(o, "%s %s its fair share of %s", r->holder_quota >= 0 ? " and" : ",",
        r->held <= r->holder_fair ? "within" : "over", amount(res, r->holder_fair, b, sizeof(b)));
    if (r->own_queue && r->own_resource >= 0 && r->own_resource < POLICY_RES_COUNT) {
        char c[64];

        put(o, ", but queue %s would end over its own fair share of %s (%s in use, %s asked)",
            r->own_queue, amount(r->own_resource, r->own_fair, a, sizeof(a)),
            amount(r->own_resource, r->own_used, b, sizeof(b)),
            amount(r->own_resource, r->own_asked, c, sizeof(c)));
    } else if (r->quota_queue && r->holder_quota >= 0) {
        char c[64], d[64];

        put(o, ", but queue %s would end over its quota of %s (%s in use, %s asked): only what "
               "queue %s holds over its quota (%s) may be taken",
            r->quota_queue, amount(res, r->quota_of, a, sizeof(a)),
            amount(res, r->quota_used, b, sizeof(b)), amount(res, r->quota_asked, c, sizeof(c)),
            r->holder,
            amount(res, policy_reason_takeable(r), d, sizeof(d)));
    }
    if (r->quotas >= 0 && r->quotas > r->capacity)
        put(o, "; the queues' quotas add up to %s, more than the cluster's %s",
            amount(res, r->quotas, a, sizeof(a)), amount(res, r->capacity, b, sizeof(b)));
}

/* Does every node looked at fail the member named (it fits none alone)? */
static bool fails_alone(const struct policy_reason *r)
{
    int32_t failed = 0;

    for (int k = 1; k < POLICY_CHECKS; k++)
        failed += r->failing[k];
    return r->pod && r->nodes > 0 && failed >= r->nodes;
}

static void put_never(struct line *o, const struct policy_reason *r)
{
    if (r->never)
        put(o, "; never: %s", r->kind == POLICY_REASON_NO_NODE || fails_alone(r)
                                  ? "no node takes it even empty"
                                  : "not even on empty nodes");
}

static void put_domain(struct line *o, const struct policy_reason *r)
{
    if (!r->topology || !r->domain)
        return;
    if (r->domains > 0)
        put(o, "no %s domain holds it (%d tried); in %s=%s: ", r->topology, r->domains,
            r->topology, r->domain);
    else
        put(o, "in %s=%s: ", r->topology, r->domain);
}

static void put_no_node(struct line *o, const struct policy_reason *r)
{
    if (r->topology && r->domain) {
        put(o, "gang %s: ", r->gang);
        put_domain(o, r);
    } else if (r->domain) { /* the domains its gang keeps to, in words */
        put(o, "gang %s: %s: ", r->gang, r->domain);
    }
    if (r->pod) {
        put(o, "member %s (", r->pod);
        put_ask(o, &r->ask);
        put(o, "): ");
    }
    put_nodes(o, r);
    put_never(o, r);
    put_holders(o, r);
}

/* A heavier choice the count allows was turned away by a queue's limit. */
static void put_over_limit(struct line *o, const struct policy_reason *r)
{
    char a[64], b[64], c[64];
    int res = r->limit_resource;

    if (res < 0 || res >= POLICY_RES_COUNT || !r->queue)
        return;
    put(o, "; a heavier choice of members asks %s, over queue %s's limit of %s (%s in use)",
        amount(res, r->asked, a, sizeof(a)), r->queue, amount(res, r->cap, b, sizeof(b)),
        amount(res, r->used, c, sizeof(c)));
}

/* The members a gang's minimum misses do not fit: alone, by the sums, or together. */
static void put_gang_room(struct line *o, const struct policy_reason *r)
{
    int res = r->resource >= 0                              ? r->resource
              : r->need.v[POLICY_RES_GPU] > 0 ? POLICY_RES_GPU
                                                            : POLICY_RES_CPU;
    char a[64], b[64], c[64];

    put(o, "gang %s: ", r->gang);
    put_domain(o, r);
    if (fails_alone(r)) {
        put(o, "%s needs %d more x ", r->subgroup ? r->subgroup : "its minimum",
            r->subgroup ? r->have : r->want);
        put_ask(o, &r->ask);
        put(o, "; member %s: ", r->pod);
        put_nodes(o, r);
    } else if (r->resource >= 0) {
        put(o, "the %d member%s its minimum misses ask %s together, the nodes they may use have "
               "%s free",
            r->want, r->want == 1 ? "" : "s", amount(res, r->need.v[res], a, sizeof(a)),
            amount(res, r->free.v[res], b, sizeof(b)));
        if (r->subgroup && r->pod) {
            put(o, " (%s needs %d more x ", r->subgroup, r->have);
            put_ask(o, &r->ask);
            put(o, ")");
        }
    } else {
        put(o, "the %d member%s its minimum misses (%s) do not fit together on the nodes they "
               "may use (%s free, at most %s on one)",
            r->want, r->want == 1 ? "" : "s", amount(res, r->need.v[res], a, sizeof(a)),
            amount(res, r->free.v[res], b, sizeof(b)),
            amount(res, r->most_free.v[res], c, sizeof(c)));
        if (r->pod) {
            put(o, "; member %s (", r->pod);
            put_ask(o, &r->ask);
            put(o, ") found no room beside the others");
        }
    }
    put_over_limit(o, r);
    put_never(o, r);
    put_holders(o, r);
}

static void put_queue(struct line *o, const struct policy_reason *r)
{
    char cap[64], used[64], asked[64];

    amount(r->resource, r->cap, cap, sizeof(cap));
    amount(r->resource, r->used, used, sizeof(used));
    amount(r->resource, r->asked, asked, sizeof(asked));
    if (r->kind == POLICY_REASON_QUEUE_LIMIT)
        put(o, "queue %s: limit %s, %s in use, the %s needs %s", r->queue, cap, used,
            r->pod ? "pod" : "gang", asked);
    else
        put(o, "queue %s: quota %s (non-preemptible work stays within it), %s in use by "
               "non-preemptible work, the %s needs %s",
            r->queue, cap, used, r->pod ? "pod" : "gang", asked);
    if (r->never)
        put(o, "; never: more than the %s",
            r->kind == POLICY_REASON_QUEUE_LIMIT ? "limit" : "quota");
}

static void put_evicted(struct line *o, const struct policy_reason *r)
{
    char t[64];

    if (r->eviction == POLICY_EVICT_PREEMPT) {
        put(o, "preempted for gang %s of queue %s: its priority %d is above %d", r->other,
            r->other_queue, r->other_priority, r->priority);
        return;
    }
    put(o, "evicted for gang %s of queue %s: ", r->other, r->other_queue);
    if (r->resource < 0)
        put(o, "queue %s is over what it may hold", r->queue);
    else
        put(o, "queue %s is %s over its %s", r->queue,
            amount(r->resource, r->used - r->cap, t, sizeof(t)),
            r->quota_mark ? "quota" : "fair share");
}

static void put_reason(struct line *o, const struct policy_reason *r)
{
    switch (r->kind) {
    case POLICY_REASON_NONE: break;
    case POLICY_REASON_UNDECLARED:
        put(o, "gang %s: its RayCluster or PodGroup is not known yet", r->gang);
        break;
    case POLICY_REASON_MEMBERS:
        if (r->subgroup)
            put(o, "gang %s: %s has %d of %d pods", r->gang, r->subgroup, r->have, r->want);
        else
            put(o, "gang %s: %d of %d members exist", r->gang, r->have, r->want);
        break;
    case POLICY_REASON_INVALID:
        if (r->pod)
            put(o, "member %s: ", r->pod);
        put(o, "%s", r->detail ? r->detail : "its ask cannot be met");
        break;
    case POLICY_REASON_NO_QUEUE: put(o, "queue %s does not exist", r->queue); break;
    case POLICY_REASON_QUEUE_LIMIT:
    case POLICY_REASON_QUEUE_QUOTA: put_queue(o, r); break;
    case POLICY_REASON_NO_NODE: put_no_node(o, r); break;
    case POLICY_REASON_GANG_ROOM: put_gang_room(o, r); break;
    case POLICY_REASON_TOPOLOGY:
        put(o, "%s", r->detail ? r->detail : "no domain it asks for holds it");
        break;
    case POLICY_REASON_AHEAD:
        put(o, "waits: gang %s of queue %s is ahead", r->other, r->other_queue);
        break;
    case POLICY_REASON_YIELD:
        put(o, "waits: gang %s of queue %s goes first: it would evict this one at once", r->other,
            r->other_queue);
        break;
    case POLICY_REASON_NO_VICTIMS:
        put(o, "waits: gang %s of queue %s would evict this one at once, so nothing is evicted "
               "to make room for it",
            r->other, r->other_queue);
        break;
    case POLICY_REASON_IN_TURN:
        put(o, "waits: gang %s places %s of %s first: its subgroups take members beyond their "
               "minimums in turn",
            r->gang, r->other, r->subgroup);
        break;
    case POLICY_REASON_EXTRA:
        put(o, "gang %s: this pod is beyond the gang's minimum and is placed once the gang is "
               "bound",
            r->gang);
        break;
    case POLICY_REASON_VICTIMS:
        put(o, "gang %s: waits for %d evicted pod%s to leave (its room is held)", r->gang, r->have,
            r->have == 1 ? "" : "s");
        break;
    case POLICY_REASON_ROOM_TAKEN:
        put(o, "gang %s: the room being freed for it went to gang %s of queue %s%s%s", r->gang,
            r->other, r->other_queue, r->detail ? ": " : "", r->detail ? r->detail : "");
        break;
    case POLICY_REASON_VICTIM_REFUSED:
        put(o, "gang %s: room was being made for it, but evicting %s was refused: %s", r->gang,
            r->other, r->detail ? r->detail : "no reason given");
        break;
    case POLICY_REASON_PLAN_EXPIRED:
        put(o, "gang %s: its plan expired before kube-scheduler bound it; planning again",
            r->gang);
        break;
    case POLICY_REASON_EVICTED: put_evicted(o, r); break;
    case POLICY_REASON_AT_BIND:
        put(o, "gang %s: %d of %d members at bind or bound%s", r->gang, r->have, r->want,
            r->detail ? r->detail : "");
        break;
    case POLICY_REASON_BIND_FAILED:
        put(o, "%s", r->detail ? r->detail : "the API server refused its Binding");
        break;
    case POLICY_REASON_NOT_OFFERED:
        put(o, "planned on node %s, which was not offered; no offered node fits: %s", r->other,
            r->detail ? r->detail : "");
        break;
    case POLICY_REASON_NO_MEMORY: put(o, "out of memory while planning"); break;
    case POLICY_REASON_KINDS: break;
    }
}

int64_t policy_reason_takeable(const struct policy_reason *r)
{
    return r->held > r->holder_quota ? r->held - r->holder_quota : 0;
}

size_t policy_reason_text(const struct policy_reason *r, char *buf, size_t len)
{
    struct line o = {.buf = buf, .len = len};

    if (len)
        buf[0] = '\0';
    if (r && r->owner && r->kind != POLICY_REASON_NONE) {
        if (r->upgrade)
            put(&o, "upgrade of RayService %s waits: ", r->owner);
        else
            put(&o, "%s %s: ", policy_owner_kind_name(r->owner_kind), r->owner);
    }
    if (r)
        put_reason(&o, r);
    return o.off;
}
