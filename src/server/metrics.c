/*
 * metrics.c - process-wide Prometheus counters (see metrics.h).
 *
 * Must never: lock on the request path or grow label sets past GPA_METRICS_LABEL_CAP. The
 * only lock guards the policy revision string, which changes on reload, not per request.
 */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/common.h"
#include "gpu_admission/strbuf.h"
#include "jsonlog.h"

static const char *const op_names[] = {"CREATE", "UPDATE", "DELETE", "CONNECT", "unknown"};
static const char *const result_names[] = {"allowed", "mutated", "denied",
                                           "warned",  "skipped", "error"};
#define N_OPS     (sizeof op_names / sizeof op_names[0])
#define N_RESULTS (sizeof result_names / sizeof result_names[0])
/* Up to 1 s the buckets resolve the normal case; 2.5 .. 60 s exist so that a p99 can be
 * compared with the API server's per-call timeout (1..30 s, the chart's default 5 s):
 * histogram_quantile never returns more than the highest finite bound, so an alert "p99
 * over T" can only fire if some bound lies above T. */
static const double bucket_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                       0.1,    1,       2.5,    5,     10,     30,    60};
static const char *const bucket_labels[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.0025",
                                            "0.005",  "0.01",    "0.025",  "0.1",   "1",
                                            "2.5",    "5",       "10",     "30",    "60"};
#define N_BUCKETS (sizeof bucket_bounds / sizeof bucket_bounds[0])

typedef struct {
    atomic_ulong buckets[N_BUCKETS]; /* non-cumulative; summed when rendered */
    atomic_ulong count;
    atomic_ullong sum_ns;
} histogram;

/* Interned label values: open addressing over a fixed table, slots claimed with CAS, never
 * freed (a rule that disappears on reload keeps its counter, as Prometheus expects). */
typedef struct {
    _Atomic(char *) name;
    atomic_ulong count;
} label_slot;

typedef struct {
    label_slot slots[GPA_METRICS_LABEL_CAP * 2];
    atomic_uint used;
    atomic_ulong other;
} label_table;

static struct {
    atomic_ulong requests[2][N_OPS][N_RESULTS];
    /* by kind: slots claimed in order by CAS; [CAP] = "_other", [CAP + 1] = "unknown" */
    _Atomic(char *) kinds[GPA_METRICS_KIND_CAP];
    atomic_ulong by_kind[GPA_METRICS_KIND_CAP + 2][2][N_RESULTS];
    histogram duration[2];
    label_table rules;
    label_table reasons;
    atomic_ulong http_errors[200]; /* 400..599 */
    atomic_long inflight;
    atomic_ulong policy_reloads[2]; /* [0] failure, [1] success */
    atomic_ulong cert_reloads[2];
    atomic_llong cert_expiry;
    atomic_ulong conn_evicted[GPA_CONN_LIMIT_N];
    atomic_ulong conn_refused[GPA_CONN_LIMIT_N];
    atomic_ulong conn_closed[GPA_CONN_CLOSE_N];
    atomic_long open_conns;
    pthread_mutex_t revision_lock;
    char revision[80];
} m = {.revision_lock = PTHREAD_MUTEX_INITIALIZER};

static size_t index_of(const char *const *names, size_t n, const char *s, size_t dflt)
{
    if (s)
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], s) == 0) return i;
    return dflt;
}

void gpa_metrics_request(gpa_hook hook, const char *operation, const char *result, double seconds)
{
    int h = hook == GPA_HOOK_VALIDATE;
    size_t op = index_of(op_names, N_OPS, operation, N_OPS - 1);
    size_t res = index_of(result_names, N_RESULTS, result, N_RESULTS - 1);
    atomic_fetch_add_explicit(&m.requests[h][op][res], 1, memory_order_relaxed);
    histogram *hg = &m.duration[h];
    size_t b = 0;
    while (b < N_BUCKETS && seconds > bucket_bounds[b])
        b++;
    if (b < N_BUCKETS) atomic_fetch_add_explicit(&hg->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&hg->count, 1, memory_order_relaxed);
    if (seconds < 0) seconds = 0;
    atomic_fetch_add_explicit(&hg->sum_ns, (unsigned long long)(seconds * 1e9),
                              memory_order_relaxed);
}

