/*
 * fuzz_common.h - what every fuzz target checks besides "no crash, no leak"
 * (ASan, UBSan and libFuzzer's leak check see to those).
 *
 * A failed property aborts with a one-line reason, so libFuzzer keeps the
 * input as a crash file like any sanitizer report.
 */
#ifndef MUSTER_FUZZ_COMMON_H
#define MUSTER_FUZZ_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "wire.h"

/* Caps small enough for the fuzzer to reach every one of them. */
static const struct ext_proto_limits fuzz_limits = {
    .max_body = 1u << 20,
    .max_depth = 24,
    .max_names = 64,
    .max_string = 512,
};

static inline void fuzz_require(bool ok, const char *what)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz: property violated: %s\n", what);
    abort();
}

/*
 * An error detail: NUL-terminated inside its buffer, not empty, one line
 * (STYLE.md: it goes into logs and HTTP replies, and quotes untrusted input).
 * FUZZ_ALLOW_MULTILINE_ERRORS=1 waives the last rule, to fuzz past a known
 * finding until it is fixed.
 */
static inline void fuzz_require_err(const char *err, size_t errlen)
{
    static int waived = -1;
    size_t n = strnlen(err, errlen);

    if (waived < 0)
        waived = getenv("FUZZ_ALLOW_MULTILINE_ERRORS") != NULL;
    fuzz_require(n < errlen, "error detail is NUL-terminated");
    fuzz_require(n > 0, "a failure says why");
    fuzz_require(waived || strpbrk(err, "\n\r") == NULL, "error detail is one line");
}

/* A string the caller may read: strlen touches every byte, so ASan sees a bad one. */
static inline void fuzz_require_string(const char *s, const char *what)
{
    fuzz_require(s != NULL, what);
    (void)strlen(s);
}

/* Encoder output: NUL-terminated at len, and valid JSON. Takes ownership of out. */
static inline cJSON *fuzz_parse_encoded(char *out, size_t len)
{
    cJSON *doc;

    fuzz_require(out != NULL && strlen(out) == len, "encoded reply is NUL-terminated at len");
    doc = cJSON_ParseWithLength(out, len);
    fuzz_require(doc != NULL, "encoded reply is valid JSON");
    free(out);
    return doc;
}

#endif
