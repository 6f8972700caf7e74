/*
 * test_events.c - Events on pods from the worker thread (daemon/events.c)
 * against the canned API server: the same (pod, reason, message) at most
 * once a minute on a clock the test moves, and a full queue that drops and
 * counts instead of blocking the handler that posts.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canned_api.h"
#include "events.h"

#define DIR "daemon"
#define EVENTS_PATH "/api/v1/namespaces/lab/events"
#define QUEUE_MAX 1024 /* events.c: EVENTS_QUEUE_MAX */

static int64_t fake_now;

static int64_t fake_clock(void)
{
    return fake_now;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

    return cJSON_GetStringValue(b ? cJSON_GetObjectItemCaseSensitive(x, b) : x);
}

/* Record i must be the Event POST of (pod, reason, type, message). */
static void expect_event(struct canned_api *api, size_t i, const char *pod, const char *reason,
                         const char *type, const char *message)
{
    static const char head[] = "POST " EVENTS_PATH "\nAuthorization: Bearer t0ken\n"
                               "Content-Type: application/json\n\n";
    char *rec = canned_api_request(api, i);
    cJSON *ev;

    ck_assert_ptr_nonnull(rec);
    ck_assert_msg(strncmp(rec, head, strlen(head)) == 0, "request %zu: %s", i, rec);
    ev = cJSON_Parse(rec + strlen(head));
    ck_assert_ptr_nonnull(ev);
    ck_assert_str_eq(str_at(ev, "kind", NULL), "Event");
    ck_assert_str_eq(str_at(ev, "involvedObject", "namespace"), "lab");
    ck_assert_str_eq(str_at(ev, "involvedObject", "name"), pod);
    ck_assert_str_eq(str_at(ev, "involvedObject", "uid"), "uid-of-pod");
    ck_assert_str_eq(str_at(ev, "reason", NULL), reason);
    ck_assert_str_eq(str_at(ev, "type", NULL), type);
    ck_assert_str_eq(str_at(ev, "message", NULL), message);
    cJSON_Delete(ev);
    free(rec);
}

/* ---- once a minute ------------------------------------------------------------------------- */

static const struct post {
    int64_t at; /* the events' clock, ms */
    const char *pod, *reason, *message;
    bool sent;
} posts[] = {
    {0, "w-0", "GangWaiting", "gang lab/trainers: 1 of 3", true},
    {1, "w-0", "GangWaiting", "gang lab/trainers: 1 of 3", false},
    {2, "w-0", "GangWaiting", "gang lab/trainers: 2 of 3", true},    /* another message */
    {3, "w-1", "GangWaiting", "gang lab/trainers: 1 of 3", true},    /* another pod */
    {4, "w-0", "GangIncomplete", "gang lab/trainers: 1 of 3", true}, /* another reason */
    {59999, "w-0", "GangWaiting", "gang lab/trainers: 1 of 3", false},
    {60000, "w-0", "GangWaiting", "gang lab/trainers: 1 of 3", true}, /* a minute after the first */
    {60001, "w-0", "GangWaiting", "gang lab/trainers: 1 of 3", false},
};

static const struct canned_route events_ok[] = {
    {"POST", EVENTS_PATH, {"created.http"}},
};

