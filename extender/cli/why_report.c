/*
 * why_report.c - what `muster why` found, as one report: built once as JSON
 * (-o json prints it), and written for a person from that same report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "why.h"

#define EXT_LABEL_KAI_SUBGROUP "kai.scheduler/subgroup-name"
#define EXT_ANNOTATION_VOLCANO_TASK "volcano.sh/task-spec"

static cJSON *str_or_null(const char *s)
{
    return s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* ---- the report ---------------------------------------------------------------------- */

/* The part of its gang a pod is: KubeRay's group, KAI's subgroup, Volcano's task. */
static const char *pod_group(const cJSON *pod)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    const char *g = cli__str(labels, EXT_LABEL_RAY_GROUP);
    char rayjob[600];

    if (g == NULL && kube_pod_rayjob(pod, rayjob, sizeof(rayjob)))
        g = KUBE_RAYJOB_SUBMITTER;
    if (g == NULL)
        g = cli__str(labels, EXT_LABEL_KAI_SUBGROUP);
    if (g == NULL)
        g = cli__str(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
                     EXT_ANNOTATION_VOLCANO_TASK);
    return g;
}

/* "1", "0.5", "0.5x2", "8000MiB", or NULL for a pod without a GPU. */
static cJSON *pod_gpu(struct why *w, const cJSON *pod)
{
    struct policy_pod_spec s;
    char text[64], share[32];
    char err[128];

    if (kube_pod_decode(pod, &kube_decode_defaults, w->a, &s, err, sizeof(err), NULL) != EXT_OK)
        return cJSON_CreateNull();
    if (s.gpus > 0)
        snprintf(text, sizeof(text), "%lld", (long long)s.gpus);
    else if (s.gpu_share_milli > 0 || s.gpu_memory_mib > 0) {
        if (s.gpu_share_milli > 0)
            kube_quantity_format(s.gpu_share_milli, KUBE_QUANTITY_DECIMAL, share, sizeof(share));
        else
            snprintf(share, sizeof(share), "%lldMiB", (long long)s.gpu_memory_mib);
        if (s.gpu_devices > 1)
            snprintf(text, sizeof(text), "%sx%d", share, (int)s.gpu_devices);
        else
            snprintf(text, sizeof(text), "%s", share);
    } else
        return cJSON_CreateNull();
    return cJSON_CreateString(text);
}

static cJSON *pod_json(struct why *w, const cJSON *pod)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const char *node = cli__str(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName");
    const char *group =
        cli__str(cJSON_GetObjectItemCaseSensitive(meta, "annotations"), EXT_ANNOTATION_GPU_GROUP);
    const cJSON *mine = why_pod_entry(w, pod);
    cJSON *o = cJSON_CreateObject();

    cJSON_AddItemToObject(o, "name", str_or_null(cli__str(meta, "name")));
    cJSON_AddItemToObject(o, "group", str_or_null(pod_group(pod)));
    cJSON_AddItemToObject(o, "gpu", pod_gpu(w, pod));
    cJSON_AddStringToObject(o, "state", why_pod_state(w, pod));
    cJSON_AddItemToObject(o, "node", str_or_null(node));
    /* A node muster planned it on, while it is not bound yet. */
    cJSON_AddItemToObject(o, "plannedNode",
                          str_or_null(node == NULL ? cli__str(mine, "node") : NULL));
    cJSON_AddItemToObject(o, "gpuGroup",
                          str_or_null(group != NULL ? group : cli__str(mine, "gpuGroups")));
    cJSON_AddItemToObject(o, "reason", str_or_null(cli__str(mine, "reason")));
    return o;
}

