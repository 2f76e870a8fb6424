/*
 * serve_config.c - flags and GPU_ADMISSION_* environment variables of `serve`.
 *
 * Must never: accept a partially parsed value ("7Mx", "5sec", "12abc") or silently ignore an
 * unknown flag; every error names the flag (or variable) and the value.
 */
#include "serve_config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_budget.h"
#include "gpu_admission/namespace_guard.h"
#include "jsonlog.h"

typedef enum { K_STR, K_UINT, K_SIZE, K_DURATION, K_LEVEL, K_RATE } kind;

typedef struct {
    const char *flag; /* without the leading "--" */
    const char *env;
    kind k;
    size_t off;
    size_t cap; /* K_STR: buffer size */
    unsigned long min, max;
} option;

#define O(f) offsetof(gpa_serve_config, f)
#define S(f) sizeof(((gpa_serve_config *)0)->f)

static const option options[] = {
    {"policies", "GPU_ADMISSION_POLICIES", K_STR, O(policies), S(policies), 0, 0},
    {"tls-cert", "GPU_ADMISSION_TLS_CERT", K_STR, O(tls_cert), S(tls_cert), 0, 0},
    {"tls-key", "GPU_ADMISSION_TLS_KEY", K_STR, O(tls_key), S(tls_key), 0, 0},
    {"cert-dir", "GPU_ADMISSION_CERT_DIR", K_STR, 0, 0, 0, 0}, /* handled specially */
    {"client-ca", "GPU_ADMISSION_CLIENT_CA", K_STR, O(client_ca), S(client_ca), 0, 0},
    {"listen", "GPU_ADMISSION_LISTEN", K_STR, O(listen), S(listen), 0, 0},
    {"metrics-listen", "GPU_ADMISSION_METRICS_LISTEN", K_STR, O(metrics_listen), S(metrics_listen),
     0, 0},
    {"threads", "GPU_ADMISSION_THREADS", K_UINT, O(threads), 0, 1, 256},
    {"max-body", "GPU_ADMISSION_MAX_BODY", K_SIZE, O(max_body), 0, 1024, 1024ul << 20},
    {"shutdown-grace", "GPU_ADMISSION_SHUTDOWN_GRACE", K_DURATION, O(shutdown_grace_ms), 0, 0,
     600000},
    {"reload-interval", "GPU_ADMISSION_RELOAD_INTERVAL", K_DURATION, O(reload_interval_ms), 0, 0,
     86400000},
    {"idle-timeout", "GPU_ADMISSION_IDLE_TIMEOUT", K_DURATION, O(idle_timeout_s), 0, 1000, 3600000},
    {"max-connections", "GPU_ADMISSION_MAX_CONNECTIONS", K_UINT, O(max_connections), 0, 1, 65536},
    {"max-connections-per-ip", "GPU_ADMISSION_MAX_CONNECTIONS_PER_IP", K_UINT,
     O(max_connections_per_ip), 0, 0, 65536},
    {"header-timeout", "GPU_ADMISSION_HEADER_TIMEOUT", K_DURATION, O(header_timeout_ms), 0, 0,
     3600000},
    {"min-body-rate", "GPU_ADMISSION_MIN_BODY_RATE", K_RATE, O(min_body_rate), 0, 0, 1ul << 30},
    {"log-level", "GPU_ADMISSION_LOG_LEVEL", K_LEVEL, O(log_level), 0, 0, 0},
    {"ignore-label-namespaces", "GPU_ADMISSION_IGNORE_LABEL_NAMESPACES", K_STR,
     O(ignore_label_namespaces), S(ignore_label_namespaces), 0, 0},
    {"excluded-namespaces", "GPU_ADMISSION_EXCLUDED_NAMESPACES", K_STR, O(excluded_namespaces),
     S(excluded_namespaces), 0, 0},
    {"excluded-namespace-creators", "GPU_ADMISSION_EXCLUDED_NAMESPACE_CREATORS", K_STR,
     O(excluded_namespace_creators), S(excluded_namespace_creators), 0, 0},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

const char *gpa_serve_usage(void)
{
    return "usage: gpu-admission serve --policies DIR (--cert-dir DIR | --tls-cert FILE "
           "--tls-key FILE) [flags]\n"
           "\n"
           "Every flag also reads the environment variable GPU_ADMISSION_<FLAG> (upper case,\n"
           "dashes as underscores, e.g. GPU_ADMISSION_MAX_BODY); a flag wins over its "
           "variable.\n"
           "\n"
           "  --policies DIR              policy directory (*.yaml, *.yml); required\n"
           "  --tls-cert FILE             serving certificate chain (PEM)\n"
           "  --tls-key FILE              its private key (PEM)\n"
           "  --cert-dir DIR              shorthand for DIR/tls.crt and DIR/tls.key\n"
           "  --client-ca FILE            require client certificates signed by this CA\n"
           "  --listen ADDR               webhook HTTPS address (default :8443; "
           "127.0.0.1:0 = any free port)\n"
           "  --metrics-listen ADDR       plain HTTP /metrics /healthz /readyz (default :9090)\n"
           "  --threads N                 worker threads (default: the CPUs this process "
           "may use:\n"
           "                              affinity mask, capped by the cgroup CPU quota "
           "rounded up)\n"
           "  --max-body SIZE             largest request body (default 7Mi; 512Ki, 7Mi, "
           "1048576)\n"
           "  --shutdown-grace DURATION   keep answering after SIGTERM (default 5s)\n"
           "  --reload-interval DURATION  periodic policy/cert re-check, 0 = off (default 60s)\n"
           "  --idle-timeout DURATION     close connections idle this long (default 120s)\n"
           "  --max-connections N         concurrent connections (default 1024)\n"
           "  --max-connections-per-ip N  per client address, 0 = no limit (default 256);\n"
           "                              at either limit the connection idle longest is\n"
           "                              closed for the new one\n"
           "  --header-timeout DURATION   TLS handshake + request headers must arrive within\n"
           "                              this, 0 = no deadline (default 10s)\n"
           "  --min-body-rate RATE        slowest request body, averaged over 10 s, 0 = no\n"
           "                              minimum (default 1KiB/s; 512/s, 4Ki)\n"
           "  --log-level LEVEL           debug | info | warn | error (default info)\n"
           "  --ignore-label-namespaces LIST  namespaces (comma-separated) allowed to carry\n"
           "                              the gpu-admission.io/ignore label; a Namespace\n"
           "                              review adding it elsewhere is refused (default: none)\n"
           "  --excluded-namespaces LIST  namespaces (comma-separated) the webhook\n"
           "                              configurations leave out by name; a Namespace CREATE\n"
           "                              of one is refused (default: none)...\n"
           "  --excluded-namespace-creators LIST  ...except to these (user:NAME,group:NAME)\n";
}

int gpa_parse_size(size_t *out, const char *s)
{
    if (!s || !isdigit((unsigned char)*s)) return GPA_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return GPA_ERANGE;
    unsigned long long mult = 1;
    static const struct {
        const char *suffix;
        unsigned long long mult;
    } suffixes[] = {
        {"", 1},
        {"B", 1},
        {"Ki", 1ull << 10},
        {"KiB", 1ull << 10},
        {"Mi", 1ull << 20},
        {"MiB", 1ull << 20},
        {"Gi", 1ull << 30},
        {"GiB", 1ull << 30},
        {"k", 1000},
        {"K", 1000},
        {"KB", 1000},
        {"M", 1000000},
        {"MB", 1000000},
        {"G", 1000000000},
        {"GB", 1000000000},
    };
    size_t i;
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (strcmp(end, suffixes[i].suffix) == 0) {
            mult = suffixes[i].mult;
            break;
        }
    if (i == sizeof suffixes / sizeof suffixes[0]) return GPA_EINVAL;
    if (v > SIZE_MAX / mult) return GPA_ERANGE;
    *out = (size_t)(v * mult);
    return GPA_OK;
}

int gpa_parse_duration_ms(unsigned *out, const char *s)
{
    if (!s || !isdigit((unsigned char)*s)) return GPA_EINVAL;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || v < 0) return GPA_ERANGE;
    double mult;
    if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
        mult = 1000;
    else if (strcmp(end, "ms") == 0)
        mult = 1;
    else if (strcmp(end, "m") == 0)
        mult = 60000;
    else if (strcmp(end, "h") == 0)
        mult = 3600000;
    else
        return GPA_EINVAL;
    double ms = v * mult;
    if (ms > (double)UINT_MAX) return GPA_ERANGE;
    *out = (unsigned)(ms + 0.5);
    return GPA_OK;
}

