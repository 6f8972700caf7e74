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

static Suite *events_suite(void)
{
    Suite *s = suite_create("events");
    TCase *tc;

    tc = tcase_create("dedup");
    tcase_add_test(tc, test_once_a_minute);
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
