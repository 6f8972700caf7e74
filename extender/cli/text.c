/* text.c - quantities, times and tables as a person reads them. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_int.h"

const char *cli__str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const struct {
    int64_t scale;
    enum kube_quantity_style style;
} units[POLICY_RES_COUNT] = {
    [POLICY_RES_CPU] = {1000, KUBE_QUANTITY_MILLI},
    [POLICY_RES_MEMORY] = {1, KUBE_QUANTITY_BINARY},
    [POLICY_RES_GPU] = {POLICY_GPU_MILLI, KUBE_QUANTITY_DECIMAL},
};

void cli__amount(int64_t v, enum policy_resource r, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "unlimited");
    else
        kube_quantity_format(v, units[r].style, buf, len);
}

bool cli__amount_parse(const cJSON *v, enum policy_resource r, int64_t *out)
{
    char text[64];

    if (cJSON_IsNumber(v))
        snprintf(text, sizeof(text), "%.15g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(text, sizeof(text), "%s", v->valuestring);
    else
        return false;
    return kube_quantity_parse(text, units[r].scale, out) == EXT_OK;
}

/* ---- times ------------------------------------------------------------------------- */

int64_t cli__time(const char *s)
{
    int64_t us = ext_time_us(s);

    return us < 0 ? -1 : us / 1000000;
}

/* kubectl's duration.HumanDuration. */
void cli__age(int64_t now, int64_t then, char *buf, size_t len)
{
    int64_t s = now - then, m = s / 60, h = s / 3600, d = h / 24, y = d / 365;

    if (then < 0)
        snprintf(buf, len, "<unknown>");
    else if (s < -1)
        snprintf(buf, len, "<invalid>");
    else if (s < 0)
        snprintf(buf, len, "0s");
    else if (s < 120)
        snprintf(buf, len, "%" PRId64 "s", s);
    else if (m < 10 && s % 60 != 0)
        snprintf(buf, len, "%" PRId64 "m%" PRId64 "s", m, s % 60);
    else if (m < 180)
        snprintf(buf, len, "%" PRId64 "m", m);
    else if (h < 8 && m % 60 != 0)
        snprintf(buf, len, "%" PRId64 "h%" PRId64 "m", h, m % 60);
    else if (h < 48)
        snprintf(buf, len, "%" PRId64 "h", h);
    else if (h < 192 && h % 24 != 0)
        snprintf(buf, len, "%" PRId64 "d%" PRId64 "h", d, h % 24);
    else if (d < 730)
        snprintf(buf, len, "%" PRId64 "d", d);
    else if (y < 8 && d % 365 != 0)
        snprintf(buf, len, "%" PRId64 "y%" PRId64 "d", y, d % 365);
    else
        snprintf(buf, len, "%" PRId64 "y", y);
}

char *cli__query_escape(struct ext_arena *a, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = ext_arena_alloc(a, strlen(s) * 3 + 1), *o = out;

    if (out == NULL)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p) != NULL) {
            *o++ = (char)*p;
            continue;
        }
        *o++ = '%';
        *o++ = hex[*p >> 4];
        *o++ = hex[*p & 15];
    }
    *o = '\0';
    return out;
}

/* ---- tables ------------------------------------------------------------------------ */

void cli__table_init(struct cli_table *t, struct ext_arena *a, size_t ncols)
{
    memset(t, 0, sizeof(*t));
    t->a = a;
    t->ncols = ncols;
}

void cli__table_cleanup(struct cli_table *t)
{
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* Every cell is escaped here, whatever its source: no caller can forget. */
void cli__table_add(struct cli_table *t, const char *text)
{
    const char *copy = ext_text_safe(t->a, text != NULL ? text : "<none>");

    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        const char **cells = realloc(t->cells, cap * sizeof(*cells));

        if (cells == NULL) {
            t->oom = true;
            return;
        }
        t->cells = cells;
        t->cap = cap;
    }
    t->oom = t->oom || copy == NULL;
    t->cells[t->n++] = copy != NULL ? copy : "";
}

void cli__table_addf(struct cli_table *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    cli__table_add(t, buf);
}

void cli__table_print(const struct cli_table *t, FILE *out)
{
    size_t *width = calloc(t->ncols, sizeof(*width));

    if (width == NULL || t->ncols == 0)
        goto out;
    for (size_t i = 0; i < t->n; i++) {
        size_t w = ext_text_width(t->cells[i]);

        if (w > width[i % t->ncols])
            width[i % t->ncols] = w;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->ncols;

        fputs(t->cells[i], out);
        if (c + 1 == t->ncols || i + 1 == t->n) {
            fputc('\n', out);
            continue;
        }
        for (size_t pad = ext_text_width(t->cells[i]); pad < width[c] + 3; pad++)
            fputc(' ', out);
    }
out:
    free(width);
}
