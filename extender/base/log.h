/*
 * log.h - one line per event, plain or JSON, to stderr.
 *
 * Decisions are logged as fields a person and a log pipeline can both read:
 *   plain: 2026-11-29T16:40:01.123Z info filter pod=lab/demo-head gang=lab/demo verdict=planned node=n1
 *   json:  {"ts":"...","level":"info","msg":"filter","pod":"lab/demo-head",...}
 */
#ifndef MUSTER_LOG_H
#define MUSTER_LOG_H

#include "config.h"

void ext_log_setup(enum cfg_log_format format, enum cfg_log_level level);
bool ext_log_enabled(enum cfg_log_level level);

/* msg, then key/value string pairs ending with NULL. A NULL value is skipped. */
void ext_log(enum cfg_log_level level, const char *msg, ...) __attribute__((sentinel));

#define ext_log_info(...) ext_log(CFG_LOG_INFO, __VA_ARGS__, (const char *)NULL)
#define ext_log_warn(...) ext_log(CFG_LOG_WARN, __VA_ARGS__, (const char *)NULL)
#define ext_log_error(...) ext_log(CFG_LOG_ERROR, __VA_ARGS__, (const char *)NULL)
#define ext_log_debug(...) ext_log(CFG_LOG_DEBUG, __VA_ARGS__, (const char *)NULL)

#endif
