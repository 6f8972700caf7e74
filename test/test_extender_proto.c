/* test_extender_proto.c - ExtenderArgs decoding, caps, and the exact reply text. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"
#include "fixture.h"

static char *read_fixture(const char *name, size_t *len)
{
    return fixture_read("extender", name, len);
}

/* ---- good requests ------------------------------------------------------------ */

static const struct {
    const char *file;
    enum ext_node_form form;
    size_t n;
    const char *first, *last;
} filter_cases[] = {
    {"filter_names.json", EXT_NODES_BY_NAME, 3, "gpu-1", "gpu-3"},
    {"filter_nodes.json", EXT_NODES_FULL, 2, "gpu-1", "gpu-2"},
    {"prioritize_names.json", EXT_NODES_BY_NAME, 2, "gpu-1", "gpu-2"},
    {"filter_lowercase.json", EXT_NODES_BY_NAME, 2, "gpu-1", "gpu-2"},
};

START_TEST(test_filter_args)
{
    struct ext_filter_args a;
    char err[256] = "";
    size_t len;
    char *body = read_fixture(filter_cases[_i].file, &len);
    const cJSON *name;

    ck_assert_int_eq(
        ext_filter_args_decode(body, len, &ext_proto_limits_default, &a, err, sizeof(err)), EXT_OK);
    ck_assert_int_eq(a.form, filter_cases[_i].form);
    ck_assert_uint_eq(a.n, filter_cases[_i].n);
    ck_assert_str_eq(a.names[0], filter_cases[_i].first);
    ck_assert_str_eq(a.names[a.n - 1], filter_cases[_i].last);
    name = ext_json_get(ext_json_get(a.pod, "metadata"), "name");
    ck_assert_str_eq(cJSON_GetStringValue(name), "rc-a-gpu-worker-x7k2p");
    if (a.form == EXT_NODES_FULL) {
        ck_assert_ptr_nonnull(a.nodes);
        ck_assert_ptr_nonnull(ext_json_get(a.nodes[1], "status"));
    } else {
        ck_assert_ptr_null(a.nodes);
    }
    ext_filter_args_cleanup(&a);
    free(body);
}
END_TEST

static const struct {
    const char *file;
    const char *name, *ns, *uid, *node;
} bind_cases[] = {
    {"bind.json", "rc-a-gpu-worker-x7k2p", "team-a", "5f0c1b9e-2d3a-4c1e-9b7a-0d1e2f3a4b5c",
     "gpu-1"},
    {"bind_lowercase.json", "rc-a-gpu-worker-x7k2p", "team-a", "5f0c1b9e", "gpu-1"},
};

/* Bind names go into API paths: each is checked as Kubernetes checks it. */
static const struct {
    const char *body;
    const char *err;
} bad_bind_names[] = {
    {"{\"PodName\":\"../x\",\"PodNamespace\":\"ns\",\"Node\":\"n\"}",
     "PodName \"../x\" is not a DNS-1123 subdomain"},
    {"{\"PodName\":\"p\",\"PodNamespace\":\"ns/x\",\"Node\":\"n\"}",
     "PodNamespace \"ns/x\" is not a DNS-1123 label"},
    {"{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"Node\":\"n?x=1\"}",
     "Node \"n?x=1\" is not a DNS-1123 subdomain"},
    {"{\"PodName\":\"P\",\"PodNamespace\":\"ns\",\"Node\":\"n\"}",
     "PodName \"P\" is not a DNS-1123 subdomain"},
};

START_TEST(test_bind_bad_names)
{
    struct ext_bind_args a;
    char err[256] = "";
    const char *body = bad_bind_names[_i].body;

    ck_assert_int_eq(
        ext_bind_args_decode(body, strlen(body), &ext_proto_limits_default, &a, err, sizeof(err)),
        EXT_EINVAL);
    ck_assert_msg(strstr(err, bad_bind_names[_i].err) != NULL, "%s", err);
}
END_TEST

START_TEST(test_bind_args)
{
    struct ext_bind_args a;
    char err[256] = "";
    size_t len;
    char *body = read_fixture(bind_cases[_i].file, &len);

    ck_assert_int_eq(
        ext_bind_args_decode(body, len, &ext_proto_limits_default, &a, err, sizeof(err)), EXT_OK);
    ck_assert_str_eq(a.pod_name, bind_cases[_i].name);
    ck_assert_str_eq(a.pod_namespace, bind_cases[_i].ns);
    ck_assert_str_eq(a.pod_uid, bind_cases[_i].uid);
    ck_assert_str_eq(a.node, bind_cases[_i].node);
    ext_bind_args_cleanup(&a);
    free(body);
}
END_TEST

