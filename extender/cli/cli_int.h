/* cli_int.h - what extender/cli/'s files share and nobody else sees. */
#ifndef MUSTER_CLI_INT_H
#define MUSTER_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"
#include "cli.h"
#include "kube.h"

/* ---- the API server (fetch.c) ------------------------------------------------------ */

#define CLI_PAGE 500        /* items per LIST page */
#define CLI_MAX_ITEMS 20000 /* a LIST stops there (and says so) */
#define CLI_MAX_PAGES 100   /* ... and fails past so many pages: 40 hold CLI_MAX_ITEMS */

/* One GET. EXT_ENOTFOUND on a 404: no such object, or no such resource (a CRD not installed). */
int cli__get(struct kube_client *c, const char *path, cJSON **out, char *err, size_t errlen);

/*
 * Every page of a collection (path without a query, or with one to which
 * limit and continue are added), into *items, a new array. *truncated: the
 * collection holds more than CLI_MAX_ITEMS. EXT_EPROTO past CLI_MAX_PAGES
 * pages: an API server that never stops sending continue tokens.
 */
int cli__list(struct kube_client *c, const char *path, cJSON **items, bool *truncated, char *err,
              size_t errlen);

/* Did a request find no API server to answer it (connection, TLS, timeout)? */
bool cli__unreachable(int rc);

/* The exit status for an ext_err code (CLI_EXIT_*). */
int cli__exit_of(int rc);

/* ---- words and numbers (text.c) ---------------------------------------------------- */

/* A string member, or NULL. */
const char *cli__str(const cJSON *obj, const char *key);

/* A quantity of a resource in the engine's unit, as Kubernetes writes it; -1: "unlimited". */
void cli__amount(int64_t v, enum policy_resource r, char *buf, size_t len);
/* A quantity string of a resource (status.allocated.gpu "1.5") in the engine's unit. */
bool cli__amount_parse(const cJSON *v, enum policy_resource r, int64_t *out);

/* RFC 3339 ("2026-11-29T16:40:01Z", fractions and offsets too) in seconds; -1 if not one. */
int64_t cli__time(const char *s);
/* How long ago, as kubectl prints it: "45s", "3m12s", "5h", "2d"; "<unknown>". */
void cli__age(int64_t now, int64_t then, char *buf, size_t len);

/* %-escape what a query value may not hold. */
char *cli__query_escape(struct ext_arena *a, const char *s);

/* ---- tables ------------------------------------------------------------------------ */

/* Rows of cells, printed as kubectl prints them: columns padded to the widest, three spaces apart.
 */
struct cli_table {
    struct ext_arena *a;
    size_t ncols;
    const char **cells;
    size_t n, cap;
    bool oom;
};

void cli__table_init(struct cli_table *t, struct ext_arena *a, size_t ncols);
void cli__table_cleanup(struct cli_table *t);
/* The next cell (copied, escaped for the terminal: ext_text_escape); NULL prints as "<none>". */
void cli__table_add(struct cli_table *t, const char *text);
void cli__table_addf(struct cli_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Widths count characters, not bytes (the tree's lines are UTF-8). */
void cli__table_print(const struct cli_table *t, FILE *out);

/* ---- muster queues (queues.c) ------------------------------------------------------ */

/* The Queue objects of a LIST (items), as a tree with totals, onto out. A CLI_EXIT_* status
 * (CLI_EXIT_PARTIAL: printed with warnings). */
int cli__queues_print(const cJSON *items, bool truncated, const struct cli_opts *o, FILE *out,
                      char *err, size_t errlen);

/* ---- a Queue as the commands show it (queue.c) ------------------------------------- */

struct cli_queue {
    const char *name, *parent;
    int32_t priority;
    struct policy_resources quota, limit; /* -1 = unlimited */
    struct policy_resources allocated, reserved, fair_share;
    bool has_status;        /* muster wrote its status */
    bool has_fair_share;    /* ... with a fair share in it */
    int32_t pending_gangs;  /* 0 to INT32_MAX */
    const char *status_err; /* why its status cannot be read (then it has none), or NULL */
    /* Fair over time: its recentUsage (U', a fraction of the cluster's capacity over the
     * window) and the fair share it would have if that did not count, when muster wrote them. */
    bool has_recent_usage;
    double recent_usage[POLICY_RES_COUNT];
    struct policy_resources fair_share_plain;
};

/* "62%", "0.4%", "<0.1%" of a U' (0.62). */
void cli__usage_text(double u, char *buf, size_t len);

/* A Queue object into q (strings in a). An ext_err code when its spec cannot be read, and err
 * says why; a status that cannot be read leaves q without one, q->status_err says why. */
int cli__queue_read(const cJSON *obj, struct ext_arena *a, struct cli_queue *q, char *err,
                    size_t errlen);

/* {"quota": "2", "limit": "-1", "fairShare": null, "allocated": "1.5", "reserved": "0",
 *  "recentUsage": 0.25, "fairShareWithoutRecentUsage": "6"} (the last two null without) */
cJSON *cli__queue_amounts_json(const struct cli_queue *q, enum policy_resource r);

#endif
