/*
 * metrics.h - a small Prometheus registry: counters, gauges and histograms
 * with labels, rendered in the text exposition format (version 0.0.4).
 *
 * A family (struct ext_metric) has one name, one type and fixed label names.
 * A series is one combination of label values; look it up once and keep the
 * pointer for the hot path. Every call is thread-safe.
 *
 * Gauges that mirror state held elsewhere (gangs by state, queue usage) are
 * best refreshed by a collect hook, which runs before every render.
 */
#ifndef MUSTER_METRICS_H
#define MUSTER_METRICS_H

#include <stddef.h>

#include "ext_err.h"

struct ext_metrics;
struct ext_metric;
struct ext_series;

/* The request latency buckets, in seconds: 0.0005 .. 10. */
extern const double ext_metrics_latency_buckets[];
extern const size_t ext_metrics_latency_nbuckets;

struct ext_metrics *ext_metrics_new(void);
void ext_metrics_free(struct ext_metrics *r);

/*
 * Register a family. labels is a comma-separated list of label names
 * ("verb,code"), NULL or "" for none. Registering the same name again with
 * the same type and labels returns the family already there. NULL on a name
 * Prometheus would refuse, a clash with another type or labels, or ENOMEM.
 * bounds are the histogram's upper bounds, strictly increasing; +Inf is implied.
 */
struct ext_metric *ext_metrics_counter(struct ext_metrics *r, const char *name, const char *help,
                                       const char *labels);
struct ext_metric *ext_metrics_gauge(struct ext_metrics *r, const char *name, const char *help,
                                     const char *labels);
struct ext_metric *ext_metrics_histogram(struct ext_metrics *r, const char *name, const char *help,
                                         const char *labels, const double *bounds, size_t nbounds);

/*
 * The series for these label values, one per label name in order (NULL for
 * a family without labels); created at first use, at 0. The pointer stays
 * valid until ext_metric_clear or ext_metrics_free. NULL on ENOMEM or a NULL m.
 */
struct ext_series *ext_metric_with(struct ext_metric *m, const char *const *values);

/* Drop every series of a family: for gauges rebuilt by a collect hook. */
void ext_metric_clear(struct ext_metric *m);

/* Each is a no-op on a NULL series, so a failed lookup costs a sample, not a crash. */
void ext_series_add(struct ext_series *s, double v);     /* counter (v >= 0) or gauge */
void ext_series_set(struct ext_series *s, double v);     /* gauge */
void ext_series_observe(struct ext_series *s, double v); /* histogram */
double ext_series_value(struct ext_series *s);           /* counter/gauge value; histogram count */

/* fn runs before every render, outside the registry's lock. */
int ext_metrics_on_collect(struct ext_metrics *r, void (*fn)(struct ext_metrics *r, void *ctx),
                           void *ctx);

/* The text exposition of every family, into a malloc'd NUL-terminated buffer. */
int ext_metrics_render(struct ext_metrics *r, char **out, size_t *len);

#endif
