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

/* How many levels of the tree are drawn: deeper queues are drawn at this indent, after "…". */
#define QUEUES_DRAWN_LEVELS 24

struct tree {
    struct ext_arena *a;
    struct cli_queue *q; /* by name */
    size_t n;
    int *parent;         /* by index: its parent's index; -1: none, or one that does not exist */
    int *order;          /* indexes in tree order */
    int *depth;          /* by index */
    const char **prefix; /* by index: the tree's lines before the name */
    bool *root;          /* by index: drawn at the top (no parent, a missing one, or a loop) */
    size_t placed;
    cJSON *warnings; /* what could not be read: a Queue (not shown), a status (shown without) */
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

/*
 * Top level: no parent, a parent that does not exist, or a parent chain that
 * comes back to it (a queue under a loop that does not hold it is drawn
 * beneath it). Each queue is walked once, however long the chains: a walk
 * stops at a queue an earlier walk saw (state 2), and one that meets itself
 * (state 1) has found a loop. walk has room for n indexes.
 */
static void find_roots(struct tree *t, unsigned char *state, int *walk)
{
    for (size_t i = 0; i < t->n; i++)
        t->root[i] = t->parent[i] < 0;
    for (size_t i = 0; i < t->n; i++) {
        size_t len = 0;
        int at = (int)i;

        while (at >= 0 && state[at] == 0) {
            state[at] = 1;
            walk[len++] = at;
            at = t->parent[at];
        }
        for (size_t k = len; at >= 0 && state[at] == 1 && k-- > 0;) {
            t->root[walk[k]] = true; /* the loop: from where the walk met itself to its end */
            if (walk[k] == at)
                break;
        }
        for (size_t k = 0; k < len; k++)
            state[walk[k]] = 2;
    }
}

/* The lines before a name at depth d: one column per level above it, its own branch. */
static const char *draw(struct tree *t, const bool *last_at, int d)
{
    char text[QUEUES_DRAWN_LEVELS * 8 + 32];
    size_t len = 0;
    int shown = d <= QUEUES_DRAWN_LEVELS ? d : QUEUES_DRAWN_LEVELS;

    text[0] = '\0';
    for (int k = 1; k < shown; k++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s", last_at[k] ? "   " : "│  ");
    if (d > shown)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "… %d ", d);
    if (d > 0)
        snprintf(text + len, sizeof(text) - len, "%s", last_at[shown] ? "└─ " : "├─ ");
    return ext_arena_strdup(t->a, text);
}

/* Pushes the list from first on the stack so that first is on top. */
static void push_list(int *stack, size_t *top, int first, const int *next)
{
    size_t from = *top;

    for (int c = first; c >= 0; c = next[c])
        stack[(*top)++] = c;
    for (size_t lo = from, hi = *top; hi-- > lo; lo++) {
        int x = stack[lo];

        stack[lo] = stack[hi];
        stack[hi] = x;
    }
}

/*
 * The tree in order, depth first, children by name: without recursion (the
 * depth is the cluster's to choose) and in time linear in the queues. first
 * and next hold each queue's children (the roots under n) in name order;
 * last_at[k] says whether the queue drawn last at level k was the last of its
 * siblings, which in depth-first order is the current queue's ancestor's.
 */
static bool place(struct tree *t, int *first, int *next, int *stack)
{
    bool last_at[QUEUES_DRAWN_LEVELS + 1] = {false};
    size_t top = 0;

    for (size_t i = 0; i <= t->n; i++)
        first[i] = -1;
    for (size_t i = t->n; i-- > 0;) {
        size_t up = t->root[i] ? t->n : (size_t)t->parent[i];

        next[i] = first[up];
        first[up] = (int)i;
    }
    push_list(stack, &top, first[t->n], next);
    while (top > 0) {
        int at = stack[--top];
        int d = t->root[at] ? 0 : t->depth[t->parent[at]] + 1;

        t->depth[at] = d;
        last_at[d < QUEUES_DRAWN_LEVELS ? d : QUEUES_DRAWN_LEVELS] = next[at] < 0;
        t->prefix[at] = draw(t, last_at, d);
        if (t->prefix[at] == NULL)
            return false;
        t->order[t->placed++] = at;
        push_list(stack, &top, first[at], next);
    }
    return true;
}

static int read_all(struct tree *t, const cJSON *items, char *err, size_t errlen)
{
    size_t cap = (size_t)cJSON_GetArraySize(items) + 1;
    int *first = NULL, *next = NULL, *stack = NULL;
    unsigned char *state = NULL;
    const cJSON *item;
    char why[640];
    bool ok = false;

    t->q = calloc(cap, sizeof(*t->q));
    if (t->q == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    cJSON_ArrayForEach(item, items)
    {
        struct cli_queue *q = &t->q[t->n];

        if (cli__queue_read(item, t->a, q, why, sizeof(why)) != EXT_OK) {
            snprintf(why + strlen(why), sizeof(why) - strlen(why), " (not shown)");
            cJSON_AddItemToArray(t->warnings, cJSON_CreateString(why));
            continue;
        }
        if (q->status_err != NULL) {
            snprintf(why, sizeof(why), "Queue %s: %s (shown without its status)", q->name,
                     q->status_err);
            cJSON_AddItemToArray(t->warnings, cJSON_CreateString(why));
        }
        t->n++;
    }
    qsort(t->q, t->n, sizeof(*t->q), by_name);
    t->parent = calloc(cap, sizeof(*t->parent));
    t->order = calloc(cap, sizeof(*t->order));
    t->depth = calloc(cap, sizeof(*t->depth));
    t->prefix = calloc(cap, sizeof(*t->prefix));
    t->root = calloc(cap, sizeof(*t->root));
    state = calloc(cap, sizeof(*state));
    first = calloc(cap, sizeof(*first));
    next = calloc(cap, sizeof(*next));
    stack = calloc(cap, sizeof(*stack));
    if (t->parent && t->order && t->depth && t->prefix && t->root && state && first && next &&
        stack) {
        for (size_t i = 0; i < t->n; i++)
            t->parent[i] = find(t, t->q[i].parent);
        find_roots(t, state, stack);
        ok = place(t, first, next, stack);
    }
    free(state);
    free(first);
    free(next);
    free(stack);
    return ok ? EXT_OK : ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
}

/* a + b of two amounts of 0 or more (no overflow: INT64_MAX at most), or -1 (unlimited) when
 * either is. */
static int64_t add_amounts(int64_t a, int64_t b)
{
    if (a < 0 || b < 0)
        return -1;
    return b > INT64_MAX - a ? INT64_MAX : a + b;
}

/* The top of the tree, summed: unlimited if any top-level queue is. */
static void totals(const struct tree *t, struct cli_queue *sum)
{
    memset(sum, 0, sizeof(*sum));
    sum->name = "TOTAL";
    for (size_t i = 0; i < t->n; i++) {
        const struct cli_queue *q = &t->q[i];

        sum->pending_gangs = (int32_t)(add_amounts(sum->pending_gangs, q->pending_gangs) > INT32_MAX
                                           ? INT32_MAX
                                           : sum->pending_gangs + q->pending_gangs);
        sum->has_status = sum->has_status || q->has_status;
        if (!t->root[i])
            continue;
        sum->has_fair_share = sum->has_fair_share || q->has_fair_share;
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            sum->quota.v[r] = add_amounts(sum->quota.v[r], q->quota.v[r]);
            sum->limit.v[r] = add_amounts(sum->limit.v[r], q->limit.v[r]);
            sum->allocated.v[r] = add_amounts(sum->allocated.v[r], q->allocated.v[r]);
            sum->reserved.v[r] = add_amounts(sum->reserved.v[r], q->reserved.v[r]);
            sum->fair_share.v[r] =
                add_amounts(sum->fair_share.v[r], q->has_fair_share ? q->fair_share.v[r] : 0);
            sum->recent_usage[r] += q->recent_usage[r];
            sum->fair_share_plain.v[r] = add_amounts(
                sum->fair_share_plain.v[r], q->has_recent_usage ? q->fair_share_plain.v[r] : 0);
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
    text = ext_json_print(root, true);
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
        char label[1024], prio[16];

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
        fputs("warning: ", out);
        ext_text_put(w->valuestring, out);
        fputc('\n', out);
    }
    return ok;
}

static void tree_cleanup(struct tree *t)
{
    free(t->q);
    free(t->parent);
    free(t->order);
    free(t->depth);
    free(t->prefix);
    free(t->root);
    cJSON_Delete(t->warnings);
    ext_arena_free(t->a);
}

int cli__queues_print(const cJSON *items, bool truncated, const struct cli_opts *o, FILE *out,
                      char *err, size_t errlen)
{
    struct tree t = {.a = ext_arena_new(), .warnings = cJSON_CreateArray()};
    int rc = EXT_ENOMEM, warnings = 0;
    bool ok;

    if (t.a == NULL || t.warnings == NULL) {
        ext_errf(err, errlen, rc, "out of memory");
        goto out;
    }
    rc = read_all(&t, items, err, errlen);
    if (rc == EXT_OK && truncated)
        cJSON_AddItemToArray(t.warnings, cJSON_CreateString("more Queues than are shown"));
    if (rc == EXT_OK) {
        ok = o->output == CLI_OUTPUT_JSON ? print_json(&t, out) : print_text(&t, o->resource, out);
        if (!ok)
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    }
    warnings = rc == EXT_OK ? cJSON_GetArraySize(t.warnings) : 0;
    if (warnings > 0)
        ext_errf(err, errlen, EXT_OK, "not every Queue is shown whole: %d warning%s above",
                 warnings, warnings == 1 ? "" : "s");
out:
    tree_cleanup(&t);
    return warnings > 0 ? CLI_EXIT_PARTIAL : cli__exit_of(rc);
}

int cli_queues(struct kube_client *kube, const struct cli_opts *o, FILE *out, char *err,
               size_t errlen)
{
    cJSON *items = NULL;
    bool truncated;
    int rc;

    rc = cli__list(kube, QUEUES_PATH, &items, &truncated, err, errlen);
    if (rc == EXT_ENOTFOUND)
        ext_errf(err, errlen, rc,
                 "no Queues: the API server does not serve queues.muster.dev (is muster's CRD "
                 "installed? manifests/crd-queue.yaml)");
    if (rc != EXT_OK) {
        cJSON_Delete(items);
        return cli__exit_of(rc);
    }
    rc = cli__queues_print(items, truncated, o, out, err, errlen);
    cJSON_Delete(items);
    return rc;
}