int gpa_parse_rate(unsigned *out, const char *s)
{
    if (!s) return GPA_EINVAL;
    char buf[64];
    size_t n = strlen(s);
    if (n >= sizeof buf) return GPA_EINVAL;
    memcpy(buf, s, n + 1);
    if (n > 2 && strcmp(buf + n - 2, "/s") == 0) buf[n - 2] = '\0';
    size_t v;
    int rc = gpa_parse_size(&v, buf);
    if (rc != GPA_OK) return rc;
    if (v > UINT_MAX) return GPA_ERANGE;
    *out = (unsigned)v;
    return GPA_OK;
}

static int set_value(gpa_serve_config *cfg, const option *o, const char *value, const char *src,
                     gpa_error *err)
{
    char *base = (char *)cfg;
    if (strcmp(o->flag, "cert-dir") == 0) {
        if (!*value) return gpa_fail(err, GPA_EINVAL, "%s: empty directory", src);
        if (snprintf(cfg->tls_cert, sizeof cfg->tls_cert, "%s/tls.crt", value) >=
                (int)sizeof cfg->tls_cert ||
            snprintf(cfg->tls_key, sizeof cfg->tls_key, "%s/tls.key", value) >=
                (int)sizeof cfg->tls_key)
            return gpa_fail(err, GPA_EINVAL, "%s: path too long", src);
        return GPA_OK;
    }
    switch (o->k) {
    case K_STR:
        if (strlen(value) >= o->cap) return gpa_fail(err, GPA_EINVAL, "%s: value too long", src);
        memcpy(base + o->off, value, strlen(value) + 1);
        return GPA_OK;
    case K_UINT: {
        char *end;
        errno = 0;
        unsigned long v = isdigit((unsigned char)*value) ? strtoul(value, &end, 10) : 0;
        if (!isdigit((unsigned char)*value) || *end || errno || v < o->min || v > o->max)
            return gpa_fail(err, GPA_EINVAL, "%s: '%s' is not a whole number in %lu..%lu", src,
                            value, o->min, o->max);
        *(unsigned *)(base + o->off) = (unsigned)v;
        return GPA_OK;
    }
    case K_SIZE: {
        size_t v;
        if (gpa_parse_size(&v, value) != GPA_OK || v < o->min || v > o->max)
            return gpa_fail(err, GPA_EINVAL,
                            "%s: '%s' is not a size between 1Ki and 1Gi (e.g. 7Mi, 512Ki, "
                            "1048576)",
                            src, value);
        *(size_t *)(base + o->off) = v;
        return GPA_OK;
    }
    case K_DURATION: {
        unsigned ms;
        if (gpa_parse_duration_ms(&ms, value) != GPA_OK || ms < o->min || ms > o->max)
            return gpa_fail(err, GPA_EINVAL,
                            "%s: '%s' is not a duration between %lums and %lus (e.g. 5s, "
                            "500ms, 2m)",
                            src, value, o->min, o->max / 1000);
        /* Deadlines are checked once a second: a shorter one would not mean what it says. */
        if (o->off == O(header_timeout_ms) && ms != 0 && ms < 1000)
            return gpa_fail(err, GPA_EINVAL,
                            "%s: '%s' is shorter than 1s (0 turns the deadline off)", src, value);
        if (o->off == O(idle_timeout_s)) ms = (ms + 999) / 1000;
        *(unsigned *)(base + o->off) = ms;
        return GPA_OK;
    }
    case K_RATE: {
        unsigned v;
        if (gpa_parse_rate(&v, value) != GPA_OK || v > o->max)
            return gpa_fail(err, GPA_EINVAL,
                            "%s: '%s' is not a rate up to 1GiB/s (e.g. 1KiB/s, 512/s, 4Ki, 0)", src,
                            value);
        *(unsigned *)(base + o->off) = v;
        return GPA_OK;
    }
    case K_LEVEL: {
        int l = gpa_log_level_parse(value);
        if (l < 0)
            return gpa_fail(err, GPA_EINVAL, "%s: '%s' is not one of debug, info, warn, error", src,
                            value);
        cfg->log_level = l;
        return GPA_OK;
    }
    }
    return gpa_fail(err, GPA_EINVAL, "%s: unsupported", src);
}

