/*
 * test_cli.c - `muster queues` and `muster why` (extender/cli) against the
 * canned API server: the replies are fixture files (fixtures/cli, NAME.http),
 * what the commands print is compared with NAME.txt and NAME.json there
 * exactly, and the requests they make with NAME.req. The clock is fixed, so
 * Event ages are too. Then the binary itself: exit 2 when the cluster cannot
 * be reached, and the kubectl-muster name.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "canned_api.h"
#include "cli.h"
#include "cli_int.h"
#include "fixture.h"

#define DIR "cli"
#define NOW INT64_C(1764590400) /* 2025-12-01T12:00:00Z */

static const struct cli_opts text_opts = {
    .output = CLI_OUTPUT_TEXT, .now = NOW, .resource = POLICY_RES_GPU, .events = 10};

/* What one command printed, its status and its error. */
struct result {
    int rc;
    char *out;
    size_t len;
    char err[1024];
};

/* Compares with FIXTURES/cli/want; a difference leaves what was printed in /tmp to look at. */
static void expect_output(const struct result *r, const char *want_file)
{
    char *want = fixture_read(DIR, want_file, NULL), path[256];
    FILE *f;

    if (strcmp(r->out, want) != 0) {
        snprintf(path, sizeof(path), "/tmp/test_cli.%s", want_file);
        f = fopen(path, "w");
        if (f != NULL) {
            fputs(r->out, f);
            fclose(f);
        }
        fprintf(stderr, "--- %s differs; got (also in %s):\n%s", want_file, path, r->out);
    }
    ck_assert_msg(strcmp(r->out, want) == 0, "%s: output differs (see stderr)", want_file);
    free(want);
}

/* Nothing in out acts on a terminal: no control byte but the printer's own newlines (and the
 * tabs cJSON indents with), no C1 control (U+0080..U+009F as UTF-8). */
static void expect_terminal_safe(const char *out, bool json)
{
    for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
        ck_assert_msg((*p >= 0x20 && *p != 0x7f) || *p == '\n' || (json && *p == '\t'),
                      "byte 0x%02x at %td of:\n%s", *p, (const char *)p - out, out);
        ck_assert_msg(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "C1 control at %td of:\n%s",
                      (const char *)p - out, out);
    }
}

/* The canned server's port, which changes every run, as PORT. */
static void hide_port(struct result *r, int port)
{
    char from[64], *at;

    snprintf(from, sizeof(from), "127.0.0.1:%d", port);
    while ((at = strstr(r->out, from)) != NULL) {
        memcpy(at + 10, "PORT", 4);
        memmove(at + 14, at + strlen(from), strlen(at + strlen(from)) + 1);
    }
    r->len = strlen(r->out);
}

static void queues(struct kube_client *kube, const struct cli_opts *o, struct result *r)
{
    FILE *m = open_memstream(&r->out, &r->len);

    ck_assert_ptr_nonnull(m);
    r->err[0] = '\0';
    r->rc = cli_queues(kube, o, m, r->err, sizeof(r->err));
    fclose(m);
}

/* `muster queues` against a canned API server that answers every request with reply. */
static void queues_on(const char *reply, const struct cli_opts *o, struct result *r)
{
    const char *script[] = {reply};
    struct canned_api api;
    struct kube_client *kube;

    canned_api_start(&api, DIR, script, 1);
    kube = canned_api_client(&api, NULL);
    queues(kube, o, r);
    kube_client_free(kube);
    canned_api_stop(&api);
}

static void why(struct kube_client *kube, const struct cli_opts *o, const char *name,
                struct result *r)
{
    FILE *m = open_memstream(&r->out, &r->len);

    ck_assert_ptr_nonnull(m);
    r->err[0] = '\0';
    r->rc = cli_why(kube, o, "lab", name, m, r->err, sizeof(r->err));
    fclose(m);
}

/* ---- muster queues ------------------------------------------------------------------ */

static const char *const queue_pages[] = {"queues_page1.http", "queues_page2.http"};

static const struct {
    enum cli_output output;
    enum policy_resource resource;
    const char *want;
} queues_cases[] = {
    {CLI_OUTPUT_TEXT, POLICY_RES_GPU, "queues.txt"},
    {CLI_OUTPUT_TEXT, POLICY_RES_CPU, "queues_cpu.txt"},
    {CLI_OUTPUT_JSON, POLICY_RES_GPU, "queues.json"},
};

