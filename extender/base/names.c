/*
 * names.c - names as Kubernetes validates them (k8s.io/apimachinery
 * pkg/util/validation): what an object may be called, what a label value may
 * say. Anything else in a name (a '/', a NUL, a byte past ASCII) is refused
 * before it can become a key, a path or a line of JSON.
 */
#include <stdio.h>
#include <string.h>

#include "base.h"

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
    return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? of n bytes. */
static bool label_ok(const char *s, size_t n)
{
    if (n == 0 || n > EXT_DNS_LABEL_MAX || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool subdomain_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > EXT_DNS_SUBDOMAIN_MAX)
        return false;
    for (const char *dot; (dot = strchr(s, '.')) != NULL; s = dot + 1)
        if (!label_ok(s, (size_t)(dot - s)))
            return false;
    return label_ok(s, strlen(s));
}

/* (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?, at most 63. */
static bool label_value_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0)
        return true;
    if (n > EXT_DNS_LABEL_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

static const struct {
    bool (*ok)(const char *s);
    const char *rule;
} name_rules[] = {
    [EXT_NAME_SUBDOMAIN] = {subdomain_ok,
                            "is not a DNS-1123 subdomain (lowercase letters, digits, '-' and "
                            "'.', starting and ending with a letter or digit, at most 253)"},
    [EXT_NAME_LABEL] = {NULL, "is not a DNS-1123 label (lowercase letters, digits and '-', "
                              "starting and ending with a letter or digit, at most 63)"},
    [EXT_NAME_LABEL_VALUE] = {label_value_ok,
                              "is not a label value (letters, digits, '-', '_' and '.', starting "
                              "and ending with a letter or digit, at most 63)"},
};

bool ext_name_valid(const char *name, enum ext_name_kind kind)
{
    if (name == NULL)
        return false;
    if (kind == EXT_NAME_LABEL)
        return label_ok(name, strlen(name));
    return name_rules[kind].ok(name);
}

int ext_name_check(const char *name, enum ext_name_kind kind, const char *what, char *err,
                   size_t errlen)
{
    if (ext_name_valid(name, kind))
        return EXT_OK;
    return ext_errf(err, errlen, EXT_EINVAL, "%s \"%.80s%s\" %s", what, name ? name : "",
                    name && strlen(name) > 80 ? "..." : "", name_rules[kind].rule);
}
