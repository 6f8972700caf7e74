/* clock.c - the shell's clock: monotonic milliseconds for every deadline; the wall clock and
 * Kubernetes' times only where an object's time is compared with it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base.h"

int64_t ext_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ext_deadline_in(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

void ext_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

    if (ms <= 0)
        return;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int64_t ext_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ext_time_us(const char *s)
{
    int y, mo, d, h, mi, sec, n = 0, oh, om;
    struct tm tm = {0};
    const char *p;
    int64_t t, us = 0;

    if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
        n != 19)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = (int64_t)timegm(&tm);
    p = s + n;
    if (*p == '.') {
        size_t digits = strspn(p + 1, "0123456789");

        for (size_t i = 0; i < 6; i++)
            us = us * 10 + (i < digits ? p[1 + i] - '0' : 0);
        p += 1 + digits;
    }
    if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &oh, &om) == 2 && strlen(p) == 6)
        t -= (*p == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
    else if (strcmp(p, "Z") != 0)
        return -1;
    return t * 1000000 + us;
}
