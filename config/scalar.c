/*
 * scalar.c - what a plain YAML scalar means, by go-yaml v2's rules (YAML
 * 1.1), since that is what kubectl and sigs.k8s.io/yaml apply to manifests.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

struct word {
    const char *text;
    enum cfg__scalar meaning;
};

static const struct word words[] = {
    {"", CFG__SCALAR_NULL},           {"~", CFG__SCALAR_NULL},
    {"null", CFG__SCALAR_NULL},       {"Null", CFG__SCALAR_NULL},
    {"NULL", CFG__SCALAR_NULL},       {"y", CFG__SCALAR_TRUE},
    {"Y", CFG__SCALAR_TRUE},          {"yes", CFG__SCALAR_TRUE},
    {"Yes", CFG__SCALAR_TRUE},        {"YES", CFG__SCALAR_TRUE},
    {"true", CFG__SCALAR_TRUE},       {"True", CFG__SCALAR_TRUE},
    {"TRUE", CFG__SCALAR_TRUE},       {"on", CFG__SCALAR_TRUE},
    {"On", CFG__SCALAR_TRUE},         {"ON", CFG__SCALAR_TRUE},
    {"n", CFG__SCALAR_FALSE},         {"N", CFG__SCALAR_FALSE},
    {"no", CFG__SCALAR_FALSE},        {"No", CFG__SCALAR_FALSE},
    {"NO", CFG__SCALAR_FALSE},        {"false", CFG__SCALAR_FALSE},
    {"False", CFG__SCALAR_FALSE},     {"FALSE", CFG__SCALAR_FALSE},
    {"off", CFG__SCALAR_FALSE},       {"Off", CFG__SCALAR_FALSE},
    {"OFF", CFG__SCALAR_FALSE},       {".inf", CFG__SCALAR_NONFINITE},
    {".Inf", CFG__SCALAR_NONFINITE},  {".INF", CFG__SCALAR_NONFINITE},
    {"+.inf", CFG__SCALAR_NONFINITE}, {"+.Inf", CFG__SCALAR_NONFINITE},
    {"+.INF", CFG__SCALAR_NONFINITE}, {"-.inf", CFG__SCALAR_NONFINITE},
    {"-.Inf", CFG__SCALAR_NONFINITE}, {"-.INF", CFG__SCALAR_NONFINITE},
    {".nan", CFG__SCALAR_NONFINITE},  {".NaN", CFG__SCALAR_NONFINITE},
    {".NAN", CFG__SCALAR_NONFINITE},
};

static bool is_digit_in(int c, unsigned base)
{
    unsigned v;

    if (c >= '0' && c <= '9')
        v = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
        v = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
        v = (unsigned)(c - 'A' + 10);
    else
        return false;
    return v < base;
}

static unsigned digit_value(int c)
{
    if (c >= '0' && c <= '9')
        return (unsigned)(c - '0');
    return (unsigned)((c | 0x20) - 'a' + 10);
}

/* Go's strconv.ParseUint(s, 0, 64) after a sign: base prefix, then digits. */
static int parse_magnitude(const char *p, uint64_t *mag)
{
    unsigned base = 10;
    uint64_t v = 0;

    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        base = 8, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    else if (p[0] == '0' && p[1] != '\0')
        base = 8, p += 1;
    if (*p == '\0')
        return CFG_EINVAL;
    for (; *p != '\0'; p++) {
        if (!is_digit_in(*p, base))
            return CFG_EINVAL;
        if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, digit_value(*p), &v))
            return CFG_ERANGE;
    }
    *mag = v;
    return CFG_OK;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool looks_float(const char *p)
{
    size_t n = 0;

    if (*p == '+' || *p == '-')
        p++;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            n++;
        if (n == 0)
            return false;
    } else {
        for (; *p >= '0' && *p <= '9'; p++)
            n++;
        if (n == 0)
            return false;
        if (*p == '.')
            for (p++; *p >= '0' && *p <= '9'; p++)
                ;
    }
    if (*p == 'e' || *p == 'E') {
        n = 0;
        p++;
        if (*p == '+' || *p == '-')
            p++;
        for (; *p >= '0' && *p <= '9'; p++)
            n++;
        if (n == 0)
            return false;
    }
    return *p == '\0';
}

/* A copy of s without underscores (go-yaml strips them before parsing). */
static char *strip_underscores(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    size_t j = 0;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '_')
            out[j++] = s[i];
    }
    out[j] = '\0';
    return out;
}

/* Sign and magnitude of an integer; CFG_ENOMEM, CFG_EINVAL or CFG_ERANGE. */
static int parse_signed(const char *plain, bool *neg, uint64_t *mag)
{
    const char *p = plain;

    *neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    return parse_magnitude(p, mag);
}

int cfg__int_parse(const char *s, size_t len, int64_t *out)
{
    char *plain = strip_underscores(s, len);
    uint64_t mag;
    bool neg;
    int rc;

    if (plain == NULL)
        return CFG_ENOMEM;
    rc = parse_signed(plain, &neg, &mag);
    free(plain);
    if (rc != CFG_OK)
        return rc;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return CFG_ERANGE;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return CFG_OK;
}

static enum cfg__scalar resolve_number(const char *plain, double *num)
{
    uint64_t mag;
    bool neg;
    double v;

    if (parse_signed(plain, &neg, &mag) == CFG_OK && (!neg || mag <= (uint64_t)INT64_MAX + 1)) {
        *num = neg ? -(double)mag : (double)mag;
        return CFG__SCALAR_INT;
    }
    if (!looks_float(plain))
        return CFG__SCALAR_STRING;
    errno = 0;
    v = strtod(plain, NULL);
    if (isinf(v)) /* Go's ParseFloat refuses overflow; go-yaml then keeps a string */
        return CFG__SCALAR_STRING;
    *num = v;
    return CFG__SCALAR_FLOAT;
}

enum cfg__scalar cfg__scalar_resolve(const char *s, size_t len, double *num)
{
    enum cfg__scalar kind;
    char *plain;

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strlen(words[i].text) == len && memcmp(words[i].text, s, len) == 0)
            return words[i].meaning;
    }
    if (len == 0 || !(s[0] == '-' || s[0] == '+' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9')))
        return CFG__SCALAR_STRING;
    plain = strip_underscores(s, len);
    if (plain == NULL)
        return CFG__SCALAR_STRING; /* out of memory: keeping the text loses nothing */
    kind = resolve_number(plain, num);
    free(plain);
    return kind;
}
