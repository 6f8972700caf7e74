/*
 * simulate_report.c - a finished simulation as JSON (for tools) or as tables
 * (for a person, like `kubectl get pods -o custom-columns`).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate_int.h"

/* One pod as printed. */
struct sim_row {
    const char *ns, *name, *gang, *queue, *node, *gpu_group, *reason;
    const struct policy_reason *why; /* the engine's figures behind reason, when they are */
    const cJSON *why_json;           /* ... or an eviction's, already as JSON */
    int64_t gpus;
    int32_t share_milli, devices;
};

struct sim_summary {
    size_t pods_placed, pods_pending, gangs_placed, gangs_pending;
    int64_t gpus_used, gpu_milli_placed;
    double gpu_fragmentation; /* GPUs the pods seen could not use (policy_gpu_fragmentation) */
};

static void sim_row_fill(struct sim_run *r, const struct sim_pod *p, struct sim_row *row)
{
    struct policy_pod_view v;
    bool have = policy_pod_view_get(r->cluster, p->spec.namespace_, p->spec.name, &v);

    memset(row, 0, sizeof(*row));
    row->ns = p->spec.namespace_;
    row->name = p->spec.name;
    row->gang = p->spec.gang;
    row->queue = have && v.queue != NULL ? v.queue : p->spec.queue;
    row->gpus = p->spec.gpus;
    row->share_milli = have && v.gpu_share_milli > 0 ? v.gpu_share_milli : p->spec.gpu_share_milli;
    row->devices = p->spec.gpu_devices > 0 ? p->spec.gpu_devices : 1;
    if (p->bound) {
        row->node = p->node;
        row->gpu_group = row->share_milli > 0 ? p->gpu_groups : NULL;
        return;
    }
    if (!p->spec.managed)
        row->reason = "not scheduled by muster (spec.schedulerName)";
    else if (p->reason != NULL)
        row->reason = p->reason;
    else if (have && v.reason != NULL)
        row->reason = v.reason;
    else
        row->reason = "pending";
    /* The figures go with the words when they are the engine's words for this pod. */
    if (have && v.reason != NULL && strcmp(v.reason, row->reason) == 0)
        row->why = v.why;
    else if (p->why != NULL && p->reason == row->reason)
        row->why_json = p->why;
}

/* Devices in a comma-separated group list that this pod is the first to name. */
static int64_t sim_new_groups(struct sim_run *r, size_t upto, const struct sim_pod *p)
{
    char *list = strdup(p->gpu_groups), *save = NULL, *g;
    int64_t n = 0;

    if (list == NULL)
        return 0;
    for (g = strtok_r(list, ",", &save); g != NULL; g = strtok_r(NULL, ",", &save)) {
        bool seen = false;

        for (size_t i = 0; i < upto && !seen; i++) {
            const struct sim_pod *q = &r->pods[i];
            const char *at;
            size_t len = strlen(g);

            if (!q->bound || q->gpu_groups == NULL || strcmp(q->node, p->node) != 0)
                continue;
            for (at = strstr(q->gpu_groups, g); at != NULL && !seen; at = strstr(at + 1, g))
                seen = (at == q->gpu_groups || at[-1] == ',') && (at[len] == ',' || !at[len]);
        }
        n += !seen;
    }
    free(list);
    return n;
}

/* A gang counts as placed when the engine says bound; a lone pod when it is. */
static bool sim_gang_placed(struct sim_run *r, const struct sim_pod *p)
{
    struct policy_gang_view g;

    if (p->spec.gang != NULL && policy_gang_view_get(r->cluster, p->spec.gang, &g))
        return g.state == POLICY_GANG_BOUND;
    return p->bound;
}

static bool sim_gang_first(struct sim_run *r, size_t i)
{
    const char *key = r->pods[i].spec.gang;

    if (key == NULL)
        return true;
    for (size_t j = 0; j < i; j++) {
        if (r->pods[j].spec.gang != NULL && strcmp(r->pods[j].spec.gang, key) == 0)
            return false;
    }
    return true;
}

