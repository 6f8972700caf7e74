/*
 * test_base.c - extender/base: text made safe for a terminal (text.c).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

/* ---- ext_text_escape ------------------------------------------------------------ */

static const struct {
    const char *in, *want;
} escape_cases[] = {
    {"", ""},
    {"team-a", "team-a"},
    /* kubectl's spellings (cli-runtime printers/terminal.go): ESC as ^[, CR as \r */
    {"\x1b]0;pwned\x07", "^[]0;pwned\\x07"},
    {"\x1b[2J\x1b[H", "^[[2J^[[H"},
    {"waiting\r\ngang lab/rc is Bound, 9/9 pods", "waiting\\r\\ngang lab/rc is Bound, 9/9 pods"},
    {"a\tb\x7f\x08" "c", "a\\tb\\x7f\\x08c"},
    /* C1 CSI (U+009B) and NEL (U+0085) as UTF-8 */
    {"x\xc2\x9b" "2Jy\xc2\x85z", "x\\u009b2Jy\\u0085z"},
    /* bidi overrides and the line separator */
    {"\xe2\x80\xae" "evil\xe2\x81\xa6" "x\xe2\x80\xa8", "\\u202eevil\\u2066x\\u2028"},
    /* printable UTF-8 stays: the queue tree's lines, accents, CJK, emoji */
    {"\xe2\x94\x9c\xe2\x94\x80 \xc3\xa9quipe \xe6\x97\xa5 \xf0\x9f\x9a\x80",
     "\xe2\x94\x9c\xe2\x94\x80 \xc3\xa9quipe \xe6\x97\xa5 \xf0\x9f\x9a\x80"},
    /* bytes that are no UTF-8: a lone CSI byte, a cut sequence, an overlong ESC, a surrogate */
    {"a\x9b" "b", "a\\x9bb"},
    {"cut\xe2\x94", "cut\\xe2\\x94"},
    {"\xc0\x9b", "\\xc0\\x9b"},
    {"\xed\xa0\x80", "\\xed\\xa0\\x80"},
    /* backslashes are left alone: the result is printable, not reversible (as kubectl's) */
    {"C:\\new", "C:\\new"},
};

START_TEST(test_escape)
{
    char out[256];
    size_t n = ext_text_escape(escape_cases[_i].in, NULL);

    ck_assert_uint_lt(n, sizeof(out));
    ck_assert_uint_eq(ext_text_escape(escape_cases[_i].in, out), n);
    ck_assert_str_eq(out, escape_cases[_i].want);
    ck_assert_uint_eq(strlen(out), n);
}
END_TEST

/* Whatever the input, nothing that acts survives, and escaping again changes nothing. */
START_TEST(test_escape_every_byte)
{
    char in[4], once[64], twice[64];

    for (unsigned b = 1; b < 256; b++) {
        for (unsigned c = 0; c < 256; c += 17) {
            in[0] = (char)b;
            in[1] = (char)c;
            in[2] = (char)0x9b;
            in[3] = '\0';
            ext_text_escape(in, once);
            for (const unsigned char *p = (const unsigned char *)once; *p; p++)
                ck_assert_msg(*p >= 0x20 && *p != 0x7f, "byte %02x %02x: %02x left in", b, c, *p);
            ck_assert_ptr_null(strstr(once, "\xc2\x9b"));
            ck_assert_ptr_null(strstr(once, "\xc2\x85"));
            ext_text_escape(once, twice);
            ck_assert_str_eq(once, twice);
        }
    }
}
END_TEST

START_TEST(test_safe_and_put)
{
    struct ext_arena *a = ext_arena_new();
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);

    ck_assert_ptr_null(ext_text_safe(a, NULL));
    ck_assert_str_eq(ext_text_safe(a, "q\x1b[31m"), "q^[[31m");
    ext_text_put("one\nline", m);
    ext_text_printf(m, " %s=%d", "x\ry", 4);
    fclose(m);
    ck_assert_str_eq(text, "one\\nline x\\ry=4");
    free(text);
    ext_arena_free(a);
}
END_TEST

