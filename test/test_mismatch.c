/*
 * test_mismatch.c - GangSpecMismatch (daemon/mismatch.c): a gang whose sources
 * disagree is told once per change, on its pods, with the engine's words; a
 * gang with no pod yet is told when one appears; a disagreement that went
 * away and came back is told again. The engine is the real one (its gang
 * view's conflict); Events go to the canned API server.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "canned_api.h"
#include "events.h"
#include "mismatch.h"

#define DIR_ "evict"

static const struct canned_route events_routes[] = {
    {"POST", "/api/v1/namespaces/lab/events", {"created.http"}}};

struct rig {
    struct canned_api api;
    struct kube_client *kube;
    struct cfg_settings settings;
    struct cache cache;
    struct ext_events *events;
    struct gang_mismatch *m;
};

static void rig_start(struct rig *r)
{
    char err[256];

    memset(r, 0, sizeof(*r));
    canned_api_start_routes(&r->api, DIR_, events_routes, 1);
    r->kube = canned_api_client(&r->api, NULL);
    ck_assert_int_eq(cfg_settings_init(&r->settings), CFG_OK);
    ck_assert_int_eq(cache_init(&r->cache, &r->settings, NULL, err, sizeof(err)), EXT_OK);
    ck_assert_ptr_nonnull(r->events = ext_events_new(r->kube));
    ck_assert_ptr_nonnull(r->m = gang_mismatch_new());
}

static void rig_stop(struct rig *r)
{
    gang_mismatch_free(r->m);
    ext_events_free(r->events);
    cache_cleanup(&r->cache);
    cfg_settings_cleanup(&r->settings);
    kube_client_free(r->kube);
    canned_api_stop(&r->api);
}

/* RayCluster lab/<name>: a head and five GPU workers. */
static void raycluster(struct rig *r, const char *key)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"gpu", 5}};
    struct policy_gang_spec g = {.key = key,
                                 .min_members = 6,
                                 .subgroups = subs,
                                 .nsubgroups = 2,
                                 .source = POLICY_GANG_WORKLOAD};

    ck_assert_int_eq(policy_gang_upsert(r->cache.engine, &g), POLICY_OK);
}

/* A PodGroup for the same gang with a bare minMember; 0 forgets it. */
static void podgroup(struct rig *r, const char *key, int32_t min)
{
    struct policy_gang_spec g = {.key = key, .min_members = min, .source = POLICY_GANG_PODGROUP};

    if (min == 0)
        ck_assert_int_eq(policy_gang_forget(r->cache.engine, key, POLICY_GANG_PODGROUP), POLICY_OK);
    else
        ck_assert_int_eq(policy_gang_upsert(r->cache.engine, &g), POLICY_OK);
}

static void pod(struct rig *r, const char *name, const char *gang, const char *subgroup)
{
    struct policy_pod_spec s = {.namespace_ = "lab",
                                .name = name,
                                .uid = name,
                                .gang = gang,
                                .subgroup = subgroup,
                                .managed = true,
                                .cpu_milli = 1000};

    ck_assert_int_eq(policy_pod_upsert(r->cache.engine, &s, 1), POLICY_OK);
}

static size_t report(struct rig *r)
{
    return gang_mismatch_report(r->m, &r->cache, r->events);
}

/* Events with reason GangSpecMismatch, type Warning, on pod, whose message holds text. */
static size_t told(struct rig *r, const char *pod_name, const char *text)
{
    size_t n = 0;
    char *rec;

    for (size_t i = 0; (rec = canned_api_request(&r->api, i)); i++) {
        const char *body = strstr(rec, "\n\n");
        cJSON *ev = body ? cJSON_Parse(body + 2) : NULL;
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ev, "involvedObject"), "name"));
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "message"));

        n += name && reason && type && msg && strcmp(name, pod_name) == 0 &&
             strcmp(reason, "GangSpecMismatch") == 0 && strcmp(type, "Warning") == 0 &&
             strstr(msg, text) != NULL;
        cJSON_Delete(ev);
        free(rec);
    }
    return n;
}

#define SAYS(min)                                                                                  \
    "PodGroup lab/rc " #min " disagrees with RayCluster lab/rc 6 (head 1, gpu 5), which muster "   \
    "follows"

START_TEST(test_once_per_change)
{
    struct rig r;

    rig_start(&r);
    raycluster(&r, "lab/rc");
    pod(&r, "rc-head", "lab/rc", "head");
    pod(&r, "rc-w0", "lab/rc", "gpu");
    ck_assert_uint_eq(report(&r), 0); /* the sources agree: one source */
    podgroup(&r, "lab/rc", 5);
    ck_assert_uint_eq(report(&r), 2); /* each pod of the gang */
    ck_assert_uint_eq(report(&r), 0); /* unchanged: told already */
    ck_assert_uint_eq(report(&r), 0);
    podgroup(&r, "lab/rc", 4);
    ck_assert_uint_eq(report(&r), 2); /* the words changed */
    podgroup(&r, "lab/rc", 0);
    ck_assert_uint_eq(report(&r), 0); /* gone */
    podgroup(&r, "lab/rc", 3);
    ck_assert_uint_eq(report(&r), 2); /* back: told again */
    ext_events_free(r.events);
    r.events = NULL;
    ck_assert_uint_eq(told(&r, "rc-head", SAYS(5)), 1);
    ck_assert_uint_eq(told(&r, "rc-w0", SAYS(5)), 1);
    ck_assert_uint_eq(told(&r, "rc-head", SAYS(4)), 1);
    ck_assert_uint_eq(told(&r, "rc-w0", SAYS(3)), 1);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 6);
    rig_stop(&r);
}
END_TEST

START_TEST(test_told_when_a_pod_appears)
{
    struct rig r;

    rig_start(&r);
    raycluster(&r, "lab/rc");
    podgroup(&r, "lab/rc", 5);
    ck_assert_uint_eq(report(&r), 0); /* nobody to tell yet */
    ck_assert_uint_eq(report(&r), 0);
    pod(&r, "rc-head", "lab/rc", "head");
    ck_assert_uint_eq(report(&r), 1);
    ck_assert_uint_eq(report(&r), 0);
    /* A gang that agrees with itself is never told. */
    raycluster(&r, "lab/ok");
    pod(&r, "ok-head", "lab/ok", "head");
    ck_assert_uint_eq(report(&r), 0);
    ext_events_free(r.events);
    r.events = NULL;
    ck_assert_uint_eq(told(&r, "rc-head", SAYS(5)), 1);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 1);
    rig_stop(&r);
}
END_TEST

static Suite *mismatch_suite(void)
{
    Suite *s = suite_create("mismatch");
    TCase *tc = tcase_create("events");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_once_per_change);
    tcase_add_test(tc, test_told_when_a_pod_appears);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(mismatch_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
