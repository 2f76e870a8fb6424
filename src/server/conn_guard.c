/*
 * conn_guard.c - connection limits with eviction, deadlines, lingering close (see
 * conn_guard.h).
 *
 * One registry (a list under one mutex) of the webhook port's connections. The lock is taken
 * per connection (accept, open, close) and once a second by the deadline thread, never per
 * request: workers publish phase changes through atomics. A scan of the list costs
 * microseconds at the default 1024 connections, cheaper than the handshake it admits.
 *
 * Must never: shut down a descriptor that left the registry (libmicrohttpd may have reused
 * it), or spin: the thread sleeps in poll(2) with a one-second tick while connections are
 * open and without a timeout when there are none.
 */
#include "conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "jsonlog.h"
#include "metrics.h"

/* PH_EVICTED is only ever reached by a compare-and-swap from PH_NEW or PH_IDLE, so a
 * connection whose request line has just arrived (the worker's swap won) is never evicted. */
enum { PH_NEW, PH_IDLE, PH_HEADERS, PH_BODY, PH_ANSWERING, PH_EVICTED };
static const char *const phase_names[] = {"new", "idle", "headers", "body", "answering", "evicted"};

#define TICK_MS 1000

struct gpa_conn {
    gpa_conn *prev, *next; /* registry, under g->mu */
    int fd;
    unsigned char addr[16]; /* IPv4 as IPv4-mapped IPv6, so one comparison fits both */
    atomic_int phase;
    atomic_llong since_ms;    /* when the current phase began: idle since, for eviction */
    atomic_llong hdr_base_ms; /* the header deadline counts from here */
    atomic_ullong body_bytes;
    atomic_uint body_seq;      /* bumped when a body phase starts, so the rate window restarts */
    atomic_bool linger;        /* early answer with the body unread */
    atomic_bool linger_unread; /* ended mid-headers (libmicrohttpd's own 400/431) */
    /* Deadline thread's, under g->mu. */
    unsigned win_seq;
    long long win_start_ms;
    unsigned long long win_bytes;
    bool closing; /* shut down by us: no longer counted against the limits */
};

typedef struct {
    int fd;
    long long start_ms, last_ms;
    size_t dropped;
} lingerer;

struct gpa_conn_guard {
    gpa_conn_guard_config cfg;
    pthread_mutex_t mu;
    gpa_conn *head;
    unsigned live;               /* registered and not closing */
    unsigned registered;         /* including the ones closing */
    int pending[GPA_LINGER_MAX]; /* handed over by gpa_conn_guard_closed */
    unsigned n_pending;
    unsigned n_linger; /* pending + lingering now, bounded by GPA_LINGER_MAX */
    bool stop;
    int wake_fd;
    pthread_t thread;
    /* The thread's own. */
    lingerer active[GPA_LINGER_MAX];
    unsigned n_active;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void addr_key(unsigned char key[16], const struct sockaddr *sa, socklen_t len)
{
    memset(key, 0, 16);
    if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

static void addr_text(char *out, size_t cap, const unsigned char key[16])
{
    static const unsigned char v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(key, v4, 12) == 0)
        inet_ntop(AF_INET, key + 12, out, (socklen_t)cap);
    else
        inet_ntop(AF_INET6, key, out, (socklen_t)cap);
}

static void wake(gpa_conn_guard *g)
{
    uint64_t one = 1;
    ssize_t r = write(g->wake_fd, &one, sizeof one);
    (void)r; /* a full counter already means "wake up" */
}

/* What the log line of one close says, gathered under the lock, written after it. */
typedef struct {
    unsigned char addr[16];
    int phase;
    long long age_ms;
    int why; /* gpa_conn_limit for evictions, gpa_conn_close for deadline closes */
} close_note;

static void log_note(const char *msg, const char *key, const char *why, const close_note *n)
{
    char ip[INET6_ADDRSTRLEN];
    addr_text(ip, sizeof ip, n->addr);
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_DEBUG, msg);
    gpa_log_str(&l, key, why);
    gpa_log_str(&l, "client", ip);
    if (n->phase >= 0) gpa_log_str(&l, "phase", phase_names[n->phase]);
    if (n->age_ms >= 0) gpa_log_int(&l, "phase_ms", n->age_ms);
    gpa_log_end(&l);
}

