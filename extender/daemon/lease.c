/* lease.c - following kube-scheduler's leader election Lease; see lease.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "config.h"
#include "lease.h"

#define LEASE_PATH_MAX 640

static const char *spec_string(const cJSON *spec, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* holderIdentity is "<identity>_<uuid>": "host-1" must not match "host-10_...". */
static bool held_by(const char *holder, const char *identity)
{
    size_t n = strlen(identity);

    return n > 0 && strncmp(holder, identity, n) == 0 && holder[n] == '_';
}

static bool fresh(const cJSON *spec, time_t now)
{
    const cJSON *duration = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    int64_t renewed_us = ext_time_us(spec_string(spec, "renewTime"));

    if (!cJSON_IsNumber(duration) || duration->valuedouble <= 0 ||
        duration->valuedouble > 365.0 * 24 * 3600 || renewed_us < 0)
        return false;
    return (time_t)(renewed_us / 1000000) + (time_t)duration->valuedouble >= now;
}

bool lease_holder_is(const cJSON *lease, const char *identity, time_t now)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    const char *holder = spec_string(spec, "holderIdentity");

    if (holder == NULL || identity == NULL || !held_by(holder, identity))
        return false;
    return fresh(spec, now);
}

/* holder gets a + b, one line. */
static void why(char *holder, size_t len, const char *a, const char *b)
{
    if (holder != NULL && len > 0) {
        snprintf(holder, len, "%s%s", a, b);
        cfg_one_line(holder);
    }
}

bool lease_leading(struct kube_client *c, const struct cfg_leader_election *le, char *holder,
                   size_t len)
{
    char path[LEASE_PATH_MAX], host[256] = "", err[256] = "";
    const char *identity = le->identity, *who;
    const cJSON *spec;
    cJSON *lease = NULL;
    time_t now = time(NULL);
    bool leading;
    int rc;

    if (!le->enabled)
        return true;
    if (*identity == '\0') {
        if (gethostname(host, sizeof(host) - 1) != 0)
            host[0] = '\0';
        identity = host;
    }
    if (!kube_name_valid(le->lease_namespace) || !kube_name_valid(le->lease_name)) {
        why(holder, len, "invalid Lease name ", le->lease_name);
        return false;
    }
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
             le->lease_namespace, le->lease_name);
    rc = kube_request(c, "GET", path, NULL, NULL, NULL, &lease, err, sizeof(err));
    if (rc != EXT_OK) {
        why(holder, len, rc == EXT_ENOTFOUND ? "nobody (no Lease)" : err, "");
        cJSON_Delete(lease);
        return false;
    }
    leading = lease_holder_is(lease, identity, now);
    spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    who = spec_string(spec, "holderIdentity");
    if (who == NULL || *who == '\0')
        why(holder, len, "nobody", "");
    else
        why(holder, len, who, fresh(spec, now) ? "" : " (expired)");
    cJSON_Delete(lease);
    return leading;
}