static void sim_summarize(struct sim_run *r, struct sim_summary *s)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < r->npods; i++) {
        const struct sim_pod *p = &r->pods[i];
        int32_t devices = p->spec.gpu_devices > 0 ? p->spec.gpu_devices : 1;
        struct sim_row row;

        if (sim_gang_first(r, i) && !p->done) {
            if (sim_gang_placed(r, p))
                s->gangs_placed++;
            else
                s->gangs_pending++;
        }
        if (p->done)
            continue; /* ended on the timeline: neither placed nor waiting */
        if (!p->bound) {
            s->pods_pending++;
            continue;
        }
        s->pods_placed++;
        sim_row_fill(r, p, &row);
        s->gpus_used += p->spec.gpus;
        s->gpu_milli_placed += p->spec.gpus * POLICY_GPU_MILLI + (int64_t)row.share_milli * devices;
        if (p->gpu_groups != NULL && row.share_milli > 0)
            s->gpus_used += sim_new_groups(r, i, p);
    }
    s->gpu_fragmentation = (double)(int64_t)(policy_gpu_fragmentation(r->cluster) + 0.5) / 1000;
}

/* ---- queues -------------------------------------------------------------- */

struct sim_queue_row {
    char *name, *parent;
    char cpu[32], memory[32], gpu[32];
    char fair_cpu[32], fair_memory[32], fair_gpu[32];
    bool has_recent_usage; /* fair over time: U', and the fair share without it */
    struct policy_resources recent_usage, fair_share_plain;
};

struct sim_queue_rows {
    struct sim_queue_row *v;
    size_t n, cap;
    bool oom;
};

static void sim_queue_collect(const struct policy_queue_view *q, void *ctx)
{
    struct sim_queue_rows *rows = ctx;
    struct sim_queue_row *row;

    if (rows->n == rows->cap) {
        size_t ncap = rows->cap ? rows->cap * 2 : 16;
        void *p = realloc(rows->v, ncap * sizeof(*rows->v));

        if (p == NULL) {
            rows->oom = true;
            return;
        }
        rows->v = p;
        rows->cap = ncap;
    }
    row = &rows->v[rows->n++];
    row->name = strdup(q->name);
    row->parent = q->parent != NULL ? strdup(q->parent) : NULL;
    kube_quantity_format(q->allocated.v[POLICY_RES_CPU], KUBE_QUANTITY_MILLI, row->cpu,
                         sizeof(row->cpu));
    kube_quantity_format(q->allocated.v[POLICY_RES_MEMORY], KUBE_QUANTITY_BINARY, row->memory,
                         sizeof(row->memory));
    kube_quantity_format(q->allocated.v[POLICY_RES_GPU], KUBE_QUANTITY_DECIMAL, row->gpu,
                         sizeof(row->gpu));
    kube_quantity_format(q->fair_share.v[POLICY_RES_CPU], KUBE_QUANTITY_MILLI, row->fair_cpu,
                         sizeof(row->fair_cpu));
    kube_quantity_format(q->fair_share.v[POLICY_RES_MEMORY], KUBE_QUANTITY_BINARY, row->fair_memory,
                         sizeof(row->fair_memory));
    kube_quantity_format(q->fair_share.v[POLICY_RES_GPU], KUBE_QUANTITY_DECIMAL, row->fair_gpu,
                         sizeof(row->fair_gpu));
    row->has_recent_usage = q->has_recent_usage;
    row->recent_usage = q->recent_usage;
    row->fair_share_plain = q->fair_share_without_usage;
}

static void sim_queue_rows_cleanup(struct sim_queue_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        free(rows->v[i].name);
        free(rows->v[i].parent);
    }
    free(rows->v);
}

/* ---- gangs --------------------------------------------------------------- */

/* One gang as printed: copies, since a view lives only during its callback. */
struct sim_gang_row {
    char *key, *queue, *composition, *conflict, *reason, *topology, *domain;
    char *owner, *upgrade_of, *held; /* "RayJob lab/train"; the running sibling; the held room */
    char *label;                     /* the key, and its owner in brackets */
    cJSON *why;
    const char *state;
};

struct sim_gang_rows {
    struct sim_gang_row *v;
    size_t n, cap;
};

