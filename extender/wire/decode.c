/* decode.c - ExtenderArgs, ExtenderBindingArgs and ExtenderPreemptionArgs into C. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_int.h"

static int get_pod(const cJSON *root, const cJSON **pod, char *err, size_t errlen)
{
    const cJSON *p = wire_get_set(root, "Pod");

    if (p == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "missing Pod");
    if (!cJSON_IsObject(p))
        return ext_errf(err, errlen, EXT_EINVAL, "Pod is not an object");
    *pod = p;
    return EXT_OK;
}

/* metadata.<key> of a Kubernetes object as a string, or NULL. */
static const char *meta_string(const cJSON *obj, const char *key)
{
    const cJSON *v = ext_json_get(ext_json_get(obj, "metadata"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int decode_node_names(const cJSON *list, const struct ext_proto_limits *lim,
                             struct ext_filter_args *a, char *err, size_t errlen)
{
    const cJSON *item;
    size_t i = 0;

    if (!cJSON_IsArray(list))
        return ext_errf(err, errlen, EXT_EINVAL, "NodeNames is not an array");
    a->n = wire_count_children(list);
    if (a->n > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu node names, over the cap of %zu", a->n,
                        lim->max_names);
    a->names = ext_arena_calloc(a->mem, a->n, sizeof(*a->names));
    if (a->names == NULL && a->n > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (item = list->child; item != NULL; item = item->next, i++) {
        if (!cJSON_IsString(item))
            return ext_errf(err, errlen, EXT_EINVAL, "NodeNames[%zu] is not a string", i);
        a->names[i] = item->valuestring;
    }
    a->form = EXT_NODES_BY_NAME;
    return EXT_OK;
}

static int decode_node_list(const cJSON *list, const struct ext_proto_limits *lim,
                            struct ext_filter_args *a, char *err, size_t errlen)
{
    const cJSON *items, *item;
    size_t i = 0;

    if (!cJSON_IsObject(list))
        return ext_errf(err, errlen, EXT_EINVAL, "Nodes is not an object (a NodeList)");
    a->form = EXT_NODES_FULL;
    items = wire_get_set(list, "items");
    if (items == NULL)
        return EXT_OK;
    if (!cJSON_IsArray(items))
        return ext_errf(err, errlen, EXT_EINVAL, "Nodes.items is not an array");
    a->n = wire_count_children(items);
    if (a->n > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu nodes, over the cap of %zu", a->n,
                        lim->max_names);
    a->names = ext_arena_calloc(a->mem, a->n, sizeof(*a->names));
    a->nodes = ext_arena_calloc(a->mem, a->n, sizeof(*a->nodes));
    if ((a->names == NULL || a->nodes == NULL) && a->n > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (item = items->child; item != NULL; item = item->next, i++) {
        const char *name = meta_string(item, "name");

        if (!cJSON_IsObject(item) || name == NULL)
            return ext_errf(err, errlen, EXT_EINVAL, "Nodes.items[%zu] has no metadata.name", i);
        a->names[i] = name;
        a->nodes[i] = item;
    }
    return EXT_OK;
}

static int decode_candidates(const cJSON *root, const struct ext_proto_limits *lim,
                             struct ext_filter_args *a, char *err, size_t errlen)
{
    const cJSON *names = wire_get_set(root, "NodeNames");
    const cJSON *nodes = wire_get_set(root, "Nodes");

    if (names != NULL)
        return decode_node_names(names, lim, a, err, errlen);
    if (nodes != NULL)
        return decode_node_list(nodes, lim, a, err, errlen);
    return ext_errf(err, errlen, EXT_EINVAL, "neither NodeNames nor Nodes is set");
}

static int filter_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                              bool fast, struct ext_filter_args *out, char *err, size_t errlen)
{
    struct ext_filter_args a = {0};
    enum wire_fast_names got = WIRE_FAST_NO;
    size_t vs, ve, count = 0;
    char *copy = NULL;
    int rc;

    rc = ext_json_precheck(body, len, lim, err, errlen);
    if (rc != EXT_OK)
        return rc;
    a.mem = ext_arena_new();
    if (a.mem == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    if (fast && wire_find_names_value(body, len, &vs, &ve))
        got = wire_fast_names(body, vs, ve, lim, &a, &count);
    if (got != WIRE_FAST_NO) {
        copy = malloc(len);
        if (copy == NULL) {
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
            goto out_cleanup;
        }
        memcpy(copy, body, len);
        memcpy(copy + vs, "null", 4);
        memset(copy + vs + 4, ' ', ve - vs - 4);
    }
    rc = wire_parse_checked(copy != NULL ? copy : body, len, "ExtenderArgs", &a.doc, err, errlen);
    free(copy);
    if (rc != EXT_OK)
        goto out_cleanup;
    rc = get_pod(a.doc, &a.pod, err, errlen);
    if (rc != EXT_OK)
        goto out_cleanup;
    if (got == WIRE_FAST_TOO_MANY) {
        rc = ext_errf(err, errlen, EXT_ETOOBIG, "%zu node names, over the cap of %zu", count,
                      lim->max_names);
        goto out_cleanup;
    }
    if (got == WIRE_FAST_OK)
        a.form = EXT_NODES_BY_NAME;
    else
        rc = decode_candidates(a.doc, lim, &a, err, errlen);
    if (rc != EXT_OK)
        goto out_cleanup;
    *out = a;
    return EXT_OK;

out_cleanup:
    ext_filter_args_cleanup(&a);
    return rc;
}

int ext_filter_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                           struct ext_filter_args *out, char *err, size_t errlen)
{
    return filter_args_decode(body, len, lim, true, out, err, errlen);
}

int ext_filter_args_decode_reference(const char *body, size_t len,
                                     const struct ext_proto_limits *lim,
                                     struct ext_filter_args *out, char *err, size_t errlen)
{
    return filter_args_decode(body, len, lim, false, out, err, errlen);
}

void ext_filter_args_cleanup(struct ext_filter_args *a)
{
    cJSON_Delete(a->doc);
    ext_arena_free(a->mem);
    memset(a, 0, sizeof(*a));
}

/* A required, non-empty string member. */
static int get_string(const cJSON *root, const char *key, bool required, const char **out,
                      char *err, size_t errlen)
{
    const cJSON *v = wire_get_set(root, key);

    if (v == NULL && !required) {
        *out = "";
        return EXT_OK;
    }
    if (v == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "missing %s", key);
    if (!cJSON_IsString(v))
        return ext_errf(err, errlen, EXT_EINVAL, "%s is not a string", key);
    if (required && v->valuestring[0] == '\0')
        return ext_errf(err, errlen, EXT_EINVAL, "%s is empty", key);
    *out = v->valuestring;
    return EXT_OK;
}

int ext_bind_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                         struct ext_bind_args *out, char *err, size_t errlen)
{
    static const struct {
        const char *key;
        bool required;
        size_t offset;
        enum ext_name_kind kind; /* names are checked as Kubernetes checks them */
    } fields[] = {
        {"PodName", true, offsetof(struct ext_bind_args, pod_name), EXT_NAME_SUBDOMAIN},
        {"PodNamespace", true, offsetof(struct ext_bind_args, pod_namespace), EXT_NAME_LABEL},
        {"PodUID", false, offsetof(struct ext_bind_args, pod_uid), EXT_NAME_SUBDOMAIN},
        {"Node", true, offsetof(struct ext_bind_args, node), EXT_NAME_SUBDOMAIN},
    };
    struct ext_bind_args a = {0};
    size_t i;
    int rc;

    rc = wire_parse_object(body, len, lim, "ExtenderBindingArgs", &a.doc, err, errlen);
    if (rc != EXT_OK)
        return rc;
    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char **slot = (const char **)((char *)&a + fields[i].offset);

        rc = get_string(a.doc, fields[i].key, fields[i].required, slot, err, errlen);
        if (rc == EXT_OK && fields[i].required)
            rc = ext_name_check(*slot, fields[i].kind, fields[i].key, err, errlen);
        if (rc != EXT_OK) {
            ext_bind_args_cleanup(&a);
            return rc;
        }
    }
    *out = a;
    return EXT_OK;
}

void ext_bind_args_cleanup(struct ext_bind_args *a)
{
    cJSON_Delete(a->doc);
    memset(a, 0, sizeof(*a));
}

/* One node's Victims / MetaVictims: {"Pods":[...],"NumPDBViolations":n}. */
static int decode_victims(const cJSON *entry, bool meta, const struct ext_proto_limits *lim,
                          struct ext_arena *mem, struct ext_victims *v, char *err, size_t errlen)
{
    const cJSON *pods, *pdb, *pod;
    size_t i = 0;

    if (!cJSON_IsObject(entry))
        return ext_errf(err, errlen, EXT_EINVAL, "victims of node %s are not an object", v->node);
    pdb = wire_get_set(entry, "NumPDBViolations");
    if (pdb != NULL && !cJSON_IsNumber(pdb))
        return ext_errf(err, errlen, EXT_EINVAL, "NumPDBViolations of node %s is not a number",
                        v->node);
    if (pdb != NULL && !(pdb->valuedouble >= 0 && pdb->valuedouble <= 1e15 &&
                         pdb->valuedouble == (double)(int64_t)pdb->valuedouble))
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NumPDBViolations of node %s is not a whole number from 0 to 1e15",
                        v->node);
    v->num_pdb_violations = pdb != NULL ? (int64_t)pdb->valuedouble : 0;
    pods = wire_get_set(entry, "Pods");
    if (pods == NULL)
        return EXT_OK;
    if (!cJSON_IsArray(pods))
        return ext_errf(err, errlen, EXT_EINVAL, "Pods of node %s is not an array", v->node);
    v->npods = wire_count_children(pods);
    if (v->npods > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu victims on node %s, over the cap of %zu",
                        v->npods, v->node, lim->max_names);
    v->uids = ext_arena_calloc(mem, v->npods, sizeof(*v->uids));
    v->pods = meta ? NULL : ext_arena_calloc(mem, v->npods, sizeof(*v->pods));
    if ((v->uids == NULL || (!meta && v->pods == NULL)) && v->npods > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (pod = pods->child; pod != NULL; pod = pod->next, i++) {
        const cJSON *uid = meta ? wire_get_set(pod, "UID") : NULL;

        if (!cJSON_IsObject(pod))
            return ext_errf(err, errlen, EXT_EINVAL, "victim %zu on node %s is not an object", i,
                            v->node);
        if (meta && !cJSON_IsString(uid))
            return ext_errf(err, errlen, EXT_EINVAL, "victim %zu on node %s has no UID", i,
                            v->node);
        if (meta) {
            v->uids[i] = uid->valuestring;
        } else {
            const char *u = meta_string(pod, "uid");

            v->uids[i] = u != NULL ? u : "";
            v->pods[i] = pod;
        }
    }
    return EXT_OK;
}

static int decode_victim_map(const cJSON *map, const struct ext_proto_limits *lim,
                             struct ext_preempt_args *a, char *err, size_t errlen)
{
    const char *key = a->meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
    const cJSON *entry;
    size_t i = 0;
    int rc;

    if (!cJSON_IsObject(map))
        return ext_errf(err, errlen, EXT_EINVAL, "%s is not an object", key);
    a->n = wire_count_children(map);
    if (a->n > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu nodes in %s, over the cap of %zu", a->n, key,
                        lim->max_names);
    a->nodes = ext_arena_calloc(a->mem, a->n, sizeof(*a->nodes));
    if (a->nodes == NULL && a->n > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (entry = map->child; entry != NULL; entry = entry->next, i++) {
        a->nodes[i].node = entry->string;
        rc = decode_victims(entry, a->meta, lim, a->mem, &a->nodes[i], err, errlen);
        if (rc != EXT_OK)
            return rc;
    }
    return EXT_OK;
}

int ext_preempt_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                            struct ext_preempt_args *out, char *err, size_t errlen)
{
    struct ext_preempt_args a = {0};
    const cJSON *map;
    int rc;

    rc = wire_parse_object(body, len, lim, "ExtenderPreemptionArgs", &a.doc, err, errlen);
    if (rc != EXT_OK)
        return rc;
    a.mem = ext_arena_new();
    if (a.mem == NULL) {
        rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
        goto out_cleanup;
    }
    rc = get_pod(a.doc, &a.pod, err, errlen);
    if (rc != EXT_OK)
        goto out_cleanup;
    map = wire_get_set(a.doc, "NodeNameToMetaVictims");
    a.meta = map != NULL;
    if (map == NULL)
        map = wire_get_set(a.doc, "NodeNameToVictims");
    if (map != NULL) {
        rc = decode_victim_map(map, lim, &a, err, errlen);
        if (rc != EXT_OK)
            goto out_cleanup;
    }
    *out = a;
    return EXT_OK;

out_cleanup:
    ext_preempt_args_cleanup(&a);
    return rc;
}

void ext_preempt_args_cleanup(struct ext_preempt_args *a)
{
    cJSON_Delete(a->doc);
    ext_arena_free(a->mem);
    memset(a, 0, sizeof(*a));
}