static cJSON *event_json(const cJSON *e)
{
    const cJSON *io = cJSON_GetObjectItemCaseSensitive(e, "involvedObject");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(e, "count");
    int64_t t = why_event_time(e);
    cJSON *o = cJSON_CreateObject();
    char when[32] = "", what[600];

    if (t >= 0) {
        time_t tt = (time_t)t;
        struct tm tm;

        gmtime_r(&tt, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    snprintf(what, sizeof(what), "%s/%s", cli__str(io, "kind") ? cli__str(io, "kind") : "?",
             cli__str(io, "name") ? cli__str(io, "name") : "?");
    cJSON_AddItemToObject(o, "time", str_or_null(t >= 0 ? when : NULL));
    cJSON_AddStringToObject(o, "object", what);
    cJSON_AddItemToObject(o, "source", str_or_null(why_event_writer(e)));
    cJSON_AddItemToObject(o, "type", str_or_null(cli__str(e, "type")));
    cJSON_AddItemToObject(o, "reason", str_or_null(cli__str(e, "reason")));
    cJSON_AddItemToObject(o, "message", str_or_null(cli__str(e, "message")));
    cJSON_AddNumberToObject(o, "count", cJSON_IsNumber(count) ? count->valuedouble : 1);
    return o;
}

static cJSON *queue_json(const struct why *w)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "name", w->queue_name);
    cJSON_AddBoolToObject(o, "exists", w->have_queue);
    if (!w->have_queue) {
        cJSON_AddItemToObject(o, "error", str_or_null(w->queue_err[0] ? w->queue_err : NULL));
        return o;
    }
    cJSON_AddItemToObject(o, "parent", str_or_null(w->queue.parent));
    cJSON_AddItemToObject(o, "statusError", str_or_null(w->queue.status_err));
    cJSON_AddNumberToObject(o, "priority", w->queue.priority);
    if (w->queue.has_status)
        cJSON_AddNumberToObject(o, "pendingGangs", w->queue.pending_gangs);
    else
        cJSON_AddNullToObject(o, "pendingGangs");
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        cJSON_AddItemToObject(o, policy_resource_name(r), cli__queue_amounts_json(&w->queue, r));
    return o;
}

/* Its state: muster's when asked, else counted from its pods. */
static const char *gang_state(const struct why *w)
{
    const char *s = cli__str(w->state_gang, "state");

    if (s != NULL)
        return s;
    if (w->lone)
        return w->pods != NULL && cJSON_GetArraySize(w->pods) > 0
                   ? why_pod_state(w, cJSON_GetArrayItem(w->pods, 0))
                   : "Pending";
    return policy_gang_state_name(w->have_view ? w->view.state : POLICY_GANG_PENDING);
}

static void add_counts(const struct why *w, cJSON *o)
{
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(w->state_gang, "waitingAtBind");
    int32_t min = w->have_view ? w->view.min_members : w->spec.min_members;

    cJSON_AddNumberToObject(o, "minMembers", w->lone ? 1 : min);
    cJSON_AddNumberToObject(o, "members", w->have_view ? w->view.members : 0);
    cJSON_AddNumberToObject(o, "bound", w->bound);
    /* muster's word, through --muster-url: a count, or nothing (a double past int32 has no int) */
    if (cJSON_IsNumber(waiting) && waiting->valuedouble >= 0 && waiting->valuedouble <= INT32_MAX &&
        waiting->valuedouble == (double)(int32_t)waiting->valuedouble)
        cJSON_AddNumberToObject(o, "waitingAtBind", waiting->valuedouble);
    else
        cJSON_AddNullToObject(o, "waitingAtBind");
    cJSON_AddItemToObject(o, "composition",
                          str_or_null(w->have_view && w->view.composition && *w->view.composition
                                          ? w->view.composition
                                          : NULL));
    cJSON_AddItemToObject(o, "conflict", str_or_null(w->have_view ? w->view.conflict : NULL));
    /* What it asks, from its objects; where it is, from muster (--muster-url): node labels and
     * Topologies are muster's to read. */
    cJSON_AddItemToObject(o, "topology", str_or_null(w->have_view ? w->view.topology : NULL));
    cJSON_AddItemToObject(o, "domain", str_or_null(cli__str(w->state_gang, "domain")));
}

/* {"resource": "gpu", "recentUsage": 0.62, "fairShare": "3", "fairShareWithoutRecentUsage": "5",
 *  "gangNeeds": "2"}, or null. */