static char *sim_dup(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

static void sim_gang_collect(const struct policy_gang_view *g, void *ctx)
{
    struct sim_gang_rows *rows = ctx;
    struct sim_gang_row *row;

    if (rows->n == rows->cap) {
        size_t ncap = rows->cap ? rows->cap * 2 : 16;
        void *p = realloc(rows->v, ncap * sizeof(*rows->v));

        if (p == NULL)
            return;
        rows->v = p;
        rows->cap = ncap;
    }
    row = &rows->v[rows->n++];
    row->key = sim_dup(g->key);
    row->queue = sim_dup(g->queue);
    row->composition = sim_dup(g->composition);
    row->conflict = sim_dup(g->conflict);
    row->reason = sim_dup(g->reason);
    row->why = g->why != NULL ? kube_reason_json(g->why) : NULL;
    row->topology = sim_dup(g->topology);
    row->domain = sim_dup(g->domain);
    row->state = policy_gang_state_name(g->state);
    row->owner = row->upgrade_of = row->held = row->label = NULL;
    if (g->owner_kind != POLICY_OWNER_NONE && g->owner != NULL) {
        char text[600];

        snprintf(text, sizeof(text), "%s %s", policy_owner_kind_name(g->owner_kind), g->owner);
        row->owner = strdup(text);
        snprintf(text, sizeof(text), "%s (%s %s)", g->key, policy_owner_kind_name(g->owner_kind),
                 g->owner);
        row->label = strdup(text);
    }
    row->upgrade_of = sim_dup(g->upgrade_of);
    if (g->nholds > 0) {
        const struct policy_hold_view *h = &g->holds[0];
        char text[600], cpu[32], mem[32];

        kube_quantity_format(h->cpu_milli, KUBE_QUANTITY_MILLI, cpu, sizeof(cpu));
        kube_quantity_format(h->memory_bytes, KUBE_QUANTITY_BINARY, mem, sizeof(mem));
        if (h->state == POLICY_HOLD_WAITING)
            snprintf(text, sizeof(text), "%s (%s cpu, %s memory) held %s%s", h->subgroup, cpu,
                     mem, h->node ? "on " : "", h->node ? h->node : "with the gang's plan");
        else
            snprintf(text, sizeof(text), "%s: %s", h->subgroup,
                     policy_hold_state_name(h->state));
        row->held = strdup(text);
    }
}

static void sim_gang_rows_cleanup(struct sim_gang_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        free(rows->v[i].key);
        free(rows->v[i].queue);
        free(rows->v[i].composition);
        free(rows->v[i].conflict);
        free(rows->v[i].reason);
        free(rows->v[i].owner);
        free(rows->v[i].upgrade_of);
        free(rows->v[i].held);
        free(rows->v[i].label);
        cJSON_Delete(rows->v[i].why);
        free(rows->v[i].topology);
        free(rows->v[i].domain);
    }
    free(rows->v);
}

/* ---- JSON ---------------------------------------------------------------- */

static cJSON *sim_string_or_null(const char *s)
{
    return s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static void sim_print_item(cJSON *item, FILE *out)
{
    char *text = ext_json_print(item, false);

    fputs(text != NULL ? text : "null", out);
    free(text);
    cJSON_Delete(item);
}

static cJSON *sim_pod_json(const struct sim_row *row)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "namespace", row->ns);
    cJSON_AddStringToObject(o, "name", row->name);
    cJSON_AddItemToObject(o, "gang", sim_string_or_null(row->gang));
    cJSON_AddItemToObject(o, "queue", sim_string_or_null(row->queue));
    cJSON_AddItemToObject(o, "node", sim_string_or_null(row->node));
    cJSON_AddNumberToObject(o, "gpus", (double)row->gpus);
    cJSON_AddNumberToObject(o, "gpuFraction", row->share_milli / (double)POLICY_GPU_MILLI);
    cJSON_AddItemToObject(o, "gpuGroup", sim_string_or_null(row->gpu_group));
    cJSON_AddItemToObject(o, "reason", sim_string_or_null(row->reason));
    cJSON_AddItemToObject(o, "why", row->why != NULL        ? kube_reason_json(row->why)
                                    : row->why_json != NULL ? cJSON_Duplicate(row->why_json, true)
                                                            : cJSON_CreateNull());
    return o;
}

