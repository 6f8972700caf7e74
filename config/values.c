/* values.c - the spellings of durations, sizes and listen addresses. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

#define NS_PER_MS INT64_C(1000000)
#define MAX_FRACTION_DIGITS 18

struct unit {
    const char *name;
    int64_t scale;
};

static const struct unit duration_units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* µs, micro sign */
    {"\xce\xbcs", 1000}, /* μs, greek mu */
    {"ms", NS_PER_MS},
    {"s", 1000 * NS_PER_MS},
    {"m", 60 * 1000 * NS_PER_MS},
    {"h", 3600 * 1000 * NS_PER_MS},
    {NULL, 0},
};

static const struct unit size_suffixes[] = {
    {"", 1},
    {"k", INT64_C(1000)},
    {"M", INT64_C(1000000)},
    {"G", INT64_C(1000000000)},
    {"T", INT64_C(1000000000000)},
    {"P", INT64_C(1000000000000000)},
    {"Ki", INT64_C(1) << 10},
    {"Mi", INT64_C(1) << 20},
    {"Gi", INT64_C(1) << 30},
    {"Ti", INT64_C(1) << 40},
    {"Pi", INT64_C(1) << 50},
    {NULL, 0},
};

static const struct unit *find_unit(const struct unit *table, const char *name, size_t len)
{
    for (; table->name != NULL; table++) {
        if (strlen(table->name) == len && memcmp(table->name, name, len) == 0)
            return table;
    }
    return NULL;
}

/*
 * "12" or "12.5" or ".5": the digits as one integer and how many of them are
 * the fraction. Fraction digits past MAX_FRACTION_DIGITS are dropped, as Go does.
 */
static int parse_decimal(const char **pp, uint64_t *mant, int *frac_digits)
{
    const char *p = *pp;
    uint64_t v = 0;
    int digits = 0, frac = -1;

    for (; (*p >= '0' && *p <= '9') || (*p == '.' && frac < 0); p++) {
        if (*p == '.') {
            frac = 0;
            continue;
        }
        digits++;
        if (frac >= MAX_FRACTION_DIGITS)
            continue;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return CFG_ERANGE;
        if (frac >= 0)
            frac++;
    }
    if (digits == 0)
        return CFG_EINVAL;
    *pp = p;
    *mant = v;
    *frac_digits = frac < 0 ? 0 : frac;
    return CFG_OK;
}

static uint64_t pow10u(int n)
{
    uint64_t v = 1;

    while (n-- > 0)
        v *= 10;
    return v;
}

/* mant / 10^frac * scale, exact; CFG_EINVAL if not whole, CFG_ERANGE past int64. */
static int scale_exact(uint64_t mant, int frac, int64_t scale, int64_t *out)
{
    unsigned __int128 v = (unsigned __int128)mant * (uint64_t)scale;
    uint64_t div = pow10u(frac);

    if (v % div != 0)
        return CFG_EINVAL;
    v /= div;
    if (v > INT64_MAX)
        return CFG_ERANGE;
    *out = (int64_t)v;
    return CFG_OK;
}

int cfg_milli_parse(const char *s, int64_t *milli)
{
    const char *p = s;
    uint64_t mant;
    int frac, rc;

    rc = parse_decimal(&p, &mant, &frac);
    if (rc != CFG_OK)
        return rc;
    if (*p != '\0')
        return CFG_EINVAL;
    return scale_exact(mant, frac, 1000, milli);
}

/* One "1.5h" of a duration, in nanoseconds; Go truncates below a nanosecond. */
static int duration_part(const char **pp, int64_t *ns)
{
    const struct unit *u;
    const char *name;
    uint64_t mant;
    int frac, rc;
    unsigned __int128 v;

    rc = parse_decimal(pp, &mant, &frac);
    if (rc != CFG_OK)
        return rc;
    name = *pp;
    while (**pp != '\0' && **pp != '.' && !(**pp >= '0' && **pp <= '9'))
        (*pp)++;
    u = find_unit(duration_units, name, (size_t)(*pp - name));
    if (u == NULL)
        return CFG_EINVAL;
    v = (unsigned __int128)mant * (uint64_t)u->scale / pow10u(frac);
    if (v > INT64_MAX)
        return CFG_ERANGE;
    *ns = (int64_t)v;
    return CFG_OK;
}