/* Both pages read (the continue token escaped), the tree drawn with its totals. */
START_TEST(test_queues)
{
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    o.output = queues_cases[_i].output;
    o.resource = queues_cases[_i].resource;
    canned_api_start(&api, DIR, queue_pages, 2);
    kube = canned_api_client(&api, NULL);
    queues(kube, &o, &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, queues_cases[_i].want);
    canned_api_expect(&api, "queues.req", 2);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A parentQueue, a name and a bad field full of escape sequences and forged lines (Kubernetes
 * does not validate them): the text shows them escaped, the JSON as JSON escapes. Failed before
 * the text was escaped (issue 21). */
START_TEST(test_queues_hostile)
{
    struct cli_opts o = text_opts;
    struct result r;
    const cJSON *q;
    cJSON *j;

    o.output = _i == 0 ? CLI_OUTPUT_TEXT : CLI_OUTPUT_JSON;
    queues_on("queues_hostile.http", &o, &r);
    ck_assert_msg(r.rc == CLI_EXIT_PARTIAL, "%d: %s", r.rc, r.err); /* two Queues unreadable */
    expect_terminal_safe(r.out, _i == 1);
    if (_i == 0) {
        expect_output(&r, "queues_hostile.txt");
    } else {
        j = cJSON_Parse(r.out);
        ck_assert_ptr_nonnull(j);
        q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "queues"), 0);
        ck_assert_str_eq(cli__str(q, "parent"),
                         "gone\x1b]0;pwned\x07\r\nTOTAL                                 999");
        cJSON_Delete(j);
    }
    free(r.out);
}
END_TEST

/* Each failure its own exit status and message (issue 21): a reply that is not JSON read as
 * "cannot reach the cluster" (2), a refusal as 1, and continue tokens were followed without end. */
static const struct {
    const char *reply;
    int rc;
    const char *err;
} failure_cases[] = {
    {"notfound.http", CLI_EXIT_NOT_FOUND,
     "no Queues: the API server does not serve queues.muster.dev (is muster's CRD installed? "
     "manifests/crd-queue.yaml)"},
    {"not_json.http", CLI_EXIT_BAD_REPLY,
     "GET /apis/muster.dev/v1alpha1/queues?limit=500: reply is not JSON"},
    {"forbidden.http", CLI_EXIT_REFUSED,
     "GET /apis/muster.dev/v1alpha1/queues?limit=500: HTTP 403 Forbidden: events is forbidden: "},
    {"queues_endless.http", CLI_EXIT_BAD_REPLY,
     "GET /apis/muster.dev/v1alpha1/queues: more than 100 pages (the API server keeps sending "
     "continue tokens)"},
};

START_TEST(test_queues_failures)
{
    struct result r;

    queues_on(failure_cases[_i].reply, &text_opts, &r);
    ck_assert_msg(r.rc == failure_cases[_i].rc, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strncmp(r.err, failure_cases[_i].err, strlen(failure_cases[_i].err)) == 0, "%s",
                  r.err);
    ck_assert_uint_eq(r.len, 0);
    free(r.out);
}
END_TEST

/* Status values muster would not write: pendingGangs 1e300 (a float-to-int conversion out of
 * range: undefined behaviour), 2.5 and -3; allocated -1 (printed "unlimited") and "lots". The
 * Queue is shown without its status, a warning names the field, the exit status says some of it
 * could not be read. Failed before (issue 21). A recentUsage of 1e300 (fair over time, which is
 * U' of 0 to 10) is shown as none, the rest of that status stands; a good one as a percentage. */
START_TEST(test_queues_bad_status)
{
    struct cli_opts o = text_opts;
    struct result r;
    const cJSON *q;
    cJSON *j;

    o.output = _i == 0 ? CLI_OUTPUT_TEXT : CLI_OUTPUT_JSON;
    queues_on("queues_bad_status.http", &o, &r);
    ck_assert_msg(r.rc == CLI_EXIT_PARTIAL, "exit %d: %s", r.rc, r.err);
    if (_i == 0) {
        expect_output(&r, "queues_bad_status.txt");
    } else {
        j = cJSON_Parse(r.out);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "warnings")), 5);
        q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "queues"), 2); /* "huge" */
        ck_assert_str_eq(cli__str(q, "name"), "huge");
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(q, "pendingGangs")));
        q = cJSON_GetObjectItem(j, "total");
        ck_assert_int_eq((int)cJSON_GetObjectItem(q, "pendingGangs")->valuedouble, 2);
        cJSON_Delete(j);
    }
    free(r.out);
}
END_TEST

/* A Queue named name under parent (NULL: none), GPU quota 1, as the API server lists it. */
static cJSON *queue_item(const char *name, const char *parent)
{
    cJSON *q = cJSON_CreateObject(), *spec;

    cJSON_AddStringToObject(q, "apiVersion", "muster.dev/v1alpha1");
    cJSON_AddStringToObject(q, "kind", "Queue");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(q, "metadata"), "name", name);
    spec = cJSON_AddObjectToObject(q, "spec");
    if (parent != NULL)
        cJSON_AddStringToObject(spec, "parentQueue", parent);
    cJSON_AddNumberToObject(
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"), "gpu"), "quota", 1);
    return q;
}

/* The depth the JSON gives each queue, by name. */
static int depth_of(const cJSON *list, const char *name)
{
    const cJSON *q;

    cJSON_ArrayForEach(q, list)
    {
        if (strcmp(cli__str(q, "name"), name) == 0)
            return (int)cJSON_GetObjectItem(q, "depth")->valuedouble;
    }
    return -1;
}

#define DEEP 8000