START_TEST(test_preempt_meta)
{
    struct ext_preempt_args a;
    char err[256] = "";
    size_t len;
    char *body = read_fixture("preempt_meta.json", &len);

    ck_assert_int_eq(
        ext_preempt_args_decode(body, len, &ext_proto_limits_default, &a, err, sizeof(err)),
        EXT_OK);
    ck_assert(a.meta);
    ck_assert_uint_eq(a.n, 2);
    ck_assert_str_eq(a.nodes[0].node, "gpu-1");
    ck_assert_uint_eq(a.nodes[0].npods, 2);
    ck_assert_str_eq(a.nodes[0].uids[1], "uid-low-2");
    ck_assert_int_eq(a.nodes[0].num_pdb_violations, 1);
    ck_assert_ptr_null(a.nodes[0].pods);
    ck_assert_str_eq(a.nodes[1].node, "gpu-2");
    ck_assert_str_eq(a.nodes[1].uids[0], "uid-low-3");
    ext_preempt_args_cleanup(&a);
    free(body);
}
END_TEST

START_TEST(test_preempt_full)
{
    struct ext_preempt_args a;
    char err[256] = "";
    size_t len;
    char *body = read_fixture("preempt_full.json", &len);

    ck_assert_int_eq(
        ext_preempt_args_decode(body, len, &ext_proto_limits_default, &a, err, sizeof(err)),
        EXT_OK);
    ck_assert(!a.meta);
    ck_assert_uint_eq(a.n, 1);
    ck_assert_uint_eq(a.nodes[0].npods, 1);
    ck_assert_str_eq(a.nodes[0].uids[0], "uid-low-1");
    ck_assert_str_eq(
        cJSON_GetStringValue(ext_json_get(ext_json_get(a.nodes[0].pods[0], "metadata"), "name")),
        "low-prio-1");
    ext_preempt_args_cleanup(&a);
    free(body);
}
END_TEST

/* Go's encoding/json: an exact key wins over a case-insensitive one. */
START_TEST(test_key_match)
{
    cJSON *doc = cJSON_Parse("{\"pod\":1,\"Pod\":2,\"NODE\":3}");

    ck_assert_int_eq(ext_json_get(doc, "Pod")->valueint, 2);
    ck_assert_int_eq(ext_json_get(doc, "pod")->valueint, 1);
    ck_assert_int_eq(ext_json_get(doc, "Node")->valueint, 3);
    ck_assert_ptr_null(ext_json_get(doc, "Nodes"));
    cJSON_Delete(doc);
}
END_TEST

/* ---- bad requests -------------------------------------------------------------- */

enum decoder { DEC_FILTER, DEC_BIND, DEC_PREEMPT };

static int decode(enum decoder d, const char *body, size_t len, const struct ext_proto_limits *lim,
                  char *err, size_t errlen)
{
    struct ext_filter_args fa;
    struct ext_bind_args ba;
    struct ext_preempt_args pa;
    int rc;

    switch (d) {
    case DEC_FILTER:
        rc = ext_filter_args_decode(body, len, lim, &fa, err, errlen);
        if (rc == EXT_OK)
            ext_filter_args_cleanup(&fa);
        return rc;
    case DEC_BIND:
        rc = ext_bind_args_decode(body, len, lim, &ba, err, errlen);
        if (rc == EXT_OK)
            ext_bind_args_cleanup(&ba);
        return rc;
    case DEC_PREEMPT:
        rc = ext_preempt_args_decode(body, len, lim, &pa, err, errlen);
        if (rc == EXT_OK)
            ext_preempt_args_cleanup(&pa);
        return rc;
    }
    return EXT_EINVAL;
}

