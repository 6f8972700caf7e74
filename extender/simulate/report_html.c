/*
 * report_html.c - a finished simulation as one self-contained page: every
 * node's GPUs as cells (whole devices, shared devices split into their
 * shares), coloured by gang with a stripe for the queue; the gangs that wait
 * and why; each queue's GPU bar against its quota, fair share and limit.
 *
 * The page needs no network: the run's data is embedded as JSON and drawn by
 * the inline script below, and a Content-Security-Policy forbids every fetch.
 * It reads the same run the JSON report reads (struct sim_run and the
 * engine's views); the few lines that pick a pod's node, share and reason
 * repeat report.c's, which keeps its helpers to itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate_int.h"

/* ---- the run as data --------------------------------------------------------------- */

/* Nodes in name order (policy_each_node's), to find one by name. */
struct html_nodes {
    cJSON *list;
    const char **names; /* owned by the cJSON items */
    cJSON **items;
    size_t n, cap;
    bool oom;
    /* The Topology nodes are grouped by (the one with the most levels, the first by name
     * among equals); nlevels 0: none, the nodes are drawn in one group. */
    struct policy_topology_view topo;
};

static void pick_topology(const struct policy_topology_view *v, void *ctx)
{
    struct policy_topology_view *best = ctx;

    if (v->nlevels > best->nlevels ||
        (v->nlevels == best->nlevels && best->name && strcmp(v->name, best->name) < 0))
        *best = *v;
}

static const char *label_of(const struct policy_node_view *v, const char *key)
{
    for (size_t i = 0; i < v->nlabels; i++)
        if (strcmp(v->labels[i].key, key) == 0)
            return v->labels[i].value;
    return NULL;
}

/* "block=b1 / rack=r2": the node's domains, coarsest first (the hostname level is the node
 * itself); NULL when the node lacks the coarsest level's label. */
static cJSON *domain_json(const struct policy_node_view *v, const struct policy_topology_view *t)
{
    char text[512] = "";
    size_t off = 0;

    for (size_t l = 0; l < t->nlevels && off < sizeof(text); l++) {
        const char *shown = t->aliases && t->aliases[l] ? t->aliases[l] : t->labels[l];
        const char *value = label_of(v, t->labels[l]);

        if (strcmp(t->labels[l], "kubernetes.io/hostname") == 0)
            break;
        if (!value)
            break;
        off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%s=%s", off ? " / " : "",
                                shown, value);
    }
    return off ? cJSON_CreateString(text) : cJSON_CreateNull();
}

static void add_resource(cJSON *o, const char *key, int64_t v, enum kube_quantity_style style)
{
    char text[64];

    kube_quantity_format(v, style, text, sizeof(text));
    cJSON_AddStringToObject(o, key, text);
}

static cJSON *node_json(const struct policy_node_view *v)
{
    cJSON *o = cJSON_CreateObject(), *groups;

    cJSON_AddStringToObject(o, "name", v->name);
    cJSON_AddNumberToObject(o, "gpus", (double)v->gpus);
    cJSON_AddNumberToObject(o, "gpuMemoryMiB", (double)v->gpu_memory_mib);
    cJSON_AddNumberToObject(o, "wholeUsed", (double)v->gpus_whole_used);
    add_resource(o, "cpu", v->cpu_milli, KUBE_QUANTITY_MILLI);
    add_resource(o, "cpuUsed", v->cpu_used, KUBE_QUANTITY_MILLI);
    add_resource(o, "memory", v->memory_bytes, KUBE_QUANTITY_BINARY);
    add_resource(o, "memoryUsed", v->memory_used, KUBE_QUANTITY_BINARY);
    cJSON_AddArrayToObject(o, "whole");
    groups = cJSON_AddArrayToObject(o, "groups");
    for (size_t i = 0; i < v->ngroups; i++) {
        cJSON *g = cJSON_CreateObject();

        cJSON_AddStringToObject(g, "id", v->groups[i].id);
        cJSON_AddNumberToObject(g, "usedMilli", v->groups[i].used_milli);
        cJSON_AddArrayToObject(g, "shares");
        cJSON_AddItemToArray(groups, g);
    }
    return o;
}