static cJSON *sim_queue_json(const struct sim_queue_row *q)
{
    cJSON *o = cJSON_CreateObject(), *alloc, *fair;

    cJSON_AddStringToObject(o, "name", q->name);
    cJSON_AddItemToObject(o, "parent", sim_string_or_null(q->parent));
    alloc = cJSON_AddObjectToObject(o, "allocated");
    cJSON_AddStringToObject(alloc, "cpu", q->cpu);
    cJSON_AddStringToObject(alloc, "memory", q->memory);
    cJSON_AddStringToObject(alloc, "gpu", q->gpu);
    fair = cJSON_AddObjectToObject(o, "fairShare");
    cJSON_AddStringToObject(fair, "cpu", q->fair_cpu);
    cJSON_AddStringToObject(fair, "memory", q->fair_memory);
    cJSON_AddStringToObject(fair, "gpu", q->fair_gpu);
    if (q->has_recent_usage) {
        static const enum kube_quantity_style styles[POLICY_RES_COUNT] = {
            KUBE_QUANTITY_MILLI, KUBE_QUANTITY_BINARY, KUBE_QUANTITY_DECIMAL};
        char text[32];

        cJSON_AddItemToObject(o, "recentUsage", kube_recent_usage_json(&q->recent_usage));
        fair = cJSON_AddObjectToObject(o, "fairShareWithoutRecentUsage");
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            kube_quantity_format(q->fair_share_plain.v[r], styles[r], text, sizeof(text));
            cJSON_AddStringToObject(fair, policy_resource_name(r), text);
        }
    }
    return o;
}

static cJSON *sim_gang_json(const struct sim_gang_row *g)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "key", g->key != NULL ? g->key : "");
    cJSON_AddItemToObject(o, "queue", sim_string_or_null(g->queue));
    cJSON_AddStringToObject(o, "state", g->state);
    cJSON_AddItemToObject(o, "composition", sim_string_or_null(g->composition));
    cJSON_AddItemToObject(o, "conflict", sim_string_or_null(g->conflict));
    cJSON_AddItemToObject(o, "topology", sim_string_or_null(g->topology));
    cJSON_AddItemToObject(o, "domain", sim_string_or_null(g->domain));
    cJSON_AddItemToObject(o, "reason", sim_string_or_null(g->reason));
    cJSON_AddItemToObject(o, "why", g->why != NULL ? cJSON_Duplicate(g->why, true)
                                                   : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "owner", sim_string_or_null(g->owner));
    cJSON_AddItemToObject(o, "upgradeOf", sim_string_or_null(g->upgrade_of));
    cJSON_AddItemToObject(o, "held", sim_string_or_null(g->held));
    return o;
}

static cJSON *sim_eviction_json(const struct sim_eviction *e)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "namespace", e->ns);
    cJSON_AddStringToObject(o, "name", e->name);
    cJSON_AddItemToObject(o, "gang", sim_string_or_null(e->gang));
    cJSON_AddItemToObject(o, "by", sim_string_or_null(e->by));
    cJSON_AddItemToObject(o, "reason", sim_string_or_null(e->reason));
    cJSON_AddItemToObject(o, "why", e->why != NULL ? cJSON_Duplicate(e->why, true)
                                                   : cJSON_CreateNull());
    return o;
}

static cJSON *sim_summary_json(const struct sim_summary *s)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddNumberToObject(o, "podsPlaced", (double)s->pods_placed);
    cJSON_AddNumberToObject(o, "podsPending", (double)s->pods_pending);
    cJSON_AddNumberToObject(o, "gangsPlaced", (double)s->gangs_placed);
    cJSON_AddNumberToObject(o, "gangsPending", (double)s->gangs_pending);
    cJSON_AddNumberToObject(o, "gpusUsed", (double)s->gpus_used);
    cJSON_AddNumberToObject(o, "gpuFragmentation", s->gpu_fragmentation);
    cJSON_AddNumberToObject(
        o, "gpusLowerBound",
        (double)((s->gpu_milli_placed + POLICY_GPU_MILLI - 1) / POLICY_GPU_MILLI));
    return o;
}

void sim_report_json(struct sim_run *r, FILE *out)
{
    struct sim_queue_rows qs = {0};
    struct sim_gang_rows gs = {0};
    struct sim_summary sum;
    struct sim_row row;

    policy_each_queue(r->cluster, sim_queue_collect, &qs);
    policy_each_gang(r->cluster, sim_gang_collect, &gs);
    sim_summarize(r, &sum);
    fputs("{\"pods\":[", out);
    for (size_t i = 0; i < r->npods; i++) {
        sim_row_fill(r, &r->pods[i], &row);
        fputs(i == 0 ? "\n  " : ",\n  ", out);
        sim_print_item(sim_pod_json(&row), out);
    }
    fputs("],\n \"gangs\":[", out);
    for (size_t i = 0; i < gs.n; i++) {
        fputs(i == 0 ? "\n  " : ",\n  ", out);
        sim_print_item(sim_gang_json(&gs.v[i]), out);
    }
    fputs("],\n \"queues\":[", out);
    for (size_t i = 0; i < qs.n; i++) {
        fputs(i == 0 ? "\n  " : ",\n  ", out);
        sim_print_item(sim_queue_json(&qs.v[i]), out);
    }
    fputs("],\n \"evictions\":[", out);
    for (size_t i = 0; i < r->nevictions; i++) {
        fputs(i == 0 ? "\n  " : ",\n  ", out);
        sim_print_item(sim_eviction_json(&r->evictions[i]), out);
    }
    fputs("],\n \"summary\":", out);
    sim_print_item(sim_summary_json(&sum), out);
    if (r->timeline) {
        fputs(",\n \"timeline\":", out);
        sim_print_item(sim_timeline_json(r), out);
    }
    fputs("}\n", out);
    sim_gang_rows_cleanup(&gs);
    sim_queue_rows_cleanup(&qs);
}

