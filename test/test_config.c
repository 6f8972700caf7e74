/* test_config.c - config/: YAML as kubectl reads it, with lines; muster's settings. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#define DIR FIXTURES "/config/"

static char err[512];

/* Parses a buffer named t.yaml; fails the test if it does not parse. */
static void parse_ok(struct cfg_docs *d, const char *yaml)
{
    int rc = cfg_docs_parse(d, "t.yaml", yaml, strlen(yaml), err, sizeof(err));

    ck_assert_msg(rc == CFG_OK, "%s: %s", yaml, err);
}

/* Follows a path like "spec|workerGroupSpecs|0|template" from a root. */
static const cJSON *walk(const cJSON *node, const char *path)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *k = strtok_r(buf, "|", &save); k != NULL && node != NULL;
         k = strtok_r(NULL, "|", &save)) {
        if (cJSON_IsArray(node))
            node = cJSON_GetArrayItem(node, atoi(k));
        else
            node = cJSON_GetObjectItemCaseSensitive(node, k);
    }
    return node;
}

/* ---- typing: what each scalar becomes ------------------------------------ */

static const struct {
    const char *yaml;
    const char *json;
} typing_cases[] = {
    {"a: true\nb: False\nc: yes\nd: off\ne: Y\nf: NO", "{\"a\":true,\"b\":false,\"c\":true,"
                                                       "\"d\":false,\"e\":true,\"f\":false}"},
    {"a: \"true\"\nb: 'yes'\nc: \"1\"\nd: '~'",
     "{\"a\":\"true\",\"b\":\"yes\",\"c\":\"1\",\"d\":\"~\"}"},
    {"a: null\nb: ~\nc:\nd: NULL\ne: Null",
     "{\"a\":null,\"b\":null,\"c\":null,\"d\":null,\"e\":null}"},
    {"a: 1\nb: -2\nc: 1.5\nd: .5\ne: 1e3\nf: +7",
     "{\"a\":1,\"b\":-2,\"c\":1.5,\"d\":0.5,\"e\":1000,\"f\":7}"},
    {"a: 0x1F\nb: 0o17\nc: 017\nd: 1_000\ne: 0b101\nf: -0x10",
     "{\"a\":31,\"b\":15,\"c\":15,\"d\":1000,\"e\":5,\"f\":-16}"},
    {"a: 4Gi\nb: 1.2.3\nc: 09\nd: 2001-12-14\ne: 500m\nf: 0x",
     "{\"a\":\"4Gi\",\"b\":\"1.2.3\",\"c\":9,"
     "\"d\":\"2001-12-14\",\"e\":\"500m\",\"f\":\"0x\"}"},
    {"a: |\n  x\n  y\nb: >\n  x\n  y\n", "{\"a\":\"x\\ny\\n\",\"b\":\"x y\\n\"}"},
    {"a: [1, '2', {b: c}, [], {}]", "{\"a\":[1,\"2\",{\"b\":\"c\"},[],{}]}"},
    {"true: 1\n~: 2\n3: x\nno: 4", "{\"true\":1,\"null\":2,\"3\":\"x\",\"false\":4}"},
    {"a: !!str 123\nb: !!int 7\nc: !!float 1\nd: !!bool on\ne: ! 12",
     "{\"a\":\"123\",\"b\":7,\"c\":1,\"d\":true,\"e\":\"12\"}"},
    {"- a\n- - b\n  - c\n-\n", "[\"a\",[\"b\",\"c\"],null]"},
    {"{\"json\": [1, 2.5, \"x\", false, null]}", "{\"json\":[1,2.5,\"x\",false,null]}"},
    {"a: 99999999999999999999\nb: 1e400", "{\"a\":1e+20,\"b\":\"1e400\"}"},
    {"plain text", "\"plain text\""},
};

START_TEST(test_typing)
{
    struct cfg_docs d;
    char *json;

    parse_ok(&d, typing_cases[_i].yaml);
    ck_assert_uint_eq(d.n, 1);
    json = cJSON_PrintUnformatted(d.docs[0]);
    ck_assert_str_eq(json, typing_cases[_i].json);
    free(json);
    cfg_docs_cleanup(&d);
}
END_TEST

/* ---- lines: where each node came from ------------------------------------ */

static const struct {
    size_t doc;
    const char *path;
    unsigned line;
} line_cases[] = {
    {0, "", 4},
    {0, "kind", 5},
    {0, "metadata|labels|muster.dev/queue", 10},
    {0, "spec|headGroupSpec", 12},
    {0, "spec|headGroupSpec|template|spec|containers|0", 16},
    {0, "spec|headGroupSpec|template|spec|containers|0|resources|limits|memory", 20},
    {0, "spec|workerGroupSpecs", 21},
    {0, "spec|workerGroupSpecs|0", 22},
    {0, "spec|workerGroupSpecs|0|template|spec|containers|0|resources|limits|nvidia.com/gpu", 31},
    {0, "spec|workerGroupSpecs|0|template|spec|containers|0|resources|limits|memory", 32},
    {1, "", 36},
    {1, "data|big", 42},
};

START_TEST(test_lines)
{
    const cJSON *node;
    struct cfg_docs d;
    int rc;

    rc = cfg_docs_load_file(&d, DIR "manifests.yaml", err, sizeof(err));
    ck_assert_msg(rc == CFG_OK, "%s", err);
    ck_assert_uint_eq(d.n, 2);
    node = walk(d.docs[line_cases[_i].doc], line_cases[_i].path);
    ck_assert_msg(node != NULL, "no node at %s", line_cases[_i].path);
    ck_assert_uint_eq(cfg_docs_line(&d, node), line_cases[_i].line);
    cfg_docs_cleanup(&d);
}
END_TEST

START_TEST(test_lines_unknown_node)
{
    cJSON *mine = cJSON_CreateNull();
    struct cfg_docs d;

    parse_ok(&d, "a: 1\n");
    ck_assert_uint_eq(cfg_docs_line(&d, mine), 0);
    ck_assert_uint_eq(cfg_docs_line(&d, NULL), 0);
    ck_assert_ptr_null(cfg_docs_scalar_text(&d, mine));
    cJSON_Delete(mine);
    cfg_docs_cleanup(&d);
}
END_TEST

/* A big document exercises the index growing; every node keeps its line. */
START_TEST(test_lines_many_nodes)
{
    size_t n = 5000, len = 0;
    char *buf = malloc(n * 32);
    const cJSON *item;
    struct cfg_docs d;
    unsigned line = 2;

    len += (size_t)sprintf(buf, "items:\n");
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(buf + len, "  - {k: v%zu}\n", i);
    parse_ok(&d, buf);
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(d.docs[0], "items"))
    {
        ck_assert_uint_eq(cfg_docs_line(&d, item), line);
        ck_assert_uint_eq(cfg_docs_line(&d, cJSON_GetObjectItem(item, "k")), line);
        line++;
    }
    ck_assert_uint_eq(line, n + 2);
    free(buf);
    cfg_docs_cleanup(&d);
}
END_TEST

/* ---- documents: which ones count ----------------------------------------- */

static const struct {
    const char *yaml;
    size_t n;
    unsigned first_line;
} doc_cases[] = {
    {"", 0, 0},
    {"# only a comment\n", 0, 0},
    {"---\n---\na: 1\n---\n\n---\nnull\n...\n", 1, 3},
    {"a: 1\n---\nb: 2\n---\n- c\n", 3, 1},
    {"--- 5\n", 1, 1},
    {"~\n", 0, 0},
};

