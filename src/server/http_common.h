/*
 * http_common.h - what the two listeners (webhook HTTPS, metrics/probes HTTP) share: the
 * server-wide state their handlers read, and small response helpers.
 *
 * Must never: hold request data; everything here is either immutable after start or atomic.
 */
#ifndef GPA_HTTP_COMMON_H
#define GPA_HTTP_COMMON_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gpa_http_state {
    size_t max_body;
    bool require_client_cert;
    atomic_bool draining;         /* SIGTERM seen: /readyz 503, responses say Connection: close */
    atomic_long open_conns;       /* webhook listener connections, for the drain wait */
    struct gpa_conn_guard *guard; /* webhook listener's limits and deadlines (conn_guard.h) */
    const struct gpa_ns_guard *ns_guard; /* --ignore-label-namespaces (namespace_guard.h) */
} gpa_http_state;

/* Queues a response with a copy-free static or owned body. free_body: body was malloc'd
 * and now belongs to libmicrohttpd. Adds Content-Type and, when draining, Connection:
 * close. Returns MHD_NO only when the response could not be built. */
enum MHD_Result gpa_http_respond(struct MHD_Connection *c, const gpa_http_state *st,
                                 unsigned status, const char *content_type, char *body, size_t len,
                                 bool free_body, const char *allow);

/* A Kubernetes Status object (kind: Status) as the JSON body of an error response. */
enum MHD_Result gpa_http_status_error(struct MHD_Connection *c, const gpa_http_state *st,
                                      unsigned status, const char *reason, const char *message,
                                      const char *allow);

/* /healthz and /readyz, served on both listeners. */
enum MHD_Result gpa_http_probe(struct MHD_Connection *c, const gpa_http_state *st, const char *url,
                               bool *handled);

#endif