START_TEST(test_once_a_minute)
{
    struct canned_api api;
    struct kube_client *kube;
    struct ext_events *e;
    size_t sent = 0;

    canned_api_start_routes(&api, DIR, events_ok, 1);
    kube = canned_api_client(&api, NULL);
    e = ext_events_new(kube);
    ck_assert_ptr_nonnull(e);
    ext_events_set_clock(e, fake_clock);
    for (size_t i = 0; i < sizeof(posts) / sizeof(posts[0]); i++) {
        fake_now = posts[i].at;
        ext_events_post(e, "lab", posts[i].pod, "uid-of-pod", posts[i].reason, "Warning",
                        posts[i].message);
    }
    ext_events_free(e); /* sends what is queued */
    for (size_t i = 0; i < sizeof(posts) / sizeof(posts[0]); i++)
        if (posts[i].sent)
            expect_event(&api, sent++, posts[i].pod, posts[i].reason, "Warning", posts[i].message);
    ck_assert_uint_eq(canned_api_nreq(&api), sent);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* ---- a full queue -------------------------------------------------------------------------- */

/* The first POST stalls, holding the worker, until the test releases it. */
static const struct canned_route events_stall[] = {
    {"POST", EVENTS_PATH, {CANNED_HANG, "created.http"}},
};

START_TEST(test_full_queue_drops)
{
    struct canned_api api;
    struct kube_client *kube;
    struct ext_events *e;
    char msg[64];

    canned_api_start_routes(&api, DIR, events_stall, 1);
    kube = canned_api_client(&api, NULL);
    e = ext_events_new(kube);
    ck_assert_ptr_nonnull(e);
    ext_events_post(e, "lab", "w-0", "uid-of-pod", "GangWaiting", "Warning", "first");
    canned_api_wait_requests(&api, 1); /* the worker is in the stalled POST */
    for (int i = 0; i < QUEUE_MAX + 3; i++) {
        snprintf(msg, sizeof(msg), "m-%d", i);
        ext_events_post(e, "lab", "w-0", "uid-of-pod", "GangWaiting", "Warning", msg);
    }
    ck_assert_uint_eq(ext_events_dropped(e), 3); /* the three that found the queue full */
    canned_api_release(&api);
    ext_events_free(e);
    ck_assert_uint_eq(canned_api_nreq(&api), 1 + QUEUE_MAX);
    expect_event(&api, 1, "w-0", "GangWaiting", "Warning", "m-0");
    expect_event(&api, QUEUE_MAX, "w-0", "GangWaiting", "Warning", "m-1023");
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* ---- the waiting reason follows the gang (issue 21) ---------------------------------------- */

/*
 * The requests recorded, one line each, each distinct run of 16 hex digits (an Event's name's
 * tail, a gang's label) named <a>, <b>, ... in order of appearance:
 *   POST <name> <gang label> <involvedObject.name> <reason> <type>: <message>
 *   PATCH <name> count=<n or -> <message>
 *   DELETE ?<query> or DELETE /<name>
 */
static void transcript(struct canned_api *api, char *out, size_t len)
{
    char hexes[8][17] = {{0}}, *line = malloc(4096);
    size_t nhex = 0, used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < canned_api_nreq(api); i++) {
        char *rec = canned_api_request(api, i), *body = strstr(rec, "\n\n"), *t;
        cJSON *ev = body ? cJSON_Parse(body + 2) : NULL;
        const cJSON *count = cJSON_GetObjectItemCaseSensitive(ev, "count");
        char target[600];

        sscanf(rec, "%*s %599s", target);
        if (strncmp(rec, "POST ", 5) == 0)
            snprintf(line, 4096, "POST %s %s %s %s %s: %s\n", str_at(ev, "metadata", "name"),
                     str_at(cJSON_GetObjectItemCaseSensitive(ev, "metadata"), "labels",
                            "muster.dev/gang-id"),
                     str_at(ev, "involvedObject", "name"), str_at(ev, "reason", NULL),
                     str_at(ev, "type", NULL), str_at(ev, "message", NULL));
        else if (strncmp(rec, "PATCH ", 6) == 0 && count)
            snprintf(line, 4096, "PATCH %s count=%d %s\n", strrchr(target, '/') + 1,
                     count->valueint, str_at(ev, "message", NULL));
        else if (strncmp(rec, "PATCH ", 6) == 0)
            snprintf(line, 4096, "PATCH %s count=- %s\n", strrchr(target, '/') + 1,
                     str_at(ev, "message", NULL));
        else
            snprintf(line, 4096, "%.6s %s\n", rec, strstr(target, "/events") + 7);
        /* name the hex runs */
        for (t = line; *t; t++) {
            size_t k;

            if (strspn(t, "0123456789abcdef") != 16)
                continue;
            for (k = 0; k < nhex && strncmp(hexes[k], t, 16) != 0; k++)
                ;
            if (k == nhex && nhex < 8)
                memcpy(hexes[nhex++], t, 16);
            memmove(t + 3, t + 16, strlen(t + 16) + 1);
            t[0] = '<';
            t[1] = (char)('a' + k);
            t[2] = '>';
        }
        used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s", line);
        cJSON_Delete(ev);
        free(rec);
    }
    free(line);
}

enum { WAIT, WITHDRAW, WITHDRAW_POD };

static const struct lifecycle_step {
    int64_t at;
    int op;
    const char *pod, *gang, *message;
} lifecycle[] = {
    {0, WAIT, "w-0", "lab/trainers", "gang lab/trainers: 1 of 3 members exist"},
    {1, WAIT, "w-0", "lab/trainers", "gang lab/trainers: 1 of 3 members exist"}, /* the same */
    {2, WAIT, "w-0", "lab/trainers", "queue q: limit 2 GPUs"},     /* a new reason: in place */
    {3, WAIT, "w-1", "lab/trainers", "queue q: limit 2 GPUs"},     /* another pod: its own */
    {60002, WAIT, "w-0", "lab/trainers", "queue q: limit 2 GPUs"}, /* a minute on: again */
    {60003, WITHDRAW, NULL, "lab/other", NULL},                    /* never waited: nothing */
    {60004, WITHDRAW, NULL, "lab/trainers", NULL},                 /* bound: one request */
    {60005, WITHDRAW, NULL, "lab/trainers", NULL},                 /* nothing left */
    {60006, WAIT, "w-0", "lab/trainers", "queue q: limit 2 GPUs"}, /* waits again: a new one */
    /* members bound after their gang: each one's own, by name, where it has one */
    {60007, WAIT, "w-1", "lab/trainers", "extra: no free GPU"},
    {60008, WITHDRAW_POD, "w-0", NULL, NULL},
    {60009, WITHDRAW_POD, "w-0", NULL, NULL}, /* withdrawn already */
    {60010, WITHDRAW_POD, "w-2", NULL, NULL}, /* never waited */
    {60011, WAIT, "w-1", "lab/trainers", "extra: no free GPU"}, /* w-1 still waits: kept */
    {60012, WAIT, "w-0", "lab/trainers", "queue q: limit 2 GPUs"}, /* waits again */
};

static const char lifecycle_transcript[] =
    "POST w-0.<a> <b> w-0 GangWaiting Warning: gang lab/trainers: 1 of 3 members exist\n"
    "PATCH w-0.<a> count=2 queue q: limit 2 GPUs\n"
    "POST w-1.<c> <b> w-1 GangWaiting Warning: queue q: limit 2 GPUs\n"
    "PATCH w-0.<a> count=3 queue q: limit 2 GPUs\n"
    "DELETE ?labelSelector=muster.dev%2Fgang-id%3D<b>&fieldSelector=reason%3DGangWaiting%2C"
    "source%3Dmuster\n"
    "POST w-0.<a> <b> w-0 GangWaiting Warning: queue q: limit 2 GPUs\n"
    "POST w-1.<c> <b> w-1 GangWaiting Warning: extra: no free GPU\n"
    "DELETE /w-0.<a>\n"
    "POST w-0.<a> <b> w-0 GangWaiting Warning: queue q: limit 2 GPUs\n";

static const struct canned_route series_ok[] = {
    {"POST", EVENTS_PATH, {"created.http"}},
    {"PATCH", EVENTS_PATH "/*", {"patched.http"}},
    {"DELETE", EVENTS_PATH "?*", {"patched.http"}},
    {"DELETE", EVENTS_PATH "/*", {"patched.http"}},
};

static void run_steps(struct canned_api *api, const struct lifecycle_step *steps, size_t n)
{
    struct kube_client *kube = canned_api_client(api, NULL);
    struct ext_events *e = ext_events_new(kube);

    ck_assert_ptr_nonnull(e);
    ext_events_set_clock(e, fake_clock);
    for (size_t i = 0; i < n; i++) {
        fake_now = steps[i].at;
        if (steps[i].op == WAIT)
            ext_events_waiting(e, "lab", steps[i].pod, "uid-of-pod", steps[i].gang,
                               steps[i].message);
        else if (steps[i].op == WITHDRAW)
            ext_events_withdraw(e, "lab", steps[i].gang);
        else
            ext_events_withdraw_pod(e, "lab", steps[i].pod, "uid-of-pod");
    }
    ext_events_free(e); /* sends what is queued, in order */
    kube_client_free(kube);
}

/*
 * A pod's waiting reason is one Event, replaced in place when the reason changes (a PATCH of
 * the same object, as client-go's series), written again once a minute; when its gang is bound
 * every such Event of the gang goes in one request, and only for a gang that had one; a member
 * bound after its gang takes its own away, by name, and leaves the others'.
 */
START_TEST(test_waiting_follows_the_gang)
{
    struct canned_api api;
    char got[4096];

    canned_api_start_routes(&api, DIR, series_ok, 4);
    run_steps(&api, lifecycle, sizeof(lifecycle) / sizeof(lifecycle[0]));
    transcript(&api, got, sizeof(got));
    ck_assert_str_eq(got, lifecycle_transcript);
    canned_api_stop(&api);
}
END_TEST

/* The API server knows better: an Event of the name left by a muster before a restart (409:
 * patched, its count not known) or gone (withdrawn elsewhere, or an hour old: 404, made again). */
START_TEST(test_waiting_recovers_from_the_api_server)
{
    static const struct lifecycle_step steps[] = {
        {0, WAIT, "w-0", "lab/trainers", "first"},
        {1, WAIT, "w-0", "lab/trainers", "second"},
        {2, WAIT, "w-0", "lab/trainers", "third"},
    };
    static const struct canned_route routes[] = {
        {"POST", EVENTS_PATH, {"conflict_409.http", "created.http"}},
        {"PATCH", EVENTS_PATH "/*", {"patched.http", "status_404.http", "patched.http"}},
    };
    struct canned_api api;
    char got[4096];

    canned_api_start_routes(&api, DIR, routes, 2);
    run_steps(&api, steps, 3);
    transcript(&api, got, sizeof(got));
    ck_assert_str_eq(got, "POST w-0.<a> <b> w-0 GangWaiting Warning: first\n"
                          "PATCH w-0.<a> count=- first\n"
                          "PATCH w-0.<a> count=2 second\n"
                          "POST w-0.<a> <b> w-0 GangWaiting Warning: second\n"
                          "PATCH w-0.<a> count=2 third\n");
    canned_api_stop(&api);
}
END_TEST

static Suite *events_suite(void)
{
    Suite *s = suite_create("events");
    TCase *tc;

    tc = tcase_create("dedup");
    tcase_add_test(tc, test_once_a_minute);
    suite_add_tcase(s, tc);

    tc = tcase_create("series");
    tcase_add_test(tc, test_waiting_follows_the_gang);
    tcase_add_test(tc, test_waiting_recovers_from_the_api_server);
    suite_add_tcase(s, tc);

    tc = tcase_create("queue");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_full_queue_drops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(events_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
