/*
 * evict_budget.c - may a victim gang's pods all go at once, as far as the
 * PodDisruptionBudgets of their namespace are concerned?
 *
 * The API server checks a budget per eviction and spends one disruption for
 * each real one; a dry run checks but spends nothing. So seven dry runs pass
 * under a budget that allows one disruption, and the second real eviction is
 * refused: the gang would be left broken. This check counts the gang's pods
 * under each budget first. What it cannot read it does not guess: a budget or
 * pod list that fails (an error, a 429, a timeout, a reply over the client's
 * cap) refuses the gang for now, so no budget is ever assumed to allow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "evict.h"

#define BUDGET_PATH_MAX 600

static const char *string_of(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static bool value_listed(const cJSON *values, const char *v)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, values)
    {
        if (cJSON_IsString(x) && strcmp(x->valuestring, v) == 0)
            return true;
    }
    return false;
}

/* One matchExpressions requirement (In, NotIn, Exists, DoesNotExist). */
static bool requirement_holds(const cJSON *req, const cJSON *labels)
{
    const char *key = string_of(req, "key"), *op = string_of(req, "operator");
    const char *v = key ? string_of(labels, key) : NULL;
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(req, "values");

    if (!key || !op)
        return false;
    if (strcmp(op, "In") == 0)
        return v && value_listed(values, v);
    if (strcmp(op, "NotIn") == 0)
        return !v || !value_listed(values, v);
    if (strcmp(op, "Exists") == 0)
        return v != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return v == NULL;
    return false;
}

bool evict_selector_matches(const cJSON *selector, const cJSON *labels)
{
    const cJSON *match = cJSON_GetObjectItemCaseSensitive(selector, "matchLabels");
    const cJSON *exprs = cJSON_GetObjectItemCaseSensitive(selector, "matchExpressions");
    const cJSON *x;

    if (!cJSON_IsObject(selector))
        return false; /* policy/v1: a null selector selects nothing */
    cJSON_ArrayForEach(x, match)
    {
        const char *v = string_of(labels, x->string);

        if (!cJSON_IsString(x) || !v || strcmp(v, x->valuestring) != 0)
            return false;
    }
    cJSON_ArrayForEach(x, exprs)
    {
        if (!requirement_holds(x, labels))
            return false;
    }
    return true;
}

/* GET a list; NULL with a one-line err when it cannot be read. */
static cJSON *get_list(struct kube_client *kube, const char *path, char *err, size_t len)
{
    cJSON *list = NULL;

    if (kube_request(kube, "GET", path, NULL, NULL, NULL, &list, err, len) != EXT_OK ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(list, "items"))) {
        if (list)
            (void)ext_errf(err, len, EXT_EINVAL, "GET %s: the reply has no items list", path);
        cJSON_Delete(list);
        return NULL;
    }
    return list;
}

/* A pod the budget counts: Running, not being deleted (the API server ignores the rest). */
static bool counted(const cJSON *pod)
{
    const char *phase = string_of(cJSON_GetObjectItemCaseSensitive(pod, "status"), "phase");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");

    return phase && strcmp(phase, "Running") == 0 &&
           !cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
}

static bool named(const cJSON *pod, const char *const *names, size_t n)
{
    const char *name = string_of(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "name");

    for (size_t i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* How many of the gang's counted pods does this budget select? */
static size_t under_budget(const cJSON *pdb, const cJSON *pods, const char *const *names, size_t n)
{
    const cJSON *selector =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pdb, "spec"), "selector");
    const cJSON *pod;
    size_t k = 0;

    cJSON_ArrayForEach(pod, pods)
    {
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels");

        k += named(pod, names, n) && counted(pod) && evict_selector_matches(selector, labels);
    }
    return k;
}

/* Does this budget let k pods go? why says which budget refuses. */
static bool budget_allows(const cJSON *pdb, const char *ns, size_t k, char *why, size_t len)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pdb, "metadata");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(pdb, "status");
    const char *name = string_of(meta, "name");
    double generation = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "generation"));
    const cJSON *observed = cJSON_GetObjectItemCaseSensitive(status, "observedGeneration");
    const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(status, "disruptionsAllowed");

    if (!cJSON_IsNumber(observed) || observed->valuedouble < generation) {
        (void)ext_errf(why, len, EXT_OK,
                       "PodDisruptionBudget %s/%s is not processed yet by the disruption "
                       "controller, and %zu of the gang's pods are under it",
                       ns, name ? name : "?", k);
        return false;
    }
    if (!cJSON_IsNumber(allowed) || allowed->valuedouble < (double)k) {
        (void)ext_errf(why, len, EXT_OK,
                       "PodDisruptionBudget %s/%s allows %.0f disruptions, and %zu of the gang's "
                       "running pods are under it",
                       ns, name ? name : "?", cJSON_IsNumber(allowed) ? allowed->valuedouble : 0.0,
                       k);
        return false;
    }
    return true;
}

enum evict_budget evict_budget_check(struct kube_client *kube, const char *ns,
                                     const char *const *names, size_t n, char *why, size_t len)
{
    char path[BUDGET_PATH_MAX], err[400];
    cJSON *budgets, *pods = NULL;
    const cJSON *pdb, *items;
    enum evict_budget verdict = EVICT_BUDGET_ALLOWS;

    if (n == 0)
        return EVICT_BUDGET_ALLOWS;
    if (!kube_name_valid(ns)) {
        (void)ext_errf(why, len, EXT_EINVAL, "namespace %s is not a valid name", ns);
        return EVICT_BUDGET_UNREAD;
    }
    snprintf(path, sizeof(path), "/apis/policy/v1/namespaces/%s/poddisruptionbudgets", ns);
    if (!(budgets = get_list(kube, path, err, sizeof(err)))) {
        (void)ext_errf(why, len, EXT_OK,
                       "the PodDisruptionBudgets of namespace %s could not be read, so nothing "
                       "of the gang is evicted now: %s",
                       ns, err);
        return EVICT_BUDGET_UNREAD;
    }
    items = cJSON_GetObjectItemCaseSensitive(budgets, "items");
    if (cJSON_GetArraySize(items) == 0) {
        cJSON_Delete(budgets);
        return EVICT_BUDGET_ALLOWS;
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
    if (!(pods = get_list(kube, path, err, sizeof(err)))) {
        (void)ext_errf(why, len, EXT_OK,
                       "the pods of namespace %s could not be read to count them under its "
                       "PodDisruptionBudgets, so nothing of the gang is evicted now: %s",
                       ns, err);
        cJSON_Delete(budgets);
        return EVICT_BUDGET_UNREAD;
    }
    cJSON_ArrayForEach(pdb, items)
    {
        size_t k = under_budget(pdb, cJSON_GetObjectItemCaseSensitive(pods, "items"), names, n);

        if (k > 0 && !budget_allows(pdb, ns, k, why, len)) {
            verdict = EVICT_BUDGET_REFUSES;
            break;
        }
    }
    cJSON_Delete(pods);
    cJSON_Delete(budgets);
    return verdict;
}
