/*
 * webhook_http.c - POST /mutate and /validate over HTTPS (see webhook_http.h).
 *
 * A request is judged on its headers before any body byte is read: method (405), client
 * certificate (403), Content-Type (415), Content-Length over the cap (413). The complete
 * body goes to gpa_review_handle with one policy snapshot reference held across the call.
 *
 * A chunked body has no length up front: once it passes the cap nothing more is stored;
 * libmicrohttpd 0.9.75 can only answer once the body has ended, so up to OVER_CAP_DISCARD
 * more bytes are read and dropped to give an honest client its 413, then the connection is
 * closed.
 *
 * Must never: buffer more than max_body + 1 bytes per request, or block a worker thread on
 * anything but the engine itself.
 */
#include "webhook_http.h"

#include <ctype.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conn_guard.h"
#include "gpu_admission/namespace_guard.h"
#include "gpu_admission/review.h"
#include "jsonlog.h"
#include "metrics.h"
#include "tls_cork.h"
#include "policy_store.h"

typedef struct conn_state {
    int client_cert; /* 0 not checked yet, 1 verified, -1 refused */
    gpa_conn *guard; /* this connection in the connection guard; NULL: unguarded */
} conn_state;

typedef struct req_state {
    gpa_hook hook;
    char *buf;
    size_t len, cap, expected; /* expected: Content-Length, or 0 when chunked/absent */
    bool answered;             /* the response is queued */
    bool too_big;              /* passed max_body: the rest is discarded, then 413 */
    size_t discarded;
    gpa_conn *guard;
    struct timespec start;
} req_state;

/* How far past --max-body a chunked body is read (and thrown away) before the connection
 * is cut instead of answered 413. */
#define OVER_CAP_DISCARD (1u << 20)

/* Sentinel for requests answered on their first call (probes, 404, 405, ...): nothing to
 * free, but the completed callback must not count them as webhook requests. */
static char answered_early;

static double elapsed_s(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static bool is_json_content_type(const char *ct)
{
    if (!ct) return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    static const char want[] = "application/json";
    if (strncasecmp(ct, want, sizeof want - 1) != 0) return false;
    char next = ct[sizeof want - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* Strict decimal; anything else lets libmicrohttpd's own parsing decide. */
static bool parse_content_length(const char *s, unsigned long long *out)
{
    if (!s || !isdigit((unsigned char)*s)) return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool client_cert_ok(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_state *cs = sc ? sc->socket_context : NULL;
    if (cs && cs->client_cert) return cs->client_cert > 0;
    const union MHD_ConnectionInfo *ti =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    bool ok = false;
    if (ti && ti->tls_session) {
        gnutls_session_t s = (gnutls_session_t)ti->tls_session;
        unsigned n = 0, status = 0;
        /* verify_peers2 checks the chain against MHD_OPTION_HTTPS_MEM_TRUST; a client that
         * sent no certificate fails here too (no peers). */
        ok = gnutls_certificate_get_peers(s, &n) != NULL && n > 0 &&
             gnutls_certificate_verify_peers2(s, &status) == GNUTLS_E_SUCCESS && status == 0;
    }
    if (cs) cs->client_cert = ok ? 1 : -1;
    return ok;
}

static gpa_conn *guard_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_state *cs = sc ? sc->socket_context : NULL;
    return cs ? cs->guard : NULL;
}

void gpa_webhook_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe)
{
    gpa_http_state *st = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_state *cs = calloc(1, sizeof(conn_state)); /* NULL: checked per request */
        if (cs && st->guard) cs->guard = gpa_conn_guard_opened(st->guard, c);
        *socket_context = cs;
        atomic_fetch_add(&st->open_conns, 1);
        gpa_metrics_open_conns_add(1);
    } else {
        conn_state *cs = *socket_context;
        if (cs && cs->guard) gpa_conn_guard_closed(st->guard, cs->guard);
        free(cs);
        *socket_context = NULL;
        atomic_fetch_sub(&st->open_conns, 1);
        gpa_metrics_open_conns_add(-1);
    }
}

void *gpa_webhook_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)uri;
    gpa_conn_request_line(guard_of(c));
    return NULL; /* the access handler's first call still sees *req_cls == NULL */
}

/* A request that announced a body (a Content-Length other than 0, or chunked). */
static bool body_announced(struct MHD_Connection *c)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        return true;
    if (!cl) return false;
    while (*cl == ' ' || *cl == '\t' || *cl == '0')
        cl++;
    return *cl != '\0';
}

/* Who asked, bounded: a username and group names come from the identity provider (an OIDC
 * token's claims), so their number and length are not ours to trust. 16 groups of at most
 * 128 bytes and a 256-byte username keep the line under 3 KB of its 4 KB with the rest of
 * the fields; the count of the groups left out is logged (docs/operations.md). */
#define LOG_USER_MAX   256
#define LOG_GROUP_MAX  128
#define LOG_GROUPS_MAX 16

