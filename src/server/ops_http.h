/*
 * ops_http.h - the plain-HTTP operations listener: GET /metrics, /healthz, /readyz.
 *
 * Must never: serve admission requests or anything secret (it has no TLS).
 */
#ifndef GPA_OPS_HTTP_H
#define GPA_OPS_HTTP_H

#include <microhttpd.h>

/* MHD_AccessHandlerCallback; cls is the gpa_http_state. */
enum MHD_Result gpa_ops_access(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **req_cls);

#endif