static const struct {
    const char *file;
    enum decoder dec;
    int rc;
    const char *err;
} bad_cases[] = {
    {"bad_malformed.json", DEC_FILTER, EXT_EINVAL, "malformed JSON at byte 50"},
    {"bad_missing_pod.json", DEC_FILTER, EXT_EINVAL, "missing Pod"},
    {"bad_null_pod.json", DEC_FILTER, EXT_EINVAL, "missing Pod"},
    {"bad_pod_not_object.json", DEC_FILTER, EXT_EINVAL, "Pod is not an object"},
    {"bad_nodenames_not_array.json", DEC_FILTER, EXT_EINVAL, "NodeNames is not an array"},
    {"bad_nodenames_not_string.json", DEC_FILTER, EXT_EINVAL, "NodeNames[1] is not a string"},
    {"bad_no_candidates.json", DEC_FILTER, EXT_EINVAL, "neither NodeNames nor Nodes is set"},
    {"bad_node_without_name.json", DEC_FILTER, EXT_EINVAL, "Nodes.items[0] has no metadata.name"},
    {"bad_not_object.json", DEC_FILTER, EXT_EINVAL, "ExtenderArgs must be a JSON object"},
    {"bad_depth_bomb.json", DEC_FILTER, EXT_ETOOBIG,
     "JSON nested deeper than 64 levels at byte 81"},
    {"bad_missing_pod.json", DEC_PREEMPT, EXT_EINVAL, "missing Pod"},
    {"bad_preempt_victim_no_uid.json", DEC_PREEMPT, EXT_EINVAL, "victim 0 on node n1 has no UID"},
    {"bad_bind_missing_node.json", DEC_BIND, EXT_EINVAL, "missing Node"},
    {"bad_bind_name_not_string.json", DEC_BIND, EXT_EINVAL, "PodName is not a string"},
    {"bad_not_object.json", DEC_BIND, EXT_EINVAL, "ExtenderBindingArgs must be a JSON object"},
    {"bad_depth_bomb.json", DEC_PREEMPT, EXT_ETOOBIG,
     "JSON nested deeper than 64 levels at byte 81"},
};

START_TEST(test_bad_fixture)
{
    char err[256] = "";
    size_t len;
    char *body = read_fixture(bad_cases[_i].file, &len);

    ck_assert_int_eq(
        decode(bad_cases[_i].dec, body, len, &ext_proto_limits_default, err, sizeof(err)),
        bad_cases[_i].rc);
    ck_assert_str_eq(err, bad_cases[_i].err);
    free(body);
}
END_TEST

/* {"Pod":{},"NodeNames":["n0",...]} with n names of name_len bytes. */
static char *names_body(size_t n, size_t name_len, size_t *len)
{
    size_t cap = 64 + n * (name_len + 3), i;
    char *buf = malloc(cap), *p = buf;

    ck_assert_ptr_nonnull(buf);
    p += sprintf(p, "{\"Pod\":{},\"Nodes\":null,\"NodeNames\":[");
    for (i = 0; i < n; i++) {
        *p++ = i > 0 ? ',' : '"';
        if (i > 0)
            *p++ = '"';
        memset(p, 'n', name_len);
        p += name_len;
        *p++ = '"';
    }
    p += sprintf(p, "]}");
    *len = (size_t)(p - buf);
    return buf;
}

START_TEST(test_too_many_names)
{
    char err[256];
    size_t len;
    char *body = names_body(EXT_PROTO_MAX_NAMES_DEFAULT + 1, 4, &len);

    ck_assert_int_eq(decode(DEC_FILTER, body, len, &ext_proto_limits_default, err, sizeof(err)),
                     EXT_ETOOBIG);
    ck_assert_str_eq(err, "20001 node names, over the cap of 20000");
    free(body);
    body = names_body(EXT_PROTO_MAX_NAMES_DEFAULT, 4, &len);
    ck_assert_int_eq(decode(DEC_FILTER, body, len, &ext_proto_limits_default, err, sizeof(err)),
                     EXT_OK);
    free(body);
}
END_TEST

START_TEST(test_huge_string)
{
    struct ext_proto_limits lim = ext_proto_limits_default;
    char err[256];
    size_t len;
    char *body;

    lim.max_string = 1000;
    body = names_body(1, 1000, &len);
    ck_assert_int_eq(decode(DEC_FILTER, body, len, &lim, err, sizeof(err)), EXT_OK);
    free(body);
    body = names_body(1, 1001, &len);
    ck_assert_int_eq(decode(DEC_FILTER, body, len, &lim, err, sizeof(err)), EXT_ETOOBIG);
    ck_assert_str_eq(err, "JSON string at byte 36 is longer than the cap of 1000 bytes");
    free(body);
}
END_TEST