static cJSON *used_lately_json(const struct why *w)
{
    const struct cli_queue *q = &w->queue;
    int r = w->used_lately;
    char text[64];
    cJSON *o;

    if (r < 0)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "resource", policy_resource_name(r));
    cJSON_AddNumberToObject(o, "recentUsage", q->recent_usage[r]);
    cli__amount(q->fair_share.v[r], r, text, sizeof(text));
    cJSON_AddStringToObject(o, "fairShare", text);
    cli__amount(q->fair_share_plain.v[r], r, text, sizeof(text));
    cJSON_AddStringToObject(o, "fairShareWithoutRecentUsage", text);
    cli__amount(w->need, r, text, sizeof(text));
    cJSON_AddStringToObject(o, "gangNeeds", text);
    return o;
}

static cJSON *report_json(struct why *w)
{
    cJSON *o = cJSON_CreateObject(), *pods, *events, *muster;
    const cJSON *p;
    char declared[600];
    int skip;

    cJSON_AddStringToObject(o, "kind", w->kind);
    cJSON_AddStringToObject(o, "namespace", w->ns);
    cJSON_AddStringToObject(o, "name", w->name);
    cJSON_AddItemToObject(o, "gang", str_or_null(w->lone ? NULL : w->key));
    snprintf(declared, sizeof(declared), "%s %s/%s", w->gang_kind ? w->gang_kind : "", w->ns,
             w->gang_name ? w->gang_name : "");
    cJSON_AddItemToObject(o, "declaredBy", str_or_null(w->gang_kind ? declared : NULL));
    cJSON_AddStringToObject(o, "state", gang_state(w));
    /* The RayJob or RayService whose cluster the gang is, and what KubeRay's objects say. */
    cJSON_AddItemToObject(o, "owner", str_or_null(w->owner));
    cJSON_AddItemToObject(o, "kuberay", w->notes ? cJSON_Duplicate(w->notes, true)
                                                 : cJSON_CreateArray());
    add_counts(w, o);
    cJSON_AddItemToObject(o, "reason", str_or_null(w->reason));
    cJSON_AddItemToObject(o, "reasonFrom", str_or_null(w->reason_from));
    cJSON_AddItemToObject(o, "queue", queue_json(w));
    cJSON_AddItemToObject(o, "usedMoreLately", used_lately_json(w));
    pods = cJSON_AddArrayToObject(o, "pods");
    cJSON_ArrayForEach(p, w->pods)
    {
        cJSON_AddItemToArray(pods, pod_json(w, p));
    }
    /* The newest o->events of them; the reason was looked for in all. */
    events = cJSON_AddArrayToObject(o, "events");
    skip = cJSON_GetArraySize(w->events) - (int)w->o->events;
    cJSON_ArrayForEach(p, w->events)
    {
        if (skip-- <= 0)
            cJSON_AddItemToArray(events, event_json(p));
    }
    cJSON_AddNumberToObject(o, "eventsAbout", cJSON_GetArraySize(w->events));
    cJSON_AddItemToObject(o, "eventsError", str_or_null(w->events_err[0] ? w->events_err : NULL));
    /* The namespace held more than CLI_MAX_ITEMS pods or Events: only those were looked at. */
    cJSON_AddBoolToObject(o, "podsCut", w->pods_cut);
    cJSON_AddBoolToObject(o, "eventsCut", w->events_cut);
    muster = cJSON_AddObjectToObject(o, "muster");
    cJSON_AddBoolToObject(muster, "asked", w->o->muster != NULL);
    cJSON_AddItemToObject(muster, "url",
                          str_or_null(w->o->muster ? kube_client_server(w->o->muster) : NULL));
    cJSON_AddItemToObject(muster, "error", str_or_null(w->state_err[0] ? w->state_err : NULL));
    cJSON_AddBoolToObject(muster, "knowsGang", w->state_gang != NULL);
    return o;
}

/* ---- for a person ---------------------------------------------------------------------- */

static const char *s_of(const cJSON *o, const char *key)
{
    const char *s = cli__str(o, key);

    return s != NULL ? s : "-";
}