START_TEST(test_documents)
{
    struct cfg_docs d;

    parse_ok(&d, doc_cases[_i].yaml);
    ck_assert_uint_eq(d.n, doc_cases[_i].n);
    if (d.n > 0)
        ck_assert_uint_eq(cfg_docs_line(&d, d.docs[0]), doc_cases[_i].first_line);
    cfg_docs_cleanup(&d);
}
END_TEST

/* ---- exact numbers: the text beside the double ---------------------------- */

static const struct {
    const char *value;
    const char *text;
    int rc;
    int64_t exact;
} number_cases[] = {
    {"9007199254740993", "9007199254740993", CFG_OK, INT64_C(9007199254740993)},
    {"9223372036854775807", "9223372036854775807", CFG_OK, INT64_MAX},
    {"-9223372036854775808", "-9223372036854775808", CFG_OK, INT64_MIN},
    {"9223372036854775808", "9223372036854775808", CFG_ERANGE, 0},
    {"0x7FFF_FFFF_FFFF_FFFF", "0x7FFF_FFFF_FFFF_FFFF", CFG_OK, INT64_MAX},
    {"1_000", "1_000", CFG_OK, 1000},
    {"017", "017", CFG_OK, 15},
    {"1.5", "1.5", CFG_EINVAL, 0},
    {"1e3", "1e3", CFG_EINVAL, 0},
    {"yes", "yes", CFG_EINVAL, 0},
    {"~", "~", CFG_EINVAL, 0},
    {"", "", CFG_EINVAL, 0},
    {"'12'", "12", CFG_EINVAL, 0},
};

START_TEST(test_numbers)
{
    const cJSON *v;
    struct cfg_docs d;
    char yaml[128];
    int64_t got = -1;

    snprintf(yaml, sizeof(yaml), "v: %s\n", number_cases[_i].value);
    parse_ok(&d, yaml);
    v = cJSON_GetObjectItem(d.docs[0], "v");
    ck_assert_str_eq(cfg_docs_scalar_text(&d, v), number_cases[_i].text);
    ck_assert_int_eq(cfg_docs_int64(&d, v, &got), number_cases[_i].rc);
    if (number_cases[_i].rc == CFG_OK)
        ck_assert_int_eq(got, number_cases[_i].exact);
    ck_assert_ptr_null(cfg_docs_scalar_text(&d, d.docs[0]));
    cfg_docs_cleanup(&d);
}
END_TEST

/* ---- anchors, aliases and merge keys --------------------------------------- */

static const struct {
    const char *yaml;
    const char *json;
} alias_cases[] = {
    {"a: &x 1\nb: *x", "{\"a\":1,\"b\":1}"},
    {"a: &x {c: 1, d: [1, 2]}\nb: *x", "{\"a\":{\"c\":1,\"d\":[1,2]},\"b\":{\"c\":1,\"d\":[1,2]}}"},
    {"- &i {id: 1}\n- *i\n- *i", "[{\"id\":1},{\"id\":1},{\"id\":1}]"},
    /* redefined: aliases after the second anchor mean the second node */
    {"a: &x 1\nb: *x\nc: &x 2\nd: *x", "{\"a\":1,\"b\":1,\"c\":2,\"d\":2}"},
    {"a: &x [&y 1, *y]\nb: *x\nc: *y", "{\"a\":[1,1],\"b\":[1,1],\"c\":1}"},
    /* a copy is typed as its original: a number stays a number, a quoted string a string */
    {"a: &x 0x10\nb: *x\nc: &s '0x10'\nd: *s", "{\"a\":16,\"b\":16,\"c\":\"0x10\",\"d\":\"0x10\"}"},
    {"a: &x\nb: *x", "{\"a\":null,\"b\":null}"},
    {"--- &r [1]\n", "[1]"},
};

START_TEST(test_aliases)
{
    struct cfg_docs d;
    char *json;

    parse_ok(&d, alias_cases[_i].yaml);
    ck_assert_uint_eq(d.n, 1);
    json = cJSON_PrintUnformatted(d.docs[0]);
    ck_assert_str_eq(json, alias_cases[_i].json);
    free(json);
    cfg_docs_cleanup(&d);
}
END_TEST

static const struct {
    const char *yaml;
    const char *json;
} merge_cases[] = {
    /* keys of the mapping itself win, written after the merge key or before it */
    {"p: &p {a: 1, b: 2}\nd:\n  <<: *p\n  b: 3",
     "{\"p\":{\"a\":1,\"b\":2},\"d\":{\"a\":1,\"b\":3}}"},
    {"p: &p {a: 1, b: 2}\nd:\n  b: 3\n  <<: *p",
     "{\"p\":{\"a\":1,\"b\":2},\"d\":{\"b\":3,\"a\":1}}"},
    /* a list of mappings: the first one that has a key wins */
    {"p: &p {a: 1}\nq: &q {a: 2, b: 2}\nd:\n  <<: [*p, *q]",
     "{\"p\":{\"a\":1},\"q\":{\"a\":2,\"b\":2},\"d\":{\"a\":1,\"b\":2}}"},
    {"d:\n  <<: {a: 1}\n  b: 2", "{\"d\":{\"a\":1,\"b\":2}}"},
    /* merges of merges */
    {"a: &a {x: 1}\nb: &b {<<: *a, z: 2}\nc: {<<: *b, w: 3}",
     "{\"a\":{\"x\":1},\"b\":{\"x\":1,\"z\":2},\"c\":{\"x\":1,\"z\":2,\"w\":3}}"},
    /* two merge keys: the first wins */
    {"p: &p {a: 1}\nd:\n  <<: *p\n  <<: {a: 2, b: 2}", "{\"p\":{\"a\":1},\"d\":{\"a\":1,\"b\":2}}"},
    {"p: &p {a: 1}\nd: {!!merge <<: *p}", "{\"p\":{\"a\":1},\"d\":{\"a\":1}}"},
    /* a quoted << is an ordinary key */
    {"d: {'<<': 1}", "{\"d\":{\"<<\":1}}"},
    /* an anchored merge source stays for the aliases after it */
    {"d:\n  <<: &m {a: 1}\ne:\n  <<: *m\n  b: 2", "{\"d\":{\"a\":1},\"e\":{\"a\":1,\"b\":2}}"},
    {"d:\n  <<: [&m {a: 1}]\ne: *m", "{\"d\":{\"a\":1},\"e\":{\"a\":1}}"},
    {"d:\n  <<: {a: &v [1]}\ne: *v", "{\"d\":{\"a\":[1]},\"e\":[1]}"},
};

START_TEST(test_merges)
{
    struct cfg_docs d;
    char *json;

    parse_ok(&d, merge_cases[_i].yaml);
    ck_assert_uint_eq(d.n, 1);
    json = cJSON_PrintUnformatted(d.docs[0]);
    ck_assert_str_eq(json, merge_cases[_i].json);
    free(json);
    cfg_docs_cleanup(&d);
}
END_TEST

/* A copy's root is where the alias is; what it copies keeps the lines it was written on. */
static const struct {
    const char *path;
    unsigned line;
    const char *text;
} alias_line_cases[] = {
    {"copy", 5, NULL},   {"copy|x", 2, "1"},     {"copy|ys|0", 4, "2"},
    {"list|0", 7, NULL}, {"list|0|ys", 3, NULL}, {"m|x", 2, "1"},
    {"m|z", 10, "3"},    {"m", 8, NULL},         {"base|x", 2, "1"},
};