static void collect_node(const struct policy_node_view *v, void *ctx)
{
    struct html_nodes *ns = ctx;
    cJSON *o;

    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        const char **names = realloc(ns->names, cap * sizeof(*names));
        cJSON **items = names ? realloc(ns->items, cap * sizeof(*items)) : NULL;

        if (names != NULL)
            ns->names = names;
        if (items == NULL) {
            ns->oom = true;
            return;
        }
        ns->items = items;
        ns->cap = cap;
    }
    o = node_json(v);
    if (o != NULL && ns->topo.nlevels > 0)
        cJSON_AddItemToObject(o, "domain", domain_json(v, &ns->topo));
    if (o == NULL || !cJSON_AddItemToArray(ns->list, o)) {
        cJSON_Delete(o);
        ns->oom = true;
        return;
    }
    ns->names[ns->n] = cJSON_GetObjectItemCaseSensitive(o, "name")->valuestring;
    ns->items[ns->n++] = o;
}

static cJSON *find_node(const struct html_nodes *ns, const char *name)
{
    size_t lo = 0, hi = ns->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ns->names[mid], name);

        if (c == 0)
            return ns->items[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The gang a pod is drawn as: its gang, or itself when it has none. */
static const char *gang_of(struct sim_run *r, const struct sim_pod *p, char *buf, size_t len)
{
    if (p->spec.gang != NULL)
        return p->spec.gang;
    snprintf(buf, len, "%s/%s", p->spec.namespace_, p->spec.name);
    return buf;
}

static cJSON *placed_json(struct sim_run *r, const struct sim_pod *p, const char *queue)
{
    cJSON *o = cJSON_CreateObject();
    char pod[600], gang[600];

    snprintf(pod, sizeof(pod), "%s/%s", p->spec.namespace_, p->spec.name);
    cJSON_AddStringToObject(o, "pod", pod);
    cJSON_AddStringToObject(o, "gang", gang_of(r, p, gang, sizeof(gang)));
    cJSON_AddStringToObject(o, "queue", queue != NULL ? queue : "");
    return o;
}

/* Each share on the groups it names ("g0" or "g0,g3"). */
static void place_shares(cJSON *node, const char *groups, cJSON *share)
{
    char *list = strdup(groups), *save = NULL;

    for (char *id = list ? strtok_r(list, ",", &save) : NULL; id != NULL;
         id = strtok_r(NULL, ",", &save)) {
        const cJSON *g;

        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(node, "groups"))
        {
            const cJSON *gid = cJSON_GetObjectItemCaseSensitive(g, "id");

            if (cJSON_IsString(gid) && strcmp(gid->valuestring, id) == 0)
                cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(g, "shares"),
                                     cJSON_Duplicate(share, true));
        }
    }
    free(list);
    cJSON_Delete(share);
}

/* What a bound pod takes on its node's GPUs: whole devices, or shares of GPU groups. */
static void place_pod(struct sim_run *r, const struct html_nodes *ns, const struct sim_pod *p)
{
    struct policy_pod_view v;
    bool have = policy_pod_view_get(r->cluster, p->spec.namespace_, p->spec.name, &v);
    const char *queue = have && v.queue != NULL ? v.queue : p->spec.queue;
    int32_t share = have && v.gpu_share_milli > 0 ? v.gpu_share_milli : p->spec.gpu_share_milli;
    cJSON *node = find_node(ns, p->node), *o;

    if (node == NULL || (p->spec.gpus <= 0 && (share <= 0 || p->gpu_groups == NULL)))
        return;
    o = placed_json(r, p, queue);
    if (p->spec.gpus > 0) {
        cJSON_AddNumberToObject(o, "gpus", (double)p->spec.gpus);
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(node, "whole"), o);
        return;
    }
    cJSON_AddNumberToObject(o, "milli", share);
    place_shares(node, p->gpu_groups, o);
}

/* Why a pod waits, as the JSON report says it. */
static const char *pending_reason(struct sim_run *r, const struct sim_pod *p)
{
    struct policy_pod_view v;

    if (!p->spec.managed)
        return "not scheduled by muster (spec.schedulerName)";
    if (p->reason != NULL)
        return p->reason;
    if (policy_pod_view_get(r->cluster, p->spec.namespace_, p->spec.name, &v) && v.reason)
        return v.reason;
    return "pending";
}

