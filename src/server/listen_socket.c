/*
 * listen_socket.c - parse an address and open a listening TCP socket (see listen_socket.h).
 *
 * Must never: use SO_REUSEPORT (two servers silently sharing a port would hide a mistake).
 */
#include "listen_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int try_bind(const struct sockaddr *sa, socklen_t len, int family, bool dual, int *out_fd,
                    int *out_errno)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *out_errno = errno;
        return -1;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* Accepted sockets inherit TCP_NODELAY (Linux): without it, Nagle holds GnuTLS's second
     * TLS 1.3 handshake flight until the client ACKs the first, and a client that delays its
     * ACKs made every new connection wait ~40 ms. Answers are still one segment each: the
     * webhook corks them into one record (tls_cork.h), libmicrohttpd uses TCP_CORK/MSG_MORE. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual ? &zero : &one, sizeof one);
    if (bind(fd, sa, len) < 0 || listen(fd, 1024) < 0) {
        *out_errno = errno;
        close(fd);
        return -1;
    }
    *out_fd = fd;
    return 0;
}

int gpa_listen_socket(int *fd, unsigned *port, const char *addr, gpa_error *err)
{
    char host[256], serv[32];
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return gpa_fail(err, GPA_EINVAL, "listen address '%s' needs a port (e.g. :8443)", addr);
    size_t hlen = (size_t)(colon - addr);
    const char *h = addr;
    if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= sizeof host || strlen(colon + 1) >= sizeof serv || !colon[1])
        return gpa_fail(err, GPA_EINVAL, "listen address '%s' is not HOST:PORT", addr);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    strcpy(serv, colon + 1);
    char *end;
    long p = strtol(serv, &end, 10);
    if (*end || p < 0 || p > 65535)
        return gpa_fail(err, GPA_EINVAL, "listen address '%s': port must be 0..65535", addr);

    int e = 0;
    if (!host[0]) {
        /* Every address: IPv6 dual-stack first, plain IPv4 where IPv6 is off. */
        struct sockaddr_in6 s6 = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)p),
                                  .sin6_addr = IN6ADDR_ANY_INIT};
        struct sockaddr_in s4 = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)p),
                                 .sin_addr.s_addr = htonl(INADDR_ANY)};
        if (try_bind((struct sockaddr *)&s6, sizeof s6, AF_INET6, true, fd, &e) < 0 &&
            try_bind((struct sockaddr *)&s4, sizeof s4, AF_INET, false, fd, &e) < 0)
            return gpa_fail(err, GPA_EIO, "cannot listen on %s: %s", addr, strerror(e));
    } else {
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        struct addrinfo *res = NULL;
        int rc = getaddrinfo(host, serv, &hints, &res);
        if (rc) return gpa_fail(err, GPA_EINVAL, "listen address '%s': %s", addr, gai_strerror(rc));
        int ok = -1;
        for (struct addrinfo *ai = res; ai && ok < 0; ai = ai->ai_next)
            ok = try_bind(ai->ai_addr, ai->ai_addrlen, ai->ai_family, false, fd, &e);
        freeaddrinfo(res);
        if (ok < 0) return gpa_fail(err, GPA_EIO, "cannot listen on %s: %s", addr, strerror(e));
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(*fd, (struct sockaddr *)&ss, &sl) == 0)
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    else
        *port = (unsigned)p;
    return GPA_OK;
}