START_TEST(test_alias_lines)
{
    static const char yaml[] = "base: &b\n"
                               "  x: 1\n"
                               "  ys:\n"
                               "    - 2\n"
                               "copy: *b\n"
                               "list:\n"
                               "  - *b\n"
                               "m:\n"
                               "  <<: *b\n"
                               "  z: 3\n";
    const cJSON *node;
    struct cfg_docs d;

    parse_ok(&d, yaml);
    node = walk(d.docs[0], alias_line_cases[_i].path);
    ck_assert_msg(node != NULL, "no node at %s", alias_line_cases[_i].path);
    ck_assert_uint_eq(cfg_docs_line(&d, node), alias_line_cases[_i].line);
    if (alias_line_cases[_i].text != NULL)
        ck_assert_str_eq(cfg_docs_scalar_text(&d, node), alias_line_cases[_i].text);
    cfg_docs_cleanup(&d);
}
END_TEST

/* ---- JSON documents ------------------------------------------------------------ */

static const struct {
    const char *json;
    const char *out;
} json_cases[] = {
    /* tabs, which YAML does not take for indentation */
    {"{\n\t\"a\": [1,\n\t\t2]\n}", "{\"a\":[1,2]}"},
    {"{\"s\": \"a\\u00e9\\ud83d\\ude00\\/\\n\\ud800x\"}",
     "{\"s\":\"a\xc3\xa9\xf0\x9f\x98\x80/\\n\xef\xbf\xbdx\"}"},
    {" \r\n{\"a\": {}, \"b\": [], \"c\": [true, false, null, -1.5e-3, \"\", 0]}",
     "{\"a\":{},\"b\":[],\"c\":[true,false,null,-0.0015,\"\",0]}"},
    /* a YAML reading would make these a boolean key and a string */
    {"{\"y\": \"yes\", \"on\": 1}", "{\"y\":\"yes\",\"on\":1}"},
};

START_TEST(test_json)
{
    struct cfg_docs d;
    char *json;

    parse_ok(&d, json_cases[_i].json);
    ck_assert_uint_eq(d.n, 1);
    json = cJSON_PrintUnformatted(d.docs[0]);
    ck_assert_str_eq(json, json_cases[_i].out);
    free(json);
    cfg_docs_cleanup(&d);
}
END_TEST

/* Values one after another, as `jq -c` writes them; a null is an empty document. */
START_TEST(test_json_stream)
{
    static const char *const want[] = {"{\"kind\":\"A\"}", "{\"kind\":\"B\"}", "{\"kind\":\"C\"}",
                                       "[1]", "\"s\""};
    static const unsigned lines[] = {1, 2, 2, 3, 4};
    struct cfg_docs d;

    parse_ok(&d, "{\"kind\":\"A\"}\n{\"kind\":\"B\"}{\"kind\":\"C\"} null\n[1]\n\"s\"\n");
    ck_assert_uint_eq(d.n, 5);
    for (size_t i = 0; i < d.n; i++) {
        char *json = cJSON_PrintUnformatted(d.docs[i]);

        ck_assert_str_eq(json, want[i]);
        ck_assert_uint_eq(cfg_docs_line(&d, d.docs[i]), lines[i]);
        free(json);
    }
    cfg_docs_cleanup(&d);
}
END_TEST

START_TEST(test_json_lines_and_numbers)
{
    static const char json[] = "{\n"
                               "  \"a\": {\n"
                               "    \"n\": 9007199254740993\n"
                               "  },\n"
                               "  \"c\": [\n"
                               "    1.5e3,\n"
                               "    -0, true\n"
                               "  ]\n"
                               "}\n";
    const cJSON *n, *f, *z, *t;
    struct cfg_docs d;
    int64_t v = -1;

    parse_ok(&d, json);
    n = walk(d.docs[0], "a|n");
    f = walk(d.docs[0], "c|0");
    z = walk(d.docs[0], "c|1");
    t = walk(d.docs[0], "c|2");
    ck_assert_uint_eq(cfg_docs_line(&d, d.docs[0]), 1);
    ck_assert_uint_eq(cfg_docs_line(&d, walk(d.docs[0], "a")), 2);
    ck_assert_uint_eq(cfg_docs_line(&d, n), 3);
    ck_assert_uint_eq(cfg_docs_line(&d, walk(d.docs[0], "c")), 5);
    ck_assert_uint_eq(cfg_docs_line(&d, f), 6);
    ck_assert_uint_eq(cfg_docs_line(&d, t), 7);
    ck_assert_str_eq(cfg_docs_scalar_text(&d, n), "9007199254740993");
    ck_assert_int_eq(cfg_docs_int64(&d, n, &v), CFG_OK);
    ck_assert_int_eq(v, INT64_C(9007199254740993));
    ck_assert_str_eq(cfg_docs_scalar_text(&d, f), "1.5e3");
    ck_assert_int_eq(cfg_docs_int64(&d, f, &v), CFG_EINVAL);
    ck_assert_str_eq(cfg_docs_scalar_text(&d, z), "-0");
    ck_assert_str_eq(cfg_docs_scalar_text(&d, t), "true");
    cfg_docs_cleanup(&d);
}
END_TEST

/* YAML refuses an implicit key over 1024 characters; JSON has no such limit. */
START_TEST(test_json_long_key)
{
    char key[2001], *buf;
    struct cfg_docs d;

    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    ck_assert_int_gt(asprintf(&buf, "{\"%s\": 1}", key), 0);
    parse_ok(&d, buf);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d.docs[0], key)));
    cfg_docs_cleanup(&d);
    free(buf);
}
END_TEST

/* ---- errors: what is wrong and where -------------------------------------- */

#define JSON_WHY "(input starting with '{' is JSON, as kubectl reads it)"

