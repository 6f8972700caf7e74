/* settings.c - muster's settings: their defaults, their lifetime, their names. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

#define AT(member) offsetof(struct cfg_settings, member)

static const struct {
    size_t off;
    const char *value;
} default_strings[] = {
    {AT(listen), "127.0.0.1:8888"},
    {AT(kubeconfig), ""},
    {AT(default_queue), "default"},
    {AT(gpu_sharing.reservation_namespace), "muster-system"},
    {AT(gpu_sharing.reservation_image), "muster:0.1.0"},
    {AT(gpu_sharing.runtime_class_name), "nvidia"},
    {AT(gpu_sharing.webhook_listen), ""},
    {AT(leader_election.lease_name), "muster-scheduler"},
    {AT(leader_election.lease_namespace), "muster-system"},
    {AT(leader_election.identity), ""},
};

/* Strings that are NULL unless set. */
static const size_t optional_strings[] = {
    AT(tls.cert_file),
    AT(tls.key_file),
    AT(tls.client_ca_file),
    AT(gpu_sharing.webhook_tls.cert_file),
    AT(gpu_sharing.webhook_tls.key_file),
    AT(gpu_sharing.webhook_tls.client_ca_file),
};

static const char *const default_scheduler_names[] = {"muster"};
static const char *const default_queue_label_keys[] = {"muster.dev/queue", "kai.scheduler/queue",
                                                       "volcano.sh/queue-name"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char **string_at(struct cfg_settings *s, size_t off)
{
    return (char **)((char *)s + off);
}

void cfg__strings_cleanup(struct cfg_strings *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int cfg__strings_copy(struct cfg_strings *dst, const char *const *v, size_t n)
{
    struct cfg_strings l = {0};

    l.v = calloc(n ? n : 1, sizeof(*l.v));
    if (l.v == NULL)
        return CFG_ENOMEM;
    for (; l.n < n; l.n++) {
        l.v[l.n] = strdup(v[l.n]);
        if (l.v[l.n] == NULL) {
            cfg__strings_cleanup(&l);
            return CFG_ENOMEM;
        }
    }
    cfg__strings_cleanup(dst);
    *dst = l;
    return CFG_OK;
}

int cfg_settings_init(struct cfg_settings *s)
{
    memset(s, 0, sizeof(*s));
    s->strategy = POLICY_FRAGMENTATION; /* docs/gpu-sharing.md; bench/bench_openb */
    s->plan_ttl_ms = 60000;
    s->bind_wait_ms = 20000;
    s->max_body_bytes = INT64_C(32) << 20;
    s->max_node_names = 20000;
    s->server.max_connections = 10000;
    s->server.max_per_client = 0;
    s->server.idle_timeout_ms = 120000;
    s->server.workers = 16;
    s->server.max_buffered = INT64_C(128) << 20;
    s->server.decode_budget = INT64_C(256) << 20;
    s->server.large_decodes = 2;
    s->log.format = CFG_LOG_PLAIN;
    s->log.level = CFG_LOG_INFO;
    s->gpu_sharing.reservation_timeout_ms = 15000;
    s->gpu_sharing.reservations = true;
    s->leader_election.enabled = false;
    s->evictions.reclaim = true;
    s->evictions.preemption = true;
    s->evictions.refused_victim_wait_ms = 30000;
    s->evictions.unasked_wait_ms = 500;
    s->fairness.half_life_ms = 4 * 3600 * 1000;
    s->fairness.window_ms = INT64_C(7) * 24 * 3600 * 1000; /* KAI's windowSize default, 1w */
    s->fairness.k_milli = 1000;                             /* KAI's kValue default */
    s->fairness.entry_penalty_ms = 0;
    s->watch_protobuf = true;
    for (size_t i = 0; i < COUNT(default_strings); i++) {
        char *v = strdup(default_strings[i].value);

        if (v == NULL)
            goto fail;
        *string_at(s, default_strings[i].off) = v;
    }
    if (cfg__strings_copy(&s->scheduler_names, default_scheduler_names,
                          COUNT(default_scheduler_names)) != CFG_OK ||
        cfg__strings_copy(&s->queue_label_keys, default_queue_label_keys,
                          COUNT(default_queue_label_keys)) != CFG_OK)
        goto fail;
    return CFG_OK;
fail:
    cfg_settings_cleanup(s);
    return CFG_ENOMEM;
}

void cfg_settings_cleanup(struct cfg_settings *s)
{
    for (size_t i = 0; i < COUNT(default_strings); i++)
        free(*string_at(s, default_strings[i].off));
    for (size_t i = 0; i < COUNT(optional_strings); i++)
        free(*string_at(s, optional_strings[i]));
    cfg__strings_cleanup(&s->scheduler_names);
    cfg__strings_cleanup(&s->queue_label_keys);
    memset(s, 0, sizeof(*s));
}

const char *const cfg__strategy_names[] = {"binpack", "spread", "fragmentation", NULL};
const char *const cfg__log_format_names[] = {"plain", "json", NULL};
const char *const cfg__log_level_names[] = {"debug", "info", "warn", "error", NULL};

static const char *name_in(const char *const *names, size_t count, unsigned i)
{
    return i < count - 1 ? names[i] : "unknown";
}

const char *cfg_strategy_name(enum policy_strategy s)
{
    return name_in(cfg__strategy_names, 4, (unsigned)s);
}

const char *cfg_log_format_name(enum cfg_log_format f)
{
    return name_in(cfg__log_format_names, 3, (unsigned)f);
}

const char *cfg_log_level_name(enum cfg_log_level l)
{
    return name_in(cfg__log_level_names, 5, (unsigned)l);
}
