/*
 * k8s_names.c - Kubernetes name grammars (k8s.io/apimachinery/pkg/util/validation), so the
 * loader refuses a policy whose labels or names the API server would reject in a patch.
 * Pure functions over strings; never allocate.
 */
#include <string.h>

#include "k8s/k8s_names.h"

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* the "name" part of a qualified name and a non-empty label value share this grammar */
static const char *name_part(const char *s, size_t n, const char *what_empty)
{
    if (n == 0) return what_empty;
    if (n > 63) return "must be at most 63 characters";
    if (!alnum(s[0]) || !alnum(s[n - 1])) return "must start and end with a letter or digit";
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return "may contain only letters, digits, '-', '_' and '.'";
    return NULL;
}

static const char *subdomain(const char *s, size_t n)
{
    if (n == 0) return "must not be empty";
    if (n > 253) return "must be at most 253 characters";
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            size_t len = i - start;
            if (len == 0) return "must not have empty dot-separated parts";
            if (!lower_alnum(s[start]) || !lower_alnum(s[i - 1]))
                return "parts must start and end with a lowercase letter or digit";
            start = i + 1;
            continue;
        }
        if (!lower_alnum(s[i]) && s[i] != '-')
            return "may contain only lowercase letters, digits, '-' and '.'";
    }
    return NULL;
}

const char *gpa_k8s_qualified_name(const char *s)
{
    if (!s || !*s) return "must not be empty";
    const char *slash = strchr(s, '/');
    if (slash) {
        if (strchr(slash + 1, '/')) return "may contain at most one '/'";
        const char *r = subdomain(s, (size_t)(slash - s));
        if (r)
            return slash == s ? "prefix before '/' must not be empty"
                              : "prefix before '/' must be a DNS subdomain (lowercase letters, "
                                "digits, '-', '.')";
        return name_part(slash + 1, strlen(slash + 1), "name after '/' must not be empty");
    }
    return name_part(s, strlen(s), "must not be empty");
}

const char *gpa_k8s_label_value(const char *s)
{
    if (!s || !*s) return NULL;
    return name_part(s, strlen(s), NULL);
}

const char *gpa_k8s_dns_label(const char *s)
{
    if (!s || !*s) return "must not be empty";
    size_t n = strlen(s);
    if (n > 63) return "must be at most 63 characters";
    if (!lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return "must start and end with a lowercase letter or digit";
    for (size_t i = 0; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return "may contain only lowercase letters, digits and '-'";
    return NULL;
}

const char *gpa_k8s_dns_subdomain(const char *s)
{
    return subdomain(s ? s : "", s ? strlen(s) : 0);
}