/* Under g->mu. */
static void shut(gpa_conn_guard *g, gpa_conn *c)
{
    c->closing = true;
    g->live--;
    shutdown(c->fd, SHUT_RDWR);
}

/* Bytes the client sent that no worker has read yet. An idle keep-alive connection with bytes
 * waiting is a request on its way (the API server's next review), not an idle one: evicting it
 * would drop that request, which its client sees as an EOF. */
static bool input_pending(int fd)
{
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

#define EVICT_SKIP_MAX 8

/* The connection idle longest among those (of one address when key is non-NULL) with no
 * request in progress, evicted; false when there is none. Connections that never carried a
 * request go first: a kept-alive connection that has served reviews is the API server's, and
 * while its client is busy elsewhere (a handshake under a flood took 438 ms) it is idle longer
 * than a flood's fresh sockets, so age alone picked it. A candidate whose next request is
 * already in its socket buffer counts as in progress (at most EVICT_SKIP_MAX are passed over
 * per call, so the scan stays bounded). Under g->mu. */
static bool evict_oldest(gpa_conn_guard *g, const unsigned char *key, long long now,
                         close_note *note)
{
    const gpa_conn *skip[EVICT_SKIP_MAX];
    int n_skip = 0;
    for (;;) {
        gpa_conn *victim = NULL;
        long long victim_since = 0;
        bool victim_used = false;
        /* Newest first (head insertion), so on a tie in milliseconds the later one is older. */
        for (gpa_conn *c = g->head; c; c = c->next) {
            if (c->closing || (key && memcmp(c->addr, key, 16) != 0)) continue;
            int ph = atomic_load_explicit(&c->phase, memory_order_acquire);
            if (ph != PH_NEW && ph != PH_IDLE) continue;
            bool skipped = false;
            for (int i = 0; i < n_skip && !skipped; i++)
                skipped = skip[i] == c;
            if (skipped) continue;
            long long since = atomic_load_explicit(&c->since_ms, memory_order_relaxed);
            bool used = ph == PH_IDLE;
            if (!victim || (!used && victim_used) ||
                (used == victim_used && since <= victim_since)) {
                victim = c;
                victim_since = since;
                victim_used = used;
            }
        }
        if (!victim) return false;
        if (input_pending(victim->fd)) {
            if (n_skip == EVICT_SKIP_MAX) return false;
            skip[n_skip++] = victim;
            continue;
        }
        int ph = atomic_load(&victim->phase);
        /* Lost the race with its request line: look again. */
        if ((ph != PH_NEW && ph != PH_IDLE) ||
            !atomic_compare_exchange_strong(&victim->phase, &ph, PH_EVICTED))
            continue;
        memcpy(note->addr, victim->addr, 16);
        note->phase = ph;
        note->age_ms = now - victim_since;
        shut(g, victim);
        return true;
    }
}

enum MHD_Result gpa_conn_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    gpa_conn_guard *g = cls;
    unsigned char key[16];
    addr_key(key, addr, addrlen);
    long long now = now_ms();
    close_note ev[2];
    int n_ev = 0, refused = -1;

    pthread_mutex_lock(&g->mu);
    if (g->cfg.max_connections_per_ip) {
        unsigned same = 0;
        for (gpa_conn *c = g->head; c; c = c->next)
            if (!c->closing && memcmp(c->addr, key, 16) == 0) same++;
        if (same >= g->cfg.max_connections_per_ip) {
            if (evict_oldest(g, key, now, &ev[n_ev]))
                ev[n_ev++].why = GPA_CONN_LIMIT_PER_IP;
            else
                refused = GPA_CONN_LIMIT_PER_IP;
        }
    }
    if (refused < 0 && g->live >= g->cfg.max_connections) {
        if (evict_oldest(g, NULL, now, &ev[n_ev]))
            ev[n_ev++].why = GPA_CONN_LIMIT_GLOBAL;
        else
            refused = GPA_CONN_LIMIT_GLOBAL;
    }
    pthread_mutex_unlock(&g->mu);

    bool dbg = gpa_log_enabled(GPA_LOG_DEBUG);
    for (int i = 0; i < n_ev; i++) {
        gpa_metrics_conn_evicted((gpa_conn_limit)ev[i].why);
        if (dbg)
            log_note("connection evicted for a new one", "limit",
                     gpa_metrics_conn_limit_name((gpa_conn_limit)ev[i].why), &ev[i]);
    }
    if (refused >= 0) {
        gpa_metrics_conn_refused((gpa_conn_limit)refused);
        if (dbg) {
            close_note n = {.phase = -1, .age_ms = -1};
            memcpy(n.addr, key, 16);
            log_note("connection refused: every connection at the limit is mid-request", "limit",
                     gpa_metrics_conn_limit_name((gpa_conn_limit)refused), &n);
        }
        return MHD_NO;
    }
    return MHD_YES;
}

