/*
 * arith.h - checked arithmetic on quantities and weights (private to policy/).
 *
 * What one pod, node or queue may declare is capped (POLICY_MAX_* in
 * policy.h), so a sum of a few thousand of them is exact in int64. Sums of
 * more saturate at INT64_MAX (never wrap to a negative that would read as
 * room): a saturated counter means "at least this much", which is over every
 * capped allocatable. charge.c keeps the sums it saturates exact in 128 bits
 * beside them, so a counter comes back exactly as its parts leave.
 */
#ifndef MUSTER_POLICY_ARITH_H
#define MUSTER_POLICY_ARITH_H

#include <stdbool.h>
#include <stdint.h>

static inline int64_t parith_add(int64_t a, int64_t b)
{
    int64_t r;

    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t parith_sub(int64_t a, int64_t b)
{
    int64_t r;

    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t parith_mul(int64_t a, int64_t b)
{
    int64_t r;

    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) == (b < 0) ? INT64_MAX : INT64_MIN;
    return r;
}

/* v within [lo, hi]. */
static inline int64_t parith_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* An exact sum as the int64 counter the engine reads: saturated. */
static inline int64_t parith_sat(__int128 v)
{
    return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

#endif