static int num_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
}

/* "team-a: GPU 1 allocated, 0 reserved; quota 2, limit 3, fair share 2; 1 pending gang" */
static void print_queue(const cJSON *q, FILE *out)
{
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(q, "gpu");
    const cJSON *pending = cJSON_GetObjectItemCaseSensitive(q, "pendingGangs");
    const char *limit = s_of(gpu, "limit"), *quota = s_of(gpu, "quota");

    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "exists"))) {
        if (cli__str(q, "error") != NULL)
            fprintf(out, "%s (cannot read it: %s)\n", s_of(q, "name"), cli__str(q, "error"));
        else if (strcmp(s_of(q, "name"), "default") == 0)
            fprintf(out, "default (no Queue object: muster's default queue, no quota or limit)\n");
        else
            fprintf(out,
                    "%s: no such Queue (muster plans no gang of a queue that does not "
                    "exist)\n",
                    s_of(q, "name"));
        return;
    }
    fprintf(out, "%s: ", s_of(q, "name"));
    if (cli__str(q, "statusError") != NULL)
        fprintf(out, "status cannot be read (%s); ", cli__str(q, "statusError"));
    else if (cJSON_IsNumber(pending))
        fprintf(out, "GPU %s allocated, %s reserved; ", s_of(gpu, "allocated"),
                s_of(gpu, "reserved"));
    else
        fprintf(out, "no status written yet; ");
    fprintf(out, "quota %s, limit %s, fair share %s",
            strcmp(quota, "-1") == 0 ? "unlimited" : quota,
            strcmp(limit, "-1") == 0 ? "unlimited" : limit, s_of(gpu, "fairShare"));
    if (cJSON_IsNumber(pending))
        fprintf(out, "; %d pending gang%s", (int)pending->valuedouble,
                pending->valuedouble == 1 ? "" : "s");
    fputc('\n', out);
}

/* What KubeRay's RayJob or RayService says, a line each. */
static void print_kuberay(const cJSON *r, FILE *out)
{
    const cJSON *line;
    bool first = true;

    cJSON_ArrayForEach(line, cJSON_GetObjectItemCaseSensitive(r, "kuberay"))
    {
        if (cJSON_IsString(line))
            fprintf(out, "%-14s%s\n", first ? "KubeRay:" : "", line->valuestring);
        first = false;
    }
}

/* "Used lately: team-a used 62% of the cluster's GPUs lately: its fair share is 3 GPUs, 5 if that
 * did not count, and the gang needs 2 more: queues that used less go first ..." */
static void print_used_lately(const cJSON *u, const char *queue, FILE *out)
{
    const cJSON *use = cJSON_GetObjectItemCaseSensitive(u, "recentUsage");
    const char *res = s_of(u, "resource");
    char pct[32];

    if (!cJSON_IsObject(u))
        return;
    cli__usage_text(cJSON_IsNumber(use) ? use->valuedouble : 0, pct, sizeof(pct));
    fprintf(out,
            "%-14s%s used %s of the cluster's %s lately: its fair share is %s, %s if that did "
            "not count, and the gang needs %s more. Queues that used less go first and may take "
            "room back (fair over time, docs/quota.md).\n",
            "Used lately:", queue, pct, strcmp(res, "gpu") == 0 ? "GPUs" : res,
            s_of(u, "fairShare"), s_of(u, "fairShareWithoutRecentUsage"), s_of(u, "gangNeeds"));
}

