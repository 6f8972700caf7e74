/*
 * test_gpushare.c - GPU sharing made real at bind (gpushare/share.c) against
 * the canned API server (fixtures/daemon): a member's reservation pod is
 * created, the fake reports its device, and the member's ConfigMap is written
 * with NVIDIA_VISIBLE_DEVICES and GPU_FRACTION; a reservation pod that never
 * reports is deleted by the commit's deadline and sharing on its node paused.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canned_api.h"
#include "gpushare.h"

#define DIR "daemon"
#define RES_PODS "/api/v1/namespaces/muster-system/pods"
#define RES_G0 RES_PODS "/gpu-reservation-n1-g0"
#define RES_G1 RES_PODS "/gpu-reservation-n1-g1"
#define MEMBER "/api/v1/namespaces/lab/pods/s-0"
#define CONFIGMAPS "/api/v1/namespaces/lab/configmaps"

struct rig {
    struct canned_api api;
    struct cfg_settings settings;
    struct policy_cluster *engine;
    pthread_mutex_t lock;
    bool stopping;
    struct gpushare share;
};

static void rig_up(struct rig *r, const struct canned_route *routes, size_t nroutes)
{
    const struct policy_options po = {0};
    const struct policy_node_spec n1 = {
        .name = "n1", .cpu_milli = 8000, .memory_bytes = 32LL << 30, .pods = 110, .gpus = 2};

    canned_api_start_routes(&r->api, DIR, routes, nroutes);
    ck_assert_int_eq(cfg_settings_init(&r->settings), CFG_OK);
    free(r->settings.gpu_sharing.reservation_image); /* the default names muster's version */
    r->settings.gpu_sharing.reservation_image = strdup("registry.example/muster:test");
    r->engine = policy_cluster_new(&po);
    ck_assert_ptr_nonnull(r->engine);
    ck_assert_int_eq(policy_node_upsert(r->engine, &n1), POLICY_OK);
    pthread_mutex_init(&r->lock, NULL);
    r->stopping = false;
    r->share = (struct gpushare){.settings = &r->settings.gpu_sharing,
                                 .kube = canned_api_client(&r->api, NULL),
                                 .engine = r->engine,
                                 .engine_lock = &r->lock,
                                 .stopping = &r->stopping};
}

static void rig_down(struct rig *r)
{
    ck_assert_uint_eq(canned_api_unmatched(&r->api), 0);
    kube_client_free(r->share.kube);
    policy_cluster_free(r->engine);
    pthread_mutex_destroy(&r->lock);
    cfg_settings_cleanup(&r->settings);
    canned_api_stop(&r->api);
}

/* Would the engine open a new shared GPU on n1 now? (A fresh half-GPU pod, filtered.) */
static bool sharing_paused(struct rig *r)
{
    const struct policy_pod_spec x = {.namespace_ = "lab",
                                      .name = "probe",
                                      .uid = "probe-uid",
                                      .cpu_milli = 100,
                                      .gpu_share_milli = 500,
                                      .managed = true};
    const char *nodes[] = {"n1"};
    struct policy_filter_result fr;
    bool paused;

    pthread_mutex_lock(&r->lock);
    ck_assert_int_eq(policy_pod_upsert(r->engine, &x, ext_now_ms()), POLICY_OK);
    ck_assert_int_eq(policy_filter(r->engine, "lab", "probe", nodes, 1, ext_now_ms(), &fr),
                     POLICY_OK);
    pthread_mutex_unlock(&r->lock);
    paused = fr.verdicts[0].fit != POLICY_FITS;
    if (paused)
        ck_assert_msg(fr.verdicts[0].reason && strstr(fr.verdicts[0].reason, "sharing paused"),
                      "n1 refused for another reason: %s", fr.verdicts[0].reason);
    policy_filter_result_cleanup(&fr);
    return paused;
}

static struct policy_assignment member(const char *groups)
{
    return (struct policy_assignment){.namespace_ = "lab",
                                      .name = "s-0",
                                      .uid = "00000000-0000-4000-8000-0000000000e0",
                                      .node = "n1",
                                      .gpu_share_milli = 500,
                                      .gpu_groups = (char *)groups};
}

/* ---- the device reported ------------------------------------------------------------------- */

