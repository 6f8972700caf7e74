/*
 * queues.c - `muster queues`: the Queue objects as a tree, each with its
 * quota and limit (spec) and what muster last wrote in its status (fair
 * share, allocated, reserved, pending gangs), and the totals of the tree.
 *
 * A queue's allocated and reserved are rolled up from its children by
 * muster, so the totals add the top-level queues only; pending gangs are a
 * queue's own, so their total adds every queue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"

#define QUEUES_PATH "/apis/muster.dev/v1alpha1/queues"

struct tree {
    struct ext_arena *a;
    struct cli_queue *q; /* by name */
    size_t n;
    int *order;          /* indexes in tree order */
    int *depth;          /* by index */
    const char **prefix; /* by index: the tree's lines before the name */
    bool *root;          /* by index: drawn at the top (no parent, a missing one, or a loop) */
    size_t placed;
    cJSON *warnings; /* Queues that could not be read */
};

static int by_name(const void *x, const void *y)
{
    return strcmp(((const struct cli_queue *)x)->name, ((const struct cli_queue *)y)->name);
}

static int find(const struct tree *t, const char *name)
{
    struct cli_queue key = {.name = name};
    const struct cli_queue *q = name ? bsearch(&key, t->q, t->n, sizeof(*t->q), by_name) : NULL;

    return q != NULL ? (int)(q - t->q) : -1;
}

/* Top level: no parent, a parent that does not exist, or a parent chain that comes back to it. */
static bool is_root(const struct tree *t, int i)
{
    int at = find(t, t->q[i].parent);

    if (t->q[i].parent == NULL || at < 0)
        return true;
    for (size_t steps = 0; steps <= t->n; steps++) {
        if (at == i)
            return true;
        if (t->q[at].parent == NULL || find(t, t->q[at].parent) < 0)
            return false; /* under a top-level queue */
        at = find(t, t->q[at].parent);
    }
    return false; /* under a loop that does not hold it: drawn beneath it */
}

/* Children of parent (or the roots, parent -1) in name order, after prefix. */
static void place(struct tree *t, int parent, int depth, const char *prefix)
{
    int last = -1;

    for (size_t i = 0; i < t->n; i++) {
        if (parent < 0 ? t->root[i] : (!t->root[i] && find(t, t->q[i].parent) == parent))
            last = (int)i;
    }
    for (size_t i = 0; last >= 0 && i <= (size_t)last; i++) {
        bool mine = parent < 0 ? t->root[i] : (!t->root[i] && find(t, t->q[i].parent) == parent);
        char here[512], below[512];

        if (!mine)
            continue;
        snprintf(here, sizeof(here), "%s%s", prefix,
                 parent < 0       ? ""
                 : (int)i == last ? "└─ "
                                  : "├─ ");
        snprintf(below, sizeof(below), "%s%s", prefix,
                 parent < 0       ? ""
                 : (int)i == last ? "   "
                                  : "│  ");
        t->prefix[i] = ext_arena_strdup(t->a, here);
        t->depth[i] = depth;
        t->order[t->placed++] = (int)i;
        place(t, (int)i, depth + 1, below);
    }
}

static int read_all(struct tree *t, const cJSON *items, char *err, size_t errlen)
{
    const cJSON *item;
    char why[256];

    t->q = calloc((size_t)cJSON_GetArraySize(items) + 1, sizeof(*t->q));
    if (t->q == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    cJSON_ArrayForEach(item, items)
    {
        if (cli__queue_read(item, t->a, &t->q[t->n], why, sizeof(why)) == EXT_OK)
            t->n++;
        else
            cJSON_AddItemToArray(t->warnings, cJSON_CreateString(why));
    }
    qsort(t->q, t->n, sizeof(*t->q), by_name);
    t->order = calloc(t->n + 1, sizeof(*t->order));
    t->depth = calloc(t->n + 1, sizeof(*t->depth));
    t->prefix = calloc(t->n + 1, sizeof(*t->prefix));
    t->root = calloc(t->n + 1, sizeof(*t->root));
    if (!t->order || !t->depth || !t->prefix || !t->root)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++)
        t->root[i] = is_root(t, (int)i);
    place(t, -1, 0, "");
    return EXT_OK;
}