static const struct {
    const char *yaml;
    int rc;
    const char *err;
} error_cases[] = {
    {"a: b: c\n", CFG_ESYNTAX, "t.yaml:1: mapping values are not allowed in this context"},
    {"a: 1\nb:\n  - x\n  y: 2\n", CFG_ESYNTAX,
     "t.yaml:4: did not find expected '-' indicator (while parsing a block collection at line 3)"},
    {"a: 1\nb: 'open\n", CFG_ESYNTAX,
     "t.yaml:3: found unexpected end of stream (while scanning a quoted scalar at line 2)"},
    {"a: [1, 2\nb: 3\n", CFG_ESYNTAX,
     "t.yaml:2: did not find expected ',' or ']' (while parsing a flow sequence at line 1)"},
    {"a:\n\tb: 1\n", CFG_ESYNTAX,
     "t.yaml:2: found character that cannot start any token (while scanning for the next token "
     "at line 2)"},
    {"a: 1\nb: \xff\n", CFG_ESYNTAX, "t.yaml:2: invalid leading UTF-8 octet"},
    {"a: 1\nb: *x\n", CFG_EINVAL, "t.yaml:2: alias *x: no anchor &x before it"},
    {"a: &x [1, *x]\n", CFG_EINVAL, "t.yaml:1: alias *x: inside the node it names"},
    {"a: &x 1\n---\nb: *x\n", CFG_EINVAL, "t.yaml:3: alias *x: no anchor &x before it"},
    {"&k a: 1\n", CFG_EUNSUPPORTED, "t.yaml:1: anchor &k on a mapping key is not supported"},
    {"a: &k b\n*k : 2\n", CFG_EUNSUPPORTED, "t.yaml:2: alias *k as a mapping key is not supported"},
    {"d:\n  <<: 1\n", CFG_EINVAL,
     "t.yaml:2: <<: a merge key takes a mapping or a list of mappings"},
    {"s: &s [1, 2]\nd:\n  <<: *s\n", CFG_EINVAL,
     "t.yaml:3: <<: a merge key takes a mapping or a list of mappings"},
    {"d:\n  <<: [{a: 1}, x]\n", CFG_EINVAL,
     "t.yaml:2: <<: a merge key takes a mapping or a list of mappings"},
    {"p: &p {a: 1}\nd:\n  <<: *p\n  b: 2\n  b: 3\n", CFG_EINVAL,
     "t.yaml:5: duplicate key \"b\" (first at line 4)"},
    {"p: &p {a: 1}\nd:\n  <<: *p\n  a: 2\n  a: 3\n", CFG_EINVAL,
     "t.yaml:5: duplicate key \"a\" (first at line 4)"},
    {"a: 1\nb: 2\na: 3\n", CFG_EINVAL, "t.yaml:3: duplicate key \"a\" (first at line 1)"},
    {"yes: 1\ntrue: 2\n", CFG_EINVAL, "t.yaml:2: duplicate key \"true\" (first at line 1)"},
    {"a:\n  b: .inf\n", CFG_EINVAL, "t.yaml:2: .inf: JSON has no infinities or NaNs"},
    {"? [a]\n: 1\n", CFG_EUNSUPPORTED, "t.yaml:1: a mapping key must be a scalar"},
    {"a: !foo x\n", CFG_EUNSUPPORTED, "t.yaml:1: tag !foo is not supported"},
    {"a: !!int abc\n", CFG_EINVAL, "t.yaml:1: \"abc\" is not a !!int"},
    {"a: !!map [1]\n", CFG_EUNSUPPORTED, "t.yaml:1: tag !!map is not supported here"},
    {"a: \"x\\0y\"\n", CFG_EINVAL, "t.yaml:1: a string holding a NUL character"},
    {"a: 1\n---\nb: [\n", CFG_ESYNTAX,
     "t.yaml:4: did not find expected node content (while parsing a flow node at line 4)"},
    /* Input that starts with '{' is JSON. */
    {"{\"a\": 1\n\"b\": 2}", CFG_ESYNTAX,
     "t.yaml:2: JSON: expected ',' or '}', found '\"' " JSON_WHY},
    {"{a: 1}", CFG_ESYNTAX, "t.yaml:1: JSON: expected a string key, found 'a' " JSON_WHY},
    {"{\"a\":1,\n\"a\":2}", CFG_EINVAL, "t.yaml:2: duplicate key \"a\" (first at line 1)"},
    {"{\"a\":\"x\\u0000\"}", CFG_EINVAL, "t.yaml:1: a string holding a NUL character"},
    {"{\"a\":\"\xff\"}", CFG_ESYNTAX, "t.yaml:1: JSON: invalid UTF-8 in a string"},
    {"{\"a\": 1e400}", CFG_EINVAL, "t.yaml:1: JSON: 1e400 is out of range"},
    {"{\"a\": 01}", CFG_ESYNTAX, "t.yaml:1: JSON: expected ',' or '}', found '1' " JSON_WHY},
    {"{\"a\": \"open", CFG_ESYNTAX, "t.yaml:1: JSON: a string is not closed"},
    {"{\"a\": tru}", CFG_ESYNTAX, "t.yaml:1: JSON: expected a value, found 't' " JSON_WHY},
    {"{\"a\": [1,]}", CFG_ESYNTAX, "t.yaml:1: JSON: expected a value, found ']' " JSON_WHY},
    {"{}\n\n x", CFG_ESYNTAX, "t.yaml:3: JSON: expected a value, found 'x' " JSON_WHY},
    {"{\"a\":\"\\q\"}", CFG_ESYNTAX, "t.yaml:1: JSON: unknown escape \\q in a string"},
    {"{\"a\":\"\t\"}", CFG_ESYNTAX, "t.yaml:1: JSON: a control character in a string"},
    {"{\"a\": [1", CFG_ESYNTAX,
     "t.yaml:1: JSON: expected ',' or ']', found the end of the input " JSON_WHY},
};

START_TEST(test_errors)
{
    struct cfg_docs d = {0};
    const char *yaml = error_cases[_i].yaml;
    int rc;

    rc = cfg_docs_parse(&d, "t.yaml", yaml, strlen(yaml), err, sizeof(err));
    ck_assert_str_eq(err, error_cases[_i].err);
    ck_assert_int_eq(rc, error_cases[_i].rc);
    ck_assert_uint_eq(d.n, 0); /* untouched */
}
END_TEST

START_TEST(test_missing_file)
{
    struct cfg_docs d = {0};

    ck_assert_int_eq(cfg_docs_load_file(&d, DIR "no-such.yaml", err, sizeof(err)), CFG_EIO);
    ck_assert_str_eq(err, DIR "no-such.yaml: No such file or directory");
}
END_TEST

/* ---- caps ---------------------------------------------------------------- */

static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 1);

    memset(s, '[', (size_t)depth);
    memset(s + depth, ']', (size_t)depth);
    s[depth * 2] = '\0';
    return s;
}

START_TEST(test_cap_depth)
{
    char *ok = nested(CFG_DOCS_MAX_DEPTH), *deep = nested(CFG_DOCS_MAX_DEPTH + 1);
    struct cfg_docs d;

    parse_ok(&d, ok);
    cfg_docs_cleanup(&d);
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", deep, strlen(deep), err, sizeof(err)),
                     CFG_ETOOBIG);
    ck_assert_str_eq(err, "t.yaml:1: nested deeper than 64 levels");
    free(ok);
    free(deep);
}
END_TEST

/* Nine levels of nine: 9^9 strings if expanded. Refused when the copies pass the cap. */
START_TEST(test_cap_alias_bomb)
{
    const char *names = "abcdefghi";
    char buf[2048];
    size_t len = 0;
    struct cfg_docs d = {0};

    len += (size_t)sprintf(buf, "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (int i = 1; i < 9; i++) {
        len += (size_t)sprintf(buf + len, "%c: &%c [", names[i], names[i]);
        for (int j = 0; j < 9; j++)
            len += (size_t)sprintf(buf + len, "%s*%c", j ? ", " : "", names[i - 1]);
        len += (size_t)sprintf(buf + len, "]\n");
    }
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", buf, len, err, sizeof(err)), CFG_ETOOBIG);
    /* levels a..d copy 9^4 strings; the first alias of e's list crosses 32 MiB */
    ck_assert_str_eq(err,
                     "t.yaml:6: alias *e: the aliases would expand the file past 32 MiB (an alias "
                     "bomb?)");
    ck_assert_uint_eq(d.n, 0);
}
END_TEST

/* A few aliases of a big string pass the cap as surely as many of a small one. */
START_TEST(test_cap_alias_string)
{
    size_t big = (size_t)1 << 20, len = 0;
    char *buf = malloc(big + 64 * 40);
    struct cfg_docs d = {0};

    len += (size_t)sprintf(buf, "a: &s ");
    memset(buf + len, 'x', big);
    len += big;
    buf[len++] = '\n';
    for (int i = 0; i < 40; i++)
        len += (size_t)sprintf(buf + len, "b%d: *s\n", i);
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", buf, len, err, sizeof(err)), CFG_ETOOBIG);
    /* each copy costs 2^20 + 64 + 1 ("a", the key it was anchored under): 31 fit in 32 MiB */
    ck_assert_str_eq(err,
                     "t.yaml:33: alias *s: the aliases would expand the file past 32 MiB (an alias "
                     "bomb?)");
    free(buf);
}
END_TEST

