/* test_lease.c - following kube-scheduler's Lease: who leads, and when nobody does. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "lease.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* 2026-11-29T16:52:16Z */
#define RENEWED ((time_t)1795971136)

static const struct {
    const char *name;
    const char *lease; /* JSON; NULL: no object at all */
    const char *identity;
    time_t now;
    bool held;
} holder_cases[] = {
    {"held by us",
     "{\"spec\":{\"holderIdentity\":\"node-a_5f0c7a4e-9d1b-4c1e-8f5a-0e6b2f1d3c4a\","
     "\"leaseDurationSeconds\":15,\"renewTime\":\"2026-11-29T16:52:16.123456Z\"}}",
     "node-a", RENEWED + 2, true},
    {"held by us, last second of the lease",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16.999999Z\"}}",
     "node-a", RENEWED + 15, true},
    {"renewTime without a fraction",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16Z\"}}",
     "node-a", RENEWED, true},
    {"held by the other replica",
     "{\"spec\":{\"holderIdentity\":\"node-b_0e6b2f1d\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16.123456Z\"}}",
     "node-a", RENEWED + 2, false},
    {"expired",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16.123456Z\"}}",
     "node-a", RENEWED + 16, false},
    {"identity is a prefix of the holder's host",
     "{\"spec\":{\"holderIdentity\":\"host-10_5f0c7a4e\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16.123456Z\"}}",
     "host-1", RENEWED, false},
    {"holder is exactly the identity, no uuid",
     "{\"spec\":{\"holderIdentity\":\"node-a\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16Z\"}}",
     "node-a", RENEWED, false},
    {"released (empty holder)",
     "{\"spec\":{\"holderIdentity\":\"\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16Z\"}}",
     "node-a", RENEWED, false},
    {"empty identity",
     "{\"spec\":{\"holderIdentity\":\"_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16Z\"}}",
     "", RENEWED, false},
    {"no holderIdentity",
     "{\"spec\":{\"leaseDurationSeconds\":15,\"renewTime\":\"2026-11-29T16:52:16Z\"}}", "node-a",
     RENEWED, false},
    {"no renewTime", "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15}}",
     "node-a", RENEWED, false},
    {"no leaseDurationSeconds",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"renewTime\":\"2026-11-29T16:52:16Z\"}}",
     "node-a", RENEWED, false},
    {"leaseDurationSeconds is a string",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":\"15\","
     "\"renewTime\":\"2026-11-29T16:52:16Z\"}}",
     "node-a", RENEWED, false},
    {"renewTime with an offset (RFC 3339 allows it; 15:52:16Z)",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16+01:00\"}}",
     "node-a", RENEWED - 3600 + 15, true},
    {"renewTime with an offset, expired",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16+01:00\"}}",
     "node-a", RENEWED, false},
    {"renewTime without a zone",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16\"}}",
     "node-a", RENEWED, false},
    {"renewTime with junk after the zone",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"2026-11-29T16:52:16.123Zjunk\"}}",
     "node-a", RENEWED, false},
    {"renewTime not RFC 3339",
     "{\"spec\":{\"holderIdentity\":\"node-a_x\",\"leaseDurationSeconds\":15,"
     "\"renewTime\":\"yesterday\"}}",
     "node-a", RENEWED, false},
    {"no spec", "{\"metadata\":{\"name\":\"muster-scheduler\"}}", "node-a", RENEWED, false},
    {"no object", NULL, "node-a", RENEWED, false},
};

START_TEST(test_holder_is)
{
    cJSON *lease = NULL;

    if (holder_cases[_i].lease != NULL) {
        lease = cJSON_Parse(holder_cases[_i].lease);
        ck_assert_msg(lease != NULL, "%s: not JSON", holder_cases[_i].name);
    }
    ck_assert_msg(lease_holder_is(lease, holder_cases[_i].identity, holder_cases[_i].now) ==
                      holder_cases[_i].held,
                  "%s: want %s", holder_cases[_i].name,
                  holder_cases[_i].held ? "held" : "not held");
    cJSON_Delete(lease);
}
END_TEST

/* Leader election off: this replica always leads, and no request is made (c is NULL). */
START_TEST(test_disabled_leads)
{
    struct cfg_settings s;
    char holder[64] = "untouched";

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert(!s.leader_election.enabled);
    ck_assert(lease_leading(NULL, &s.leader_election, holder, sizeof(holder)));
    ck_assert_str_eq(holder, "untouched");
    cfg_settings_cleanup(&s);
}
END_TEST

static Suite *lease_suite(void)
{
    Suite *s = suite_create("lease");
    TCase *tc;

    tc = tcase_create("holder");
    tcase_add_loop_test(tc, test_holder_is, 0, N(holder_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("time");
    suite_add_tcase(s, tc);
    tc = tcase_create("disabled");
    tcase_add_test(tc, test_disabled_leads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(lease_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