int cfg_duration_parse(const char *s, int64_t *ms)
{
    const char *p = s;
    int64_t total = 0, part;
    bool neg = false;
    int rc;

    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (strcmp(p, "0") == 0) {
        *ms = 0;
        return CFG_OK;
    }
    if (*p == '\0')
        return CFG_EINVAL;
    while (*p != '\0') {
        rc = duration_part(&p, &part);
        if (rc != CFG_OK)
            return rc;
        if (__builtin_add_overflow(total, part, &total))
            return CFG_ERANGE;
    }
    if (total % NS_PER_MS != 0)
        return CFG_EINVAL;
    *ms = neg ? -(total / NS_PER_MS) : total / NS_PER_MS;
    return CFG_OK;
}

void cfg_duration_format(int64_t ms, char *buf, size_t len)
{
    uint64_t v = ms < 0 ? 0 - (uint64_t)ms : (uint64_t)ms;
    uint64_t h = v / 3600000, m = v / 60000 % 60, s = v / 1000 % 60, frac = v % 1000;
    size_t n = 0;
    int w;

#define PUT(...)                                                                                   \
    do {                                                                                           \
        w = snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__);                                 \
        n += w > 0 ? (size_t)w : 0;                                                                \
    } while (0)
    if (len == 0)
        return;
    buf[0] = '\0';
    if (ms < 0)
        PUT("-");
    if (v < 1000) {
        PUT("%" PRIu64 "ms", v);
        return;
    }
    if (h > 0)
        PUT("%" PRIu64 "h", h);
    if (m > 0)
        PUT("%" PRIu64 "m", m);
    if (s > 0 || frac > 0) {
        PUT("%" PRIu64, s);
        if (frac > 0) {
            char digits[8];

            snprintf(digits, sizeof(digits), ".%03u", (unsigned)frac);
            for (size_t i = strlen(digits) - 1; digits[i] == '0'; i--)
                digits[i] = '\0';
            PUT("%s", digits);
        }
        PUT("s");
    }
#undef PUT
}

int cfg_size_parse(const char *s, int64_t *bytes)
{
    const struct unit *u;
    const char *p = s;
    uint64_t mant;
    int frac, rc;

    rc = parse_decimal(&p, &mant, &frac);
    if (rc != CFG_OK)
        return rc;
    u = find_unit(size_suffixes, p, strlen(p));
    if (u == NULL)
        return CFG_EINVAL;
    return scale_exact(mant, frac, u->scale, bytes);
}

static int parse_port(const char *p, unsigned *port)
{
    unsigned v = 0;
    size_t n = 0;

    for (; *p >= '0' && *p <= '9'; p++, n++) {
        if (n >= 5)
            return CFG_ERANGE;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (n == 0 || *p != '\0')
        return CFG_EINVAL;
    if (v < 1 || v > 65535)
        return CFG_ERANGE;
    *port = v;
    return CFG_OK;
}

int cfg_hostport_parse(const char *s, char *host, size_t hostlen, unsigned *port)
{
    const char *h = s, *end;
    unsigned p;
    int rc;

    if (*s == '[') {
        h = s + 1;
        end = strchr(h, ']');
        if (end == NULL || end[1] != ':')
            return CFG_EINVAL;
    } else {
        end = strrchr(s, ':');
        if (end == NULL || memchr(s, ':', (size_t)(end - s)) != NULL)
            return CFG_EINVAL; /* none, or an IPv6 address without brackets */
    }
    if (end == h || strcspn(h, " \t[]") < (size_t)(end - h))
        return CFG_EINVAL;
    if ((size_t)(end - h) > CFG_HOST_MAX)
        return CFG_ETOOBIG;
    rc = parse_port(end + (*s == '[' ? 2 : 1), &p);
    if (rc != CFG_OK)
        return rc;
    if (host != NULL) {
        if ((size_t)(end - h) >= hostlen)
            return CFG_ERANGE;
        memcpy(host, h, (size_t)(end - h));
        host[end - h] = '\0';
    }
    *port = p;
    return CFG_OK;
}