gpa_conn *gpa_conn_guard_opened(gpa_conn_guard *g, struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!fi) return NULL;
    gpa_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fi->connect_fd;
    const struct sockaddr *sa = ai ? ai->client_addr : NULL;
    addr_key(c->addr, sa,
             sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                             : sizeof(struct sockaddr_in));
    long long now = now_ms();
    atomic_init(&c->phase, PH_NEW);
    atomic_init(&c->since_ms, now);
    atomic_init(&c->hdr_base_ms, now);
    atomic_init(&c->body_bytes, 0);
    atomic_init(&c->body_seq, 0);
    atomic_init(&c->linger, false);
    atomic_init(&c->linger_unread, false);
    pthread_mutex_lock(&g->mu);
    c->next = g->head;
    if (g->head) g->head->prev = c;
    g->head = c;
    g->live++;
    bool first = g->registered++ == 0;
    pthread_mutex_unlock(&g->mu);
    if (first) wake(g); /* the deadline thread sleeps without a tick while there is nothing */
    return c;
}

static int unread_bytes(int fd)
{
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

void gpa_conn_guard_closed(gpa_conn_guard *g, gpa_conn *c)
{
    if (!c) return;
    bool lingered = false;
    pthread_mutex_lock(&g->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next) c->next->prev = c->prev;
    g->registered--;
    if (!c->closing) g->live--;
    /* libmicrohttpd closes its descriptor right after this returns; a duplicate keeps the
     * socket open for reading what the client still sends after its error answer. */
    bool want =
        !c->closing && !g->stop &&
        (atomic_load(&c->linger) || (atomic_load(&c->linger_unread) && unread_bytes(c->fd) > 0));
    if (want && g->n_linger < GPA_LINGER_MAX) {
        int d = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
        if (d >= 0) {
            g->pending[g->n_pending++] = d;
            g->n_linger++;
            lingered = true;
        }
    }
    pthread_mutex_unlock(&g->mu);
    if (lingered) wake(g);
    free(c);
}

void gpa_conn_request_line(gpa_conn *c)
{
    if (!c) return;
    long long now = now_ms();
    int ph = atomic_load(&c->phase);
    /* A keep-alive request's headers are timed from its request line; the first request's
     * from the accept (the handshake counts against the same deadline). */
    if (ph == PH_IDLE) atomic_store(&c->hdr_base_ms, now);
    atomic_store(&c->since_ms, now);
    while ((ph == PH_NEW || ph == PH_IDLE) &&
           !atomic_compare_exchange_weak(&c->phase, &ph, PH_HEADERS)) {
    }
}

void gpa_conn_headers_done(gpa_conn *c)
{
    if (!c) return;
    atomic_store_explicit(&c->body_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&c->since_ms, now_ms(), memory_order_relaxed);
    atomic_store_explicit(&c->phase, PH_BODY, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->body_seq, 1, memory_order_release);
}

void gpa_conn_body_bytes(gpa_conn *c, size_t n)
{
    if (c) atomic_fetch_add_explicit(&c->body_bytes, n, memory_order_relaxed);
}

void gpa_conn_answering(gpa_conn *c)
{
    if (c) atomic_store_explicit(&c->phase, PH_ANSWERING, memory_order_release);
}

void gpa_conn_answered_early(gpa_conn *c, bool body_pending)
{
    if (!c) return;
    atomic_store(&c->linger, body_pending);
    atomic_store_explicit(&c->phase, PH_ANSWERING, memory_order_release);
}

void gpa_conn_request_done(gpa_conn *c, bool ok)
{
    if (!c) return;
    if (!ok && atomic_load(&c->phase) == PH_HEADERS) atomic_store(&c->linger_unread, true);
    atomic_store_explicit(&c->since_ms, now_ms(), memory_order_relaxed);
    atomic_store_explicit(&c->phase, PH_IDLE, memory_order_release);
}

unsigned gpa_conn_guard_count(gpa_conn_guard *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned n = g->live;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* ---- the deadline and lingering thread ---- */

#define NOTES_MAX 32

/* One pass over the registry: header deadline for new connections and those receiving
 * headers, body rate for those receiving a body. */
static void check_deadlines(gpa_conn_guard *g, long long now)
{
    close_note notes[NOTES_MAX];
    int n_notes = 0, n_more = 0;
    bool dbg = gpa_log_enabled(GPA_LOG_DEBUG);
    unsigned hto = g->cfg.header_timeout_ms, rate = g->cfg.min_body_rate;
    pthread_mutex_lock(&g->mu);
    for (gpa_conn *c = g->head; c; c = c->next) {
        if (c->closing) continue;
        int ph = atomic_load_explicit(&c->phase, memory_order_acquire);
        int why = -1;
        long long age = 0;
        if ((ph == PH_NEW || ph == PH_HEADERS) && hto) {
            age = now - atomic_load(&c->hdr_base_ms);
            if (age >= (long long)hto) why = GPA_CONN_CLOSE_HEADER_TIMEOUT;
        } else if (ph == PH_BODY && rate) {
            unsigned seq = atomic_load_explicit(&c->body_seq, memory_order_acquire);
            if (seq != c->win_seq) {
                c->win_seq = seq;
                c->win_start_ms = atomic_load(&c->since_ms);
                c->win_bytes = 0;
            }
            long long span = now - c->win_start_ms;
            if (span >= GPA_BODY_RATE_WINDOW_MS) {
                unsigned long long got = atomic_load(&c->body_bytes);
                age = now - atomic_load(&c->since_ms);
                if ((got - c->win_bytes) * 1000ull <
                    (unsigned long long)rate * (unsigned long long)span)
                    why = GPA_CONN_CLOSE_BODY_TOO_SLOW;
                c->win_start_ms = now;
                c->win_bytes = got;
            }
        }
        if (why < 0) continue;
        shut(g, c);
        gpa_metrics_conn_closed((gpa_conn_close)why);
        if (!dbg) continue;
        if (n_notes < NOTES_MAX) {
            close_note *n = &notes[n_notes++];
            memcpy(n->addr, c->addr, 16);
            n->phase = ph;
            n->age_ms = age;
            n->why = why;
        } else {
            n_more++;
        }
    }
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < n_notes; i++)
        log_note("connection closed: deadline missed", "reason",
                 gpa_metrics_conn_close_name((gpa_conn_close)notes[i].why), &notes[i]);
    if (n_more) {
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_DEBUG, "more connections closed for missed deadlines");
        gpa_log_int(&l, "count", n_more);
        gpa_log_end(&l);
    }
}

