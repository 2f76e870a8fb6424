/*
 * metrics.h - the server's Prometheus metrics: process-wide counters updated lock-free
 * (C11 atomics) on the request path, rendered as text exposition format for GET /metrics.
 *
 * Must never: take a lock or allocate on the request path (except the first time a new rule
 * or reason name is seen), or let label cardinality grow without bound: rule and reason
 * label sets are capped and the overflow is counted under "_other".
 */
#ifndef GPA_METRICS_H
#define GPA_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "gpu_admission/review.h"

/* At most this many distinct rule (and, separately, reason) label values. */
#define GPA_METRICS_LABEL_CAP 256

/* One answered /mutate or /validate request: gpu_admission_requests_total and the duration
 * histogram. operation/result may be NULL (counted as "unknown"/"error"). */
void gpa_metrics_request(gpa_hook hook, const char *operation, const char *result, double seconds);
void gpa_metrics_rule_match(const char *rule);
void gpa_metrics_denial(const char *reason);
void gpa_metrics_http_error(int code);
void gpa_metrics_inflight_add(int delta);
long gpa_metrics_inflight(void);

void gpa_metrics_policy_reload(bool ok);
void gpa_metrics_set_policy_revision(const char *revision);
void gpa_metrics_cert_reload(bool ok);
void gpa_metrics_set_cert_expiry(time_t not_after);

/* The whole exposition text (malloc'd, NUL-terminated); NULL when out of memory. */
char *gpa_metrics_render(size_t *len_out);

#endif