static void print_head(const struct why *w, const cJSON *r, FILE *out)
{
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(r, "waitingAtBind");
    const char *ns = s_of(r, "namespace"), *name = s_of(r, "name"), *gang = s_of(r, "gang");

    if (w->lone)
        fprintf(out, "Pod %s/%s (a pod of its own, in no gang)\n", ns, name);
    else if (strcmp(w->kind, "Pod") == 0)
        fprintf(out, "Pod %s/%s, of gang %s%s%s\n", ns, name, gang,
                w->gang_kind ? " declared by " : " (no RayCluster or PodGroup declares it)",
                w->gang_kind ? s_of(r, "declaredBy") : "");
    else
        fprintf(out, "%s %s/%s\n", s_of(r, "kind"), ns, name);
    print_kuberay(r, out);
    fprintf(out, "%-14s%s", w->lone ? "State:" : "Gang:", s_of(r, "state"));
    if (!w->lone)
        fprintf(out, ", %d of %d pods bound, minimum %d", num_of(r, "bound"), num_of(r, "members"),
                num_of(r, "minMembers"));
    if (cJSON_IsNumber(waiting) && waiting->valuedouble > 0)
        fprintf(out, ", %d waiting at the bind barrier", (int)waiting->valuedouble);
    fputc('\n', out);
    if (cli__str(r, "composition") != NULL)
        fprintf(out, "%-14s%s\n", "Composition:", cli__str(r, "composition"));
    if (cli__str(r, "conflict") != NULL)
        fprintf(out, "%-14s%s\n", "Conflict:", cli__str(r, "conflict"));
    if (cli__str(r, "topology") != NULL)
        fprintf(out, "%-14s%s\n", "Topology:", cli__str(r, "topology"));
    if (cli__str(r, "domain") != NULL)
        fprintf(out, "%-14s%s\n", "Domain:", cli__str(r, "domain"));
    if (cli__str(r, "reason") != NULL) {
        fprintf(out, "%-14s%s\n", "Why:", cli__str(r, "reason"));
        fprintf(out, "%-14s(%s)\n", "", s_of(r, "reasonFrom"));
    }
    fprintf(out, "%-14s", "Queue:");
    print_queue(cJSON_GetObjectItemCaseSensitive(r, "queue"), out);
    print_used_lately(cJSON_GetObjectItemCaseSensitive(r, "usedMoreLately"),
                      s_of(cJSON_GetObjectItemCaseSensitive(r, "queue"), "name"), out);
}

static bool print_pods(const struct why *w, const cJSON *r, FILE *out)
{
    static const char *const head[] = {"NAME", "GROUP", "GPU", "STATE", "NODE", "GPU GROUP"};
    const cJSON *p;
    struct cli_table t;
    bool ok;

    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "pods")) == 0) {
        fprintf(out, "\nPODS: none yet\n");
        return true;
    }
    cli__table_init(&t, w->a, 6);
    for (size_t i = 0; i < 6; i++)
        cli__table_add(&t, head[i]);
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "pods"))
    {
        cli__table_add(&t, cli__str(p, "name"));
        cli__table_add(&t, cli__str(p, "group"));
        cli__table_add(&t, cli__str(p, "gpu") ? cli__str(p, "gpu") : "-");
        cli__table_add(&t, cli__str(p, "state"));
        if (cli__str(p, "plannedNode") != NULL)
            cli__table_addf(&t, "%s (planned)", cli__str(p, "plannedNode"));
        else
            cli__table_add(&t, cli__str(p, "node"));
        cli__table_add(&t, cli__str(p, "gpuGroup"));
    }
    fprintf(out, "\nPODS\n");
    cli__table_print(&t, out);
    ok = !t.oom;
    cli__table_cleanup(&t);
    return ok;
}

static bool print_events(const struct why *w, const cJSON *r, FILE *out)
{
    static const char *const head[] = {"AGE", "OBJECT", "SOURCE", "TYPE", "REASON", "MESSAGE"};
    const cJSON *e;
    struct cli_table t;
    int shown;
    bool ok;

    if (cli__str(r, "eventsError") != NULL) {
        fprintf(out, "\nEVENTS: cannot list them: %s\n", cli__str(r, "eventsError"));
        return true;
    }
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "events")) == 0) {
        fprintf(out, "\nEVENTS: none\n");
        return true;
    }
    cli__table_init(&t, w->a, 6);
    for (size_t i = 0; i < 6; i++)
        cli__table_add(&t, head[i]);
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "events"))
    {
        char age[32];

        cli__age(w->o->now, cli__time(cli__str(e, "time")), age, sizeof(age));
        cli__table_add(&t, age);
        cli__table_add(&t, cli__str(e, "object"));
        cli__table_add(&t, cli__str(e, "source"));
        cli__table_add(&t, cli__str(e, "type"));
        cli__table_add(&t, cli__str(e, "reason"));
        cli__table_add(&t, cli__str(e, "message"));
    }
    shown = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "events"));
    if (shown < num_of(r, "eventsAbout"))
        fprintf(out, "\nEVENTS (the newest %d of %d)\n", shown, num_of(r, "eventsAbout"));
    else
        fprintf(out, "\nEVENTS\n");
    cli__table_print(&t, out);
    ok = !t.oom;
    cli__table_cleanup(&t);
    return ok;
}