static const struct prepare_case {
    const char *name;
    const char *groups;
    struct canned_route routes[6];
    const char *req;
} prepare_cases[] = {
    {"one group: created, reported on the second look, ConfigMap written",
     "g0",
     {{"POST", RES_PODS, {"created.http"}},
      {"GET", RES_G0, {"share_res_g0_pending.http", "share_res_g0_reported.http"}},
      {"GET", MEMBER, {"share_pod.http"}},
      {"POST", CONFIGMAPS, {"created.http"}}},
     "gpushare_prepare.req"},
    {"the reservation pod and the ConfigMap exist already",
     "g0",
     {{"POST", RES_PODS, {"conflict_409.http"}},
      {"GET", RES_G0, {"share_res_g0_reported.http"}},
      {"GET", MEMBER, {"share_pod.http"}},
      {"POST", CONFIGMAPS, {"conflict_409.http"}},
      {"PATCH", CONFIGMAPS "/muster-gpu-abc123", {"share_pod.http"}}},
     "gpushare_prepare_exists.req"},
    {"two groups: both devices in the ConfigMap",
     "g0,g1",
     {{"POST", RES_PODS, {"created.http"}},
      {"GET", RES_G0, {"share_res_g0_reported.http"}},
      {"GET", RES_G1, {"share_res_g1_reported.http"}},
      {"GET", MEMBER, {"share_pod.http"}},
      {"POST", CONFIGMAPS, {"created.http"}}},
     "gpushare_prepare_two.req"},
    {"no share id label (webhook not installed): no ConfigMap",
     "g0",
     {{"POST", RES_PODS, {"created.http"}},
      {"GET", RES_G0, {"share_res_g0_reported.http"}},
      {"GET", MEMBER, {"share_pod_unlabelled.http"}}},
     "gpushare_prepare_unlabelled.req"},
};

START_TEST(test_prepare)
{
    const struct prepare_case *t = &prepare_cases[_i];
    struct policy_assignment m = member(t->groups);
    size_t nroutes = 0;
    char err[512] = "";
    struct rig r;

    while (nroutes < 6 && t->routes[nroutes].method)
        nroutes++;
    rig_up(&r, t->routes, nroutes);
    ck_assert_msg(gpu_share_prepare(&r.share, &m, ext_now_ms() + 10000, err, sizeof(err)) == EXT_OK,
                  "%s: %s", t->name, err);
    canned_api_expect(&r.api, t->req, canned_api_nreq(&r.api));
    ck_assert(!sharing_paused(&r));
    rig_down(&r);
}
END_TEST

/* ---- the device never reported ------------------------------------------------------------- */

static const struct canned_route never_reports[] = {
    {"POST", RES_PODS, {"created.http"}},
    {"GET", RES_G0, {"share_res_g0_pending.http"}},
    {"DELETE", RES_G0, {"patched.http"}},
};

static const struct give_up_case {
    const char *name;
    bool stopping; /* muster shuts down meanwhile */
    int rc;
    const char *err;
    size_t deletes;
    bool paused;
} give_up_cases[] = {
    {"the deadline passes", false, EXT_ETIMEOUT,
     "reservation pod muster-system/gpu-reservation-n1-g0 did not report its GPU within 300 ms "
     "(image pull failure or device plugin down?); sharing on that node is paused and the gang "
     "requeued",
     1, true},
    /* Nothing is undone: the restarted muster adopts the reservation pod. */
    {"muster shuts down", true, EXT_ESTOPPED, "muster is shutting down; kube-scheduler will retry",
     0, false},
};

START_TEST(test_prepare_gives_up)
{
    const struct give_up_case *t = &give_up_cases[_i];
    struct policy_assignment m = member("g0");
    char err[512] = "", *last;
    struct rig r;

    rig_up(&r, never_reports, 3);
    r.settings.gpu_sharing.reservation_timeout_ms = 300;
    r.stopping = t->stopping;
    ck_assert_int_eq(gpu_share_prepare(&r.share, &m, ext_now_ms() + 300, err, sizeof(err)), t->rc);
    ck_assert_str_eq(err, t->err);
    ck_assert_uint_eq(canned_api_hits(&r.api, "POST", RES_PODS), 1);
    ck_assert_uint_ge(canned_api_hits(&r.api, "GET", RES_G0), 1);
    ck_assert_uint_eq(canned_api_hits(&r.api, "DELETE", RES_G0), t->deletes);
    ck_assert_uint_eq(canned_api_hits(&r.api, "POST", CONFIGMAPS), 0);
    last = canned_api_request(&r.api, canned_api_nreq(&r.api) - 1);
    ck_assert_msg(strncmp(last, t->deletes ? "DELETE " : "GET ", t->deletes ? 7 : 4) == 0,
                  "%s: the last request was %s", t->name, last);
    free(last);
    ck_assert_int_eq(sharing_paused(&r), t->paused);
    rig_down(&r);
}
END_TEST

/* ---- early reservation --------------------------------------------------------------------- */

START_TEST(test_reserve_early)
{
    static const struct canned_route routes[] = {
        {"POST", RES_PODS, {"created.http", "conflict_409.http"}},
    };
    struct rig r;

    rig_up(&r, routes, 1);
    gpu_share_reserve_early(&r.share, "n1", "g0,g1");
    gpu_share_reserve_early(&r.share, "n1", NULL);
    canned_api_expect(&r.api, "gpushare_reserve_early.req", 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 2);
    rig_down(&r);
}
END_TEST

static Suite *gpushare_suite(void)
{
    Suite *s = suite_create("gpushare");
    TCase *tc;

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))
    tc = tcase_create("prepare");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_prepare, 0, N(prepare_cases));
    tcase_add_loop_test(tc, test_prepare_gives_up, 0, N(give_up_cases));
    tcase_add_test(tc, test_reserve_early);
    suite_add_tcase(s, tc);
#undef N
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gpushare_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
