/* fetch.c - the few requests the commands make: one object, a whole collection page by page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"

bool cli__unreachable(int rc)
{
    return rc == EXT_EIO || rc == EXT_ETIMEOUT;
}

/* What each error of a request means for the command. */
static const struct {
    int rc, exit;
} exits[] = {
    {EXT_ENOTFOUND, CLI_EXIT_NOT_FOUND}, {EXT_EIO, CLI_EXIT_UNREACHABLE},
    {EXT_ETIMEOUT, CLI_EXIT_UNREACHABLE}, {EXT_EHTTP, CLI_EXIT_REFUSED},
    {EXT_ECONFLICT, CLI_EXIT_REFUSED},    {EXT_EGONE, CLI_EXIT_REFUSED},
    {EXT_EPROTO, CLI_EXIT_BAD_REPLY},     {EXT_ETOOBIG, CLI_EXIT_BAD_REPLY},
    {EXT_EINVAL, CLI_EXIT_BAD_REPLY},     {EXT_ENOMEM, CLI_EXIT_NOMEM},
};

int cli__exit_of(int rc)
{
    for (size_t i = 0; i < sizeof(exits) / sizeof(exits[0]); i++) {
        if (exits[i].rc == rc)
            return exits[i].exit;
    }
    return rc == EXT_OK ? CLI_EXIT_OK : CLI_EXIT_BAD_REPLY;
}

int cli__get(struct kube_client *c, const char *path, cJSON **out, char *err, size_t errlen)
{
    cJSON *reply = NULL;
    int rc = kube_request(c, "GET", path, NULL, NULL, NULL, &reply, err, errlen);

    if (rc != EXT_OK)
        return rc;
    if (!cJSON_IsObject(reply)) {
        cJSON_Delete(reply);
        return ext_errf(err, errlen, EXT_EPROTO, "GET %s: the answer is not an object", path);
    }
    *out = reply;
    return EXT_OK;
}

/* Moves the items of one page into all (*n of them there); its continue token into next (or ""). */
static int take_page(cJSON *page, cJSON *all, size_t *n, char *next, size_t len, bool *truncated)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items"), *item;
    const char *cont = cli__str(cJSON_GetObjectItemCaseSensitive(page, "metadata"), "continue");

    if (items != NULL && !cJSON_IsArray(items) && !cJSON_IsNull(items))
        return EXT_EPROTO;
    if (cont != NULL && strlen(cont) >= len)
        return EXT_ETOOBIG;
    while (items != NULL && (item = cJSON_DetachItemFromArray(items, 0)) != NULL) {
        if (*n >= CLI_MAX_ITEMS) {
            cJSON_Delete(item);
            *truncated = true;
            break;
        }
        cJSON_AddItemToArray(all, item);
        (*n)++;
    }
    snprintf(next, len, "%s", cont != NULL && !*truncated ? cont : "");
    return EXT_OK;
}

int cli__list(struct kube_client *c, const char *path, cJSON **items, bool *truncated, char *err,
              size_t errlen)
{
    struct ext_arena *a = ext_arena_new();
    cJSON *all = cJSON_CreateArray(), *page;
    char next[2048] = "", url[8192]; /* a token escaped is 3 x its bytes at most */
    int rc = EXT_ENOMEM, pages = 0;
    size_t n = 0;

    *truncated = false;
    if (a == NULL || all == NULL)
        goto out;
    do {
        const char *token = *next ? cli__query_escape(a, next) : "";

        if (token == NULL) {
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
            break;
        }
        if (pages++ == CLI_MAX_PAGES) {
            rc = ext_errf(err, errlen, EXT_EPROTO,
                          "GET %s: more than %d pages (the API server keeps sending continue "
                          "tokens)",
                          path, CLI_MAX_PAGES);
            break;
        }
        snprintf(url, sizeof(url), "%s%climit=%d%s%s", path, strchr(path, '?') ? '&' : '?',
                 CLI_PAGE, *token ? "&continue=" : "", token);
        page = NULL;
        rc = cli__get(c, url, &page, err, errlen);
        if (rc == EXT_OK) {
            rc = take_page(page, all, &n, next, sizeof(next), truncated);
            if (rc == EXT_ETOOBIG)
                ext_errf(err, errlen, rc, "GET %s: a continue token over %zu bytes", path,
                         sizeof(next) - 1);
            else if (rc != EXT_OK)
                ext_errf(err, errlen, rc, "GET %s: items is not a list", path);
        }
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
