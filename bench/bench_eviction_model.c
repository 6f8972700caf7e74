/*
 * bench_eviction_model.c - the eviction model checker (test/eviction_model.h), long:
 *   bench_eviction_model [SCENARIOS [FIRST_SEED]]     default 100000 from seed 1
 * Prints what it ran and the violations by kind every 10,000 scenarios and at the end;
 * exits 1 on any violation.
 */
#include <stdio.h>
#include <stdlib.h>

#include "eviction_model.h"

int main(int argc, char **argv)
{
    unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    unsigned long long seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    struct em_stats st = {0};

    for (unsigned long long i = 0; i < n; i++) {
        em_run(seed + i, &st);
        if ((i + 1) % 10000 == 0 && i + 1 < n)
            em_print(&st, stdout);
    }
    em_print(&st, stdout);
    return em_total_violations(&st) ? 1 : 0;
}