START_TEST(test_body_cap)
{
    struct ext_proto_limits lim = ext_proto_limits_default;
    char err[256];
    size_t len;
    char *body = names_body(100, 8, &len);

    lim.max_body = len - 1;
    ck_assert_int_eq(decode(DEC_FILTER, body, len, &lim, err, sizeof(err)), EXT_ETOOBIG);
    ck_assert(strstr(err, "is over the cap of") != NULL);
    lim.max_body = len;
    ck_assert_int_eq(decode(DEC_FILTER, body, len, &lim, err, sizeof(err)), EXT_OK);
    free(body);
}
END_TEST

/* Brackets inside strings, and escaped quotes, are not nesting. */
static const struct {
    const char *body;
    int rc;
} depth_cases[] = {
    {"{\"Pod\":{\"x\":\"[[[[[[[[[[[[[[[[[[[[[\\\"[[[[[[[[[[[[[\"},\"NodeNames\":[]}", EXT_OK},
    {"{\"Pod\":{\"a\":[[[[[[]]]]]]},\"NodeNames\":[]}", EXT_ETOOBIG}, /* depth 8 > 6 */
    {"{\"Pod\":{\"a\":[[[[]]]]},\"NodeNames\":[]}", EXT_OK},          /* depth 6 */
    {"", EXT_EINVAL},
    {"   ", EXT_EINVAL},
    {"{\"Pod\":{}", EXT_EINVAL},
    {"{\"Pod\":{},\"NodeNames\":[]} trailing", EXT_EINVAL},
    {"{\"Pod\":{},\"NodeNames\":[]} \r\n", EXT_OK},
};

START_TEST(test_depth)
{
    struct ext_proto_limits lim = ext_proto_limits_default;
    char err[256] = "";

    lim.max_depth = 6;
    ck_assert_int_eq(decode(DEC_FILTER, depth_cases[_i].body, strlen(depth_cases[_i].body), &lim,
                            err, sizeof(err)),
                     depth_cases[_i].rc);
}
END_TEST

/*
 * What the precheck refuses before anything is parsed: a NUL that a C string
 * would end at, bytes that are not UTF-8, a parse over the decode budget.
 */
static const struct {
    const char *body;
    size_t budget; /* 0: none */
    int rc;
    const char *err;
} precheck_cases[] = {
    {"{\"a\":\"x\\u0000y\"}", 0, EXT_EINVAL,
     "JSON string at byte 5 holds a NUL character (\\u0000)"},
    {"{\"a\\u0000\":1}", 0, EXT_EINVAL, "JSON string at byte 1 holds a NUL character (\\u0000)"},
    {"{\"a\":\"x\\\\u0000\"}", 0, EXT_OK, NULL}, /* an escaped backslash, then text */
    {"{\"a\":\"\\u00001\"}", 0, EXT_EINVAL,
     "JSON string at byte 5 holds a NUL character (\\u0000)"},
    {"{\"a\":\"\xff\"}", 0, EXT_EINVAL, "invalid UTF-8 at byte 6"},
    {"{\"a\":\"\xc0\xaf\"}", 0, EXT_EINVAL, "invalid UTF-8 at byte 6"},         /* overlong '/' */
    {"{\"a\":\"\xed\xa0\x80\"}", 0, EXT_EINVAL, "invalid UTF-8 at byte 6"},     /* a surrogate */
    {"{\"a\":\"\xf4\x90\x80\x80\"}", 0, EXT_EINVAL, "invalid UTF-8 at byte 6"}, /* past U+10FFFF */
    {"{\"a\":\"\xe2\x82\"}", 0, EXT_EINVAL, "invalid UTF-8 at byte 6"},         /* cut short */
    {"{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", 0, EXT_OK, NULL},
    /* 4 values of 80 bytes and a key and a string of 32: 384 bytes */
    {"{\"a\":[1,\"b\"]}", 384, EXT_OK, NULL},
    {"{\"a\":[1,\"b\"]}", 383, EXT_ETOOBIG,
     "parsing this body would take about 1 MiB, over the per-request decode budget of 0 MiB"},
    {"[0,0,0,0,0,0,0,0,0,0]", 880, EXT_OK, NULL},
    {"[0,0,0,0,0,0,0,0,0,0]", 879, EXT_ETOOBIG, NULL},
};

