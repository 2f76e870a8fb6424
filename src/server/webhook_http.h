/*
 * webhook_http.h - the HTTPS listener's request handling: POST /mutate and /validate
 * through the review codec, plus the probes; every other request gets a JSON error.
 *
 * Must never: read more than --max-body bytes of a body, answer without a policy snapshot
 * reference held for the whole request, or let any input crash or stall a worker thread.
 */
#ifndef GPA_WEBHOOK_HTTP_H
#define GPA_WEBHOOK_HTTP_H

#include <microhttpd.h>

#include "http_common.h"

/* MHD_AccessHandlerCallback; cls is the gpa_http_state. */
enum MHD_Result gpa_webhook_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **req_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: frees the per-request state. */
void gpa_webhook_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                           enum MHD_RequestTerminationCode toe);
/* MHD_OPTION_NOTIFY_CONNECTION: per-connection state (client-cert verdict, open count). */
void gpa_webhook_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe);

#endif
