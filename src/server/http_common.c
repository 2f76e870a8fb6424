/*
 * http_common.c - response helpers and the health/readiness probes (see http_common.h).
 *
 * Must never: echo request bytes into a response unescaped.
 */
#include "http_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "policy_store.h"
#include "tls_store.h"

enum MHD_Result gpa_http_respond(struct MHD_Connection *c, const gpa_http_state *st,
                                 unsigned status, const char *content_type, char *body, size_t len,
                                 bool free_body, const char *allow)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, free_body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (free_body) free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (st && atomic_load_explicit(&st->draining, memory_order_relaxed))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    if (status >= 400) gpa_metrics_http_error((int)status);
    return ret;
}

enum MHD_Result gpa_http_status_error(struct MHD_Connection *c, const gpa_http_state *st,
                                      unsigned status, const char *reason, const char *message,
                                      const char *allow)
{
    /* reason and message are our own constant strings: no escaping needed, but keep them
     * free of quotes and backslashes. */
    char *body = NULL;
    int n = asprintf(&body,
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                     "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\",\"code\":%u}",
                     message, reason, status);
    if (n < 0) return MHD_NO;
    return gpa_http_respond(c, st, status, "application/json", body, (size_t)n, true, allow);
}

enum MHD_Result gpa_http_probe(struct MHD_Connection *c, const gpa_http_state *st, const char *url,
                               bool *handled)
{
    *handled = true;
    if (strcmp(url, "/healthz") == 0)
        return gpa_http_respond(c, st, MHD_HTTP_OK, "text/plain", "ok\n", 3, false, NULL);
    if (strcmp(url, "/readyz") == 0) {
        const char *why = NULL;
        if (atomic_load(&st->draining))
            why = "shutting down\n";
        else if (!gpa_policy_store_ready())
            why = "no policy set loaded\n";
        else if (!gpa_tls_store_ready())
            why = "no serving certificate loaded\n";
        if (why)
            return gpa_http_respond(c, st, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", (char *)why,
                                    strlen(why), false, NULL);
        return gpa_http_respond(c, st, MHD_HTTP_OK, "text/plain", "ok\n", 3, false, NULL);
    }
    *handled = false;
    return MHD_YES;
}