/* The top of the tree, summed: unlimited if any top-level queue is. */
static void totals(const struct tree *t, struct cli_queue *sum)
{
    memset(sum, 0, sizeof(*sum));
    sum->name = "TOTAL";
    for (size_t i = 0; i < t->n; i++) {
        const struct cli_queue *q = &t->q[i];

        sum->pending_gangs += q->pending_gangs;
        sum->has_status = sum->has_status || q->has_status;
        if (!t->root[i])
            continue;
        sum->has_fair_share = sum->has_fair_share || q->has_fair_share;
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            sum->quota.v[r] =
                sum->quota.v[r] < 0 || q->quota.v[r] < 0 ? -1 : sum->quota.v[r] + q->quota.v[r];
            sum->limit.v[r] =
                sum->limit.v[r] < 0 || q->limit.v[r] < 0 ? -1 : sum->limit.v[r] + q->limit.v[r];
            sum->allocated.v[r] += q->allocated.v[r];
            sum->reserved.v[r] += q->reserved.v[r];
            sum->fair_share.v[r] += q->has_fair_share ? q->fair_share.v[r] : 0;
            sum->recent_usage[r] += q->recent_usage[r];
            sum->fair_share_plain.v[r] += q->has_recent_usage ? q->fair_share_plain.v[r] : 0;
        }
        sum->has_recent_usage = sum->has_recent_usage || q->has_recent_usage;
    }
}

/* ---- JSON -------------------------------------------------------------------------- */

/* depth < 0: the totals, which have no place in the tree. */
static cJSON *queue_json(const struct cli_queue *q, const char *parent, int depth, bool missing)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "name", q->name);
    if (depth >= 0) {
        if (parent != NULL)
            cJSON_AddStringToObject(o, "parent", parent);
        else
            cJSON_AddNullToObject(o, "parent");
        cJSON_AddBoolToObject(o, "parentMissing", missing); /* drawn at the top */
        cJSON_AddNumberToObject(o, "depth", depth);
        cJSON_AddNumberToObject(o, "priority", q->priority);
    }
    if (q->has_status)
        cJSON_AddNumberToObject(o, "pendingGangs", q->pending_gangs);
    else
        cJSON_AddNullToObject(o, "pendingGangs");
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        cJSON_AddItemToObject(o, policy_resource_name(r), cli__queue_amounts_json(q, r));
    return o;
}

static bool print_json(const struct tree *t, FILE *out)
{
    cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "queues");
    struct cli_queue sum;
    char *text;

    for (size_t k = 0; k < t->placed; k++) {
        const struct cli_queue *q = &t->q[t->order[k]];

        cJSON_AddItemToArray(list, queue_json(q, q->parent, t->depth[t->order[k]],
                                              q->parent != NULL && find(t, q->parent) < 0));
    }
    totals(t, &sum);
    cJSON_AddItemToObject(root, "total", queue_json(&sum, NULL, -1, false));
    cJSON_AddItemReferenceToObject(root, "warnings", t->warnings);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    if (text == NULL)
        return false;
    fprintf(out, "%s\n", text);
    free(text);
    return true;
}

/* ---- text -------------------------------------------------------------------------- */

static void add_amount(struct cli_table *tab, int64_t v, enum policy_resource r, bool known)
{
    char text[64];

    if (!known) {
        cli__table_add(tab, "-");
        return;
    }
    cli__amount(v, r, text, sizeof(text));
    cli__table_add(tab, text);
}

/* Fair over time: what it used lately, of the cluster (docs/quota.md). */
static void add_usage(struct cli_table *tab, const struct cli_queue *q, enum policy_resource r)
{
    char text[32];

    if (!q->has_recent_usage) {
        cli__table_add(tab, "-");
        return;
    }
    cli__usage_text(q->recent_usage[r], text, sizeof(text));
    cli__table_add(tab, text);
}