static const char *real_getenv(const char *n)
{
    return getenv(n);
}

int gpa_serve_config_parse(gpa_serve_config *cfg, int argc, char **argv, gpa_getenv_fn env,
                           gpa_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    strcpy(cfg->listen, ":8443");
    strcpy(cfg->metrics_listen, ":9090");
    cfg->threads = 0; /* below --threads' minimum: "not given", default applied after parsing */
    cfg->max_body = 7u << 20;
    cfg->shutdown_grace_ms = 5000;
    cfg->reload_interval_ms = 60000;
    cfg->idle_timeout_s = 120;
    cfg->max_connections = 1024;
    cfg->max_connections_per_ip = 256;
    cfg->header_timeout_ms = 10000;
    cfg->min_body_rate = 1024;
    cfg->log_level = GPA_LOG_INFO;
    if (!env) env = real_getenv;

    /* Environment first (cert-dir before tls-cert/tls-key so the explicit files win). */
    static const char *const order[] = {"cert-dir"};
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < N_OPTIONS; i++) {
            bool is_dir = strcmp(options[i].flag, order[0]) == 0;
            if ((pass == 0) != is_dir) continue;
            const char *v = env(options[i].env);
            if (!v) continue;
            char src[128];
            snprintf(src, sizeof src, "environment variable %s", options[i].env);
            int rc = set_value(cfg, &options[i], v, src, err);
            if (rc) return rc;
        }

    /* Then flags, in order, so a later flag wins over an earlier one. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cfg->help = true;
            return GPA_OK;
        }
        if (strncmp(a, "--", 2) != 0)
            return gpa_fail(err, GPA_EINVAL, "unexpected argument '%s' (flags start with --)", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const option *o = NULL;
        for (size_t k = 0; k < N_OPTIONS; k++)
            if (strlen(options[k].flag) == nlen && strncmp(options[k].flag, name, nlen) == 0)
                o = &options[k];
        if (!o)
            return gpa_fail(err, GPA_EINVAL, "unknown flag '%.*s' (see --help)", (int)nlen + 2, a);
        const char *value;
        if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc) return gpa_fail(err, GPA_EINVAL, "flag --%s needs a value", o->flag);
            value = argv[++i];
        }
        char src[64];
        snprintf(src, sizeof src, "--%s", o->flag);
        int rc = set_value(cfg, o, value, src, err);
        if (rc) return rc;
    }

    if (cfg->threads) {
        cfg->threads_source = "flag";
    } else {
        /* The CPUs the container may use (affinity, cgroup quota), not every CPU of the node. */
        gpa_cpu_source source;
        cfg->threads = gpa_cpu_budget(&source, NULL, NULL);
        cfg->threads_source = gpa_cpu_source_name(source);
    }
    if (!cfg->policies[0])
        return gpa_fail(err, GPA_EINVAL, "--policies DIR is required (or GPU_ADMISSION_POLICIES)");
    if (!cfg->tls_cert[0] || !cfg->tls_key[0])
        return gpa_fail(err, GPA_EINVAL,
                        "a serving certificate is required: --cert-dir DIR, or both "
                        "--tls-cert FILE and --tls-key FILE");
    if (!cfg->listen[0] || !cfg->metrics_listen[0])
        return gpa_fail(err, GPA_EINVAL, "--listen and --metrics-listen must not be empty");
    gpa_ns_guard g;
    int grc = gpa_ns_guard_parse(&g, cfg->ignore_label_namespaces, err);
    if (grc == GPA_OK)
        grc = gpa_ns_guard_parse_excluded(&g, cfg->excluded_namespaces,
                                          cfg->excluded_namespace_creators, err);
    gpa_ns_guard_free(&g);
    return grc;
}
