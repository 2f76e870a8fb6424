/*
 * tls_cork.c - one TLS record per webhook answer (see tls_cork.h for why and the limits).
 */
#include "tls_cork.h"

#include <gnutls/gnutls.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

static gnutls_session_t session_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ti =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return ti ? (gnutls_session_t)ti->tls_session : NULL;
}

static int fd_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return fi ? fi->connect_fd : -1;
}

void gpa_tls_cork(struct MHD_Connection *c, size_t body_len)
{
    if (body_len > GPA_TLS_CORK_MAX_BODY) return;
    gnutls_session_t s = session_of(c);
    int fd = s ? fd_of(c) : -1;
    if (fd < 0) return;
    /* Unsent or unacknowledged bytes mean a client that is not keeping up (or pipelining):
     * the flush might not fit, so leave that answer to libmicrohttpd's own sending. */
    int outq = -1;
    if (ioctl(fd, SIOCOUTQ, &outq) != 0 || outq != 0) return;
    gnutls_record_cork(s);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* libmicrohttpd 0.9.75 (Linux, TLS) sets TCP_CORK before the header of the first answer whose
 * header and body fit one segment, and never takes it off again: from then on it ends every
 * answer by setting TCP_NODELAY, which pushes whatever is queued even under TCP_CORK (tcp(7)).
 * With the session corked, that push comes before the record leaves GnuTLS and pushes
 * nothing; the record flushed here then waits for the 200 ms TCP_CORK ceiling unless it
 * fills a segment. Whether TCP_CORK is on depends on the connection's earlier answers, so
 * every flush is pushed, whatever its size: one setsockopt per corked answer. */
static void push(int fd)
{
    int one = 1;
    if (fd >= 0) (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void gpa_tls_uncork(struct MHD_Connection *c)
{
    gnutls_session_t s = session_of(c);
    if (!s) return;
    size_t pending = gnutls_record_check_corked(s);
    if (pending == 0) {
        gnutls_record_uncork(s, 0); /* nothing pending: only leaves corked mode */
        return;
    }
    int fd = fd_of(c);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int r = gnutls_record_uncork(s, 0);
        if (r >= 0) {
            push(fd);
            return;
        }
        if (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED) break;
        long left = GPA_TLS_CORK_FLUSH_MS - ms_since(&t0);
        if (left <= 0 || fd < 0) break;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        (void)poll(&p, 1, (int)left);
    }
    /* The answer could not be delivered: a client must never mistake a cut answer for a
     * whole one, so the connection goes; libmicrohttpd notices on its next read. */
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
}