/* ---- tables -------------------------------------------------------------- */

#define SIM_MAX_COLUMNS 8

/*
 * Columns padded to the widest cell plus three spaces, as kubectl prints them.
 * Every cell is escaped for the terminal (ext_text_escape): names, groups and
 * reasons are the input's words. Widths count characters, not bytes.
 */
static void sim_table_print(const char *const *cells, size_t nrows, size_t ncols, FILE *out)
{
    size_t width[SIM_MAX_COLUMNS] = {0}, n = nrows * ncols;
    struct ext_arena *a = ext_arena_new();
    const char **safe = calloc(n + 1, sizeof(*safe));

    if (a == NULL || safe == NULL)
        goto out;
    for (size_t i = 0; i < n; i++) {
        size_t w;

        safe[i] = ext_text_safe(a, cells[i]);
        if (safe[i] == NULL)
            goto out;
        w = ext_text_width(safe[i]);
        if (w > width[i % ncols])
            width[i % ncols] = w;
    }
    for (size_t i = 0; i < n; i++) {
        size_t c = i % ncols;

        fputs(safe[i], out);
        for (size_t pad = ext_text_width(safe[i]); c + 1 < ncols && pad < width[c] + 3; pad++)
            fputc(' ', out);
        if (c + 1 == ncols)
            fputc('\n', out);
    }
out:
    free(safe);
    ext_arena_free(a);
}

static void sim_gpu_cell(const struct sim_row *row, char *buf, size_t len)
{
    char share[32];

    if (row->gpus > 0) {
        snprintf(buf, len, "%" PRId64, row->gpus);
    } else if (row->share_milli > 0) {
        kube_quantity_format(row->share_milli, KUBE_QUANTITY_DECIMAL, share, sizeof(share));
        if (row->devices > 1)
            snprintf(buf, len, "%sx%d", share, row->devices);
        else
            snprintf(buf, len, "%s", share);
    } else {
        snprintf(buf, len, "<none>");
    }
}

static void sim_pods_table(struct sim_run *r, FILE *out)
{
    enum { NCOLS = 7 };
    const char **cells = calloc((r->npods + 1) * NCOLS, sizeof(*cells));
    char(*gpu)[40] = calloc(r->npods + 1, sizeof(*gpu));
    static const char *const head[NCOLS] = {"NAMESPACE", "NAME",  "GPU",   "NODE",
                                            "GANG",      "QUEUE", "REASON"};

    if (cells == NULL || gpu == NULL)
        goto out;
    memcpy(cells, head, sizeof(head));
    for (size_t i = 0; i < r->npods; i++) {
        const char **c = &cells[(i + 1) * NCOLS];
        struct sim_row row;

        sim_row_fill(r, &r->pods[i], &row);
        sim_gpu_cell(&row, gpu[i], sizeof(gpu[i]));
        c[0] = row.ns;
        c[1] = row.name;
        c[2] = gpu[i];
        c[3] = row.node != NULL ? row.node : "<none>";
        c[4] = row.gang != NULL ? row.gang : "<none>";
        c[5] = row.queue != NULL ? row.queue : "<none>";
        c[6] = row.reason != NULL ? row.reason : "<none>";
    }
    sim_table_print(cells, r->npods + 1, NCOLS, out);
out:
    free(gpu);
    free(cells);
}

static const char *sim_or_none(const char *s)
{
    return s != NULL ? s : "<none>";
}