/* What a real file does with aliases, 5,000 copies of a 40-member template, is well within. */
START_TEST(test_cap_alias_within)
{
    size_t len = 0;
    char *buf = malloc(1 << 20);
    const cJSON *items, *item;
    struct cfg_docs d;
    int n = 0;

    len += (size_t)sprintf(buf, "t: &t {");
    for (int i = 0; i < 40; i++)
        len += (size_t)sprintf(buf + len, "%sk%d: v%d", i ? ", " : "", i, i);
    len += (size_t)sprintf(buf + len, "}\nitems:\n");
    for (int i = 0; i < 5000; i++)
        len += (size_t)sprintf(buf + len, "  - *t\n");
    buf[len] = '\0';
    parse_ok(&d, buf);
    items = cJSON_GetObjectItemCaseSensitive(d.docs[0], "items");
    cJSON_ArrayForEach(item, items)
    {
        ck_assert_int_eq(cJSON_GetArraySize(item), 40);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(item, "k39")->valuestring, "v39");
        n++;
    }
    ck_assert_int_eq(n, 5000);
    ck_assert_uint_eq(cfg_docs_line(&d, cJSON_GetArrayItem(items, 4999)), 5002);
    cfg_docs_cleanup(&d);
    free(buf);
}
END_TEST

/* An alias may not take a tree past the depth cap by being put deep. */
START_TEST(test_cap_alias_depth)
{
    char *inner = nested(40), *buf;
    struct cfg_docs d = {0};
    size_t len;

    ck_assert_int_gt(
        asprintf(&buf, "a: &a %s\nb: [[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]\n", inner),
        0);
    len = strlen(buf);
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", buf, len, err, sizeof(err)), CFG_ETOOBIG);
    ck_assert_str_eq(err, "t.yaml:2: nested deeper than 64 levels");
    free(buf);
    /* 23 levels around it leave room */
    ck_assert_int_gt(
        asprintf(&buf, "a: &a %s\nb: [[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]\n", inner),
        0);
    parse_ok(&d, buf);
    cfg_docs_cleanup(&d);
    free(buf);
    free(inner);
}
END_TEST

START_TEST(test_cap_depth_json)
{
    char buf[1024];
    size_t len = 0;
    struct cfg_docs d = {0};

    for (int i = 0; i <= CFG_DOCS_MAX_DEPTH; i++)
        len += (size_t)sprintf(buf + len, "{\"a\":");
    len += (size_t)sprintf(buf + len, "1");
    for (int i = 0; i <= CFG_DOCS_MAX_DEPTH; i++)
        buf[len++] = '}';
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", buf, len, err, sizeof(err)), CFG_ETOOBIG);
    ck_assert_str_eq(err, "t.yaml:1: nested deeper than 64 levels");
    /* one level less reads */
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", buf + 5, len - 6, err, sizeof(err)), CFG_OK);
    cfg_docs_cleanup(&d);
}
END_TEST

START_TEST(test_cap_bytes)
{
    size_t len = CFG_DOCS_MAX_BYTES + 1;
    char *big = malloc(len);
    struct cfg_docs d;

    memset(big, ' ', len);
    ck_assert_int_eq(cfg_docs_parse(&d, "t.yaml", big, len, err, sizeof(err)), CFG_ETOOBIG);
    ck_assert_str_eq(err, "t.yaml: larger than the 64 MiB cap");
    free(big);
}
END_TEST

START_TEST(test_cap_file_bytes)
{
    char path[] = "/tmp/test_config_big_XXXXXX", want[128];
    struct cfg_docs d;
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)CFG_DOCS_MAX_BYTES + 1), 0); /* sparse, NULs */
    close(fd);
    ck_assert_int_eq(cfg_docs_load_file(&d, path, err, sizeof(err)), CFG_ETOOBIG);
    snprintf(want, sizeof(want), "%s: larger than the 64 MiB cap", path);
    ck_assert_str_eq(err, want);
    unlink(path);
}
END_TEST

/* ---- values: durations, sizes, listen addresses --------------------------- */

static const struct {
    const char *s;
    int rc;
    int64_t ms;
} duration_cases[] = {
    {"500ms", CFG_OK, 500},
    {"20s", CFG_OK, 20000},
    {"1m30s", CFG_OK, 90000},
    {"2h", CFG_OK, 7200000},
    {"1.5s", CFG_OK, 1500},
    {"1h2m3s4ms", CFG_OK, 3723004},
    {"0", CFG_OK, 0},
    {"-5s", CFG_OK, -5000},
    {"1000000ns", CFG_OK, 1},
    {"2000us", CFG_OK, 2},
    {"3\xc2\xb5s", CFG_EINVAL, 0},
    {"1500us", CFG_EINVAL, 0},
    {"", CFG_EINVAL, 0},
    {"20", CFG_EINVAL, 0},
    {"20 s", CFG_EINVAL, 0},
    {"s", CFG_EINVAL, 0},
    {"1d", CFG_EINVAL, 0},
    {".s", CFG_EINVAL, 0},
    {"3000000h", CFG_ERANGE, 0},
    {"99999999999999999999s", CFG_ERANGE, 0},
};

START_TEST(test_durations)
{
    int64_t ms = -1;

    ck_assert_int_eq(cfg_duration_parse(duration_cases[_i].s, &ms), duration_cases[_i].rc);
    if (duration_cases[_i].rc == CFG_OK)
        ck_assert_int_eq(ms, duration_cases[_i].ms);
}
END_TEST

static const struct {
    int64_t ms;
    const char *s;
} duration_format_cases[] = {
    {0, "0ms"},      {500, "500ms"},          {1000, "1s"},     {1500, "1.5s"}, {90000, "1m30s"},
    {7200000, "2h"}, {3723004, "1h2m3.004s"}, {-20000, "-20s"},
};

START_TEST(test_duration_format)
{
    char buf[32];

    cfg_duration_format(duration_format_cases[_i].ms, buf, sizeof(buf));
    ck_assert_str_eq(buf, duration_format_cases[_i].s);
}
END_TEST

static const struct {
    const char *s;
    int rc;
    int64_t bytes;
} size_cases[] = {
    {"32Mi", CFG_OK, 33554432},   {"1048576", CFG_OK, 1048576}, {"1k", CFG_OK, 1000},
    {"2M", CFG_OK, 2000000},      {"1G", CFG_OK, 1000000000},   {"1Gi", CFG_OK, 1073741824},
    {"0.5Gi", CFG_OK, 536870912}, {"1.5Ki", CFG_OK, 1536},      {"1Ti", CFG_OK, INT64_C(1) << 40},
    {"0.3", CFG_EINVAL, 0},       {"32MB", CFG_EINVAL, 0},      {"-1Mi", CFG_EINVAL, 0},
    {"", CFG_EINVAL, 0},          {"Mi", CFG_EINVAL, 0},        {"1e3", CFG_EINVAL, 0},
    {"9000000Pi", CFG_ERANGE, 0},
};

START_TEST(test_sizes)
{
    int64_t bytes = -1;

    ck_assert_int_eq(cfg_size_parse(size_cases[_i].s, &bytes), size_cases[_i].rc);
    if (size_cases[_i].rc == CFG_OK)
        ck_assert_int_eq(bytes, size_cases[_i].bytes);
}
END_TEST

