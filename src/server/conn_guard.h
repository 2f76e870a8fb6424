/*
 * conn_guard.h - keeps the webhook port open to clients that do work: connection limits
 * with eviction, header and body deadlines, and lingering close after early error answers.
 *
 * libmicrohttpd 0.9.75 refuses a new connection at its limits no matter how idle the open
 * ones are, and its only deadline is an inactivity timeout that a 1 byte/s sender resets
 * forever. So the webhook daemon runs with libmicrohttpd's limits set above ours and this
 * module keeps its own books: every connection's phase (new, between requests, receiving
 * headers, receiving a body, being answered) and since when. At accept, a connection over
 * --max-connections-per-ip or --max-connections takes the place of the one idle longest (of
 * that address first, for the per-address limit); it is refused only when every candidate
 * is mid-request. A thread checks the deadlines every second and closes the connections
 * that miss them; the same thread reads and discards what a client still sends after an
 * early error answer, so the client can read that answer instead of a reset.
 *
 * Connections are closed from outside their worker with shutdown(2): the worker's poll sees
 * the end of stream and closes the connection itself. The registry lock is held across
 * shutdown(2), and a connection leaves the registry (gpa_conn_guard_closed) before
 * libmicrohttpd closes its descriptor, so a descriptor number is never shut down after it
 * was reused.
 *
 * Must never: close a connection that is mid-request for a limit (only deadlines close
 * those), take a lock per request (phase changes are atomics), or hold more than
 * GPA_LINGER_MAX descriptors for lingering.
 */
#ifndef GPA_CONN_GUARD_H
#define GPA_CONN_GUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "gpu_admission/common.h"

/* Lingering close: after an early error answer the rest of the request is read and dropped
 * until the client closes, GPA_LINGER_MAX_BYTES were dropped, nothing arrived for
 * GPA_LINGER_QUIET_MS, or GPA_LINGER_MAX_MS passed; at most GPA_LINGER_MAX connections
 * linger at once (more are closed at once). */
#define GPA_LINGER_MAX_BYTES (16u << 20)
#define GPA_LINGER_QUIET_MS  2000
#define GPA_LINGER_MAX_MS    10000
#define GPA_LINGER_MAX       64

/* The body rate is averaged over windows of this length. */
#define GPA_BODY_RATE_WINDOW_MS 10000

typedef struct gpa_conn_guard gpa_conn_guard;
typedef struct gpa_conn gpa_conn;

typedef struct gpa_conn_guard_config {
    unsigned max_connections;
    unsigned max_connections_per_ip; /* 0: no per-address limit */
    unsigned header_timeout_ms;      /* 0: no header deadline */
    unsigned min_body_rate;          /* bytes/s; 0: no body-rate deadline */
} gpa_conn_guard_config;

/* Starts the deadline/lingering thread. */
int gpa_conn_guard_new(gpa_conn_guard **out, const gpa_conn_guard_config *cfg, gpa_error *err);
/* Stops the thread and closes lingering descriptors; call after the daemon stopped. */
void gpa_conn_guard_free(gpa_conn_guard *g);

/* MHD_AcceptPolicyCallback (cls = the guard): makes room by eviction, or refuses. */
enum MHD_Result gpa_conn_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);

/* From MHD_CONNECTION_NOTIFY_STARTED / _CLOSED. opened returns NULL when out of memory (the
 * connection then goes unguarded, still bounded by libmicrohttpd's own limit). */
gpa_conn *gpa_conn_guard_opened(gpa_conn_guard *g, struct MHD_Connection *c);
void gpa_conn_guard_closed(gpa_conn_guard *g, gpa_conn *conn);

/* Phase changes, from the connection's worker; conn may be NULL (unguarded). */
void gpa_conn_request_line(gpa_conn *conn); /* the request line arrived */
void gpa_conn_headers_done(gpa_conn *conn); /* first access-handler call */
void gpa_conn_body_bytes(gpa_conn *conn, size_t n);
void gpa_conn_answering(gpa_conn *conn); /* whole request read; answer being queued */
/* An answer queued before the body was read (413, 415, ...): libmicrohttpd will close the
 * connection after sending it; body_pending makes the close a lingering one. */
void gpa_conn_answered_early(gpa_conn *conn, bool body_pending);
/* The request ended (MHD_OPTION_NOTIFY_COMPLETED); ok = completed normally. */
void gpa_conn_request_done(gpa_conn *conn, bool ok);

/* Connections the guard counts now (tests, drain logging). */
unsigned gpa_conn_guard_count(gpa_conn_guard *g);

#endif