START_TEST(test_precheck)
{
    struct ext_proto_limits lim = ext_proto_limits_default;
    const char *body = precheck_cases[_i].body;
    char err[256] = "";

    lim.decode_budget = precheck_cases[_i].budget;
    ck_assert_int_eq(ext_json_precheck(body, strlen(body), &lim, err, sizeof(err)),
                     precheck_cases[_i].rc);
    if (precheck_cases[_i].err != NULL)
        ck_assert_str_eq(err, precheck_cases[_i].err);
}
END_TEST

/*
 * NodeNames decoded straight into the pool: the same names, order, caps and
 * errors as the cJSON path (ext_filter_args_decode_reference). names: the
 * expected names joined by '|', for EXT_OK.
 */
static const struct {
    const char *body;
    size_t max_names, max_string; /* 0: the default */
    int rc;
    const char *err, *names;
} fast_cases[] = {
    {"{\"Pod\":{},\"NodeNames\":[\"a\\\"b\",\"c\\\\d\",\"e\\/f\",\"t\\tx\\n\\b\\f\\r\"]}", 0, 0,
     EXT_OK, NULL, "a\"b|c\\d|e/f|t\tx\n\b\f\r"},
    {"{\"Pod\":{},\"NodeNames\":[\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00z\"]}", 0, 0, EXT_OK, NULL,
     "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z"},
    {"{\"Pod\":{},\"nodenames\":[\"x\",\"y\"]}", 0, 0, EXT_OK, NULL, "x|y"},
    {" {\"Pod\" : {} ,\"NODENAMES\" :\n[ \"x\" ,\t\"y\" ] } ", 0, 0, EXT_OK, NULL, "x|y"},
    {"{\"Pod\":{},\"NodeNames\":[\"a\"],\"NodeNames\":[\"b\"]}", 0, 0, EXT_OK, NULL, "a"},
    {"{\"Pod\":{},\"nodeNames\":[\"a\"],\"NodeNames\":[\"b\"]}", 0, 0, EXT_OK, NULL, "b"},
    {"{\"Pod\":{},\"NODENAMES\":[\"a\"],\"nodenames\":[\"b\"]}", 0, 0, EXT_OK, NULL, "a"},
    {"{\"Pod\":{},\"NodeNames\":null,\"NodeNames\":[\"b\"]}", 0, 0, EXT_EINVAL,
     "neither NodeNames nor Nodes is set", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\"],\"NodeNames\":7}", 0, 0, EXT_OK, NULL, "a"},
    {"{\"Pod\":{},\"Node\\u004eames\":[\"a\",\"b\"]}", 0, 0, EXT_OK, NULL, "a|b"},
    {"{\"Pod\":{},\"NodeNames\":[\"a\",1]}", 0, 0, EXT_EINVAL, "NodeNames[1] is not a string",
     NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\",null,\"c\"]}", 0, 0, EXT_EINVAL,
     "NodeNames[1] is not a string", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"abcdefghi\",\"abcdefghij\"]}", 0, 9, EXT_ETOOBIG,
     "JSON string at byte 35 is longer than the cap of 9 bytes", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"abcdefghi\"]}", 0, 9, EXT_OK, NULL, "abcdefghi"},
    {"{\"Pod\":{},\"NodeNames\":[\"\\u0041bcdef\"]}", 0, 9, EXT_ETOOBIG,
     "JSON string at byte 23 is longer than the cap of 9 bytes", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}", 2, 0, EXT_ETOOBIG,
     "3 node names, over the cap of 2", NULL},
    {"{\"NodeNames\":[\"a\",\"b\",\"c\"]}", 2, 0, EXT_EINVAL, "missing Pod", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\",\"b\"]}", 2, 0, EXT_OK, NULL, "a|b"},
    {"{\"Pod\":{},\"NodeNames\":[\"\\ud800\"]}", 0, 0, EXT_EINVAL, "malformed JSON at byte 24",
     NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"\\x\"]}", 0, 0, EXT_EINVAL, "malformed JSON at byte 24", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\",]}", 0, 0, EXT_EINVAL, "malformed JSON at byte 27", NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\\u0000b\",\"c\"]}", 0, 0, EXT_EINVAL,
     "JSON string at byte 23 holds a NUL character (\\u0000)", NULL},
    {"{\"NodeNames\":[\"a\",\"b\"],\"Pod\":{]}", 0, 0, EXT_EINVAL, "malformed JSON at byte 31",
     NULL},
    {"{\"Pod\":{},\"NodeNames\":[\"a\"]} x", 0, 0, EXT_EINVAL,
     "trailing data after the JSON value at byte 29", NULL},
    {"{\"Pod\":{},\"NodeNames\":[    ]}", 0, 0, EXT_OK, NULL, ""},
};

