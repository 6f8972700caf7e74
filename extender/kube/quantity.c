/*
 * kube_quantity.c - Kubernetes resource quantities as exact integers.
 *
 * The grammar is resource.Quantity's (k8s.io/apimachinery):
 *   [+-] digits [. digits] [suffix]   suffix: n u m "" k M G T P E
 *                                            | Ki Mi Gi Ti Pi Ei | e<int> E<int>
 * No floating point anywhere: the digits go into a small decimal big number,
 * binary suffixes double it, decimal ones move the point, and whatever is
 * left after the point rounds the magnitude up, as Quantity.Value() and
 * MilliValue() do. One deliberate difference: Kubernetes takes "-", "+" and
 * "." as zero; here a quantity needs at least one digit.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "kube.h"

#define KUBE_QUANTITY_MAX_LEN 64
#define KUBE_BIG_DIGITS 160 /* 64 input digits grown by up to 2^60 */
#define KUBE_EXP_CLAMP 1000 /* beyond this any nonzero value overflows or rounds to 1 */

struct kube__suffix {
    const char *text;
    int exp10;
    int exp2;
};

static const struct kube__suffix kube__suffixes[] = {
    {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

/* A non-negative decimal number, most significant digit first. */
struct kube__big {
    unsigned char d[KUBE_BIG_DIGITS];
    size_t n;
};

static void kube__big_double(struct kube__big *b)
{
    unsigned carry = 0;
    size_t i;

    for (i = b->n; i-- > 0;) {
        unsigned v = b->d[i] * 2u + carry;
        b->d[i] = (unsigned char)(v % 10);
        carry = v / 10;
    }
    if (carry) {
        memmove(b->d + 1, b->d, b->n);
        b->d[0] = (unsigned char)carry;
        b->n++;
    }
}

/* The exponent after e/E: [+-]digits, clamped (the caller knows why). */
static bool kube__parse_exponent(const char *s, int *out)
{
    bool neg = false;
    int v = 0;

    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return false;
        if (v < KUBE_EXP_CLAMP)
            v = v * 10 + (*s - '0');
    }
    *out = neg ? -v : v;
    return true;
}

static bool kube__suffix_lookup(const char *s, int *exp10, int *exp2)
{
    size_t i;

    for (i = 0; i < sizeof(kube__suffixes) / sizeof(kube__suffixes[0]); i++) {
        if (strcmp(s, kube__suffixes[i].text) == 0) {
            *exp10 = kube__suffixes[i].exp10;
            *exp2 = kube__suffixes[i].exp2;
            return true;
        }
    }
    /* "E" alone is exa (above); "E3" and "e3" are exponents. */
    if ((s[0] == 'e' || s[0] == 'E') && s[1] != '\0') {
        *exp2 = 0;
        return kube__parse_exponent(s + 1, exp10);
    }
    return false;
}

/* log10(scale) when scale is a power of ten, else -1. */
static int kube__scale_exp10(int64_t scale)
{
    int e = 0;

    if (scale <= 0)
        return -1;
    while (scale % 10 == 0) {
        scale /= 10;
        e++;
    }
    return scale == 1 ? e : -1;
}

/* ceil(b * 10^exp10) into *out, or false when it does not fit int64. */
static bool kube__big_to_int64(const struct kube__big *b, int exp10, int64_t *out)
{
    size_t whole;
    uint64_t v = 0;
    bool fraction = false;
    size_t i;

    if (b->n == 0) {
        *out = 0;
        return true;
    }
    if (exp10 >= 0) {
        if (b->n + (size_t)exp10 > 19)
            return false;
        whole = b->n;
    } else {
        size_t drop = (size_t)-exp10;
        whole = b->n > drop ? b->n - drop : 0;
    }
    for (i = 0; i < whole; i++)
        v = v * 10 + b->d[i];
    for (; i < b->n; i++)
        fraction = fraction || b->d[i] != 0;
    for (int k = 0; k < exp10; k++)
        v *= 10; /* at most 19 digits in all: cannot wrap uint64 */
    if (fraction)
        v++;
    if (v > INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

int kube_quantity_parse(const char *s, int64_t scale, int64_t *out)
{
    struct kube__big b = {.n = 0};
    const char *p = s;
    bool neg = false;
    int digits = 0, frac = 0, exp10, exp2, scale10;
    int64_t v;

    scale10 = kube__scale_exp10(scale);
    if (s == NULL || scale10 < 0 || strlen(s) > KUBE_QUANTITY_MAX_LEN)
        return EXT_EINVAL;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (b.n > 0 || *p != '0')
            b.d[b.n++] = (unsigned char)(*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++, frac++) {
            if (b.n > 0 || *p != '0')
                b.d[b.n++] = (unsigned char)(*p - '0');
        }
    }
    if (digits == 0 || !kube__suffix_lookup(p, &exp10, &exp2))
        return EXT_EINVAL;
    for (int i = 0; i < exp2; i++)
        kube__big_double(&b);
    if (!kube__big_to_int64(&b, exp10 - frac + scale10, &v))
        return EXT_ETOOBIG;
    *out = neg ? -v : v;
    return EXT_OK;
}

int kube_fraction_parse(const char *s, int32_t *milli)
{
    int64_t v;
    const char *p;

    /* A plain decimal as strconv.ParseFloat reads it: no SI suffix. */
    if (s == NULL)
        return EXT_EINVAL;
    for (p = s; *p != '\0'; p++) {
        if (strchr("+-.0123456789eE", *p) == NULL)
            return EXT_EINVAL;
    }
    if (p > s && (p[-1] == 'E'))
        return EXT_EINVAL; /* "1E" would be exa */
    if (kube_quantity_parse(s, 1000, &v) != EXT_OK)
        return EXT_EINVAL;
    if (v > INT32_MAX || v < INT32_MIN)
        return EXT_ETOOBIG;
    *milli = (int32_t)v;
    return EXT_OK;
}

void kube_quantity_format(int64_t v, enum kube_quantity_style style, char *buf, size_t len)
{
    switch (style) {
    case KUBE_QUANTITY_MILLI:
        if (v % 1000 == 0)
            snprintf(buf, len, "%" PRId64, v / 1000);
        else
            snprintf(buf, len, "%" PRId64 "m", v);
        return;
    case KUBE_QUANTITY_BINARY:
        policy_memory_text(v, buf, len); /* the engine's reasons write bytes the same way */
        return;
    case KUBE_QUANTITY_DECIMAL: {
        char frac[8];
        int64_t whole = v / 1000, rest = v % 1000;
        int n;

        if (rest == 0) {
            snprintf(buf, len, "%" PRId64, whole);
            return;
        }
        if (rest < 0)
            rest = -rest;
        n = snprintf(frac, sizeof(frac), "%03" PRId64, rest);
        while (n > 0 && frac[n - 1] == '0')
            frac[--n] = '\0';
        snprintf(buf, len, "%s%" PRId64 ".%s", v < 0 && whole == 0 ? "-" : "", whole, frac);
        return;
    }
    }
    snprintf(buf, len, "%" PRId64, v);
}
