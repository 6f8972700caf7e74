/*
 * fuzz_settings.c - muster's settings file: cfg_docs_parse then
 * cfg_settings_from_doc, as `muster serve --config` reads it.
 *
 * On success the settings hold the rules docs/config.md promises: a listen
 * address that parses, at least one scheduler name, TLS pairs complete, a
 * webhook only with its TLS, bindWait < planTTL, a Lease to follow, caps
 * above zero. On failure: a one-line reason and the settings as they were.
 */
#include <stdint.h>

#include "config.h"
#include "fuzz_common.h"

static void check_tls(const struct cfg_tls *t)
{
    fuzz_require((t->cert_file == NULL) == (t->key_file == NULL), "TLS pairs are complete");
    if (t->cert_file != NULL) {
        (void)strlen(t->cert_file);
        (void)strlen(t->key_file);
    }
}

static void check_settings(const struct cfg_settings *s)
{
    const struct cfg_leader_election *le = &s->leader_election;
    unsigned port;
    size_t i;

    fuzz_require_string(s->listen, "listen");
    fuzz_require(cfg_hostport_parse(s->listen, NULL, 0, &port) == CFG_OK, "listen parses");
    check_tls(&s->tls);
    check_tls(&s->gpu_sharing.webhook_tls);
    fuzz_require_string(s->kubeconfig, "kubeconfig");
    fuzz_require(s->scheduler_names.n >= 1, "at least one scheduler name");
    for (i = 0; i < s->scheduler_names.n; i++)
        fuzz_require_string(s->scheduler_names.v[i], "scheduler name");
    for (i = 0; i < s->queue_label_keys.n; i++)
        fuzz_require_string(s->queue_label_keys.v[i], "queue label key");
    fuzz_require(s->bind_wait_ms > 0 && s->bind_wait_ms < s->plan_ttl_ms, "bindWait < planTTL");
    fuzz_require(s->max_body_bytes > 0 && s->max_node_names > 0, "caps above zero");
    fuzz_require((unsigned)s->log.level <= CFG_LOG_ERROR, "log level");
    fuzz_require((unsigned)s->log.format <= CFG_LOG_JSON, "log format");
    fuzz_require_string(cfg_strategy_name(s->strategy), "strategy");
    fuzz_require_string(s->gpu_sharing.webhook_listen, "webhookListen");
    fuzz_require(s->gpu_sharing.webhook_listen[0] == '\0' ||
                     s->gpu_sharing.webhook_tls.cert_file != NULL,
                 "a webhook only with its TLS");
    fuzz_require_string(le->lease_name, "leaderElection.leaseName");
    fuzz_require(le->lease_name[0] != '\0' && le->lease_namespace[0] != '\0',
                 "a Lease name and namespace");
    fuzz_require_string(le->identity, "leaderElection.identity");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfg_settings s;
    struct cfg_docs d;
    const char *listen_before;
    char err[256];
    int rc;

    if (cfg_docs_parse(&d, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) != CFG_OK)
        return 0;
    fuzz_require(cfg_settings_init(&s) == CFG_OK, "settings init");
    check_settings(&s); /* the defaults hold the rules too */
    listen_before = s.listen;
    rc = cfg_settings_from_doc(&s, &d, d.n > 0 ? d.docs[0] : NULL, err, sizeof(err));
    if (rc == CFG_OK) {
        check_settings(&s);
    } else {
        fuzz_require_err(err, sizeof(err));
        fuzz_require(strncmp(err, "fuzz.yaml", 9) == 0, "errors name the file");
        fuzz_require(s.listen == listen_before, "settings untouched on failure");
        check_settings(&s);
    }
    cfg_settings_cleanup(&s);
    cfg_docs_cleanup(&d);
    return 0;
}