/* "c%05d" ascending with the depth (case 0), or descending (case 1: a parent sorts after its
 * children, so name order is not tree order). */
static void chain_name(char *buf, size_t len, int k, int loop)
{
    snprintf(buf, len, "c%05d", loop == 0 ? k : DEEP - 1 - k);
}

/* A chain of 8,000 Queues: drawn whole, each at its depth, without recursion. Failed before
 * (issue 21): the recursion overflowed the stack (SIGSEGV), after walking every chain from every
 * queue (quadratic). */
START_TEST(test_queues_deep_chain)
{
    struct cli_opts o = text_opts;
    cJSON *items = cJSON_CreateArray(), *j;
    char name[16], parent[16], err[256], *text = NULL;
    size_t len = 0, lines = 0;
    FILE *m;

    for (int k = 0; k < DEEP; k++) {
        chain_name(name, sizeof(name), k, _i);
        chain_name(parent, sizeof(parent), k - 1, _i);
        cJSON_AddItemToArray(items, queue_item(name, k > 0 ? parent : NULL));
    }
    o.output = CLI_OUTPUT_JSON;
    m = open_memstream(&text, &len);
    ck_assert_int_eq(cli__queues_print(items, false, &o, m, err, sizeof(err)), EXT_OK);
    fclose(m);
    j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "queues")), DEEP);
    for (int k = 0; k < DEEP; k++) { /* depth first: the chain in its order */
        const cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "queues"), k);

        chain_name(name, sizeof(name), k, _i);
        ck_assert_str_eq(cli__str(q, "name"), name);
        ck_assert_int_eq((int)cJSON_GetObjectItem(q, "depth")->valuedouble, k);
    }
    ck_assert_str_eq(cli__str(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "total"), "gpu"), "quota"),
                     "1"); /* the top's only */
    cJSON_Delete(j);
    free(text);
    o.output = CLI_OUTPUT_TEXT;
    m = open_memstream(&text, &len);
    ck_assert_int_eq(cli__queues_print(items, false, &o, m, err, sizeof(err)), EXT_OK);
    fclose(m);
    for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    ck_assert_uint_eq(lines, 1 + DEEP + 1 + 2); /* head, queues, TOTAL, the "-" note */
    chain_name(name, sizeof(name), DEEP - 1, _i);
    snprintf(parent, sizeof(parent), "\n%*s", 3 * 23, "");
    ck_assert_ptr_nonnull(strstr(text, parent)); /* 23 levels drawn, then the rest elided */
    snprintf(err, sizeof(err), "… 7999 └─ %s ", name);
    ck_assert_ptr_nonnull(strstr(text, err));
    free(text);
    cJSON_Delete(items);
}
END_TEST

/* Loops of parentQueue: a queue its own parent, a loop of 5,000 with a tail of 3,000 hanging from
 * it. Every queue on a loop is drawn at the top ("in a loop"); the tail beneath it, each at its
 * depth (before, every queue walked its whole chain: about 10 s for these, quadratic). */
START_TEST(test_queues_loops)
{
    static const int loop = 5000, tail = 3000;
    struct cli_opts o = text_opts;
    cJSON *items = cJSON_CreateArray(), *j, *list;
    char name[16], parent[16], err[256], *text = NULL;
    size_t len = 0;
    FILE *m;

    cJSON_AddItemToArray(items, queue_item("self", "self"));
    for (int k = 0; k < loop; k++) {
        snprintf(name, sizeof(name), "l%04d", k);
        snprintf(parent, sizeof(parent), "l%04d", (k + 1) % loop);
        cJSON_AddItemToArray(items, queue_item(name, parent));
    }
    for (int k = 0; k < tail; k++) {
        snprintf(name, sizeof(name), "t%04d", k);
        snprintf(parent, sizeof(parent), k == 0 ? "l2500" : "t%04d", k - 1);
        cJSON_AddItemToArray(items, queue_item(name, parent));
    }
    o.output = CLI_OUTPUT_JSON;
    m = open_memstream(&text, &len);
    ck_assert_int_eq(cli__queues_print(items, false, &o, m, err, sizeof(err)), EXT_OK);
    fclose(m);
    j = cJSON_Parse(text);
    list = cJSON_GetObjectItem(j, "queues");
    ck_assert_int_eq(cJSON_GetArraySize(list), 1 + loop + tail);
    ck_assert_int_eq(depth_of(list, "self"), 0);
    ck_assert_int_eq(depth_of(list, "l0000"), 0);
    ck_assert_int_eq(depth_of(list, "l4999"), 0);
    ck_assert_int_eq(depth_of(list, "t0000"), 1);
    ck_assert_int_eq(depth_of(list, "t2999"), tail);
    /* the top: the 5,001 queues on loops, each quota 1 */
    ck_assert_str_eq(cli__str(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "total"), "gpu"), "quota"),
                     "5001");
    cJSON_Delete(j);
    free(text);
    o.output = CLI_OUTPUT_TEXT;
    m = open_memstream(&text, &len);
    ck_assert_int_eq(cli__queues_print(items, false, &o, m, err, sizeof(err)), EXT_OK);
    fclose(m);
    ck_assert_ptr_nonnull(strstr(text, "\nself (parent self in a loop)   "));
    ck_assert_ptr_nonnull(strstr(text, "\nl2500 (parent l2501 in a loop)   "));
    ck_assert_ptr_nonnull(strstr(text, "\nl2501 (parent l2502 in a loop)   "));
    ck_assert_ptr_nonnull(strstr(text, "\n└─ t0000   "));
    free(text);
    cJSON_Delete(items);
}
END_TEST