static const struct {
    const char *s;
    int rc;
    const char *host;
    unsigned port;
} hostport_cases[] = {
    {"127.0.0.1:8888", CFG_OK, "127.0.0.1", 8888},
    {"[::1]:443", CFG_OK, "::1", 443},
    {"muster.muster-system.svc:1", CFG_OK, "muster.muster-system.svc", 1},
    {"0.0.0.0:65535", CFG_OK, "0.0.0.0", 65535},
    {"127.0.0.1:0", CFG_ERANGE, NULL, 0},
    {"127.0.0.1:65536", CFG_ERANGE, NULL, 0},
    {"127.0.0.1:123456", CFG_ERANGE, NULL, 0},
    {":8888", CFG_EINVAL, NULL, 0},
    {"8888", CFG_EINVAL, NULL, 0},
    {"::1:8888", CFG_EINVAL, NULL, 0},
    {"[::1]8888", CFG_EINVAL, NULL, 0},
    {"host:", CFG_EINVAL, NULL, 0},
    {"host:+80", CFG_EINVAL, NULL, 0},
    {"a b:80", CFG_EINVAL, NULL, 0},
    {"hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
     "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
     "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh:1",
     CFG_ETOOBIG, NULL, 0}, /* 254 characters */
};

START_TEST(test_hostports)
{
    char host[64] = "";
    unsigned port = 0;

    ck_assert_int_eq(cfg_hostport_parse(hostport_cases[_i].s, host, sizeof(host), &port),
                     hostport_cases[_i].rc);
    if (hostport_cases[_i].rc != CFG_OK)
        return;
    ck_assert_str_eq(host, hostport_cases[_i].host);
    ck_assert_uint_eq(port, hostport_cases[_i].port);
}
END_TEST

/* ---- settings ------------------------------------------------------------ */

static void assert_defaults(const struct cfg_settings *s)
{
    ck_assert_str_eq(s->listen, "127.0.0.1:8888");
    ck_assert_ptr_null(s->tls.cert_file);
    ck_assert_ptr_null(s->tls.key_file);
    ck_assert_str_eq(s->kubeconfig, "");
    ck_assert_uint_eq(s->scheduler_names.n, 1);
    ck_assert_str_eq(s->scheduler_names.v[0], "muster");
    ck_assert_uint_eq(s->queue_label_keys.n, 3);
    ck_assert_str_eq(s->queue_label_keys.v[0], "muster.dev/queue");
    ck_assert_str_eq(s->queue_label_keys.v[1], "kai.scheduler/queue");
    ck_assert_str_eq(s->queue_label_keys.v[2], "volcano.sh/queue-name");
    ck_assert_str_eq(s->default_queue, "default");
    ck_assert_int_eq(s->strategy, POLICY_FRAGMENTATION);
    ck_assert_int_eq(s->plan_ttl_ms, 60000);
    ck_assert_int_eq(s->bind_wait_ms, 20000);
    ck_assert_int_eq(s->max_body_bytes, 32 << 20);
    ck_assert_int_eq(s->max_node_names, 20000);
    ck_assert_int_eq(s->log.format, CFG_LOG_PLAIN);
    ck_assert_int_eq(s->log.level, CFG_LOG_INFO);
    ck_assert_str_eq(s->gpu_sharing.reservation_namespace, "muster-system");
    ck_assert_str_eq(s->gpu_sharing.reservation_image, "muster:0.1.0");
    ck_assert_int_eq(s->gpu_sharing.reservation_timeout_ms, 15000);
    ck_assert_str_eq(s->gpu_sharing.runtime_class_name, "nvidia");
    ck_assert_str_eq(s->gpu_sharing.webhook_listen, "");
    ck_assert_ptr_null(s->gpu_sharing.webhook_tls.cert_file);
    ck_assert(!s->leader_election.enabled);
    ck_assert_str_eq(s->leader_election.lease_name, "muster-scheduler");
    ck_assert_str_eq(s->leader_election.lease_namespace, "muster-system");
    ck_assert_str_eq(s->leader_election.identity, "");
    ck_assert(s->evictions.reclaim);
    ck_assert(s->evictions.preemption);
    ck_assert_int_eq(s->evictions.refused_victim_wait_ms, 30000);
    ck_assert_int_eq(s->evictions.unasked_wait_ms, 500);
    ck_assert(s->watch_protobuf);
    ck_assert_int_eq(s->fairness.half_life_ms, 4 * 3600 * 1000);
    ck_assert_int_eq(s->fairness.window_ms, INT64_C(7) * 24 * 3600 * 1000);
    ck_assert_int_eq(s->fairness.k_milli, 1000);
    ck_assert_int_eq(s->fairness.entry_penalty_ms, 0);
}

START_TEST(test_settings_defaults)
{
    struct cfg_settings s;

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    assert_defaults(&s);
    ck_assert_str_eq(cfg_strategy_name(s.strategy), "fragmentation");
    ck_assert_str_eq(cfg_log_format_name(s.log.format), "plain");
    ck_assert_str_eq(cfg_log_level_name(s.log.level), "info");
    cfg_settings_cleanup(&s);
}
END_TEST

/* Files that leave every setting at its default. */
static const char *const default_files[] = {"empty.yaml", "comments-only.yaml", "nulls.yaml"};

START_TEST(test_settings_default_files)
{
    struct cfg_settings s;
    char path[512];

    snprintf(path, sizeof(path), DIR "%s", default_files[_i]);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_msg(cfg_settings_load(&s, path, err, sizeof(err)) == CFG_OK, "%s", err);
    assert_defaults(&s);
    cfg_settings_cleanup(&s);
}
END_TEST

START_TEST(test_settings_full)
{
    struct cfg_settings s;

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_msg(cfg_settings_load(&s, DIR "full.yaml", err, sizeof(err)) == CFG_OK, "%s", err);
    ck_assert_str_eq(s.listen, "0.0.0.0:9443");
    ck_assert_str_eq(s.tls.cert_file, "/etc/muster/tls/tls.crt");
    ck_assert_str_eq(s.tls.key_file, "/etc/muster/tls/tls.key");
    ck_assert_str_eq(s.kubeconfig, "/etc/muster/kubeconfig");
    ck_assert_uint_eq(s.scheduler_names.n, 2);
    ck_assert_str_eq(s.scheduler_names.v[1], "muster-gpu");
    ck_assert_uint_eq(s.queue_label_keys.n, 1);
    ck_assert_str_eq(s.queue_label_keys.v[0], "team.example.com/queue");
    ck_assert_str_eq(s.default_queue, "research");
    ck_assert_int_eq(s.strategy, POLICY_SPREAD);
    ck_assert_int_eq(s.plan_ttl_ms, 120000);
    ck_assert_int_eq(s.bind_wait_ms, 90000);
    ck_assert_int_eq(s.max_body_bytes, 64 << 20);
    ck_assert_int_eq(s.max_node_names, 5000);
    ck_assert_str_eq(s.tls.client_ca_file, "/etc/muster/tls/clients-ca.crt");
    ck_assert_int_eq(s.server.max_connections, 20000);
    ck_assert_int_eq(s.server.max_per_client, 12000);
    ck_assert_int_eq(s.server.idle_timeout_ms, 300000);
    ck_assert_int_eq(s.server.workers, 8);
    ck_assert_int_eq(s.server.max_buffered, 256 << 20);
    ck_assert_int_eq(s.server.decode_budget, 512 << 20);
    ck_assert_int_eq(s.server.large_decodes, 3);
    ck_assert_str_eq(s.gpu_sharing.webhook_tls.client_ca_file,
                     "/etc/muster/webhook/apiserver-ca.crt");
    ck_assert_int_eq(s.log.format, CFG_LOG_JSON);
    ck_assert_int_eq(s.log.level, CFG_LOG_DEBUG);
    ck_assert_str_eq(s.gpu_sharing.reservation_namespace, "gpu-system");
    ck_assert_str_eq(s.gpu_sharing.reservation_image, "registry.example.com/muster:0.2.0");
    ck_assert_int_eq(s.gpu_sharing.reservation_timeout_ms, 45000);
    ck_assert_str_eq(s.gpu_sharing.runtime_class_name, "nvidia-cdi");
    ck_assert_str_eq(s.gpu_sharing.webhook_listen, "[::]:8443");
    ck_assert_str_eq(s.gpu_sharing.webhook_tls.cert_file, "/etc/muster/webhook/tls.crt");
    ck_assert_str_eq(s.gpu_sharing.webhook_tls.key_file, "/etc/muster/webhook/tls.key");
    ck_assert(s.leader_election.enabled);
    ck_assert_str_eq(s.leader_election.lease_name, "muster-gpu-scheduler");
    ck_assert_str_eq(s.leader_election.lease_namespace, "kube-system");
    ck_assert_str_eq(s.leader_election.identity, "node-a");
    ck_assert(!s.evictions.reclaim);
    ck_assert(!s.evictions.preemption);
    ck_assert_int_eq(s.evictions.refused_victim_wait_ms, 120000);
    ck_assert_int_eq(s.evictions.unasked_wait_ms, 45000);
    ck_assert_int_eq(s.fairness.half_life_ms, 90 * 60 * 1000);
    ck_assert_int_eq(s.fairness.window_ms, 72 * 3600 * 1000);
    ck_assert_int_eq(s.fairness.k_milli, 2500);
    ck_assert_int_eq(s.fairness.entry_penalty_ms, 5 * 60 * 1000);
    ck_assert(!s.watch_protobuf);
    cfg_settings_cleanup(&s);
}
END_TEST

