/* log.c - structured one-line logs on stderr. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"

static enum cfg_log_format log_format = CFG_LOG_PLAIN;
static enum cfg_log_level log_level = CFG_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void ext_log_setup(enum cfg_log_format format, enum cfg_log_level level)
{
    log_format = format;
    log_level = level;
}

bool ext_log_enabled(enum cfg_log_level level)
{
    return level >= log_level;
}

static void timestamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* A plain value is quoted when it holds spaces or quotes. */
static void plain_value(FILE *out, const char *v)
{
    if (!strpbrk(v, " \"=") && *v) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            fputc('\\', out);
        fputc(*v == '\n' ? ' ' : *v, out);
    }
    fputc('"', out);
}

/* The line's fields after the timestamp, in the configured format, and its newline. */
static void log_line(FILE *out, const char *ts, enum cfg_log_level level, const char *msg,
                     va_list ap)
{
    const char *key;

    if (log_format == CFG_LOG_JSON) {
        cJSON *o = cJSON_CreateObject();
        char *text;

        cJSON_AddStringToObject(o, "ts", ts);
        cJSON_AddStringToObject(o, "level", cfg_log_level_name(level));
        cJSON_AddStringToObject(o, "msg", msg);
        while ((key = va_arg(ap, const char *))) {
            const char *v = va_arg(ap, const char *);

            if (v)
                cJSON_AddStringToObject(o, key, v);
        }
        text = cJSON_PrintUnformatted(o);
        if (text)
            fprintf(out, "%s\n", text);
        free(text);
        cJSON_Delete(o);
        return;
    }
    fprintf(out, "%s %-5s %s", ts, cfg_log_level_name(level), msg);
    while ((key = va_arg(ap, const char *))) {
        const char *v = va_arg(ap, const char *);

        if (!v)
            continue;
        fprintf(out, " %s=", key);
        plain_value(out, v);
    }
    fputc('\n', out);
}

/*
 * The line is made in memory and written whole, in one write: stderr has no buffer, so each
 * fputc of a field would otherwise be a system call of its own (8% of muster's CPU under a
 * burst of binds, each logged). Without memory for the line, it is written as it is made.
 */
void ext_log(enum cfg_log_level level, const char *msg, ...)
{
    char ts[40], *line = NULL;
    size_t len = 0;
    va_list ap;
    FILE *out;

    if (!ext_log_enabled(level))
        return;
    timestamp(ts, sizeof(ts));
    va_start(ap, msg);
    out = open_memstream(&line, &len);
    if (out) {
        int half;

        log_line(out, ts, level, msg, ap);
        half = ferror(out); /* no half line: it would join the next one */
        if (fclose(out) != 0 || half)
            len = 0;
    }
    pthread_mutex_lock(&log_lock);
    if (out && len > 0)
        fwrite(line, 1, len, stderr);
    else if (!out)
        log_line(stderr, ts, level, msg, ap);
    fflush(stderr);
    pthread_mutex_unlock(&log_lock);
    va_end(ap);
    free(line);
}