/* ---- muster why --------------------------------------------------------------------- */

static const char *const waiting_script[] = {"raycluster_demo.http", "pods.http", "events.http",
                                             "queue_team_a.http"};

static const struct {
    enum cli_output output;
    const char *want;
} waiting_cases[] = {
    {CLI_OUTPUT_TEXT, "why_waiting.txt"},
    {CLI_OUTPUT_JSON, "why_waiting.json"},
};

/* A RayCluster whose gang waits over its queue's limit: muster's own Event gives the reason. */
START_TEST(test_why_waiting)
{
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    o.output = waiting_cases[_i].output;
    canned_api_start(&api, DIR, waiting_script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, waiting_cases[_i].want);
    canned_api_expect(&api, "why.req", 4);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/*
 * Fair over time: team-a holds 3 GPUs, its gang needs 2.5 more; its fair share is 5, 6 if its
 * recent use (62% of the cluster's GPUs) did not count: it waits because it used more lately.
 * With a share that ignores usage of 5 too (usage is not why), or once bound, nothing is said.
 */
static const struct {
    const char *queue;
    bool said;
} used_cases[] = {
    {"queue_team_a_used.http", true},
    {"queue_team_a.http", false},
};

START_TEST(test_why_used_lately)
{
    const char *script[] = {"raycluster_demo.http", "pods.http", "events_none.http",
                            used_cases[_i].queue};
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_OK);
    if (used_cases[_i].said)
        ck_assert_msg(strstr(r.out, "Used lately:  team-a used 62% of the cluster's GPUs lately: "
                                    "its fair share is 5, 6 if that did not count, and the gang "
                                    "needs 2.5 more. Queues that used less go first and may take "
                                    "room back (fair over time, docs/quota.md).\n") != NULL,
                      "%s", r.out);
    else
        ck_assert_msg(strstr(r.out, "Used lately:") == NULL, "%s", r.out);
    free(r.out);
    canned_api_stop(&api);
    canned_api_start(&api, DIR, script, 4);
    kube_client_free(kube);
    kube = canned_api_client(&api, NULL);
    o.output = CLI_OUTPUT_JSON;
    why(kube, &o, "demo", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_OK);
    ck_assert_msg((strstr(r.out, "\"usedMoreLately\":\t{\n\t\t\"resource\":\t\"gpu\",\n\t\t\"recentUsage\":\t0.6183") != NULL) ==
                      used_cases[_i].said,
                  "%s", r.out);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* --events 1: the newest one only; the reason is still muster's own, from all of them. */
START_TEST(test_why_events_cap)
{
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    o.events = 1;
    canned_api_start(&api, DIR, waiting_script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "EVENTS (the newest 1 of 4)\n"));
    ck_assert_ptr_nonnull(
        strstr(r.out, "\n5s    Pod/demo-gpu-worker-4tq9z   muster   Warning   FailedScheduling"));
    ck_assert_ptr_null(strstr(r.out, "GangWaiting   queue"));
    ck_assert_ptr_nonnull(
        strstr(r.out, "(muster's Event GangWaiting on Pod demo-head-x7k2p, 12s ago)"));
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* Where the reason comes from when muster posted none: kube-scheduler's Event, then the count. */
static const struct {
    const char *pods, *events;
    const char *why, *from;
} reason_cases[] = {
    {"pods.http", "events_scheduler.http",
     "Why:          0/2 nodes are available: 2 queue team-a: gpu limit 4, in use 3, gang needs "
     "2.5. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming "
     "pod.\n",
     "(kube-scheduler's Event FailedScheduling on Pod demo-gpu-worker-4tq9z, 5s ago)\n"},
    {"pods_partial.http", "events_none.http", "Why:          gang lab/demo: 3 of 4 members exist\n",
     "              (its pods)\n"},
    /* Two of muster's Events in one second (lastTimestamp alike, names in the other order): the
     * newer by eventTime's microseconds gives the reason (e2e 13 once read the older one). */
    {"pods.http", "events_same_second.http",
     "Why:          queue team-a: gpu limit 4, in use 3, gang needs 2.5\n",
     "(muster's Event GangWaiting on Pod demo-gpu-worker-4tq9z, 12s ago)\n"},
    /* muster's GangWaiting Event ends with the gang's composition (issue 10): the reason is
     * what comes before it; the composition has its own line. */
    {"pods.http", "events_composition.http",
     "Why:          queue team-a: gpu limit 4, in use 3, gang needs 2.5\n",
     "(muster's Event GangWaiting on Pod demo-gpu-worker-4tq9z, 12s ago)\n"},
    /* Newer GangWaiting Events muster did not write (issue 21): from another writer, with muster
     * as source.component only, with no reportingInstance. muster writes all of source.component,
     * reportingComponent and reportingInstance (kube/client.c); only its own give the reason. */
    {"pods.http", "events_forged.http",
     "Why:          queue team-a: gpu limit 4, in use 3, gang needs 2.5\n",
     "(muster's Event GangWaiting on Pod demo-head-x7k2p, 12s ago)\n"},
    /* Pending again after muster bound it whole (its GangBound Event, 11:59:50): the waiting
     * reason from before the bind (11:59:48) no longer says why; kube-scheduler's FailedScheduling
     * (11:59:53) does (issue 21). Before, the stale "not known yet" was shown. */
    {"pods.http", "events_before_bound.http",
     "Why:          0/2 nodes are available: 2 queue team-a",
     "(kube-scheduler's Event FailedScheduling on Pod demo-gpu-worker-4tq9z, 5s ago)\n"},
    /* A newer FailedScheduling from a writer that is not the pod's scheduler (its schedulerName
     * "muster": kube-scheduler's profile of that name writes as "muster"). */
    {"pods.http", "events_scheduler_forged.http",
     "Why:          0/2 nodes are available: 2 queue team-a: gpu limit 4, in use 3, gang needs "
     "2.5. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming "
     "pod.\n",
     "(kube-scheduler's Event FailedScheduling on Pod demo-gpu-worker-4tq9z, 5s ago)\n"},
};

START_TEST(test_why_reason_sources)
{
    const char *script[] = {"raycluster_demo.http", reason_cases[_i].pods, reason_cases[_i].events,
                            "queue_team_a.http"};
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &text_opts, "demo", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_OK);
    ck_assert_msg(strstr(r.out, reason_cases[_i].why) != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, reason_cases[_i].from) != NULL, "%s", r.out);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A RayCluster groupName, an Event message and a Queue's parentQueue that would retitle and clear
 * the terminal and forge "Gang: Bound" lines: escaped in the text, JSON escapes in the JSON.
 * Failed before the text was escaped (issue 21). */
