/*
 * server.c - the serve main loop (see server.h).
 *
 * Threads: libmicrohttpd's worker pool answers requests; the main thread owns everything
 * else (signals via signalfd, inotify, periodic checks, shutdown), so reloads never race
 * each other and no signal handler ever runs on a worker.
 *
 * Must never: call exit() after the listeners started (shutdown must drain), or let a
 * failed reload reach the stores.
 */
#include "server.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <limits.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "conn_guard.h"
#include "dir_watch.h"
#include "http_common.h"
#include "jsonlog.h"
#include "listen_socket.h"
#include "metrics.h"
#include "ops_http.h"
#include "policy_store.h"
#include "reload.h"
#include "tls_store.h"
#include "webhook_http.h"
#include "gpu_admission/namespace_guard.h"

enum { KIND_POLICY = 1, KIND_CERT = 2 };

/* Connections the webhook daemon may hold beyond --max-connections: evicted ones whose
 * worker has not closed them yet, and accepts racing on other workers. */
#define CONN_HEADROOM(cfg) ((cfg)->max_connections / 4 + 64)

/* The plain-HTTP ops listener (metrics, probes). */
#define OPS_MAX_CONNECTIONS        256
#define OPS_MAX_CONNECTIONS_PER_IP 8
#define OPS_IDLE_TIMEOUT_S         10

/* Queued log lines are written this long after the first one arrives (or at once past the
 * queue's high-water mark): one write(2) per batch instead of one per request. */
#define LOG_BATCH_MS 50

/* Debounce: a ConfigMap/Secret update is several events; act once they stop. */
#define SETTLE_MS     150
#define SETTLE_MAX_MS 1000
static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (!gpa_log_enabled(GPA_LOG_DEBUG)) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_DEBUG, "libmicrohttpd");
    gpa_log_str(&l, "detail", msg);
    gpa_log_end(&l);
}