static void log_request(gpa_hook hook, const gpa_review_result *r, double secs, const char *error)
{
    const char *outcome = r->outcome ? r->outcome : "error";
    gpa_log_level lvl = GPA_LOG_DEBUG;
    if (strcmp(outcome, "denied") == 0 || strcmp(outcome, "mutated") == 0 ||
        strcmp(outcome, "warned") == 0 || r->http_status != 200)
        lvl = GPA_LOG_INFO;
    if (!gpa_log_enabled(lvl)) return;
    gpa_logline l;
    gpa_log_begin(&l, lvl, r->http_status == 200 ? "admission request" : "bad admission request");
    gpa_log_str(&l, "uid", r->uid);
    gpa_log_str(&l, "namespace", r->namespace_);
    gpa_log_str(&l, "name", r->name);
    gpa_log_str(&l, "operation", r->operation);
    gpa_log_str_max(&l, "user", r->user, LOG_USER_MAX);
    gpa_log_str(&l, "kind", r->kind);
    gpa_log_str(&l, "webhook", hook == GPA_HOOK_MUTATE ? "mutate" : "validate");
    gpa_log_str(&l, "rule", r->decision.rule);
    gpa_log_str(&l, "pool", r->decision.pool);
    gpa_log_str(&l, "decision", outcome);
    gpa_log_str(&l, "reason", r->decision.reason);
    if (r->decision.message && strcmp(outcome, "allowed") != 0)
        gpa_log_str(&l, "message", r->decision.message);
    if (error) gpa_log_str(&l, "error", error);
    gpa_log_int(&l, "status", r->http_status);
    gpa_log_double(&l, "latency_ms", secs * 1000.0, 3);
    /* last: a line that runs out of room loses the groups, never the decision */
    const char *groups[LOG_GROUPS_MAX];
    size_t n_groups = gpa_review_result_groups(r, groups, LOG_GROUPS_MAX);
    if (r->user_groups) {
        gpa_log_strs(&l, "groups", groups, n_groups < LOG_GROUPS_MAX ? n_groups : LOG_GROUPS_MAX,
                     LOG_GROUP_MAX);
        if (n_groups > LOG_GROUPS_MAX)
            gpa_log_int(&l, "groups_omitted", (long long)(n_groups - LOG_GROUPS_MAX));
    }
    gpa_log_end(&l);
}

static enum MHD_Result answer_review(struct MHD_Connection *c, gpa_http_state *st, req_state *rq)
{
    gpa_policy_snap *snap = gpa_policy_store_acquire();
    if (!snap)
        return gpa_http_status_error(c, st, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailable",
                                     "no policy set loaded yet", NULL);
    gpa_review_result r;
    memset(&r, 0, sizeof r);
    gpa_error err = {0};
    /* The codec reads a NUL-terminated copy so no parser can run past the body. */
    rq->buf[rq->len] = '\0';
    gpa_review_handle_guarded(&r, gpa_policy_snap_policy(snap), st->ns_guard, rq->hook, rq->buf,
                              rq->len, &err);

    double secs = elapsed_s(&rq->start);
    enum MHD_Result ret;
    if (!r.body) {
        ret = gpa_http_status_error(c, st, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError",
                                    "could not build the response", NULL);
    } else {
        unsigned status = r.http_status ? (unsigned)r.http_status : 500;
        char *body = r.body;
        r.body = NULL; /* handed to libmicrohttpd, which frees it */
        /* The whole request has been read, so this answer is the last thing the request
         * sends: it may go out as one TLS record (answers refused early are not corked:
         * their request only completes once the rest of its body is drained). */
        gpa_tls_cork(c, r.body_len);
        ret = gpa_http_respond(c, st, status, "application/json", body, r.body_len, true, NULL);
        if (ret != MHD_YES) gpa_tls_uncork(c);
    }
    const char *result = r.http_status == 200 ? r.outcome : "error";
    gpa_metrics_request(rq->hook, r.operation, result, secs);
    gpa_metrics_request_kind(rq->hook, r.kind, result);
    if (r.decision.rule) gpa_metrics_rule_match(r.decision.rule);
    if (result && strcmp(result, "denied") == 0) gpa_metrics_denial(r.decision.reason);
    log_request(rq->hook, &r, secs, r.http_status == 200 ? NULL : err.message);
    gpa_review_result_clear(&r);
    /* Only now: decision.rule/pool/reason point into the policy, and a reload may free the
     * old set as soon as this last reference goes. */
    gpa_policy_store_release(snap);
    return ret;
}

static enum MHD_Result too_large(struct MHD_Connection *c, gpa_http_state *st)
{
    char msg[128];
    snprintf(msg, sizeof msg, "request body larger than the %zu byte limit (--max-body)",
             st->max_body);
    gpa_log_msg(GPA_LOG_INFO, "request body too large", msg);
    return gpa_http_status_error(c, st, MHD_HTTP_CONTENT_TOO_LARGE, "RequestEntityTooLarge", msg,
                                 NULL);
}

