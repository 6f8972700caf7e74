/*
 * xorshift.h - the seeded generator of the randomized tests (xorshift64, the top bits
 * returned). Each test file that includes it has its own state; a test seeds rng_state
 * before it draws, so a failing seed replays.
 */
#ifndef MUSTER_TEST_XORSHIFT_H
#define MUSTER_TEST_XORSHIFT_H

#include <stdint.h>

static uint64_t rng_state;

static inline uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

#endif
