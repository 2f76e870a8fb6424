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

/* The webhook listener's libmicrohttpd settings; test/bench/bench_mhd_floor.c starts its
 * constant-answer reference with the same ones. */

/* TLS 1.2 minimum; no static-RSA key exchange, so the private key is only ever used inside
 * the handshake flight that picked it (see tls_store.h on retiring replaced pairs). X25519
 * first: the key share Go (the API server) and OpenSSL clients send, so no handshake needs a
 * HelloRetryRequest round trip (measured: the cipher suite itself makes no difference, ~3.0M
 * instructions per full handshake with either AES-GCM suite). AEAD suites only, in the
 * server's order: Go lists AES-128-GCM first, OpenSSL clients AES-256-GCM. */
#define GPA_TLS_PRIORITIES                                                                         \
    "NORMAL:%SERVER_PRECEDENCE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-RSA:-GROUP-ALL:+GROUP-X25519:" \
    "+GROUP-SECP256R1:+GROUP-SECP384R1:-CIPHER-ALL:+AES-128-GCM:+CHACHA20-POLY1305:+AES-256-GCM"

/* 16 KiB per connection (libmicrohttpd's default is 32): it still takes request headers of
 * ~15 KiB; libmicrohttpd zeroes the pool after every request, so this halves that work, and
 * an idle connection holds half the memory. */
#define GPA_CONNECTION_MEMORY 16384

/* poll(), not epoll: libmicrohttpd 0.9.75's epoll loop busy-waits (epoll_wait with a zero
 * timeout + recv EAGAIN, hundreds of times) while a TLS handshake waits for the client's
 * next flight, which made one full handshake cost 2-5 ms of server CPU instead of ~0.7 ms
 * (strace + /proc CPU, docs/performance.md). Request handling costs the same in both modes;
 * each pool thread polls only its own connections. */
#define GPA_WEBHOOK_DAEMON_FLAGS                                                                   \
    (MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_TLS | MHD_USE_ITC | MHD_USE_ERROR_LOG)

/* MHD_AccessHandlerCallback; cls is the gpa_http_state. */
enum MHD_Result gpa_webhook_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **req_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: frees the per-request state. */
void gpa_webhook_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                           enum MHD_RequestTerminationCode toe);
/* MHD_OPTION_NOTIFY_CONNECTION: per-connection state (client-cert verdict, open count, the
 * connection guard's record). */
void gpa_webhook_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe);
/* MHD_OPTION_URI_LOG_CALLBACK: a request line arrived, so the connection is mid-request
 * (never evicted) from here on; returns NULL. */
void *gpa_webhook_uri_log(void *cls, const char *uri, struct MHD_Connection *c);

#endif