static enum MHD_Result first_call(struct MHD_Connection *c, gpa_http_state *st, const char *url,
                                  const char *method, void **req_cls)
{
    gpa_hook hook;
    if (strcmp(url, "/mutate") == 0) {
        hook = GPA_HOOK_MUTATE;
    } else if (strcmp(url, "/validate") == 0) {
        hook = GPA_HOOK_VALIDATE;
    } else {
        *req_cls = &answered_early;
        bool probe = strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0;
        if (probe && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
            return gpa_http_status_error(c, st, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
                                         "use GET", "GET, HEAD");
        bool handled;
        enum MHD_Result r = gpa_http_probe(c, st, url, &handled);
        if (handled) return r;
        return gpa_http_status_error(c, st, MHD_HTTP_NOT_FOUND, "NotFound",
                                     "no such path; the webhook serves POST /mutate and POST "
                                     "/validate",
                                     NULL);
    }
    if (strcmp(method, "POST") != 0) {
        *req_cls = &answered_early;
        return gpa_http_status_error(c, st, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowed",
                                     "the webhook accepts only POST", "POST");
    }
    if (st->require_client_cert && !client_cert_ok(c)) {
        *req_cls = &answered_early;
        gpa_log_msg(GPA_LOG_WARN, "request refused", "no valid client certificate");
        return gpa_http_status_error(c, st, MHD_HTTP_FORBIDDEN, "Forbidden",
                                     "a client certificate signed by --client-ca is required",
                                     NULL);
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!is_json_content_type(ct)) {
        *req_cls = &answered_early;
        return gpa_http_status_error(c, st, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType",
                                     "Content-Type must be application/json", NULL);
    }
    unsigned long long cl = 0;
    const char *cls_hdr =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    bool have_cl = parse_content_length(cls_hdr, &cl);
    if (have_cl && cl > st->max_body) {
        *req_cls = &answered_early;
        return too_large(c, st);
    }

    req_state *rq = calloc(1, sizeof *rq);
    if (!rq) return MHD_NO;
    rq->hook = hook;
    clock_gettime(CLOCK_MONOTONIC, &rq->start);
    rq->expected = have_cl ? (size_t)cl : 0;
    /* Grow with the data actually received, not with what the client announced. */
    rq->cap = (have_cl && cl < 65536 ? (size_t)cl : 65536) + 1;
    rq->buf = malloc(rq->cap);
    if (!rq->buf) {
        free(rq);
        return MHD_NO;
    }
    *req_cls = rq;
    gpa_metrics_inflight_add(1);
    return MHD_YES;
}

enum MHD_Result gpa_webhook_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **req_cls)
{
    gpa_http_state *st = cls;
    (void)version;
    if (!*req_cls) {
        gpa_conn *g = guard_of(c);
        gpa_conn_headers_done(g);
        enum MHD_Result r = first_call(c, st, url, method, req_cls);
        if (*req_cls == &answered_early)
            /* libmicrohttpd closes the connection after an answer queued before the body:
             * the close lingers so the client can read the answer instead of a reset. */
            gpa_conn_answered_early(g, body_announced(c));
        else if (*req_cls)
            ((req_state *)*req_cls)->guard = g;
        return r;
    }
    if (*req_cls == &answered_early) {
        *upload_data_size = 0; /* discard; the response is already queued */
        return MHD_YES;
    }
    req_state *rq = *req_cls;
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        gpa_conn_body_bytes(rq->guard, n);
        if (rq->too_big) {
            /* libmicrohttpd 0.9.75 cannot queue a response in the middle of a body, so an
             * over-cap chunked body is discarded (never stored) for a bounded distance in
             * the hope it ends and can be told 413; past that the connection is cut. */
            rq->discarded += n;
            if (rq->discarded > OVER_CAP_DISCARD) {
                gpa_metrics_http_error(413);
                gpa_log_msg(GPA_LOG_INFO, "request body too large; connection closed",
                            "chunked body kept coming after passing --max-body");
                return MHD_NO;
            }
            return MHD_YES;
        }
        if (rq->len + n > st->max_body) {
            rq->too_big = true;
            rq->discarded = rq->len + n - st->max_body;
            free(rq->buf);
            rq->buf = NULL;
            rq->len = rq->cap = 0;
            return MHD_YES;
        }
        if (rq->len + n + 1 > rq->cap) {
            size_t ncap = rq->cap * 2;
            while (ncap < rq->len + n + 1)
                ncap *= 2;
            if (ncap > st->max_body + 1) ncap = st->max_body + 1;
            char *nb = realloc(rq->buf, ncap);
            if (!nb) return MHD_NO;
            rq->buf = nb;
            rq->cap = ncap;
        }
        memcpy(rq->buf + rq->len, upload_data, n);
        rq->len += n;
        return MHD_YES;
    }
    if (rq->answered) return MHD_YES;
    rq->answered = true;
    gpa_conn_answering(rq->guard);
    if (rq->too_big) return too_large(c, st);
    return answer_review(c, st, rq);
}

void gpa_webhook_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                           enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    gpa_tls_uncork(c); /* first: the answer this request corked goes out now */
    gpa_conn_request_done(guard_of(c), toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
    req_state *rq = *req_cls;
    *req_cls = NULL;
    if (!rq || rq == (void *)&answered_early) return;
    gpa_metrics_inflight_add(-1);
    free(rq->buf);
    free(rq);
}