/* JSON keeps its meaning: what acts inside a string goes as \uNNNN, which reads back the same. */
START_TEST(test_json_print)
{
    static const char hostile[] = "a\x1b[2J\r\n\xc2\x9b" "2J\xe2\x80\xae" "b\x7f";
    cJSON *o = cJSON_CreateObject(), *back;
    char *text;

    cJSON_AddStringToObject(o, "name", hostile);
    cJSON_AddStringToObject(o, "cut", "x\xe2\x94");
    text = ext_json_print(o, false);
    ck_assert_str_eq(text, "{\"name\":\"a\\u001b[2J\\r\\n\\u009b2J\\u202eb\\u007f\","
                           "\"cut\":\"x\\ufffd\\ufffd\"}");
    back = cJSON_Parse(text);
    ck_assert_str_eq(cJSON_GetObjectItem(back, "name")->valuestring, hostile);
    cJSON_Delete(back);
    free(text);
    text = ext_json_print(o, true); /* its own newlines and tabs stay */
    ck_assert_ptr_nonnull(strstr(text, "{\n\t\"name\":\t\"a\\u001b"));
    free(text);
    cJSON_Delete(o);
}
END_TEST

START_TEST(test_width)
{
    ck_assert_uint_eq(ext_text_width(""), 0);
    ck_assert_uint_eq(ext_text_width("team-a"), 6);
    ck_assert_uint_eq(ext_text_width("\xe2\x94\x94\xe2\x94\x80 a"), 4);
}
END_TEST

/* What ext_log wrote to stderr (fd 2, sent to a file meanwhile), after each line's timestamp. */
static char *logged(enum cfg_log_format format)
{
    FILE *f = tmpfile();
    int saved = dup(2);
    char *text = calloc(1, 4096), *out = calloc(1, 4096), *p = text, *o = out;
    size_t n;

    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(f), 2), 0);
    ext_log_setup(format, CFG_LOG_INFO);
    ext_log_info("bound pod", "pod", "ml/w-1", "node", "n 1", "gone", (const char *)NULL, "why",
                 "a \"q\"\nb");
    ext_log_debug("not shown", "pod", "ml/w-2");
    ext_log_warn("plain");
    ck_assert_int_ge(dup2(saved, 2), 0);
    close(saved);
    rewind(f);
    n = fread(text, 1, 4095, f);
    text[n] = '\0';
    fclose(f);
    for (char *nl; (nl = strchr(p, '\n')); p = nl + 1) { /* drop each line's timestamp */
        char *field = format == CFG_LOG_JSON ? strstr(p, "\"level\"") : strchr(p, ' ') + 1;

        ck_assert_ptr_nonnull(field);
        memcpy(o, field, (size_t)(nl + 1 - field));
        o += nl + 1 - field;
    }
    ck_assert_str_eq(p, ""); /* every line ends with its newline */
    free(text);
    return out;
}

START_TEST(test_log_lines)
{
    char *plain = logged(CFG_LOG_PLAIN), *json = logged(CFG_LOG_JSON);

    ck_assert_str_eq(plain, "info  bound pod pod=ml/w-1 node=\"n 1\" why=\"a \\\"q\\\" b\"\n"
                            "warn  plain\n");
    ck_assert_str_eq(json, "\"level\":\"info\",\"msg\":\"bound pod\",\"pod\":\"ml/w-1\","
                           "\"node\":\"n 1\",\"why\":\"a \\\"q\\\"\\nb\"}\n"
                           "\"level\":\"warn\",\"msg\":\"plain\"}\n");
    free(plain);
    free(json);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *base_suite(void)
{
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("text");

    tcase_add_loop_test(tc, test_escape, 0, N(escape_cases));
    tcase_add_test(tc, test_escape_every_byte);
    tcase_add_test(tc, test_safe_and_put);
    tcase_add_test(tc, test_json_print);
    tcase_add_test(tc, test_width);
    suite_add_tcase(s, tc);
    tc = tcase_create("log");
    tcase_add_test(tc, test_log_lines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(base_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
