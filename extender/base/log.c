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

void ext_log(enum cfg_log_level level, const char *msg, ...)
{
    char ts[40];
    va_list ap;
    const char *key;

    if (!ext_log_enabled(level))
        return;
    timestamp(ts, sizeof(ts));
    va_start(ap, msg);
    pthread_mutex_lock(&log_lock);
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
            fprintf(stderr, "%s\n", text);
        free(text);
        cJSON_Delete(o);
    } else {
        fprintf(stderr, "%s %-5s %s", ts, cfg_log_level_name(level), msg);
        while ((key = va_arg(ap, const char *))) {
            const char *v = va_arg(ap, const char *);

            if (!v)
                continue;
            fprintf(stderr, " %s=", key);
            plain_value(stderr, v);
        }
        fputc('\n', stderr);
    }
    fflush(stderr);
    pthread_mutex_unlock(&log_lock);
    va_end(ap);
}
