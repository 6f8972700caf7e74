/*
 * test_handlers.c - kube-scheduler's questions answered from the engine
 * (daemon/handlers.c), through the same handler table the HTTP server calls.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_test.h"
#include "engine_fault.h"

#define DIR "daemon"

/* The filter kube-scheduler sends for this pod object, offering node n1; the answer's Error
 * (malloc'd, NULL when there is none), the handler's code in *rc. */
static char *filter_on_n1_rc(struct ext_daemon *d, const cJSON *pod, int *rc)
{
    cJSON *req = cJSON_CreateObject(), *names;
    struct ext_filter_args a;
    struct ext_filter_answer ans = {.pool = ext_arena_new()};
    char err[256] = "", *body, *error;

    cJSON_AddItemToObject(req, "Pod", cJSON_Duplicate(pod, true));
    cJSON_AddNullToObject(req, "Nodes");
    names = cJSON_AddArrayToObject(req, "NodeNames");
    cJSON_AddItemToArray(names, cJSON_CreateString("n1"));
    body = cJSON_PrintUnformatted(req);
    ck_assert_int_eq(
        ext_filter_args_decode(body, strlen(body), &ext_proto_limits_default, &a, err, sizeof(err)),
        EXT_OK);
    ans.verdicts = ext_arena_calloc(ans.pool, a.n, sizeof(*ans.verdicts));
    *rc = ext_daemon_handlers.filter(d, &a, &ans);
    error = ans.error ? strdup(ans.error) : NULL;
    ext_filter_args_cleanup(&a);
    ext_arena_free(ans.pool);
    free(body);
    cJSON_Delete(req);
    return error;
}

/* The same, answered without a handler failure. */
static char *filter_on_n1(struct ext_daemon *d, const cJSON *pod)
{
    int rc;
    char *error = filter_on_n1_rc(d, pod, &rc);

    ck_assert_msg(rc == EXT_OK, "filter: %s (%s)", ext_strerror(rc), error ? error : "");
    return error;
}

static cJSON *fixture_object(const char *file, const char *name)
{
    char *text = fixture_read(DIR, file, NULL);
    cJSON *doc = cJSON_Parse(text), *items, *obj, *found = NULL;

    ck_assert_ptr_nonnull(doc);
    items = cJSON_GetObjectItemCaseSensitive(doc, "items");
    if (!items)
        found = cJSON_Duplicate(doc, true);
    cJSON_ArrayForEach(obj, items)
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));

        if (n && strcmp(n, name) == 0)
            found = cJSON_Duplicate(obj, true);
    }
    ck_assert_msg(found != NULL, "no %s in %s", name, file);
    cJSON_Delete(doc);
    free(text);
    return found;
}

/* ---- a deleted pod stays deleted ------------------------------------------------------------ */

/*
 * Seen end to end (e2e 05b run twice): a RayCluster's pending pods were deleted while
 * kube-scheduler was retrying one of them; its filter came after the watch's DELETED and put
 * the pod back into the engine, where nothing took it out again. The RayCluster made anew (the
 * same gang) planned that ghost into its minimum and its barrier waited for it for good. A
 * pod the watch said is gone is refused by UID; one made anew under the same name (a new UID)
 * is taken.
 */
START_TEST(test_deleted_pod_is_not_brought_back)
{
    struct ext_daemon d;
    struct policy_pod_view v;
    cJSON *old = fixture_object("ghost_cluster.json", "rc-gpu-worker-old");
    cJSON *anew = fixture_object("ghost_pod_recreated.json", "rc-gpu-worker-old");
    char *error;

    daemon_test_up(&d, NULL);
    daemon_test_load(&d.cache, DIR, "ghost_cluster.json", "ADDED");
    ck_assert_int_eq(daemon_test_phase(&d, "lab", "rc-gpu-worker-old"), POLICY_POD_PENDING);
    daemon_test_apply(&d.cache, "DELETED", old);
    ck_assert_int_eq(daemon_test_phase(&d, "lab", "rc-gpu-worker-old"), -1);

    error = filter_on_n1(&d, old); /* kube-scheduler's cycle begun before the delete */
    ck_assert_msg(error && strstr(error, "pod lab/rc-gpu-worker-old was deleted"), "error: %s",
                  error);
    free(error);
    ck_assert_msg(daemon_test_phase(&d, "lab", "rc-gpu-worker-old") == -1,
                  "the filter brought the deleted pod back");

    error = filter_on_n1(&d, anew); /* the same name, a new pod */
    ck_assert_msg(error == NULL, "error: %s", error);
    pthread_mutex_lock(&d.cache.lock);
    ck_assert(policy_pod_view_get(d.cache.engine, "lab", "rc-gpu-worker-old", &v));
    ck_assert_str_eq(v.uid, "uid-of-new");
    pthread_mutex_unlock(&d.cache.lock);
    cJSON_Delete(old);
    cJSON_Delete(anew);
    daemon_test_down(&d);
}
END_TEST

/* ---- the engine's own failure ---------------------------------------------------------------- */

/* A pod the engine refuses is answered with the refusal as it is, in words and code (it was
 * always "out of memory" before issue 11; then anything but that was "invalid input"). */
START_TEST(test_engine_failure_as_it_is)
{
    struct ext_daemon d;
    cJSON *pod = fixture_object("ghost_cluster.json", "rc-gpu-worker-old");
    char want[128], *error;
    /* Not found is said in a 200, as for a pod the watch saw deleted. */
    int rc, code = engine_faults[_i].ext_rc == EXT_ENOTFOUND ? EXT_OK : engine_faults[_i].ext_rc;

    daemon_test_up(&d, NULL);
    daemon_test_load(&d.cache, DIR, "ghost_cluster.json", "ADDED");
    engine_fault_arm(ENGINE_FAULT_POD_UPSERT, engine_faults[_i].policy_rc);
    error = filter_on_n1_rc(&d, pod, &rc);
    snprintf(want, sizeof(want), "the engine refused the pod: %s", engine_faults[_i].words);
    ck_assert_msg(rc == code, "%s: answered %s", want, ext_strerror(rc));
    ck_assert_msg(error && strcmp(error, want) == 0, "answered \"%s\", not \"%s\"", error, want);
    free(error);
    /* The next filter reaches the engine again. */
    error = filter_on_n1(&d, pod);
    ck_assert_msg(error == NULL, "error: %s", error);
    cJSON_Delete(pod);
    daemon_test_down(&d);
}
END_TEST

static Suite *handlers_suite(void)
{
    Suite *s = suite_create("handlers");
    TCase *tc = tcase_create("filter");

    tcase_add_test(tc, test_deleted_pod_is_not_brought_back);
    tcase_add_loop_test(tc, test_engine_failure_as_it_is, 0, ENGINE_FAULTS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(handlers_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