/* Pending pods by gang, in input order: how many, the queue, the first reason. */
static cJSON *pending_json(struct sim_run *r)
{
    cJSON *list = cJSON_CreateArray(), *byname = cJSON_CreateObject(), *last = NULL;

    for (size_t i = 0; list != NULL && byname != NULL && i < r->npods; i++) {
        const struct sim_pod *p = &r->pods[i];
        struct policy_pod_view v;
        char buf[600];
        const char *gang;
        cJSON *g;

        if (p->bound)
            continue;
        gang = gang_of(r, p, buf, sizeof(buf));
        /* A gang's pods mostly come one after another: look up only when it changes. */
        g = last != NULL &&
                    strcmp(cJSON_GetObjectItemCaseSensitive(last, "gang")->valuestring, gang) == 0
                ? last
                : cJSON_GetObjectItemCaseSensitive(byname, gang);
        if (g == NULL) {
            g = cJSON_CreateObject();
            cJSON_AddStringToObject(g, "gang", gang);
            cJSON_AddStringToObject(
                g, "queue",
                policy_pod_view_get(r->cluster, p->spec.namespace_, p->spec.name, &v) && v.queue
                    ? v.queue
                    : (p->spec.queue ? p->spec.queue : ""));
            cJSON_AddNumberToObject(g, "pods", 0);
            cJSON_AddStringToObject(g, "reason", pending_reason(r, p));
            cJSON_AddItemToArray(list, g);
            cJSON_AddItemReferenceToObject(byname, gang, g);
        }
        cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "pods"),
                             cJSON_GetObjectItemCaseSensitive(g, "pods")->valuedouble + 1);
        last = g;
    }
    cJSON_Delete(byname);
    return list;
}

static cJSON *amounts_json(const struct policy_queue_view *q, enum policy_resource res,
                           enum kube_quantity_style style)
{
    cJSON *o = cJSON_CreateObject();
    const struct {
        const char *key;
        int64_t v;
    } parts[] = {
        {"allocated", q->allocated.v[res]},  {"reserved", q->reserved.v[res]},
        {"quota", q->quota.v[res]},          {"limit", q->limit.v[res]},
        {"fairShare", q->fair_share.v[res]},
    };

    /* Raw numbers for the bars (-1: unlimited), quantities for the words. */
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        char key[32];

        cJSON_AddNumberToObject(o, parts[i].key, (double)parts[i].v);
        snprintf(key, sizeof(key), "%sText", parts[i].key);
        if (parts[i].v < 0)
            cJSON_AddStringToObject(o, key, "unlimited");
        else
            add_resource(o, key, parts[i].v, style);
    }
    return o;
}

static void collect_queue(const struct policy_queue_view *q, void *ctx)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "name", q->name);
    if (q->parent != NULL)
        cJSON_AddStringToObject(o, "parent", q->parent);
    else
        cJSON_AddNullToObject(o, "parent");
    cJSON_AddBoolToObject(o, "implicit", q->implicit);
    cJSON_AddNumberToObject(o, "pendingGangs", q->pending_gangs);
    cJSON_AddItemToObject(o, "gpu", amounts_json(q, POLICY_RES_GPU, KUBE_QUANTITY_DECIMAL));
    cJSON_AddItemToObject(o, "cpu", amounts_json(q, POLICY_RES_CPU, KUBE_QUANTITY_MILLI));
    cJSON_AddItemToObject(o, "memory", amounts_json(q, POLICY_RES_MEMORY, KUBE_QUANTITY_BINARY));
    cJSON_AddItemToArray(ctx, o);
}