static void check_names(const struct ext_filter_args *a, const char *want)
{
    char joined[256] = "";
    size_t i;

    for (i = 0; i < a->n; i++) {
        if (i > 0)
            strcat(joined, "|");
        strcat(joined, a->names[i]);
    }
    ck_assert_str_eq(joined, want);
}

START_TEST(test_fast_names)
{
    struct ext_proto_limits lim = ext_proto_limits_default;
    struct ext_filter_args a, ref;
    char err[256] = "", ref_err[256] = "";
    const char *body = fast_cases[_i].body;
    size_t i;
    int rc, ref_rc;

    if (fast_cases[_i].max_names > 0)
        lim.max_names = fast_cases[_i].max_names;
    if (fast_cases[_i].max_string > 0)
        lim.max_string = fast_cases[_i].max_string;
    rc = ext_filter_args_decode(body, strlen(body), &lim, &a, err, sizeof(err));
    ref_rc =
        ext_filter_args_decode_reference(body, strlen(body), &lim, &ref, ref_err, sizeof(ref_err));
    ck_assert_int_eq(rc, fast_cases[_i].rc);
    ck_assert_int_eq(ref_rc, rc);
    if (rc != EXT_OK) {
        ck_assert_str_eq(err, fast_cases[_i].err);
        ck_assert_str_eq(ref_err, err);
        return;
    }
    ck_assert_int_eq(a.form, EXT_NODES_BY_NAME);
    ck_assert(cJSON_IsObject(a.pod));
    check_names(&a, fast_cases[_i].names);
    ck_assert_uint_eq(ref.n, a.n);
    for (i = 0; i < a.n; i++)
        ck_assert_str_eq(ref.names[i], a.names[i]);
    ext_filter_args_cleanup(&a);
    ext_filter_args_cleanup(&ref);
}
END_TEST

/* ---- the exact replies ----------------------------------------------------------- */

static struct ext_filter_args args_of(const char *body)
{
    struct ext_filter_args a;
    char err[256] = "";

    ck_assert_int_eq(
        ext_filter_args_decode(body, strlen(body), &ext_proto_limits_default, &a, err, sizeof(err)),
        EXT_OK);
    return a;
}

