/* fixture.h - reading fixture files in the Check tests (FIXTURES is test/fixtures). */
#ifndef MUSTER_TEST_FIXTURE_H
#define MUSTER_TEST_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* The whole file, NUL-terminated, malloc'd; its length into *len when len is set. */
static inline char *fixture_read_path(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    ck_assert_msg(f != NULL, "cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* FIXTURES/<dir>/<name>. */
static inline char *fixture_read(const char *dir, const char *name, size_t *len)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s/%s", FIXTURES, dir, name);
    return fixture_read_path(path, len);
}

#endif