static void print_source(const struct why *w, const cJSON *r, FILE *out)
{
    const cJSON *muster = cJSON_GetObjectItemCaseSensitive(r, "muster");

    if (w->pods_cut || w->events_cut)
        fprintf(out, "\nThe namespace holds more than %d %s: only the first %d were read.\n",
                CLI_MAX_ITEMS,
                w->pods_cut && w->events_cut ? "pods and Events"
                : w->pods_cut                ? "pods"
                                             : "Events",
                CLI_MAX_ITEMS);
    if (w->o->muster == NULL)
        fprintf(out, "\nRead from the Kubernetes objects. What only muster holds (a plan, a bind "
                     "held at the gang's barrier) needs --muster-url.\n");
    else if (w->state_err[0])
        fprintf(out, "\nRead from the Kubernetes objects; muster could not be asked: %s\n",
                s_of(muster, "error"));
    else if (w->state_gang == NULL)
        fprintf(out,
                "\nRead from the Kubernetes objects; muster at %s does not know this gang "
                "(a standby replica, or no pod of it reached muster yet).\n",
                s_of(muster, "url"));
    else
        fprintf(out, "\nRead from the Kubernetes objects and muster's /debug/state at %s.\n",
                s_of(muster, "url"));
}

/*
 * Every string of the report escaped for the terminal (ext_text_escape), once, before any is
 * printed: names, groups, reasons and Event messages are the cluster's words. The report is
 * muster's own shape, a few levels deep; its strings are what the cluster holds.
 */
static bool escape_report(cJSON *j)
{
    cJSON *e;

    cJSON_ArrayForEach(e, j)
    {
        size_t len;
        char *safe;
        bool ok;

        if (cJSON_IsObject(e) || cJSON_IsArray(e)) {
            if (!escape_report(e))
                return false;
            continue;
        }
        if (!cJSON_IsString(e))
            continue;
        len = ext_text_escape(e->valuestring, NULL);
        if (len == strlen(e->valuestring))
            continue; /* nothing to escape: escaping never shortens */
        safe = malloc(len + 1);
        if (safe == NULL)
            return false;
        ext_text_escape(e->valuestring, safe);
        ok = cJSON_SetValuestring(e, safe) != NULL;
        free(safe);
        if (!ok)
            return false;
    }
    return true;
}

/* The text, all of it or nothing: written to memory first. */
static bool print_text(struct why *w, cJSON *r, FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    bool ok;

    if (m == NULL)
        return false;
    if (!escape_report(r)) {
        fclose(m);
        free(text);
        return false;
    }
    print_head(w, r, m);
    ok = print_pods(w, r, m) && print_events(w, r, m);
    print_source(w, r, m);
    ok = fclose(m) == 0 && ok;
    if (ok)
        fwrite(text, 1, len, out);
    free(text);
    return ok;
}

bool why_report(struct why *w, FILE *out)
{
    cJSON *r = report_json(w);
    char *text;
    bool ok;

    if (r == NULL)
        return false;
    if (w->o->output == CLI_OUTPUT_TEXT) {
        ok = print_text(w, r, out);
        cJSON_Delete(r);
        return ok;
    }
    text = ext_json_print(r, true);
    cJSON_Delete(r);
    if (text == NULL)
        return false;
    fprintf(out, "%s\n", text);
    free(text);
    return true;
}