static void add_row(struct cli_table *tab, const struct cli_queue *q, const char *label,
                    const char *priority, enum policy_resource r)
{
    cli__table_add(tab, label);
    cli__table_add(tab, priority);
    add_amount(tab, q->quota.v[r], r, true);
    add_amount(tab, q->limit.v[r], r, true);
    add_amount(tab, q->fair_share.v[r], r, q->has_fair_share);
    add_amount(tab, q->allocated.v[r], r, q->has_status);
    add_usage(tab, q, r);
    add_amount(tab, q->reserved.v[r], r, q->has_status);
    if (q->has_status)
        cli__table_addf(tab, "%d", q->pending_gangs);
    else
        cli__table_add(tab, "-");
}

static bool print_text(const struct tree *t, enum policy_resource r, FILE *out)
{
    static const char *const head[] = {"QUOTA",     "LIMIT",      "FAIR SHARE",
                                       "ALLOCATED", "RECENT USE", "RESERVED"};
    struct cli_table tab;
    struct cli_queue sum;
    bool unknown = false, ok;
    char res[16];
    const cJSON *w;

    snprintf(res, sizeof(res), "%s", policy_resource_name(r));
    for (char *c = res; *c; c++)
        *c = (char)(*c - 'a' + 'A');
    cli__table_init(&tab, t->a, 9);
    cli__table_add(&tab, "QUEUE");
    cli__table_add(&tab, "PRIORITY");
    for (size_t i = 0; i < 6; i++)
        cli__table_addf(&tab, "%s %s", res, head[i]);
    cli__table_add(&tab, "PENDING GANGS");
    for (size_t k = 0; k < t->placed; k++) {
        int i = t->order[k];
        const struct cli_queue *q = &t->q[i];
        char label[600], prio[16];

        if (q->parent != NULL && t->root[i])
            snprintf(label, sizeof(label), "%s%s (parent %s %s)", t->prefix[i], q->name, q->parent,
                     find(t, q->parent) < 0 ? "missing" : "in a loop");
        else
            snprintf(label, sizeof(label), "%s%s", t->prefix[i], q->name);
        snprintf(prio, sizeof(prio), "%d", (int)q->priority);
        add_row(&tab, q, label, prio, r);
        unknown = unknown || !q->has_status || !q->has_fair_share;
    }
    totals(t, &sum);
    add_row(&tab, &sum, "TOTAL", "", r);
    cli__table_print(&tab, out);
    ok = !tab.oom;
    cli__table_cleanup(&tab);
    if (unknown)
        fprintf(out, "\n-: not in the status muster wrote (no fair share yet, or no status: is "
                     "muster running, and does its kube-scheduler lead?)\n");
    cJSON_ArrayForEach(w, t->warnings)
    {
        fprintf(out, "warning: a Queue muster cannot read: %s\n", w->valuestring);
    }
    return ok;
}

static void tree_cleanup(struct tree *t)
{
    free(t->q);
    free(t->order);
    free(t->depth);
    free(t->prefix);
    free(t->root);
    cJSON_Delete(t->warnings);
    ext_arena_free(t->a);
}

int cli_queues(struct kube_client *kube, const struct cli_opts *o, FILE *out, char *err,
               size_t errlen)
{
    struct tree t = {.a = ext_arena_new(), .warnings = cJSON_CreateArray()};
    cJSON *items = NULL;
    bool truncated, ok;
    int rc = EXT_ENOMEM;

    if (t.a == NULL || t.warnings == NULL) {
        ext_errf(err, errlen, rc, "out of memory");
        goto out;
    }
    rc = cli__list(kube, QUEUES_PATH, &items, &truncated, err, errlen);
    if (rc == EXT_ENOTFOUND)
        ext_errf(err, errlen, rc,
                 "no Queues: the API server does not serve queues.muster.dev (is muster's CRD "
                 "installed? manifests/crd-queue.yaml)");
    if (rc == EXT_OK)
        rc = read_all(&t, items, err, errlen);
    if (rc == EXT_OK && truncated)
        cJSON_AddItemToArray(t.warnings, cJSON_CreateString("more Queues than are shown"));
    if (rc == EXT_OK) {
        ok = o->output == CLI_OUTPUT_JSON ? print_json(&t, out) : print_text(&t, o->resource, out);
        if (!ok)
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    }
out:
    cJSON_Delete(items);
    tree_cleanup(&t);
    return rc == EXT_OK ? CLI_EXIT_OK : cli__exit_of(rc);
}