static void sim_gangs_table(struct sim_run *r, FILE *out)
{
    enum { NCOLS = 7 };
    static const char *const head[NCOLS] = {"GANG",     "QUEUE",  "STATE", "COMPOSITION",
                                            "CONFLICT", "DOMAIN", "REASON"};
    struct sim_gang_rows gs = {0};
    const char **cells;

    policy_each_gang(r->cluster, sim_gang_collect, &gs);
    cells = calloc((gs.n + 1) * NCOLS, sizeof(*cells));
    if (cells != NULL) {
        memcpy(cells, head, sizeof(head));
        for (size_t i = 0; i < gs.n; i++) {
            const char **c = &cells[(i + 1) * NCOLS];

            c[0] = sim_or_none(gs.v[i].label ? gs.v[i].label : gs.v[i].key);
            c[1] = sim_or_none(gs.v[i].queue);
            c[2] = gs.v[i].state;
            c[3] = sim_or_none(gs.v[i].composition);
            c[4] = sim_or_none(gs.v[i].conflict);
            c[5] = sim_or_none(gs.v[i].domain);
            c[6] = sim_or_none(gs.v[i].reason);
        }
        sim_table_print(cells, gs.n + 1, NCOLS, out);
    }
    free(cells);
    sim_gang_rows_cleanup(&gs);
}

static void sim_evictions_table(struct sim_run *r, FILE *out)
{
    enum { NCOLS = 5 };
    static const char *const head[NCOLS] = {"NAMESPACE", "EVICTED", "GANG", "EVICTED-BY", "REASON"};
    const char **cells = calloc((r->nevictions + 1) * NCOLS, sizeof(*cells));

    if (cells == NULL)
        return;
    memcpy(cells, head, sizeof(head));
    for (size_t i = 0; i < r->nevictions; i++) {
        const struct sim_eviction *e = &r->evictions[i];
        const char **c = &cells[(i + 1) * NCOLS];

        c[0] = e->ns;
        c[1] = e->name;
        c[2] = sim_or_none(e->gang);
        c[3] = sim_or_none(e->by);
        c[4] = sim_or_none(e->reason);
    }
    sim_table_print(cells, r->nevictions + 1, NCOLS, out);
    free(cells);
}

static void sim_queues_table(struct sim_run *r, FILE *out)
{
    enum { NCOLS = 8 };
    static const char *const head[NCOLS] = {"QUEUE", "PARENT",   "CPU",         "MEMORY",
                                            "GPU",   "FAIR-CPU", "FAIR-MEMORY", "FAIR-GPU"};
    struct sim_queue_rows qs = {0};
    const char **cells;

    policy_each_queue(r->cluster, sim_queue_collect, &qs);
    cells = calloc((qs.n + 1) * NCOLS, sizeof(*cells));
    if (cells != NULL) {
        memcpy(cells, head, sizeof(head));
        for (size_t i = 0; i < qs.n; i++) {
            const char **c = &cells[(i + 1) * NCOLS];

            c[0] = qs.v[i].name;
            c[1] = qs.v[i].parent != NULL ? qs.v[i].parent : "<none>";
            c[2] = qs.v[i].cpu;
            c[3] = qs.v[i].memory;
            c[4] = qs.v[i].gpu;
            c[5] = qs.v[i].fair_cpu;
            c[6] = qs.v[i].fair_memory;
            c[7] = qs.v[i].fair_gpu;
        }
        sim_table_print(cells, qs.n + 1, NCOLS, out);
    }
    free(cells);
    sim_queue_rows_cleanup(&qs);
}

void sim_report_table(struct sim_run *r, FILE *out)
{
    struct sim_summary s;

    sim_summarize(r, &s);
    sim_pods_table(r, out);
    fputs("\n", out);
    sim_gangs_table(r, out);
    fputs("\n", out);
    sim_queues_table(r, out);
    if (r->nevictions > 0) {
        fputs("\n", out);
        sim_evictions_table(r, out);
    }
    fprintf(out,
            "\npods: %zu placed, %zu pending   gangs: %zu placed, %zu pending   "
            "GPUs: %" PRId64 " used, lower bound %" PRId64 ", fragmentation %.3g\n",
            s.pods_placed, s.pods_pending, s.gangs_placed, s.gangs_pending, s.gpus_used,
            (s.gpu_milli_placed + POLICY_GPU_MILLI - 1) / POLICY_GPU_MILLI, s.gpu_fragmentation);
    if (r->timeline)
        sim_timeline_table(r, out);
}
