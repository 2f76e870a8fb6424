/*
 * k8s_names.h - Kubernetes name grammars the policy uses (apimachinery validation):
 * qualified names (label/annotation/taint keys), label values, DNS-1123 labels/subdomains.
 * Private to src/core. Each returns NULL when valid, else a static reason for messages.
 */
#ifndef GPA_K8S_NAMES_H
#define GPA_K8S_NAMES_H

#include <stdbool.h>

/* [prefix/]name: prefix a DNS-1123 subdomain (<= 253), name <= 63 chars of [A-Za-z0-9-_.]
 * starting and ending alphanumeric. */
const char *gpa_k8s_qualified_name(const char *s);
/* Empty, or <= 63 chars of [A-Za-z0-9-_.] starting and ending alphanumeric. */
const char *gpa_k8s_label_value(const char *s);
/* <= 63 chars of [a-z0-9-], starting and ending alphanumeric. */
const char *gpa_k8s_dns_label(const char *s);
/* <= 253 chars: dot-separated DNS-1123 labels. */
const char *gpa_k8s_dns_subdomain(const char *s);

#endif
