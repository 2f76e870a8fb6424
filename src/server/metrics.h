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
/* The same request under gpu_admission_requests_by_kind_total{webhook,kind,result}: kind is
 * the object's kind ("Pod", "Deployment", ...; NULL counted as "unknown"); at most
 * GPA_METRICS_KIND_CAP distinct kinds, the rest under "_other". */
#define GPA_METRICS_KIND_CAP 64
void gpa_metrics_request_kind(gpa_hook hook, const char *kind, const char *result);
void gpa_metrics_rule_match(const char *rule);
void gpa_metrics_denial(const char *reason);
void gpa_metrics_http_error(int code);
void gpa_metrics_inflight_add(int delta);
long gpa_metrics_inflight(void);

/* Webhook-port connections (conn_guard.c): which limit an eviction or refusal was for, and
 * why the server closed a connection itself. Label values are the enum names' text. */
typedef enum { GPA_CONN_LIMIT_GLOBAL, GPA_CONN_LIMIT_PER_IP, GPA_CONN_LIMIT_N } gpa_conn_limit;
typedef enum {
    GPA_CONN_CLOSE_HEADER_TIMEOUT,
    GPA_CONN_CLOSE_BODY_TOO_SLOW,
    GPA_CONN_CLOSE_LINGERING,
    GPA_CONN_CLOSE_N
} gpa_conn_close;
void gpa_metrics_conn_evicted(gpa_conn_limit limit);
void gpa_metrics_conn_refused(gpa_conn_limit limit);
void gpa_metrics_conn_closed(gpa_conn_close reason);
void gpa_metrics_open_conns_add(int delta);
const char *gpa_metrics_conn_limit_name(gpa_conn_limit limit);
const char *gpa_metrics_conn_close_name(gpa_conn_close reason);

void gpa_metrics_policy_reload(bool ok);
void gpa_metrics_set_policy_revision(const char *revision);
void gpa_metrics_cert_reload(bool ok);
void gpa_metrics_set_cert_expiry(time_t not_after);

/* The whole exposition text (malloc'd, NUL-terminated); NULL when out of memory. */
char *gpa_metrics_render(size_t *len_out);

#endif
