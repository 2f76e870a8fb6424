/*
 * ops_http.c - GET /metrics, /healthz, /readyz on the plain-HTTP listener (see ops_http.h).
 *
 * Must never: read a request body (every request is answered on its headers).
 */
#include "ops_http.h"

#include <string.h>

#include "http_common.h"
#include "metrics.h"

enum MHD_Result gpa_ops_access(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **req_cls)
{
    gpa_http_state *st = cls;
    (void)version, (void)upload_data;
    static char seen;
    if (*req_cls == &seen) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    *req_cls = &seen;
    bool known =
        strcmp(url, "/metrics") == 0 || strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0;
    if (!known)
        return gpa_http_status_error(c, NULL, MHD_HTTP_NOT_FOUND, "NotFound",
                                     "no such path; this port serves /metrics, /healthz and "
                                     "/readyz",
                                     NULL);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return gpa_http_status_error(c, NULL, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
                                     "use GET", "GET, HEAD");
    if (strcmp(url, "/metrics") == 0) {
        size_t len;
        char *text = gpa_metrics_render(&len);
        if (!text) return MHD_NO;
        return gpa_http_respond(c, NULL, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                                text, len, true, NULL);
    }
    bool handled;
    return gpa_http_probe(c, st, url, &handled);
}