static char *read_small_file(const char *path, gpa_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        gpa_fail(err, GPA_EIO, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!buf || n == 0) {
        free(buf);
        gpa_fail(err, GPA_EIO, "cannot read %s (empty or unreadable)", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static void dir_of(char *out, size_t cap, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* Every connection is a descriptor: raise the soft limit toward the hard one, and never let
 * --max-connections promise more than the process can open (accept() failing with EMFILE
 * would otherwise stall new connections). `reserve` descriptors stay for the ops listener
 * and the process itself. Returns the webhook connection limit to use. */
static unsigned fit_connection_limit(unsigned wanted, unsigned reserve)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return wanted;
    rlim_t want = (rlim_t)wanted + reserve;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rlim_t target = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        if (target > rl.rlim_cur) {
            rl.rlim_cur = target;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want) return wanted;
    unsigned fit = rl.rlim_cur > (rlim_t)reserve + 16 ? (unsigned)(rl.rlim_cur - reserve) : 16;
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_WARN, "--max-connections lowered to fit the open-files limit");
    gpa_log_int(&l, "requested", wanted);
    gpa_log_int(&l, "max_connections", fit);
    gpa_log_int(&l, "nofile_limit", (long long)rl.rlim_cur);
    gpa_log_end(&l);
    return fit;
}

static void startup_error(const char *msg, const char *detail)
{
    gpa_log_msg(GPA_LOG_ERROR, msg, detail);
}

/* Runs until the grace period after SIGTERM/SIGINT ends: signals (signalfd), directory events
 * (debounced), periodic checks, log flushing. Everything here runs on the main thread. */
static void main_loop(const gpa_serve_config *cfg, gpa_http_state *st, int sfd, int log_efd,
                      gpa_dir_watch *watch)
{
    long long next_periodic = cfg->reload_interval_ms ? now_ms() + cfg->reload_interval_ms : 0;
    long long settle_at = 0, settle_first = 0, grace_end = 0, log_flush_at = 0;
    unsigned pending = 0;
    for (;;) {
        long long now = now_ms();
        long long wake = LLONG_MAX;
        if (next_periodic) wake = next_periodic;
        if (pending && settle_at < wake) wake = settle_at;
        if (grace_end && grace_end < wake) wake = grace_end;
        if (log_flush_at && log_flush_at < wake) wake = log_flush_at;
        int timeout = wake == LLONG_MAX ? -1 : wake <= now ? 0 : (int)(wake - now);
        struct pollfd pfd[3] = {{.fd = sfd, .events = POLLIN},
                                {.fd = log_efd, .events = POLLIN},
                                {.fd = watch->fd, .events = POLLIN}};
        int np = poll(pfd, watch->fd >= 0 ? 3 : 2, timeout);
        if (np < 0 && errno != EINTR) break;
        now = now_ms();

        if (np > 0 && (pfd[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGHUP) {
                    gpa_reload_policy(cfg->policies, GPA_TRIGGER_SIGNAL, NULL);
                    gpa_reload_cert(cfg->tls_cert, cfg->tls_key, GPA_TRIGGER_SIGNAL, time(NULL),
                                    NULL);
                } else if (!grace_end) {
                    atomic_store(&st->draining, true);
                    grace_end = now + cfg->shutdown_grace_ms;
                    if (grace_end == now) grace_end = now + 1;
                    gpa_logline l;
                    gpa_log_begin(&l, GPA_LOG_INFO, "shutdown requested; draining");
                    gpa_log_str(&l, "signal", strsignal((int)si.ssi_signo));
                    gpa_log_int(&l, "grace_ms", cfg->shutdown_grace_ms);
                    gpa_log_end(&l);
                } else {
                    gpa_log_msg(GPA_LOG_INFO, "second shutdown signal; ending grace period", NULL);
                    grace_end = now;
                }
            }
        }
        if (np > 0 && (pfd[1].revents & POLLIN)) {
            uint64_t n;
            ssize_t r = read(log_efd, &n, sizeof n);
            (void)r;
            if (gpa_log_queued() >= GPA_LOG_QUEUE_HIGH)
                log_flush_at = now;
            else if (!log_flush_at)
                log_flush_at = now + LOG_BATCH_MS;
        }
        if (np > 0 && watch->fd >= 0 && (pfd[2].revents & POLLIN)) {
            unsigned k = gpa_dir_watch_drain(watch);
            if (k) {
                if (!pending) settle_first = now;
                pending |= k;
                settle_at = now + SETTLE_MS;
                if (settle_at > settle_first + SETTLE_MAX_MS)
                    settle_at = settle_first + SETTLE_MAX_MS;
            }
        }
        /* A replaced pair is freed only long after any handshake that could hold it. */
        gpa_tls_store_collect(time(NULL), cfg->idle_timeout_s + 60);
        if (pending && now >= settle_at) {
            if (pending & KIND_POLICY) gpa_reload_policy(cfg->policies, GPA_TRIGGER_WATCH, NULL);
            if (pending & KIND_CERT)
                gpa_reload_cert(cfg->tls_cert, cfg->tls_key, GPA_TRIGGER_WATCH, time(NULL), NULL);
            pending = 0;
        }
        if (next_periodic && now >= next_periodic) {
            if (watch->fd >= 0) gpa_dir_watch_rearm(watch);
            gpa_reload_policy(cfg->policies, GPA_TRIGGER_PERIODIC, NULL);
            gpa_reload_cert(cfg->tls_cert, cfg->tls_key, GPA_TRIGGER_PERIODIC, time(NULL), NULL);
            next_periodic = now + cfg->reload_interval_ms;
        }
        if (log_flush_at && now >= log_flush_at) {
            gpa_log_flush();
            log_flush_at = 0;
        }
        if (grace_end && now >= grace_end) break;
    }
}

/* Stops accepting, lets open connections finish (they were told Connection: close), then
 * stops the listener. The wait is bounded: an idle keep-alive client must not hold us. */
static void drain_and_stop(const gpa_serve_config *cfg, gpa_http_state *st,
                           struct MHD_Daemon *tls_d)
{
    int lfd = MHD_quiesce_daemon(tls_d);
    if (lfd >= 0) close(lfd);
    gpa_log_msg(GPA_LOG_INFO, "listener closed; finishing open connections", NULL);
    long long drain_ms = cfg->shutdown_grace_ms > 1000 ? cfg->shutdown_grace_ms : 1000;
    long long drain_end = now_ms() + drain_ms;
    while (now_ms() < drain_end &&
           (atomic_load(&st->open_conns) > 0 || gpa_metrics_inflight() > 0)) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
        gpa_log_flush();
    }
    long left = atomic_load(&st->open_conns);
    MHD_stop_daemon(tls_d);
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO, "shutdown complete");
    gpa_log_int(&l, "connections_closed_at_stop", left);
    gpa_log_end(&l);
}

