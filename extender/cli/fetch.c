/* fetch.c - the few requests the commands make: one object, a whole collection page by page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"

bool cli__unreachable(int rc)
{
    return rc == EXT_EIO || rc == EXT_ETIMEOUT;
}

int cli__exit_of(int rc)
{
    return cli__unreachable(rc) ? CLI_EXIT_UNREACHABLE : CLI_EXIT_FAIL;
}

int cli__get(struct kube_client *c, const char *path, cJSON **out, char *err, size_t errlen)
{
    cJSON *reply = NULL;
    int rc = kube_request(c, "GET", path, NULL, NULL, NULL, &reply, err, errlen);

    if (rc != EXT_OK)
        return rc;
    if (!cJSON_IsObject(reply)) {
        cJSON_Delete(reply);
        return ext_errf(err, errlen, EXT_EINVAL, "GET %s: the answer is not an object", path);
    }
    *out = reply;
    return EXT_OK;
}

/* Moves the items of one page into all; its continue token into next (or ""). */
static int take_page(cJSON *page, cJSON *all, char *next, size_t len, bool *truncated)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items"), *item;
    const char *cont = cli__str(cJSON_GetObjectItemCaseSensitive(page, "metadata"), "continue");

    if (items != NULL && !cJSON_IsArray(items) && !cJSON_IsNull(items))
        return EXT_EINVAL;
    while (items != NULL && (item = cJSON_DetachItemFromArray(items, 0)) != NULL) {
        if (cJSON_GetArraySize(all) >= CLI_MAX_ITEMS) {
            cJSON_Delete(item);
            *truncated = true;
            break;
        }
        cJSON_AddItemToArray(all, item);
    }
    snprintf(next, len, "%s", cont != NULL && !*truncated ? cont : "");
    return EXT_OK;
}

int cli__list(struct kube_client *c, const char *path, cJSON **items, bool *truncated, char *err,
              size_t errlen)
{
    struct ext_arena *a = ext_arena_new();
    cJSON *all = cJSON_CreateArray(), *page;
    char next[4096] = "", url[8192];
    int rc = EXT_ENOMEM;

    *truncated = false;
    if (a == NULL || all == NULL)
        goto out;
    do {
        const char *token = *next ? cli__query_escape(a, next) : "";

        if (token == NULL) {
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
            break;
        }
        snprintf(url, sizeof(url), "%s%climit=%d%s%s", path, strchr(path, '?') ? '&' : '?',
                 CLI_PAGE, *token ? "&continue=" : "", token);
        page = NULL;
        rc = cli__get(c, url, &page, err, errlen);
        if (rc == EXT_OK && take_page(page, all, next, sizeof(next), truncated) != EXT_OK)
            rc = ext_errf(err, errlen, EXT_EINVAL, "GET %s: items is not a list", path);
        cJSON_Delete(page);
    } while (rc == EXT_OK && *next);
out:
    ext_arena_free(a);
    if (rc != EXT_OK) {
        cJSON_Delete(all);
        return rc;
    }
    *items = all;
    return EXT_OK;
}