START_TEST(test_encode_filter_names)
{
    struct ext_filter_args a =
        args_of("{\"Pod\":{},\"Nodes\":null,\"NodeNames\":[\"n1\",\"n2\",\"n3\",\"n4\"]}");
    struct ext_node_verdict v[4] = {
        {EXT_NODE_PASSES, NULL},
        {EXT_NODE_FAILS, "gang rc-a waits: 3 of 4 GPUs free"},
        {EXT_NODE_UNRESOLVABLE, "node has no \"nvidia.com/gpu\"\n"},
        {EXT_NODE_PASSES, NULL},
    };
    struct ext_filter_answer ans = {.verdicts = v};
    char *out;
    size_t len;

    ck_assert_int_eq(ext_filter_result_encode(&a, &ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "{\"Nodes\":null,\"NodeNames\":[\"n1\",\"n4\"],"
                          "\"FailedNodes\":{\"n2\":\"gang rc-a waits: 3 of 4 GPUs free\"},"
                          "\"FailedAndUnresolvableNodes\":{\"n3\":\"node has no "
                          "\\\"nvidia.com/gpu\\\"\\n\"},\"Error\":\"\"}");
    ck_assert_uint_eq(len, strlen(out));
    free(out);

    ans.error = "pod team-a/p is unknown";
    ck_assert_int_eq(ext_filter_result_encode(&a, &ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out,
                     "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                     "\"FailedAndUnresolvableNodes\":{},\"Error\":\"pod team-a/p is unknown\"}");
    free(out);
    ext_filter_args_cleanup(&a);
}
END_TEST

START_TEST(test_encode_filter_nodes)
{
    struct ext_filter_args a =
        args_of("{\"Pod\":{},\"Nodes\":{\"metadata\":{},\"items\":["
                "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\"}}},"
                "{\"metadata\":{\"name\":\"n2\"}}]},\"NodeNames\":null}");
    struct ext_node_verdict v[2] = {{EXT_NODE_PASSES, NULL}, {EXT_NODE_FAILS, "full"}};
    struct ext_filter_answer ans = {.verdicts = v};
    char *out;
    size_t len;

    ck_assert_int_eq(ext_filter_result_encode(&a, &ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"n1\"},"
                          "\"status\":{\"allocatable\":{\"cpu\":\"4\"}}}]},\"NodeNames\":null,"
                          "\"FailedNodes\":{\"n2\":\"full\"},\"FailedAndUnresolvableNodes\":{},"
                          "\"Error\":\"\"}");
    free(out);
    v[0].verdict = EXT_NODE_FAILS;
    v[0].reason = NULL;
    ck_assert_int_eq(ext_filter_result_encode(&a, &ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "{\"Nodes\":{\"metadata\":{},\"items\":[]},\"NodeNames\":null,"
                          "\"FailedNodes\":{\"n1\":\"\",\"n2\":\"full\"},"
                          "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
    free(out);
    ext_filter_args_cleanup(&a);
}
END_TEST

START_TEST(test_encode_priorities)
{
    struct ext_filter_args a = args_of("{\"Pod\":{},\"NodeNames\":[\"n1\",\"n2\",\"n3\"]}");
    int scores[3] = {10, -3, 42};
    struct ext_priority_answer ans = {.scores = scores};
    char *out;
    size_t len;

    ck_assert_int_eq(ext_priority_list_encode(&a, &ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "[{\"Host\":\"n1\",\"Score\":10},{\"Host\":\"n2\",\"Score\":0},"
                          "{\"Host\":\"n3\",\"Score\":10}]");
    free(out);
    ext_filter_args_cleanup(&a);

    a = args_of("{\"Pod\":{},\"NodeNames\":[]}");
    ck_assert_int_eq(ext_priority_list_encode(&a, &ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "[]");
    free(out);
    ext_filter_args_cleanup(&a);
}
END_TEST

static const struct {
    const char *error;
    const char *json;
} binding_cases[] = {
    {NULL, "{\"Error\":\"\"}"},
    {"", "{\"Error\":\"\"}"},
    {"gang team-a/rc-a: 2 of 5 members at bind; waiting for rc-a-gpu-worker-1",
     "{\"Error\":\"gang team-a/rc-a: 2 of 5 members at bind; waiting for rc-a-gpu-worker-1\"}"},
    {"tab\there \x01", "{\"Error\":\"tab\\there \\u0001\"}"},
};

START_TEST(test_encode_binding)
{
    struct ext_bind_answer ans = {.error = binding_cases[_i].error};
    char *out;
    size_t len;

    ck_assert_int_eq(ext_binding_result_encode(&ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, binding_cases[_i].json);
    free(out);
}
END_TEST

START_TEST(test_encode_preemption)
{
    const char *const uids1[] = {"u1", "u2"};
    const struct ext_meta_victims nodes[] = {
        {"n1", 2, uids1, 0},
        {"n2", 0, NULL, 3},
    };
    struct ext_preempt_answer ans = {.n = 2, .nodes = nodes};
    char *out;
    size_t len;

    ck_assert_int_eq(ext_preemption_result_encode(&ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"u1\"},"
                          "{\"UID\":\"u2\"}],\"NumPDBViolations\":0},\"n2\":{\"Pods\":[],"
                          "\"NumPDBViolations\":3}}}");
    free(out);
    ans.n = 0;
    ck_assert_int_eq(ext_preemption_result_encode(&ans, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "{\"NodeNameToMetaVictims\":{}}");
    free(out);
}
END_TEST

static const struct {
    enum ext_verb verb;
    const char *json;
} error_cases[] = {
    {EXT_VERB_FILTER, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                      "\"FailedAndUnresolvableNodes\":{},\"Error\":\"missing Pod\"}"},
    {EXT_VERB_PRIORITIZE, "{\"Error\":\"missing Pod\"}"},
    {EXT_VERB_BIND, "{\"Error\":\"missing Pod\"}"},
    {EXT_VERB_PREEMPT, "{\"NodeNameToMetaVictims\":null,\"Error\":\"missing Pod\"}"},
};

START_TEST(test_encode_error)
{
    char *out;
    size_t len;

    ck_assert_int_eq(ext_error_encode(error_cases[_i].verb, "missing Pod", &out, &len), EXT_OK);
    ck_assert_str_eq(out, error_cases[_i].json);
    free(out);
}
END_TEST

/* What kube-scheduler would read back: the encoded answer parses to what was meant. */
START_TEST(test_round_trip)
{
    size_t len, i;
    char *body = read_fixture("filter_nodes.json", &len), *out;
    struct ext_filter_args a, back;
    struct ext_node_verdict v[2] = {{EXT_NODE_FAILS, "no"}, {EXT_NODE_PASSES, NULL}};
    struct ext_filter_answer ans = {.verdicts = v};
    char err[256];
    cJSON *doc;

    ck_assert_int_eq(
        ext_filter_args_decode(body, len, &ext_proto_limits_default, &a, err, sizeof(err)), EXT_OK);
    ck_assert_int_eq(ext_filter_result_encode(&a, &ans, &out, &len), EXT_OK);
    doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    /* The returned node list reads as an ExtenderArgs' Nodes again. */
    cJSON_AddItemToObject(doc, "Pod", cJSON_CreateObject());
    free(out);
    out = cJSON_PrintUnformatted(doc);
    ck_assert_int_eq(ext_filter_args_decode(out, strlen(out), &ext_proto_limits_default, &back, err,
                                            sizeof(err)),
                     EXT_OK);
    ck_assert_uint_eq(back.n, 1);
    ck_assert_str_eq(back.names[0], "gpu-2");
    for (i = 0; i < back.n; i++)
        ck_assert(cJSON_Compare(back.nodes[i], a.nodes[1], true));
    ext_filter_args_cleanup(&back);
    cJSON_free(out);
    cJSON_Delete(doc);
    ext_filter_args_cleanup(&a);
    free(body);
}
END_TEST

/* ---- the request pool --------------------------------------------------------------- */

static void count_release(void *arg)
{
    (*(int *)arg)++;
}

START_TEST(test_pool)
{
    struct ext_arena *p = ext_arena_new();
    int released = 0;
    char *big, *s;
    int i;

    ck_assert_ptr_nonnull(p);
    s = ext_arena_strdup(p, "gpu-1");
    big = ext_arena_alloc(p, 100000);
    ck_assert_ptr_nonnull(big);
    memset(big, 1, 100000);
    for (i = 0; i < 1000; i++)
        ck_assert_ptr_nonnull(ext_arena_calloc(p, 3, 7));
    ck_assert_str_eq(s, "gpu-1");
    ck_assert_ptr_null(ext_arena_calloc(p, SIZE_MAX / 2, 4));
    ck_assert_int_eq(ext_arena_defer(p, count_release, &released), EXT_OK);
    ck_assert_int_eq(ext_arena_defer(p, count_release, &released), EXT_OK);
    ext_arena_free(p);
    ck_assert_int_eq(released, 2);
    ext_arena_free(NULL);
}
END_TEST

#define N(table) ((int)(sizeof(table) / sizeof((table)[0])))

static Suite *extender_proto_suite(void)
{
    Suite *s = suite_create("extender_proto");
    TCase *tc;

    tc = tcase_create("decode");
    tcase_add_loop_test(tc, test_filter_args, 0, N(filter_cases));
    tcase_add_loop_test(tc, test_bind_args, 0, N(bind_cases));
    tcase_add_loop_test(tc, test_bind_bad_names, 0, N(bad_bind_names));
    tcase_add_test(tc, test_preempt_meta);
    tcase_add_test(tc, test_preempt_full);
    tcase_add_test(tc, test_key_match);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_add_loop_test(tc, test_bad_fixture, 0, N(bad_cases));
    tcase_add_test(tc, test_too_many_names);
    tcase_add_test(tc, test_huge_string);
    tcase_add_test(tc, test_body_cap);
    tcase_add_loop_test(tc, test_depth, 0, N(depth_cases));
    tcase_add_loop_test(tc, test_precheck, 0, N(precheck_cases));
    tcase_add_loop_test(tc, test_fast_names, 0, N(fast_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("encode");
    tcase_add_test(tc, test_encode_filter_names);
    tcase_add_test(tc, test_encode_filter_nodes);
    tcase_add_test(tc, test_encode_priorities);
    tcase_add_loop_test(tc, test_encode_binding, 0, N(binding_cases));
    tcase_add_test(tc, test_encode_preemption);
    tcase_add_loop_test(tc, test_encode_error, 0, N(error_cases));
    tcase_add_test(tc, test_round_trip);
    suite_add_tcase(s, tc);

    tc = tcase_create("pool");
    tcase_add_test(tc, test_pool);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(extender_proto_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