/* The kind's slot: a scan, not a hash, because a cluster sends a handful of kinds and "Pod"
 * takes the first slot the first time it is seen. */
static size_t kind_slot(const char *kind)
{
    if (!kind || !*kind) return GPA_METRICS_KIND_CAP + 1;
    for (size_t i = 0; i < GPA_METRICS_KIND_CAP; i++) {
        char *cur = atomic_load_explicit(&m.kinds[i], memory_order_acquire);
        if (!cur) {
            char *mine = strdup(kind);
            if (!mine) return GPA_METRICS_KIND_CAP;
            char *expected = NULL;
            if (atomic_compare_exchange_strong(&m.kinds[i], &expected, mine)) return i;
            free(mine);
            cur = expected;
        }
        if (strcmp(cur, kind) == 0) return i;
    }
    return GPA_METRICS_KIND_CAP;
}

void gpa_metrics_request_kind(gpa_hook hook, const char *kind, const char *result)
{
    int h = hook == GPA_HOOK_VALIDATE;
    size_t res = index_of(result_names, N_RESULTS, result, N_RESULTS - 1);
    atomic_fetch_add_explicit(&m.by_kind[kind_slot(kind)][h][res], 1, memory_order_relaxed);
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void label_inc(label_table *t, const char *name)
{
    if (!name || !*name) return;
    size_t cap = sizeof t->slots / sizeof t->slots[0];
    size_t i = fnv1a(name) % cap;
    for (size_t probe = 0; probe < cap; probe++, i = (i + 1) % cap) {
        char *cur = atomic_load_explicit(&t->slots[i].name, memory_order_acquire);
        if (!cur) {
            /* The table is kept at most half full so probes stay short. */
            if (atomic_load(&t->used) >= GPA_METRICS_LABEL_CAP) break;
            char *mine = strdup(name);
            if (!mine) break;
            char *expected = NULL;
            if (atomic_compare_exchange_strong(&t->slots[i].name, &expected, mine)) {
                atomic_fetch_add(&t->used, 1);
                atomic_fetch_add_explicit(&t->slots[i].count, 1, memory_order_relaxed);
                return;
            }
            free(mine);
            cur = expected;
        }
        if (strcmp(cur, name) == 0) {
            atomic_fetch_add_explicit(&t->slots[i].count, 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&t->other, 1, memory_order_relaxed);
}

void gpa_metrics_rule_match(const char *rule)
{
    label_inc(&m.rules, rule);
}

void gpa_metrics_denial(const char *reason)
{
    label_inc(&m.reasons, reason ? reason : "unspecified");
}

void gpa_metrics_http_error(int code)
{
    if (code >= 400 && code <= 599)
        atomic_fetch_add_explicit(&m.http_errors[code - 400], 1, memory_order_relaxed);
}

void gpa_metrics_inflight_add(int delta)
{
    atomic_fetch_add_explicit(&m.inflight, delta, memory_order_relaxed);
}

long gpa_metrics_inflight(void)
{
    return atomic_load(&m.inflight);
}

static const char *const limit_names[GPA_CONN_LIMIT_N] = {"global", "per-ip"};
static const char *const close_names[GPA_CONN_CLOSE_N] = {"header-timeout", "body-too-slow",
                                                          "lingering-close"};

const char *gpa_metrics_conn_limit_name(gpa_conn_limit limit)
{
    return (unsigned)limit < GPA_CONN_LIMIT_N ? limit_names[limit] : "unknown";
}

const char *gpa_metrics_conn_close_name(gpa_conn_close reason)
{
    return (unsigned)reason < GPA_CONN_CLOSE_N ? close_names[reason] : "unknown";
}

void gpa_metrics_conn_evicted(gpa_conn_limit limit)
{
    if ((unsigned)limit < GPA_CONN_LIMIT_N)
        atomic_fetch_add_explicit(&m.conn_evicted[limit], 1, memory_order_relaxed);
}

void gpa_metrics_conn_refused(gpa_conn_limit limit)
{
    if ((unsigned)limit < GPA_CONN_LIMIT_N)
        atomic_fetch_add_explicit(&m.conn_refused[limit], 1, memory_order_relaxed);
}

void gpa_metrics_conn_closed(gpa_conn_close reason)
{
    if ((unsigned)reason < GPA_CONN_CLOSE_N)
        atomic_fetch_add_explicit(&m.conn_closed[reason], 1, memory_order_relaxed);
}

void gpa_metrics_open_conns_add(int delta)
{
    atomic_fetch_add_explicit(&m.open_conns, delta, memory_order_relaxed);
}

void gpa_metrics_policy_reload(bool ok)
{
    atomic_fetch_add(&m.policy_reloads[ok], 1);
}

void gpa_metrics_set_policy_revision(const char *revision)
{
    pthread_mutex_lock(&m.revision_lock);
    snprintf(m.revision, sizeof m.revision, "%s", revision ? revision : "");
    pthread_mutex_unlock(&m.revision_lock);
}

void gpa_metrics_cert_reload(bool ok)
{
    atomic_fetch_add(&m.cert_reloads[ok], 1);
}

void gpa_metrics_set_cert_expiry(time_t not_after)
{
    atomic_store(&m.cert_expiry, (long long)not_after);
}

/* ---- rendering (GET /metrics only) ---- */

/* Prometheus label values escape backslash, quote and newline. */
static void out_label_value(gpa_sb *b, const char *s)
{
    char tmp[512];
    size_t n = 0;
    for (; *s && n < sizeof tmp - 3; s++) {
        if (*s == '\\' || *s == '"') {
            tmp[n++] = '\\';
            tmp[n++] = *s;
        } else if (*s == '\n') {
            tmp[n++] = '\\';
            tmp[n++] = 'n';
        } else {
            tmp[n++] = *s;
        }
    }
    tmp[n] = '\0';
    gpa_sb_printf(b, "%s", tmp);
}

static void render_labels(gpa_sb *b, const char *metric, const char *label, label_table *t)
{
    size_t cap = sizeof t->slots / sizeof t->slots[0];
    for (size_t i = 0; i < cap; i++) {
        char *name = atomic_load_explicit(&t->slots[i].name, memory_order_acquire);
        if (!name) continue;
        gpa_sb_printf(b, "%s{%s=\"", metric, label);
        out_label_value(b, name);
        gpa_sb_printf(b, "\"} %lu\n",
                      atomic_load_explicit(&t->slots[i].count, memory_order_relaxed));
    }
    unsigned long other = atomic_load(&t->other);
    if (other) gpa_sb_printf(b, "%s{%s=\"_other\"} %lu\n", metric, label, other);
}

char *gpa_metrics_render(size_t *len_out)
{
    gpa_sb b = {0};
    static const char *const hooks[] = {"mutate", "validate"};

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_requests_total Admission requests answered, by webhook, operation "
        "and result.\n# TYPE gpu_admission_requests_total counter\n");
    for (int h = 0; h < 2; h++)
        for (size_t o = 0; o < N_OPS; o++)
            for (size_t r = 0; r < N_RESULTS; r++) {
                unsigned long v = atomic_load(&m.requests[h][o][r]);
                if (v)
                    gpa_sb_printf(&b,
                                  "gpu_admission_requests_total"
                                  "{webhook=\"%s\",operation=\"%s\",result=\"%s\"} %lu\n",
                                  hooks[h], op_names[o], result_names[r], v);
            }

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_requests_by_kind_total Admission requests answered, by webhook, "
        "object kind and result (at most %d kinds, the rest under kind=\"_other\").\n"
        "# TYPE gpu_admission_requests_by_kind_total counter\n",
        GPA_METRICS_KIND_CAP);
    for (size_t k = 0; k < GPA_METRICS_KIND_CAP + 2; k++) {
        const char *kn = k == GPA_METRICS_KIND_CAP       ? "_other"
                         : k == GPA_METRICS_KIND_CAP + 1 ? "unknown"
                                                         : atomic_load(&m.kinds[k]);
        if (!kn) continue;
        for (int h = 0; h < 2; h++)
            for (size_t r = 0; r < N_RESULTS; r++) {
                unsigned long v = atomic_load(&m.by_kind[k][h][r]);
                if (!v) continue;
                gpa_sb_printf(&b, "gpu_admission_requests_by_kind_total{webhook=\"%s\",kind=\"",
                              hooks[h]);
                out_label_value(&b, kn);
                gpa_sb_printf(&b, "\",result=\"%s\"} %lu\n", result_names[r], v);
            }
    }

    gpa_sb_printf(
        &b, "# HELP gpu_admission_request_duration_seconds Time from request headers to response "
            "queued.\n# TYPE gpu_admission_request_duration_seconds histogram\n");
    for (int h = 0; h < 2; h++) {
        histogram *hg = &m.duration[h];
        unsigned long cum = 0;
        for (size_t i = 0; i < N_BUCKETS; i++) {
            cum += atomic_load(&hg->buckets[i]);
            gpa_sb_printf(
                &b, "gpu_admission_request_duration_seconds_bucket{webhook=\"%s\",le=\"%s\"} %lu\n",
                hooks[h], bucket_labels[i], cum);
        }
        unsigned long count = atomic_load(&hg->count);
        gpa_sb_printf(
            &b, "gpu_admission_request_duration_seconds_bucket{webhook=\"%s\",le=\"+Inf\"} %lu\n",
            hooks[h], count);
        gpa_sb_printf(&b, "gpu_admission_request_duration_seconds_sum{webhook=\"%s\"} %.9f\n",
                      hooks[h], (double)atomic_load(&hg->sum_ns) / 1e9);
        gpa_sb_printf(&b, "gpu_admission_request_duration_seconds_count{webhook=\"%s\"} %lu\n",
                      hooks[h], count);
    }

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_rule_matches_total Requests matched by each policy rule (at most %d "
        "rule names, the rest as _other).\n# TYPE gpu_admission_rule_matches_total counter\n",
        GPA_METRICS_LABEL_CAP);
    render_labels(&b, "gpu_admission_rule_matches_total", "rule", &m.rules);

    gpa_sb_printf(&b, "# HELP gpu_admission_denials_total Denied requests by reason.\n"
                      "# TYPE gpu_admission_denials_total counter\n");
    render_labels(&b, "gpu_admission_denials_total", "reason", &m.reasons);

    gpa_sb_printf(&b, "# HELP gpu_admission_policy_reloads_total Policy set reload attempts.\n"
                      "# TYPE gpu_admission_policy_reloads_total counter\n");
    gpa_sb_printf(&b, "gpu_admission_policy_reloads_total{result=\"success\"} %lu\n",
                  atomic_load(&m.policy_reloads[1]));
    gpa_sb_printf(&b, "gpu_admission_policy_reloads_total{result=\"failure\"} %lu\n",
                  atomic_load(&m.policy_reloads[0]));

    pthread_mutex_lock(&m.revision_lock);
    char rev[sizeof m.revision];
    memcpy(rev, m.revision, sizeof rev);
    pthread_mutex_unlock(&m.revision_lock);
    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_policy_revision_info The revision of the policy set being served.\n"
        "# TYPE gpu_admission_policy_revision_info gauge\n");
    if (rev[0]) gpa_sb_printf(&b, "gpu_admission_policy_revision_info{revision=\"%s\"} 1\n", rev);

    gpa_sb_printf(&b,
                  "# HELP gpu_admission_cert_reloads_total Serving certificate reload attempts.\n"
                  "# TYPE gpu_admission_cert_reloads_total counter\n");
    gpa_sb_printf(&b, "gpu_admission_cert_reloads_total{result=\"success\"} %lu\n",
                  atomic_load(&m.cert_reloads[1]));
    gpa_sb_printf(&b, "gpu_admission_cert_reloads_total{result=\"failure\"} %lu\n",
                  atomic_load(&m.cert_reloads[0]));

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_cert_expiry_timestamp_seconds notAfter of the serving certificate.\n"
        "# TYPE gpu_admission_cert_expiry_timestamp_seconds gauge\n");
    gpa_sb_printf(&b, "gpu_admission_cert_expiry_timestamp_seconds %lld\n",
                  atomic_load(&m.cert_expiry));

    gpa_sb_printf(
        &b, "# HELP gpu_admission_inflight_requests Webhook requests being received or answered.\n"
            "# TYPE gpu_admission_inflight_requests gauge\n");
    gpa_sb_printf(&b, "gpu_admission_inflight_requests %ld\n", atomic_load(&m.inflight));

    gpa_sb_printf(&b,
                  "# HELP gpu_admission_open_connections Open connections on the webhook (HTTPS) "
                  "port.\n# TYPE gpu_admission_open_connections gauge\n");
    gpa_sb_printf(&b, "gpu_admission_open_connections %ld\n", atomic_load(&m.open_conns));
    gpa_sb_printf(
        &b, "# HELP gpu_admission_connections_evicted_total Idle webhook connections closed to "
            "make room for a new one, by the limit that was reached.\n"
            "# TYPE gpu_admission_connections_evicted_total counter\n");
    for (int i = 0; i < GPA_CONN_LIMIT_N; i++)
        gpa_sb_printf(&b, "gpu_admission_connections_evicted_total{limit=\"%s\"} %lu\n",
                      limit_names[i], atomic_load(&m.conn_evicted[i]));
    gpa_sb_printf(&b,
                  "# HELP gpu_admission_connections_refused_total New webhook connections refused "
                  "because every connection at the limit was mid-request.\n"
                  "# TYPE gpu_admission_connections_refused_total counter\n");
    for (int i = 0; i < GPA_CONN_LIMIT_N; i++)
        gpa_sb_printf(&b, "gpu_admission_connections_refused_total{limit=\"%s\"} %lu\n",
                      limit_names[i], atomic_load(&m.conn_refused[i]));
    gpa_sb_printf(
        &b, "# HELP gpu_admission_connections_closed_total Webhook connections the server "
            "closed itself, by reason.\n# TYPE gpu_admission_connections_closed_total counter\n");
    for (int i = 0; i < GPA_CONN_CLOSE_N; i++)
        gpa_sb_printf(&b, "gpu_admission_connections_closed_total{reason=\"%s\"} %lu\n",
                      close_names[i], atomic_load(&m.conn_closed[i]));

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_http_errors_total Error responses the server sent, by status code.\n"
        "# TYPE gpu_admission_http_errors_total counter\n");
    for (int c = 0; c < 200; c++) {
        unsigned long v = atomic_load(&m.http_errors[c]);
        if (v) gpa_sb_printf(&b, "gpu_admission_http_errors_total{code=\"%d\"} %lu\n", c + 400, v);
    }

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_log_lines_dropped_total Log lines dropped because the log queue was "
        "full "
        "(stderr not keeping up).\n# TYPE gpu_admission_log_lines_dropped_total counter\n"
        "gpu_admission_log_lines_dropped_total %lu\n",
        gpa_log_dropped());

    gpa_sb_printf(
        &b,
        "# HELP gpu_admission_build_info Version of the running binary.\n"
        "# TYPE gpu_admission_build_info gauge\ngpu_admission_build_info{version=\"%s\"} 1\n",
        gpa_version());

    size_t len = b.len;
    char *text = gpa_sb_take(&b);
    if (text) *len_out = len;
    return text;
}