START_TEST(test_why_hostile)
{
    static const char *const script[] = {"raycluster_hostile.http", "pods.http",
                                         "events_hostile.http", "queue_hostile.http"};
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;
    cJSON *j;

    o.output = _i == 0 ? CLI_OUTPUT_TEXT : CLI_OUTPUT_JSON;
    canned_api_start(&api, DIR, script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_terminal_safe(r.out, _i == 1);
    if (_i == 0) {
        expect_output(&r, "why_hostile.txt");
    } else {
        j = cJSON_Parse(r.out);
        ck_assert_ptr_nonnull(j);
        ck_assert_ptr_nonnull(strstr(cli__str(j, "reason"), "\r\n\x1b[1;32mGang:"));
        cJSON_Delete(j);
    }
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* With muster asked: its plan and the binds held at the barrier, which no object shows. */
START_TEST(test_why_muster)
{
    static const char *const script[] = {"raycluster_demo.http", "pods.http", "debug_state.http",
                                         "events.http", "queue_team_a.http"};
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 5);
    kube = canned_api_client(&api, NULL);
    o.muster = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    hide_port(&r, api.port);
    expect_output(&r, "why_muster.txt");
    canned_api_expect(&api, "why_muster.req", 5);
    free(r.out);
    kube_client_free(o.muster);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* muster named but not answering: said, and the objects still tell what they can. */
START_TEST(test_why_muster_down)
{
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_conn conn;
    struct kube_client *kube;
    struct result r;
    char err[256];

    kube_conn_init(&conn);
    conn.server = strdup("http://127.0.0.1:1");
    o.muster = kube_client_new(&conn, NULL, err, sizeof(err));
    kube_conn_cleanup(&conn);
    canned_api_start(&api, DIR, waiting_script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\nRead from the Kubernetes objects; muster could not be "
                                        "asked: GET /debug/state: "));
    ck_assert_ptr_nonnull(strstr(r.out, "Why:          queue team-a: gpu limit 4, in use 3, gang "
                                        "needs 2.5\n"));
    free(r.out);
    kube_client_free(o.muster);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* Bound whole: no reason, the old GangWaiting Events notwithstanding. */
START_TEST(test_why_bound)
{
    static const char *const script[] = {"raycluster_demo.http", "pods_bound.http",
                                         "events_bound.http", "queue_team_a.http"};
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 4);
    kube = canned_api_client(&api, NULL);
    why(kube, &text_opts, "demo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, "why_bound.txt");
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A pod of the gang: the kinds tried in order, then its gang's RayCluster. */
START_TEST(test_why_pod)
{
    static const char *const script[] = {"notfound.http",   "notfound.http",        "notfound.http",
                                         "pod_worker.http", "raycluster_demo.http", "pods.http",
                                         "events.http",     "queue_team_a.http"};
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    o.output = CLI_OUTPUT_JSON;
    canned_api_start(&api, DIR, script, 8);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo-gpu-worker-4tq9z", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, "why_pod.json");
    canned_api_expect(&api, "why_pod.req", 8);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A RayJob's name: the gang of its cluster (made by KubeRay, named as KubeRay names it), with
 * the submitter a member, and what the RayJob says. */
START_TEST(test_why_rayjob)
{
    static const char *const script[] = {
        "notfound.http",        "notfound.http",   "notfound.http",  "notfound.http",
        "rayjob_train.http",    "raycluster_train.http", "pods_rayjob.http", "events_none.http",
        "queue_team_a.http"};
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 9);
    kube = canned_api_client(&api, NULL);
    why(kube, &text_opts, "train", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, "why_rayjob.txt");
    canned_api_expect(&api, "why_rayjob.req", 9);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A pod in no gang, in a queue without a Queue object, and Events this user may not list. */
START_TEST(test_why_solo)
{
    static const char *const script[] = {"notfound.http", "notfound.http",  "notfound.http",
                                         "pod_solo.http", "pods.http",      "forbidden.http",
                                         "notfound.http", "notfound.http"};
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 8);
    kube = canned_api_client(&api, NULL);
    why(kube, &text_opts, "solo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, "why_solo.txt");
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A queue that exists only as KAI's Queue (scheduling.run.ai/v2, CPU in millicores, memory in
 * MB): found after muster's is not, read in KAI's units; KAI's Queues carry no muster status. */
START_TEST(test_why_kai_queue)
{
    static const char *const script[] = {"raycluster_demo.http", "pods.http", "events.http",
                                         "notfound.http", "queue_kai_team_a.http"};
    struct cli_opts o = text_opts;
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    o.output = CLI_OUTPUT_JSON;
    canned_api_start(&api, DIR, script, 5);
    kube = canned_api_client(&api, NULL);
    why(kube, &o, "demo", &r);
    ck_assert_msg(r.rc == CLI_EXIT_OK, "%d: %s", r.rc, r.err);
    expect_output(&r, "why_kai_queue.json");
    canned_api_expect(&api, "why_kai_queue.req", 5);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

START_TEST(test_why_missing)
{
    static const char *const script[] = {"notfound.http"};
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 1);
    kube = canned_api_client(&api, NULL);
    why(kube, &text_opts, "nope", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_NOT_FOUND);
    ck_assert_str_eq(r.err, "no RayCluster, PodGroup, Pod, RayJob or RayService named lab/nope");
    ck_assert_uint_eq(r.len, 0);
    canned_api_expect(&api, "why_missing.req", 6);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* A reply that is not JSON is the API server's answer, not a cluster out of reach (it read as
 * "cannot reach the cluster", exit 2, before: issue 21). */
START_TEST(test_why_not_json)
{
    static const char *const script[] = {"not_json.http"};
    struct canned_api api;
    struct kube_client *kube;
    struct result r;

    canned_api_start(&api, DIR, script, 1);
    kube = canned_api_client(&api, NULL);
    why(kube, &text_opts, "demo", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_BAD_REPLY);
    ck_assert_str_eq(r.err,
                     "GET /apis/ray.io/v1/namespaces/lab/rayclusters/demo: reply is not JSON");
    ck_assert_uint_eq(r.len, 0);
    free(r.out);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* ---- no cluster to reach ----------------------------------------------------------- */

START_TEST(test_unreachable)
{
    struct kube_conn conn;
    struct kube_client *kube;
    struct result r;
    char err[256];

    kube_conn_init(&conn);
    conn.server = strdup("http://127.0.0.1:1");
    kube = kube_client_new(&conn, NULL, err, sizeof(err));
    kube_conn_cleanup(&conn);
    ck_assert_ptr_nonnull(kube);
    queues(kube, &text_opts, &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_UNREACHABLE);
    ck_assert_msg(strncmp(r.err, "GET /apis/muster.dev/v1alpha1/queues?limit=500: ",
                          strlen("GET /apis/muster.dev/v1alpha1/queues?limit=500: ")) == 0,
                  "%s", r.err);
    ck_assert_uint_eq(r.len, 0);
    free(r.out);
    why(kube, &text_opts, "demo", &r);
    ck_assert_int_eq(r.rc, CLI_EXIT_UNREACHABLE);
    ck_assert_uint_eq(r.len, 0);
    free(r.out);
    kube_client_free(kube);
}
END_TEST

/* ---- the binary ---------------------------------------------------------------------- */

/* Runs a shell command; its exit status, and stdout and stderr together into out. */
static int shell(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    size_t n;
    int st;

    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *kubeconfig_for(const char *server)
{
    char *path = strdup("/tmp/test_cli_kubeconfig_XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\n"
            "clusters: [{name: c, cluster: {server: \"%s\"}}]\n"
            "users: [{name: u, user: {token: t0ken}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u, namespace: lab}}]\n"
            "current-context: x\n",
            server);
    fclose(f);
    return path;
}

static const struct {
    const char *args;
    const char *said;
} unreachable_cases[] = {
    {"queues", "muster queues: cannot reach the cluster at https://127.0.0.1:1: GET "
               "/apis/muster.dev/v1alpha1/queues?limit=500: "},
    {"why demo", "muster why: cannot reach the cluster at https://127.0.0.1:1: GET "
                 "/apis/ray.io/v1/namespaces/lab/rayclusters/demo: "},
    {"why -o json other/demo --muster-url http://127.0.0.1:1",
     "muster why: cannot reach the cluster at https://127.0.0.1:1: GET "
     "/apis/ray.io/v1/namespaces/other/rayclusters/demo: "},
};

/* Exit 2 and one clear line when nothing answers at the kubeconfig's server. */
START_TEST(test_binary_unreachable)
{
    char *kc = kubeconfig_for("https://127.0.0.1:1"), cmd[1024], out[4096];

    snprintf(cmd, sizeof(cmd), "%s %s --kubeconfig %s 2>&1", MUSTER_BIN, unreachable_cases[_i].args,
             kc);
    ck_assert_int_eq(shell(cmd, out, sizeof(out)), 2);
    ck_assert_msg(strncmp(out, unreachable_cases[_i].said, strlen(unreachable_cases[_i].said)) == 0,
                  "%s", out);
    ck_assert_ptr_null(strchr(strchr(out, '\n') + 1, '\n')); /* one line */
    unlink(kc);
    free(kc);
}
END_TEST

START_TEST(test_binary_no_kubeconfig)
{
    char out[4096];

    ck_assert_int_eq(
        shell(MUSTER_BIN " queues --kubeconfig /nonexistent/kubeconfig 2>&1", out, sizeof(out)), 2);
    ck_assert_str_eq(out, "muster queues: cannot reach the cluster: kubeconfig "
                          "/nonexistent/kubeconfig: cannot open: No such file or directory\n");
}
END_TEST

/* The flags reach the library: the binary against the canned server, via a kubeconfig. */
START_TEST(test_binary_why)
{
    char server[64], cmd[1024], out[65536], *kc;
    struct canned_api api;
    cJSON *j;

    canned_api_start(&api, DIR, waiting_script, 4);
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", api.port);
    kc = kubeconfig_for(server);
    snprintf(cmd, sizeof(cmd), "%s why demo -o json --kubeconfig %s", MUSTER_BIN, kc);
    ck_assert_int_eq(shell(cmd, out, sizeof(out)), 0);
    j = cJSON_Parse(out);
    ck_assert_msg(j != NULL, "%s", out);
    ck_assert_str_eq(cli__str(j, "gang"), "lab/demo");
    ck_assert_str_eq(cli__str(j, "state"), "Pending");
    ck_assert_str_eq(cli__str(j, "reason"), "queue team-a: gpu limit 4, in use 3, gang needs 2.5");
    cJSON_Delete(j);
    canned_api_expect(&api, "why.req", 4);
    canned_api_stop(&api);
    unlink(kc);
    free(kc);
}
END_TEST

static const struct {
    const char *args;
    int rc;
    const char *said; /* the start of what it prints */
} plugin_cases[] = {
    {"--help", 0, "kubectl muster 0.1.0 - gang scheduling"},
    {"", 2, "kubectl muster 0.1.0 - gang scheduling"},
    {"serve --help", 2,
     "kubectl muster: \"serve\" is for the muster binary itself: muster serve\n"},
    {"frobnicate", 2, "kubectl muster: unknown command \"frobnicate\""},
    {"why --help", 0, "Usage: muster why [NAMESPACE/]NAME"},
    {"why", 6, "muster why: which object? give [NAMESPACE/]NAME (muster why --help)\n"},
    {"queues -o yaml", 6, "muster queues: bad value \"yaml\" for --output (text or json)"},
};

/* Run through a symlink named kubectl-muster, as `kubectl muster` runs it. */
START_TEST(test_plugin_name)
{
    char dir[] = "/tmp/test_cli_plugin_XXXXXX", link[256], cmd[1024], out[8192];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(link, sizeof(link), "%s/kubectl-muster", dir);
    ck_assert_int_eq(symlink(MUSTER_BIN, link), 0);
    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", link, plugin_cases[_i].args);
    ck_assert_int_eq(shell(cmd, out, sizeof(out)), plugin_cases[_i].rc);
    ck_assert_msg(strncmp(out, plugin_cases[_i].said, strlen(plugin_cases[_i].said)) == 0, "%s",
                  out);
    if (_i < 2) { /* the people's commands only */
        ck_assert_ptr_nonnull(strstr(out, "Usage: kubectl muster <command>"));
        ck_assert_ptr_nonnull(strstr(out, "\n  why "));
        ck_assert_ptr_nonnull(strstr(out, "\n  queues "));
        ck_assert_ptr_null(strstr(out, "\n  serve "));
    }
    unlink(link);
    rmdir(dir);
}
END_TEST

/* muster itself still offers every command. */
START_TEST(test_muster_name)
{
    char out[8192];

    ck_assert_int_eq(shell(MUSTER_BIN " --help 2>&1", out, sizeof(out)), 0);
    ck_assert_ptr_nonnull(strstr(out, "Usage: muster <command>"));
    ck_assert_ptr_nonnull(strstr(out, "\n  serve "));
    ck_assert_ptr_nonnull(strstr(out, "\n  why "));
}
END_TEST

/* ---- words and numbers -------------------------------------------------------------- */

static const struct {
    int64_t ago;
    const char *age;
} age_cases[] = {
    {0, "0s"},          {45, "45s"},      {119, "119s"},     {120, "2m"},      {192, "3m12s"},
    {600, "10m"},       {10799, "179m"},  {10800, "3h"},     {12600, "3h30m"}, {28800, "8h"},
    {172800, "2d"},     {183600, "2d3h"}, {691200, "8d"},    {63072000, "2y"}, {63158400, "2y1d"},
    {315360000, "10y"}, {-1, "0s"},       {-5, "<invalid>"},
};

START_TEST(test_age)
{
    char buf[32];

    cli__age(NOW, NOW - age_cases[_i].ago, buf, sizeof(buf));
    ck_assert_str_eq(buf, age_cases[_i].age);
}
END_TEST

static const struct {
    const char *s;
    int64_t t;
} time_cases[] = {
    {"2025-12-01T12:00:00Z", NOW},
    {"2025-12-01T11:59:48.123456Z", NOW - 12},
    {"2025-12-01T13:00:00+01:00", NOW},
    {"2025-12-01T11:00:00-01:00", NOW},
    {"2025-12-01 12:00:00Z", -1},
    {"2025-12-01T12:00:00", -1},
    {"yesterday", -1},
    {NULL, -1},
};

START_TEST(test_time)
{
    ck_assert_int_eq(cli__time(time_cases[_i].s), time_cases[_i].t);
}
END_TEST

START_TEST(test_time_us)
{
    ck_assert_int_eq(ext_time_us("2025-12-01T11:59:48.123456Z"), (NOW - 12) * 1000000 + 123456);
    ck_assert_int_eq(ext_time_us("2025-12-01T11:59:48.9Z"), (NOW - 12) * 1000000 + 900000);
    ck_assert_int_eq(ext_time_us("2025-12-01T11:59:48.1234567Z"), (NOW - 12) * 1000000 + 123456);
    ck_assert_int_eq(ext_time_us("2025-12-01T13:00:00.5+01:00"), NOW * 1000000 + 500000);
    ck_assert_int_eq(ext_time_us("2025-12-01T12:00:00.5"), -1);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc;

    tc = tcase_create("queues");
    tcase_set_timeout(tc, 60); /* 8,000-queue trees: about a second alone, more on a busy machine */
    tcase_add_loop_test(tc, test_queues, 0, N(queues_cases));
    tcase_add_loop_test(tc, test_queues_hostile, 0, 2);
    tcase_add_loop_test(tc, test_queues_failures, 0, N(failure_cases));
    tcase_add_loop_test(tc, test_queues_bad_status, 0, 2);
    tcase_add_loop_test(tc, test_queues_deep_chain, 0, 2);
    tcase_add_test(tc, test_queues_loops);
    suite_add_tcase(s, tc);

    tc = tcase_create("why");
    tcase_add_loop_test(tc, test_why_used_lately, 0,
                        (int)(sizeof(used_cases) / sizeof(used_cases[0])));
    tcase_add_loop_test(tc, test_why_waiting, 0, N(waiting_cases));
    tcase_add_test(tc, test_why_events_cap);
    tcase_add_loop_test(tc, test_why_reason_sources, 0, N(reason_cases));
    tcase_add_loop_test(tc, test_why_hostile, 0, 2);
    tcase_add_test(tc, test_why_muster);
    tcase_add_test(tc, test_why_muster_down);
    tcase_add_test(tc, test_why_bound);
    tcase_add_test(tc, test_why_pod);
    tcase_add_test(tc, test_why_solo);
    tcase_add_test(tc, test_why_kai_queue);
    tcase_add_test(tc, test_why_missing);
    tcase_add_test(tc, test_why_rayjob);
    tcase_add_test(tc, test_why_not_json);
    suite_add_tcase(s, tc);

    tc = tcase_create("unreachable");
    tcase_add_test(tc, test_unreachable);
    suite_add_tcase(s, tc);

    tc = tcase_create("binary");
    tcase_add_loop_test(tc, test_binary_unreachable, 0, N(unreachable_cases));
    tcase_add_test(tc, test_binary_no_kubeconfig);
    tcase_add_test(tc, test_binary_why);
    tcase_add_loop_test(tc, test_plugin_name, 0, N(plugin_cases));
    tcase_add_test(tc, test_muster_name);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("words");
    tcase_add_loop_test(tc, test_age, 0, N(age_cases));
    tcase_add_loop_test(tc, test_time, 0, N(time_cases));
    tcase_add_test(tc, test_time_us);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cli_suite());
    int failed;

    signal(SIGPIPE, SIG_IGN);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