/* fairness.halfLife 0 (a bare 0 needs no unit) turns fair over time off; the rest stays. */
START_TEST(test_settings_fairness_off)
{
    struct cfg_settings s;

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_msg(cfg_settings_load(&s, DIR "fairness-off.yaml", err, sizeof(err)) == CFG_OK, "%s",
                  err);
    ck_assert_int_eq(s.fairness.half_life_ms, 0);
    ck_assert_int_eq(s.fairness.k_milli, 1000);
    cfg_settings_cleanup(&s);
}
END_TEST

START_TEST(test_milli_parse)
{
    static const struct {
        const char *text;
        int rc;
        int64_t milli;
    } rows[] = {{"1", CFG_OK, 1000},        {"0.5", CFG_OK, 500}, {"2.125", CFG_OK, 2125},
                {".25", CFG_OK, 250},       {"0", CFG_OK, 0},     {"0.0005", CFG_EINVAL, 0},
                {"-1", CFG_EINVAL, 0},      {"1e3", CFG_EINVAL, 0}, {"", CFG_EINVAL, 0},
                {"99999999999999999", CFG_ERANGE, 0}};

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t v = -7;

        ck_assert_msg(cfg_milli_parse(rows[i].text, &v) == rows[i].rc, "%s", rows[i].text);
        if (rows[i].rc == CFG_OK)
            ck_assert_int_eq(v, rows[i].milli);
    }
}
END_TEST

/* Each bad file and the one line it must produce, after "path:". */
static const struct {
    const char *file;
    int rc;
    const char *err;
} bad_cases[] = {
    {"bad-typo-key.yaml", CFG_EINVAL, "7: unknown key \"bindwait\" (did you mean \"bindWait\"?)"},
    {"bad-unknown-top.yaml", CFG_EINVAL, "2: unknown key \"frobnicate\""},
    {"bad-tls-nested-typo.yaml", CFG_EINVAL,
     "3: unknown key \"keyfile\" in tls (did you mean \"keyFile\"?)"},
    {"bad-strategy.yaml", CFG_EINVAL,
     "3: strategy: \"binpak\" is not one of binpack, spread, fragmentation"},
    {"bad-log-level.yaml", CFG_EINVAL,
     "3: log.level: \"verbose\" is not one of debug, info, warn, error"},
    {"bad-duration.yaml", CFG_EINVAL,
     "1: planTTL: expected a duration such as \"20s\", got a number"},
    {"bad-duration-unit.yaml", CFG_EINVAL,
     "1: bindWait: \"20 s\" is not a duration in whole milliseconds (e.g. 500ms, 20s, 1m30s, 2h)"},
    {"bad-duration-sub-ms.yaml", CFG_EINVAL,
     "1: planTTL: \"1500us\" is not a duration in whole milliseconds (e.g. 500ms, 20s, 1m30s, 2h)"},
    {"bad-duration-zero.yaml", CFG_ERANGE, "1: planTTL: 0s is not in 1ms..24h"},
    {"bad-bindwait.yaml", CFG_EINVAL, "2: bindWait: 30s must be shorter than planTTL (30s)"},
    {"bad-planttl-short.yaml", CFG_EINVAL, "1: bindWait: 20s must be shorter than planTTL (10s)"},
    {"bad-tls-half.yaml", CFG_EINVAL,
     "2: tls: certFile and keyFile go together; keyFile is missing"},
    {"bad-type-string.yaml", CFG_EINVAL, "1: defaultQueue: expected a string, got a list"},
    {"bad-empty-string.yaml", CFG_EINVAL, "1: defaultQueue: must not be empty"},
    {"bad-list-scalar.yaml", CFG_EINVAL,
     "1: schedulerNames: expected a list of strings, got a string"},
    {"bad-list-item.yaml", CFG_EINVAL, "3: schedulerNames[1]: expected a string, got a number"},
    {"bad-list-empty.yaml", CFG_EINVAL, "1: schedulerNames: needs at least one entry"},
    {"bad-port.yaml", CFG_ERANGE, "1: listen: \"127.0.0.1:70000\" has a port outside 1..65535"},
    {"bad-hostport.yaml", CFG_EINVAL,
     "1: listen: \"8888\" is not host:port (e.g. 127.0.0.1:8888, [::1]:8888)"},
    {"bad-size.yaml", CFG_EINVAL,
     "1: maxBodyBytes: 32MB is not a size such as \"32Mi\" or a number of bytes"},
    {"bad-size-range.yaml", CFG_ERANGE, "1: maxBodyBytes: 512 is not in 1024..1073741824"},
    {"bad-count.yaml", CFG_EINVAL, "1: maxNodeNames: 1.5 is not a whole number"},
    {"bad-count-string.yaml", CFG_EINVAL, "1: maxNodeNames: expected a whole number, got a string"},
    {"bad-bool.yaml", CFG_EINVAL,
     "2: leaderElection.enabled: expected true or false, got a string"},
    {"bad-map-scalar.yaml", CFG_EINVAL, "1: gpuSharing: expected a mapping, got a boolean"},
    /* muster follows kube-scheduler's Lease; the timings are kube-scheduler's, not ours. */
    {"bad-lease-duration.yaml", CFG_EINVAL, "3: unknown key \"leaseDuration\" in leaderElection"},
    {"bad-lease-identity.yaml", CFG_EINVAL,
     "2: leaderElection.identity: expected a string, got a number"},
    {"bad-webhook-no-tls.yaml", CFG_EINVAL,
     "3: gpuSharing.webhookListen: needs gpuSharing.webhookTLS (the API server calls webhooks "
     "over HTTPS)"},
    {"bad-root-list.yaml", CFG_EINVAL, "1: settings: expected a mapping, got a list"},
    {"bad-two-docs.yaml", CFG_EINVAL, "3: a second document; settings are one YAML document"},
    {"bad-dup-key.yaml", CFG_EINVAL, "3: duplicate key \"planTTL\" (first at line 1)"},
    {"bad-syntax.yaml", CFG_ESYNTAX,
     "4: did not find expected key (while parsing a block mapping at line 1)"},
    {"bad-server-connections.yaml", CFG_ERANGE,
     "2: server.maxConnections: 5 is not in 16..1000000"},
    {"bad-server-idle.yaml", CFG_ERANGE, "2: server.idleTimeout: 500ms is not in 1s..1h"},
    {"bad-server-buffered.yaml", CFG_EINVAL,
     "3: server.maxBufferedBytes: 33554432 bytes is less than maxBodyBytes (67108864)"},
    {"bad-client-ca-no-cert.yaml", CFG_EINVAL,
     "1: tls: clientCAFile needs certFile and keyFile (client certificates are a part of TLS)"},
    {"bad-listen-long-host.yaml", CFG_ETOOBIG,
     "1: listen: a host of 300 characters is longer than 253"},
    {"bad-alias.yaml", CFG_EINVAL, "2: alias *wait: no anchor &wait before it"},
    {"bad-merge.yaml", CFG_EINVAL, "4: <<: a merge key takes a mapping or a list of mappings"},
    {"bad-fairness-k.yaml", CFG_EINVAL,
     "3: fairness.k: 0.0005 is not a number of at most three decimals (e.g. 1, 0.5)"},
    {"bad-fairness-k-string.yaml", CFG_EINVAL,
     "2: fairness.k: expected a number such as 1 or 0.5, got a string"},
    {"bad-fairness-k-range.yaml", CFG_ERANGE, "2: fairness.k: 20000 is not in 0..10000"},
    {"bad-fairness-window.yaml", CFG_ERANGE, "3: fairness.window: 30s is not in 1m..8784h"},
    {"bad-fairness-half-life.yaml", CFG_EINVAL,
     "2: fairness.halfLife: expected a duration such as \"20s\", got a number"},
};

