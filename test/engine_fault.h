/*
 * engine_fault.h - engine calls that fail on demand, for the tests of how the
 * daemon reports an engine failure (test_cache, test_handlers, test_barrier).
 *
 * Those tests link with -Wl,--wrap for each call below (test/CMakeLists.txt):
 * the daemon's calls reach engine_fault.c, which passes them on to the engine
 * until one is armed. engine_fault_arm(call, rc) makes the next such call
 * return rc without reaching the engine.
 */
#ifndef MUSTER_TEST_ENGINE_FAULT_H
#define MUSTER_TEST_ENGINE_FAULT_H

#include "base.h"
#include "policy.h"

enum engine_fault_call {
    ENGINE_FAULT_NODE_UPSERT, /* policy_node_upsert */
    ENGINE_FAULT_POD_UPSERT,  /* policy_pod_upsert */
    ENGINE_FAULT_BIND,        /* policy_bind */
    ENGINE_FAULT_CALLS
};

/* The next call fails with rc (a POLICY_E* code); POLICY_OK disarms it. */
void engine_fault_arm(enum engine_fault_call call, int rc);

/* The engine's failures, the shell's code for each and the words the daemon reports. */
static const struct {
    int policy_rc;
    int ext_rc;
    const char *words; /* policy_strerror's */
} engine_faults[] = {
    {POLICY_EINVAL, EXT_EINVAL, "invalid spec"},
    {POLICY_ENOENT, EXT_ENOTFOUND, "no such object"},
    {POLICY_ELIMIT, EXT_ETOOBIG, "engine limit reached"},
    {POLICY_ENOMEM, EXT_ENOMEM, "out of memory"},
};

#define ENGINE_FAULTS ((int)(sizeof(engine_faults) / sizeof(engine_faults[0])))

#endif