static void linger_end(gpa_conn_guard *g, unsigned i, long long now, const char *why)
{
    lingerer *x = &g->active[i];
    close(x->fd);
    gpa_metrics_conn_closed(GPA_CONN_CLOSE_LINGERING);
    if (gpa_log_enabled(GPA_LOG_DEBUG)) {
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_DEBUG, "lingering close ended");
        gpa_log_str(&l, "end", why);
        gpa_log_int(&l, "discarded_bytes", (long long)x->dropped);
        gpa_log_int(&l, "linger_ms", now - x->start_ms);
        gpa_log_end(&l);
    }
    g->active[i] = g->active[--g->n_active];
    pthread_mutex_lock(&g->mu);
    g->n_linger--;
    pthread_mutex_unlock(&g->mu);
}

/* Reads what is there (bounded per call so one client cannot hold the thread). */
static void linger_read(gpa_conn_guard *g, unsigned i, long long now)
{
    static char sink[65536];
    lingerer *x = &g->active[i];
    for (int k = 0; k < 16; k++) {
        ssize_t r = read(x->fd, sink, sizeof sink);
        if (r > 0) {
            x->dropped += (size_t)r;
            x->last_ms = now;
            if (x->dropped >= GPA_LINGER_MAX_BYTES) {
                linger_end(g, i, now, "size");
                return;
            }
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        linger_end(g, i, now,
                   r == 0                ? "client-closed"
                   : errno == ECONNRESET ? "client-reset"
                                         : "error");
        return;
    }
}

static void *guard_thread(void *arg)
{
    gpa_conn_guard *g = arg;
    long long next_tick = now_ms() + TICK_MS;
    struct pollfd pfd[1 + GPA_LINGER_MAX];
    for (;;) {
        pthread_mutex_lock(&g->mu);
        bool stop = g->stop, have_conns = g->registered > 0;
        while (g->n_pending) {
            int fd = g->pending[--g->n_pending];
            long long t = now_ms();
            /* The answer is out; a FIN now tells the client nothing more follows. */
            shutdown(fd, SHUT_WR);
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            g->active[g->n_active++] = (lingerer){.fd = fd, .start_ms = t, .last_ms = t};
        }
        pthread_mutex_unlock(&g->mu);
        if (stop) break;

        long long now = now_ms();
        long long wake_at = have_conns ? next_tick : -1;
        for (unsigned i = 0; i < g->n_active; i++) {
            long long end = g->active[i].last_ms + GPA_LINGER_QUIET_MS;
            if (end > g->active[i].start_ms + GPA_LINGER_MAX_MS)
                end = g->active[i].start_ms + GPA_LINGER_MAX_MS;
            if (wake_at < 0 || end < wake_at) wake_at = end;
        }
        int timeout = wake_at < 0 ? -1 : wake_at <= now ? 0 : (int)(wake_at - now);
        pfd[0] = (struct pollfd){.fd = g->wake_fd, .events = POLLIN};
        unsigned n = g->n_active;
        for (unsigned i = 0; i < n; i++)
            pfd[1 + i] = (struct pollfd){.fd = g->active[i].fd, .events = POLLIN};
        int np = poll(pfd, 1 + n, timeout);
        now = now_ms();
        if (np > 0 && (pfd[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t r = read(g->wake_fd, &v, sizeof v);
            (void)r;
        }
        /* Backwards, so removing entry i (swapped with the last) skips none still polled. */
        for (unsigned i = n; i-- > 0;) {
            if (np > 0 && pfd[1 + i].revents) {
                unsigned before = g->n_active;
                linger_read(g, i, now);
                if (g->n_active != before) continue;
            }
            lingerer *x = &g->active[i];
            if (now - x->last_ms >= GPA_LINGER_QUIET_MS)
                linger_end(g, i, now, "quiet");
            else if (now - x->start_ms >= GPA_LINGER_MAX_MS)
                linger_end(g, i, now, "time");
        }
        if (have_conns && now >= next_tick) {
            check_deadlines(g, now);
            next_tick = now + TICK_MS;
        } else if (!have_conns) {
            next_tick = now + TICK_MS;
        }
    }
    return NULL;
}

int gpa_conn_guard_new(gpa_conn_guard **out, const gpa_conn_guard_config *cfg, gpa_error *err)
{
    *out = NULL;
    gpa_conn_guard *g = calloc(1, sizeof *g);
    if (!g) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    g->cfg = *cfg;
    pthread_mutex_init(&g->mu, NULL);
    g->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g->wake_fd < 0) {
        int e = errno;
        pthread_mutex_destroy(&g->mu);
        free(g);
        return gpa_fail(err, GPA_EIO, "eventfd: %s", strerror(e));
    }
    int rc = pthread_create(&g->thread, NULL, guard_thread, g);
    if (rc != 0) {
        close(g->wake_fd);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return gpa_fail(err, GPA_EIO, "cannot start the connection guard thread: %s", strerror(rc));
    }
    *out = g;
    return GPA_OK;
}

void gpa_conn_guard_free(gpa_conn_guard *g)
{
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_mutex_unlock(&g->mu);
    wake(g);
    pthread_join(g->thread, NULL);
    for (unsigned i = 0; i < g->n_active; i++)
        close(g->active[i].fd);
    for (unsigned i = 0; i < g->n_pending; i++)
        close(g->pending[i]);
    /* The daemon is stopped, so every connection has been unregistered; anything left is
     * only freed, its descriptor is not ours. */
    for (gpa_conn *c = g->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    close(g->wake_fd);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
