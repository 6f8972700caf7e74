/*
 * daemon_test.h - a `muster serve` daemon inside a Check test: built with
 * ext_daemon_init (no reflectors, housekeeping, events or HTTP servers unless
 * the test starts them), talking to the canned API server (canned_api.h),
 * its cluster loaded from fixture Lists of Kubernetes objects.
 */
#ifndef MUSTER_TEST_DAEMON_TEST_H
#define MUSTER_TEST_DAEMON_TEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "canned_api.h"
#include "daemon_int.h"
#include "fixture.h"

/* Settings at their defaults; api NULL: no API server (the --offline daemon). */
static inline void daemon_test_up(struct ext_daemon *d, const struct canned_api *api)
{
    char err[256] = "";

    memset(d, 0, sizeof(*d));
    ck_assert_int_eq(cfg_settings_init(&d->settings), CFG_OK);
    d->kube = api ? canned_api_client(api, NULL) : NULL;
    ck_assert_msg(ext_daemon_init(d, err, sizeof(err)) == EXT_OK, "ext_daemon_init: %s", err);
}

static inline void daemon_test_down(struct ext_daemon *d)
{
    ext_daemon_cleanup(d);
}

/* The cache source a Kubernetes object comes from, by apiVersion and kind. */
static inline enum cache_source daemon_test_source(const cJSON *obj)
{
    const char *av = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "apiVersion"));
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "kind"));
    enum cache_source src = cache_source_of(av, kind);

    ck_assert_msg(src != CACHE_SOURCE_COUNT, "no cache source for %s %s", av ? av : "?",
                  kind ? kind : "?");
    return src;
}

/* Apply one object as a watch event of this type would. */
static inline void daemon_test_apply(struct cache *c, const char *type, const cJSON *obj)
{
    cache_apply(c, daemon_test_source(obj), type, obj);
}

/* FIXTURES/dir/name: one object, or a List whose items are applied in order. */
static inline void daemon_test_load(struct cache *c, const char *dir, const char *name,
                                    const char *type)
{
    char *text = fixture_read(dir, name, NULL);
    cJSON *doc = cJSON_Parse(text), *items, *obj;

    ck_assert_msg(doc != NULL, "%s/%s is not JSON", dir, name);
    items = cJSON_GetObjectItemCaseSensitive(doc, "items");
    if (cJSON_IsArray(items)) {
        cJSON_ArrayForEach(obj, items)
        {
            daemon_test_apply(c, type, obj);
        }
    } else {
        daemon_test_apply(c, type, doc);
    }
    cJSON_Delete(doc);
    free(text);
}

/* The engine's view of pod ns/name, copied out under the lock: its phase, or -1 if unknown. */
static inline int daemon_test_phase(struct ext_daemon *d, const char *ns, const char *name)
{
    struct policy_pod_view v;
    int phase = -1;

    pthread_mutex_lock(&d->cache.lock);
    if (policy_pod_view_get(d->cache.engine, ns, name, &v))
        phase = (int)v.phase;
    pthread_mutex_unlock(&d->cache.lock);
    return phase;
}

/* A counter or gauge series of the daemon's registry (one label value or none). */
static inline double daemon_test_metric(struct ext_metric *m, const char *value)
{
    const char *v[] = {value};

    return ext_series_value(ext_metric_with(m, value ? v : NULL));
}

/* The filter kube-scheduler sends for this pod object, offering node n1 (no_wait: as the HTTP
 * event loop runs it); the answer's Error (malloc'd, NULL when there is none), the handler's
 * code in *rc. */
static inline char *daemon_test_filter_with(struct ext_daemon *d, const cJSON *pod, bool no_wait,
                                            int *rc)
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
    a.no_wait = no_wait;
    *rc = ext_daemon_handlers.filter(d, &a, &ans);
    error = ans.error ? strdup(ans.error) : NULL;
    ext_filter_args_cleanup(&a);
    ext_arena_free(ans.pool);
    free(body);
    cJSON_Delete(req);
    return error;
}

static inline char *daemon_test_filter_rc(struct ext_daemon *d, const cJSON *pod, int *rc)
{
    return daemon_test_filter_with(d, pod, false, rc);
}

/* The same, answered without a handler failure. */
static inline char *daemon_test_filter(struct ext_daemon *d, const cJSON *pod)
{
    int rc;
    char *error = daemon_test_filter_rc(d, pod, &rc);

    ck_assert_msg(rc == EXT_OK, "filter: %s (%s)", ext_strerror(rc), error ? error : "");
    return error;
}

#endif