START_TEST(test_settings_bad)
{
    struct cfg_settings s;
    char path[512], want[1024];
    int rc;

    snprintf(path, sizeof(path), DIR "%s", bad_cases[_i].file);
    snprintf(want, sizeof(want), "%s:%s", path, bad_cases[_i].err);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    rc = cfg_settings_load(&s, path, err, sizeof(err));
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(rc, bad_cases[_i].rc);
    assert_defaults(&s); /* a failed load leaves the settings as they were */
    cfg_settings_cleanup(&s);
}
END_TEST

/* A settings file may share values with anchors, aliases and merge keys. */
START_TEST(test_settings_anchors)
{
    struct cfg_settings s;

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_msg(cfg_settings_load(&s, DIR "anchors.yaml", err, sizeof(err)) == CFG_OK, "%s", err);
    ck_assert_str_eq(s.tls.cert_file, "/etc/muster/tls/tls.crt");
    ck_assert_str_eq(s.tls.key_file, "/etc/muster/tls/tls.key");
    ck_assert_str_eq(s.gpu_sharing.webhook_tls.cert_file, "/etc/muster/tls/tls.crt");
    ck_assert_str_eq(s.gpu_sharing.webhook_tls.key_file, "/etc/muster/webhook/tls.key");
    ck_assert_uint_eq(s.scheduler_names.n, 2);
    ck_assert_str_eq(s.scheduler_names.v[1], "kai-scheduler");
    cfg_settings_cleanup(&s);
}
END_TEST

START_TEST(test_settings_missing_file)
{
    struct cfg_settings s;

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cfg_settings_load(&s, DIR "absent.yaml", err, sizeof(err)), CFG_EIO);
    ck_assert_str_eq(err, DIR "absent.yaml: No such file or directory");
    assert_defaults(&s);
    cfg_settings_cleanup(&s);
}
END_TEST

/* A FIFO is refused, not waited on: nobody may ever write to it. */
START_TEST(test_settings_fifo)
{
    struct cfg_settings s;
    char path[64], want[128];

    snprintf(path, sizeof(path), "/tmp/muster-test-fifo.%d", (int)getpid());
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cfg_settings_load(&s, path, err, sizeof(err)), CFG_EIO);
    snprintf(want, sizeof(want), "%s: not a regular file", path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(cfg_settings_load(&s, "/tmp", err, sizeof(err)), CFG_EIO);
    ck_assert_str_eq(err, "/tmp: not a regular file");
    cfg_settings_cleanup(&s);
    unlink(path);
}
END_TEST

/* A second load replaces the first wholly: what it omits returns to default. */
START_TEST(test_settings_reload)
{
    struct cfg_settings s;

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cfg_settings_load(&s, DIR "full.yaml", err, sizeof(err)), CFG_OK);
    ck_assert_int_eq(cfg_settings_load(&s, DIR "empty.yaml", err, sizeof(err)), CFG_OK);
    assert_defaults(&s);
    cfg_settings_cleanup(&s);
}
END_TEST

START_TEST(test_strerror)
{
    ck_assert_str_eq(cfg_strerror(CFG_OK), "ok");
    ck_assert_str_eq(cfg_strerror(CFG_ESYNTAX), "YAML syntax error");
    ck_assert_str_eq(cfg_strerror(12345), "unknown error");
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc;

    tc = tcase_create("typing");
    tcase_add_loop_test(tc, test_typing, 0, N(typing_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("lines");
    tcase_add_loop_test(tc, test_lines, 0, N(line_cases));
    tcase_add_test(tc, test_lines_unknown_node);
    tcase_add_test(tc, test_lines_many_nodes);
    suite_add_tcase(s, tc);

    tc = tcase_create("documents");
    tcase_add_loop_test(tc, test_documents, 0, N(doc_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("aliases");
    tcase_add_loop_test(tc, test_aliases, 0, N(alias_cases));
    tcase_add_loop_test(tc, test_merges, 0, N(merge_cases));
    tcase_add_loop_test(tc, test_alias_lines, 0, N(alias_line_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("json");
    tcase_add_loop_test(tc, test_json, 0, N(json_cases));
    tcase_add_test(tc, test_json_stream);
    tcase_add_test(tc, test_json_lines_and_numbers);
    tcase_add_test(tc, test_json_long_key);
    suite_add_tcase(s, tc);

    tc = tcase_create("numbers");
    tcase_add_loop_test(tc, test_numbers, 0, N(number_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_errors, 0, N(error_cases));
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_strerror);
    suite_add_tcase(s, tc);

    tc = tcase_create("caps");
    tcase_add_test(tc, test_cap_depth);
    tcase_add_test(tc, test_cap_depth_json);
    tcase_add_test(tc, test_cap_alias_bomb);
    tcase_add_test(tc, test_cap_alias_string);
    tcase_add_test(tc, test_cap_alias_within);
    tcase_add_test(tc, test_cap_alias_depth);
    tcase_add_test(tc, test_cap_bytes);
    tcase_add_test(tc, test_cap_file_bytes);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("values");
    tcase_add_loop_test(tc, test_durations, 0, N(duration_cases));
    tcase_add_loop_test(tc, test_duration_format, 0, N(duration_format_cases));
    tcase_add_loop_test(tc, test_sizes, 0, N(size_cases));
    tcase_add_loop_test(tc, test_hostports, 0, N(hostport_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("settings");
    tcase_add_test(tc, test_settings_defaults);
    tcase_add_loop_test(tc, test_settings_default_files, 0, N(default_files));
    tcase_add_test(tc, test_settings_full);
    tcase_add_test(tc, test_settings_fairness_off);
    tcase_add_test(tc, test_milli_parse);
    tcase_add_test(tc, test_settings_anchors);
    tcase_add_test(tc, test_settings_missing_file);
    tcase_add_test(tc, test_settings_fifo);
    tcase_add_test(tc, test_settings_reload);
    suite_add_tcase(s, tc);

    tc = tcase_create("settings_bad");
    tcase_add_loop_test(tc, test_settings_bad, 0, N(bad_cases));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