static cJSON *run_json(struct sim_run *r)
{
    struct html_nodes ns = {.list = cJSON_CreateArray()};
    cJSON *root = cJSON_CreateObject(), *files, *queues;
    size_t placed = 0;

    if (root == NULL || ns.list == NULL) {
        cJSON_Delete(root);
        cJSON_Delete(ns.list);
        return NULL;
    }
    files = cJSON_AddArrayToObject(root, "files");
    for (size_t i = 0; i < r->ndocs; i++)
        cJSON_AddItemToArray(files, cJSON_CreateString(r->docs[i].name));
    policy_each_topology(r->cluster, pick_topology, &ns.topo);
    policy_each_node(r->cluster, collect_node, &ns);
    for (size_t i = 0; i < r->npods; i++) {
        if (r->pods[i].bound) {
            placed++;
            place_pod(r, &ns, &r->pods[i]);
        }
    }
    cJSON_AddItemToObject(root, "nodes", ns.list);
    cJSON_AddItemToObject(root, "pending", pending_json(r));
    queues = cJSON_AddArrayToObject(root, "queues");
    policy_each_queue(r->cluster, collect_queue, queues);
    cJSON_AddNumberToObject(root, "podsPlaced", (double)placed);
    cJSON_AddNumberToObject(root, "podsPending", (double)(r->npods - placed));
    free(ns.names);
    free(ns.items);
    if (ns.oom) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* ---- the page ---------------------------------------------------------------------- */

static const char page_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
    "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>muster simulate: packing</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2330;"
    "background:#f6f7f9}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}\n"
    ".muted{color:#667}.files{font-family:ui-monospace,monospace;font-size:12px}\n"
    "#nodes{display:flex;flex-wrap:wrap;gap:12px}\n"
    ".domain{border:1px dashed #b8c0cc;border-radius:8px;padding:8px;margin:0 0 12px}\n"
    ".domain h3{font-size:13px;margin:0 0 8px;font-family:ui-monospace,monospace}\n"
    ".domain .members{display:flex;flex-wrap:wrap;gap:12px}\n"
    ".node{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:10px 12px;"
    "min-width:180px}\n"
    ".node h3{font-size:14px;margin:0;font-family:ui-monospace,monospace}\n"
    ".node .res{font-size:12px;color:#667;margin:2px 0 8px}\n"
    ".gpus{display:flex;flex-wrap:wrap;gap:6px}\n"
    ".gpu{width:54px;height:54px;border-radius:5px;border:1px solid #c3c9d3;"
    "display:flex;flex-direction:column-reverse;overflow:hidden;background:#fff;"
    "position:relative}\n"
    ".gpu[data-state=free]{background:repeating-linear-gradient(45deg,#fff,#fff 5px,#f0f2f5 5px,"
    "#f0f2f5 10px)}\n"
    ".share{border-left:6px solid transparent;box-sizing:border-box;"
    "border-top:2px solid rgba(255,255,255,.8)}\n"
    ".share.reserved{background:repeating-linear-gradient(45deg,#cfd4dc,#cfd4dc 4px,#e6e9ee 4px,"
    "#e6e9ee 8px)}\n"
    ".gpu .tag{position:absolute;top:2px;left:4px;font-size:10px;color:#fff;"
    "text-shadow:0 0 2px #000}\n"
    ".legend{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:12px;margin:8px 0}\n"
    ".swatch{display:inline-block;width:12px;height:12px;border-radius:3px;vertical-align:-2px;"
    "margin-right:4px}\n"
    "table{border-collapse:collapse;background:#fff}\n"
    "td,th{border:1px solid #d8dce3;padding:4px 8px;text-align:left;vertical-align:top}\n"
    "th{background:#eef0f4;font-weight:600}\n"
    ".bar{position:relative;width:360px;height:16px;background:#eef0f4;border-radius:3px}\n"
    ".bar .fill{position:absolute;left:0;top:0;bottom:0;border-radius:3px}\n"
    ".bar .mark{position:absolute;top:-3px;bottom:-3px;width:0;border-left:2px solid}\n"
    ".mark.quota{border-color:#1d2330}.mark.fair{border-color:#2b7de9;border-left-style:dashed}"
    ".mark.limit{border-color:#d33}\n"
    "</style>\n</head>\n";

static const char page_body[] =
    "<body>\n<h1>muster simulate: packing</h1>\n"
    "<div class=\"muted files\" id=\"files\"></div>\n"
    "<p id=\"summary\"></p>\n"
    "<noscript><p>This page draws itself with JavaScript; `muster simulate -o table` prints "
    "the same run as text.</p></noscript>\n"
    "<h2>Nodes</h2>\n<div class=\"legend\" id=\"legend\"></div>\n<div id=\"nodes\"></div>\n"
    "<h2>Pending gangs</h2>\n<div id=\"pending\"></div>\n"
    "<h2>Queues</h2>\n<p class=\"muted\">GPUs allocated (bound) per queue, rolled up from its "
    "children; black: quota, dashed blue: fair share, red: limit.</p>\n"
    "<div id=\"queues\"></div>\n";

/* The drawing. Everything it shows comes from #muster-data; text goes in as textContent. */
static const char page_script[] =
    "(function () {\n"
    "'use strict';\n"
    "var data = JSON.parse(document.getElementById('muster-data').textContent);\n"
    "function el(tag, cls, text) {\n"
    "  var e = document.createElement(tag);\n"
    "  if (cls) e.className = cls;\n"
    "  if (text !== undefined) e.textContent = text;\n"
    "  return e;\n"
    "}\n"
    "function hash(s) {\n"
    "  var h = 2166136261;\n"
    "  for (var i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;\n"
    "  return h;\n"
    "}\n"
    "function gangColor(g) { return 'hsl(' + (hash(g) % 360) + ',62%,' + (48 + hash(g + '.') % 16)"
    " + '%)'; }\n"
    "var queueAt = {};\n"
    "data.queues.forEach(function (q, i) { queueAt[q.name] = i; });\n"
    "function queueColor(q) {\n"
    "  var i = queueAt[q] === undefined ? data.queues.length : queueAt[q];\n"
    "  return 'hsl(' + ((i * 137 + 200) % 360) + ',55%,28%)';\n"
    "}\n"
    "function gpuText(milli) { return String(milli / 1000); }\n"
    "function segment(s, milli, title, attr) {\n"
    "  var d = el('div', 'share');\n"
    "  d.style.height = (milli / 10) + '%';\n"
    "  if (s) {\n"
    "    d.style.background = gangColor(s.gang);\n"
    "    d.style.borderLeftColor = queueColor(s.queue);\n"
    "    d.setAttribute(attr, s.pod);\n"
    "    d.setAttribute('data-gang', s.gang);\n"
    "    d.setAttribute('data-queue', s.queue);\n"
    "    d.setAttribute('data-milli', String(milli));\n"
    "  } else {\n"
    "    d.className += ' reserved';\n"
    "  }\n"
    "  d.title = title;\n"
    "  return d;\n"
    "}\n"
    "function cell(node, index, state, title) {\n"
    "  var c = el('div', 'gpu');\n"
    "  c.setAttribute('data-gpu', node.name + '/' + index);\n"
    "  c.setAttribute('data-state', state);\n"
    "  c.title = node.name + ' GPU ' + index + ': ' + title;\n"
    "  return c;\n"
    "}\n"
    "var used = 0, devices = 0, wholeMilli = 0, gangsSeen = {};\n"
    "function drawNode(node) {\n"
    "  var card = el('section', 'node'), row = el('div', 'gpus'), index = 0, whole = 0;\n"
    "  card.setAttribute('data-node', node.name);\n"
    "  card.setAttribute('data-gpus', String(node.gpus));\n"
    "  card.appendChild(el('h3', '', node.name));\n"
    "  card.appendChild(el('div', 'res', node.gpus + ' GPU' + (node.gpus === 1 ? '' : 's') +\n"
    "    (node.gpuMemoryMiB ? ' x ' + node.gpuMemoryMiB + ' MiB' : '') + ' \\u00b7 cpu ' +\n"
    "    node.cpuUsed + '/' + node.cpu + ' \\u00b7 memory ' + node.memoryUsed + '/' + "
    "node.memory));\n"
    "  node.whole.forEach(function (p) {\n"
    "    gangsSeen[p.gang] = p.queue;\n"
    "    for (var i = 0; i < p.gpus && index < node.gpus; i++) {\n"
    "      var c = cell(node, index++, 'whole', p.pod + ' (gang ' + p.gang + ', queue ' + "
    "p.queue + ')');\n"
    "      c.appendChild(segment(p, 1000, c.title, 'data-whole'));\n"
    "      row.appendChild(c);\n"
    "      whole++;\n"
    "    }\n"
    "  });\n"
    "  for (var k = whole; k < node.wholeUsed && index < node.gpus; k++)\n"
    "    row.appendChild(cell(node, index++, 'reserved', 'planned, not bound'))\n"
    "      .appendChild(segment(null, 1000, 'planned, not bound'));\n"
    "  node.groups.forEach(function (g) {\n"
    "    if (index >= node.gpus) return;\n"
    "    var c = cell(node, index++, 'shared', 'GPU group ' + g.id + ', ' + gpuText(g.usedMilli) +"
    " ' in use'), placed = 0;\n"
    "    g.shares.forEach(function (s) {\n"
    "      gangsSeen[s.gang] = s.queue;\n"
    "      placed += s.milli;\n"
    "      c.appendChild(segment(s, s.milli, s.pod + ': ' + gpuText(s.milli) + ' of group ' + "
    "g.id + ' (gang ' + s.gang + ', queue ' + s.queue + ')', 'data-share'));\n"
    "    });\n"
    "    if (g.usedMilli > placed) c.appendChild(segment(null, g.usedMilli - placed, "
    "'planned, not bound'));\n"
    "    c.appendChild(el('span', 'tag', g.id));\n"
    "    row.appendChild(c);\n"
    "  });\n"
    "  used += index;\n"
    "  for (; index < node.gpus; index++) row.appendChild(cell(node, index, 'free', 'free'));\n"
    "  devices += node.gpus;\n"
    "  card.appendChild(row);\n"
    "  return card;\n"
    "}\n"
    "var nodes = document.getElementById('nodes'), domains = {}, order = [];\n"
    "data.nodes.forEach(function (n) {\n"
    "  if (n.domain === undefined) { nodes.appendChild(drawNode(n)); return; }\n"
    "  var d = n.domain === null ? 'in no domain' : n.domain;\n"
    "  if (!domains[d]) { domains[d] = []; order.push(d); }\n"
    "  domains[d].push(n);\n"
    "});\n"
    "if (order.length) nodes.style.display = 'block';\n"
    "order.sort().forEach(function (d) {\n"
    "  var box = el('section', 'domain'), members = el('div', 'members');\n"
    "  box.setAttribute('data-domain', d);\n"
    "  box.appendChild(el('h3', '', d));\n"
    "  domains[d].forEach(function (n) { members.appendChild(drawNode(n)); });\n"
    "  box.appendChild(members);\n"
    "  nodes.appendChild(box);\n"
    "});\n"
    "var legend = document.getElementById('legend');\n"
    "Object.keys(gangsSeen).sort().forEach(function (g) {\n"
    "  var item = el('span');\n"
    "  var sw = item.appendChild(el('span', 'swatch'));\n"
    "  sw.style.background = gangColor(g);\n"
    "  sw.style.boxShadow = 'inset 4px 0 ' + queueColor(gangsSeen[g]);\n"
    "  item.appendChild(document.createTextNode(g + ' (' + gangsSeen[g] + ')'));\n"
    "  legend.appendChild(item);\n"
    "});\n"
    "var pending = document.getElementById('pending');\n"
    "if (data.pending.length === 0) {\n"
    "  pending.appendChild(el('p', 'muted', 'none: every pod was placed'));\n"
    "} else {\n"
    "  var t = el('table'), head = t.appendChild(el('tr'));\n"
    "  ['gang', 'queue', 'pods', 'why it waits'].forEach(function (h) { "
    "head.appendChild(el('th', '', h)); });\n"
    "  data.pending.forEach(function (g) {\n"
    "    var tr = t.appendChild(el('tr'));\n"
    "    tr.setAttribute('data-pending-gang', g.gang);\n"
    "    tr.appendChild(el('td', '', g.gang));\n"
    "    tr.appendChild(el('td', '', g.queue));\n"
    "    tr.appendChild(el('td', '', String(g.pods)));\n"
    "    var why = tr.appendChild(el('td', 'reason', g.reason));\n"
    "    why.setAttribute('data-reason', g.reason);\n"
    "  });\n"
    "  pending.appendChild(t);\n"
    "}\n"
    "function mark(bar, cls, v, scale, title) {\n"
    "  if (v < 0) return;\n"
    "  var m = bar.appendChild(el('div', 'mark ' + cls));\n"
    "  m.style.left = Math.min(100, 100 * v / scale) + '%';\n"
    "  m.title = title;\n"
    "}\n"
    "var queues = document.getElementById('queues'), qt = el('table'), qh = "
    "qt.appendChild(el('tr'));\n"
    "['queue', 'GPUs', 'allocated', 'quota', 'fair share', 'limit', 'pending gangs', 'cpu', "
    "'memory'].forEach(function (h) { qh.appendChild(el('th', '', h)); });\n"
    "data.queues.forEach(function (q) {\n"
    "  var g = q.gpu, scale = Math.max(devices * 1000, g.allocated, g.quota, g.limit, "
    "g.fairShare, 1);\n"
    "  var tr = qt.appendChild(el('tr')), depth = 0;\n"
    "  for (var p = q.parent; p && depth < 64; depth++) {\n"
    "    var up = data.queues[queueAt[p]];\n"
    "    p = up ? up.parent : null;\n"
    "  }\n"
    "  var name = tr.appendChild(el('td', '', '\\u00a0'.repeat(depth * 3) + q.name + "
    "(q.implicit ? ' (default)' : '')));\n"
    "  name.style.borderLeft = '6px solid ' + queueColor(q.name);\n"
    "  var bar = el('div', 'bar'), fill = bar.appendChild(el('div', 'fill'));\n"
    "  bar.setAttribute('data-queue-bar', q.name);\n"
    "  bar.setAttribute('data-allocated-milli', String(g.allocated));\n"
    "  fill.style.width = Math.min(100, 100 * g.allocated / scale) + '%';\n"
    "  fill.style.background = queueColor(q.name);\n"
    "  mark(bar, 'quota', g.quota, scale, 'quota ' + g.quotaText);\n"
    "  mark(bar, 'fair', g.fairShare, scale, 'fair share ' + g.fairShareText);\n"
    "  mark(bar, 'limit', g.limit, scale, 'limit ' + g.limitText);\n"
    "  tr.appendChild(el('td')).appendChild(bar);\n"
    "  [g.allocatedText, g.quotaText, g.fairShareText, g.limitText, String(q.pendingGangs),\n"
    "   q.cpu.allocatedText, q.memory.allocatedText].forEach(function (v) { "
    "tr.appendChild(el('td', '', v)); });\n"
    "});\n"
    "queues.appendChild(qt);\n"
    "document.getElementById('files').textContent = data.files.join('  ');\n"
    "var summary = document.getElementById('summary');\n"
    "summary.textContent = data.podsPlaced + ' pods placed, ' + data.podsPending + ' pending; ' +\n"
    "  data.pending.length + ' gang' + (data.pending.length === 1 ? '' : 's') + ' waiting; ' +\n"
    "  used + ' of ' + devices + ' GPUs in use.';\n"
    "summary.setAttribute('data-gpu-cells', String(devices));\n"
    "summary.setAttribute('data-gpus-used', String(used));\n"
    "document.body.setAttribute('data-rendered', 'true');\n"
    "})();\n";

/* JSON inside <script>: no '<' may close the element, so '<', '>' and '&' go as \uXXXX. */
static void put_script_json(const char *json, FILE *out)
{
    for (const char *p = json; *p; p++) {
        if (*p == '<')
            fputs("\\u003c", out);
        else if (*p == '>')
            fputs("\\u003e", out);
        else if (*p == '&')
            fputs("\\u0026", out);
        else
            fputc(*p, out);
    }
}

int sim_report_html(struct sim_run *r, FILE *out)
{
    cJSON *data = run_json(r);
    char *json = data != NULL ? ext_json_print(data, false) : NULL;

    cJSON_Delete(data);
    if (json == NULL)
        return -1;
    fputs(page_head, out);
    fputs(page_body, out);
    fputs("<script type=\"application/json\" id=\"muster-data\">", out);
    put_script_json(json, out);
    fputs("</script>\n<script>\n", out);
    fputs(page_script, out);
    fputs("</script>\n</body>\n</html>\n", out);
    free(json);
    return 0;
}