int gpa_server_run(const gpa_serve_config *cfg)
{
    gpa_log_set_level((gpa_log_level)cfg->log_level);
    gpa_error err = {0};

    /* Block the signals before any thread exists so every thread inherits the mask and
     * only the main loop sees them, through signalfd. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        startup_error("cannot start", strerror(errno));
        return 1;
    }

    int rc = 1;
    int listen_fd = -1, metrics_fd = -1, log_efd = -1;
    struct MHD_Daemon *tls_d = NULL, *ops_d = NULL;
    gpa_conn_guard *guard = NULL;
    char *client_ca = NULL;
    gpa_dir_watch watch = {.fd = -1};
    gpa_http_state st = {.max_body = cfg->max_body, .require_client_cert = cfg->client_ca[0]};
    atomic_init(&st.draining, false);
    atomic_init(&st.open_conns, 0);
    /* Checked by gpa_serve_config_parse: this parse cannot fail on the name list. */
    gpa_ns_guard ns_guard = {0};
    if (gpa_ns_guard_parse(&ns_guard, cfg->ignore_label_namespaces, &err) != GPA_OK) {
        startup_error("bad --ignore-label-namespaces", err.message);
        goto out;
    }
    if (gpa_ns_guard_parse_excluded(&ns_guard, cfg->excluded_namespaces,
                                    cfg->excluded_namespace_creators, &err) != GPA_OK) {
        startup_error("bad --excluded-namespaces / --excluded-namespace-creators", err.message);
        goto out;
    }
    st.ns_guard = &ns_guard;

    /* Startup with an invalid policy set or certificate fails fast: a webhook that starts
     * without its policy would either deny everything or allow everything. */
    if (gpa_reload_policy(cfg->policies, GPA_TRIGGER_STARTUP, &err) != GPA_OK) goto out;
    if (gpa_reload_cert(cfg->tls_cert, cfg->tls_key, GPA_TRIGGER_STARTUP, time(NULL), &err) !=
        GPA_OK)
        goto out;
    if (cfg->client_ca[0] && !(client_ca = read_small_file(cfg->client_ca, &err))) {
        startup_error("cannot read --client-ca", err.message);
        goto out;
    }

    unsigned port = 0, metrics_port = 0;
    if (gpa_listen_socket(&listen_fd, &port, cfg->listen, &err) != GPA_OK) {
        startup_error("cannot open the webhook listener", err.message);
        goto out;
    }
    if (gpa_listen_socket(&metrics_fd, &metrics_port, cfg->metrics_listen, &err) != GPA_OK) {
        startup_error("cannot open the metrics listener", err.message);
        goto out;
    }

    /* From here on request threads queue their log lines; the main loop writes them. */
    log_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (log_efd < 0 || gpa_log_queue_start(log_efd) != 0) {
        if (log_efd >= 0) close(log_efd);
        log_efd = -1; /* synchronous writes then: slower, still correct */
    }

    /* The limits are the connection guard's (eviction needs to see them first); the
     * daemon's own sit above them by the headroom, for evicted connections not yet closed
     * by their worker and accepts racing on other workers. Descriptors for the headroom
     * and the lingering closes are reserved too. */
    unsigned max_conns = fit_connection_limit(
        cfg->max_connections, OPS_MAX_CONNECTIONS + 64 + GPA_LINGER_MAX + CONN_HEADROOM(cfg));
    gpa_conn_guard_config gcfg = {.max_connections = max_conns,
                                  .max_connections_per_ip = cfg->max_connections_per_ip,
                                  .header_timeout_ms = cfg->header_timeout_ms,
                                  .min_body_rate = cfg->min_body_rate};
    if (gpa_conn_guard_new(&guard, &gcfg, &err) != GPA_OK) {
        startup_error("cannot start", err.message);
        goto out;
    }
    st.guard = guard;

    struct MHD_OptionItem tls_opts[24];
    int no = 0;
#define OPT(o, v, p) tls_opts[no++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (void *)(p)}
    OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_logger, NULL);
    OPT(MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL);
    if (cfg->threads > 1) OPT(MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL);
    OPT(MHD_OPTION_CONNECTION_LIMIT, max_conns + CONN_HEADROOM(cfg), NULL);
    OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GPA_CONNECTION_MEMORY, NULL);
    OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0, NULL);
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s, NULL);
    OPT(MHD_OPTION_HTTPS_CERT_CALLBACK, 0, gpa_tls_store_cert_callback);
    OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, GPA_TLS_PRIORITIES);
    if (client_ca) OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, client_ca);
    OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)gpa_webhook_completed, &st);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)gpa_webhook_connection, &st);
    OPT(MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)gpa_webhook_uri_log, &st);
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
    /* MHD_OPTION_ARRAY wants two-pointer options as (value = fn, ptr = cls); the
     * EXTERNAL_LOGGER and NOTIFY entries above follow that convention. */
    tls_d = MHD_start_daemon(GPA_WEBHOOK_DAEMON_FLAGS, 0, gpa_conn_guard_accept, guard,
                             gpa_webhook_access, &st, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    if (!tls_d) {
        startup_error("cannot start the webhook listener", "libmicrohttpd refused the options");
        goto out;
    }
    listen_fd = -1; /* libmicrohttpd owns it now */

    /* The ops port answers the kubelet's probes, a new connection each time: idle
     * connections from any one address (a pod that can reach the port) must not use up the
     * listener, so few per address, many in total, and a short idle timeout. */
    ops_d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                             gpa_ops_access, &st, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
                             MHD_OPTION_LISTEN_SOCKET, metrics_fd, MHD_OPTION_CONNECTION_LIMIT,
                             (unsigned)OPS_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                             (unsigned)OPS_MAX_CONNECTIONS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
                             (unsigned)OPS_IDLE_TIMEOUT_S, MHD_OPTION_END);
    if (!ops_d) {
        startup_error("cannot start the metrics listener", "libmicrohttpd refused the options");
        goto out;
    }
    metrics_fd = -1;

    if (gpa_dir_watch_open(&watch, &err) == GPA_OK) {
        char certdir[4096], keydir[4096];
        dir_of(certdir, sizeof certdir, cfg->tls_cert);
        dir_of(keydir, sizeof keydir, cfg->tls_key);
        if (gpa_dir_watch_add(&watch, cfg->policies, KIND_POLICY, &err) != GPA_OK ||
            gpa_dir_watch_add(&watch, certdir, KIND_CERT, &err) != GPA_OK ||
            gpa_dir_watch_add(&watch, keydir, KIND_CERT, &err) != GPA_OK)
            gpa_log_msg(GPA_LOG_WARN, "directory watch incomplete; periodic checks only",
                        err.message);
    } else {
        gpa_log_msg(GPA_LOG_WARN, "inotify unavailable; periodic checks only", err.message);
    }

    {
        char rev[65], fp[65];
        gpa_policy_store_revision(rev);
        gpa_tls_store_fingerprint(fp);
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_INFO, "server started");
        gpa_log_str(&l, "version", gpa_version());
        gpa_log_str(&l, "listen", cfg->listen);
        gpa_log_int(&l, "listen_port", port);
        gpa_log_str(&l, "metrics_listen", cfg->metrics_listen);
        gpa_log_int(&l, "metrics_port", metrics_port);
        gpa_log_int(&l, "threads", cfg->threads);
        gpa_log_str(&l, "threads_source", cfg->threads_source);
        gpa_log_int(&l, "max_body", (long long)cfg->max_body);
        gpa_log_int(&l, "max_connections", max_conns);
        gpa_log_int(&l, "max_connections_per_ip", cfg->max_connections_per_ip);
        gpa_log_int(&l, "header_timeout_ms", cfg->header_timeout_ms);
        gpa_log_int(&l, "min_body_rate", cfg->min_body_rate);
        gpa_log_bool(&l, "client_ca", cfg->client_ca[0] != '\0');
        gpa_log_str(&l, "ignore_label_namespaces", cfg->ignore_label_namespaces);
        gpa_log_str(&l, "excluded_namespaces", cfg->excluded_namespaces);
        gpa_log_str(&l, "excluded_namespace_creators", cfg->excluded_namespace_creators);
        gpa_log_str(&l, "policy_revision", rev);
        gpa_log_str(&l, "cert_fingerprint", fp);
        gpa_log_end(&l);
    }

    main_loop(cfg, &st, sfd, log_efd, &watch);
    drain_and_stop(cfg, &st, tls_d);
    tls_d = NULL;
    rc = 0;

out:
    if (tls_d) MHD_stop_daemon(tls_d);
    if (ops_d) MHD_stop_daemon(ops_d);
    gpa_conn_guard_free(guard); /* after the daemon: every connection has left it */
    gpa_log_queue_stop();       /* no request thread is left: write what they queued */
    if (log_efd >= 0) close(log_efd);
    if (listen_fd >= 0) close(listen_fd);
    if (metrics_fd >= 0) close(metrics_fd);
    gpa_dir_watch_close(&watch);
    close(sfd);
    free(client_ca);
    gpa_ns_guard_free(&ns_guard);
    gpa_tls_store_shutdown();
    gpa_policy_store_shutdown();
    return rc;
}
