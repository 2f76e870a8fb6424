/*
 * tls_cork.h - one TLS record (one send) per webhook answer instead of libmicrohttpd's two.
 *
 * libmicrohttpd 0.9.75 hands the response header and body to GnuTLS in two
 * gnutls_record_send calls: two records, two encryptions, two sendmsg calls, and the client
 * reads two records. Corking the session while the answer is queued makes GnuTLS collect
 * both; the request-completed callback uncorks, which seals and sends them as one record.
 *
 * Must never: leave an answer corked (every cork is paired with the completion callback,
 * which always uncorks), leave a flushed record to a kernel timer (libmicrohttpd may have left
 * TCP_CORK on the socket, so every flush is pushed with TCP_NODELAY), or block a worker
 * thread for long on a client that stops reading (only small answers on a connection with an
 * empty send queue are corked, so the flush fits the socket buffer; if it still cannot be
 * sent within a short bound the connection is shut down rather than waited on).
 */
#ifndef GPA_TLS_CORK_H
#define GPA_TLS_CORK_H

#include <microhttpd.h>
#include <stddef.h>

/* Largest answer body that is corked; larger ones go out as libmicrohttpd sends them. */
#define GPA_TLS_CORK_MAX_BODY 3584
/* How long an uncork may wait for socket space before the connection is shut down. */
#define GPA_TLS_CORK_FLUSH_MS 200

/* Before MHD_queue_response: cork a TLS connection's session when the answer qualifies. */
void gpa_tls_cork(struct MHD_Connection *c, size_t body_len);
/* From the request-completed callback (and when queueing failed): send what is corked. */
void gpa_tls_uncork(struct MHD_Connection *c);

#endif
