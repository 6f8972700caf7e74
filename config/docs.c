/* docs.c - reading a YAML file into cfg_docs, and asking the docs about a node. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg_internal.h"

#define READ_CHUNK ((size_t)64 << 10)

/* Reads the whole of fd, up to one byte past the cap so that a bigger file shows. */
static int read_all(int fd, char **buf, size_t *len)
{
    size_t cap = 0, n = 0;
    char *p = NULL, *q;
    ssize_t got;

    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : READ_CHUNK;
            if (cap > CFG_DOCS_MAX_BYTES + 1)
                cap = CFG_DOCS_MAX_BYTES + 1;
            q = realloc(p, cap);
            if (q == NULL) {
                free(p);
                return CFG_ENOMEM;
            }
            p = q;
        }
        got = read(fd, p + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(p);
            return CFG_EIO;
        }
        n += (size_t)got;
        if (got == 0 || n > CFG_DOCS_MAX_BYTES)
            break;
    }
    *buf = p;
    *len = n;
    return CFG_OK;
}

int cfg_docs_load_file(struct cfg_docs *out, const char *path, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    struct stat st;
    int fd, rc;

    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return CFG_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return CFG_EIO;
    }
    rc = read_all(fd, &buf, &len);
    if (rc == CFG_EIO && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    if (rc == CFG_ENOMEM && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: out of memory", path);
    if (rc == CFG_OK)
        rc = cfg_docs_parse(out, path, buf, len, err, errlen);
    free(buf);
    return rc;
}

unsigned cfg_docs_line(const struct cfg_docs *d, const cJSON *node)
{
    const struct cfg__index_entry *e = cfg__index_get(d->index, node);

    return e != NULL ? e->line : 0;
}

const char *cfg_docs_scalar_text(const struct cfg_docs *d, const cJSON *node)
{
    const struct cfg__index_entry *e = cfg__index_get(d->index, node);

    if (e == NULL)
        return NULL;
    if (cJSON_IsString(node))
        return node->valuestring;
    return e->text;
}

int cfg_docs_int64(const struct cfg_docs *d, const cJSON *node, int64_t *out)
{
    const char *text = cfg_docs_scalar_text(d, node);

    if (text == NULL || !cJSON_IsNumber(node))
        return CFG_EINVAL;
    return cfg__int_parse(text, strlen(text), out);
}

int cfg__node_error(const struct cfg_docs *d, const cJSON *node, char *err, size_t errlen, int rc,
                    const char *fmt, ...)
{
    unsigned line = cfg_docs_line(d, node);
    va_list ap;
    int n;

    if (err == NULL || errlen == 0)
        return rc;
    if (line > 0)
        n = snprintf(err, errlen, "%s:%u: ", d->name, line);
    else
        n = snprintf(err, errlen, "%s: ", d->name);
    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
        cfg_one_line(err);
    }
    return rc;
}
