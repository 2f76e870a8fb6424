/*
 * unit_server.c - unit tests of the server's pure parts, no sockets to other processes:
 * flag/env parsing (sizes, durations, precedence), the default thread count (cgroup CPU
 * quota and affinity parsing, a fake cgroup tree in a temporary directory), the JSON log
 * writer (escaping, truncation that keeps every line valid JSON), the metrics registry (label
 * cap, escaping, histogram), and listen-address parsing.
 *
 * Must never: depend on the machine's network beyond binding 127.0.0.1:0.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cpu_budget.h"
#include "jsonlog.h"
#include "listen_socket.h"
#include "metrics.h"
#include "serve_config.h"

static void test_sizes(void)
{
    size_t v = 0;
    CHECK_INT(gpa_parse_size(&v, "7Mi"), GPA_OK);
    CHECK_INT(v, 7u << 20);
    CHECK_INT(gpa_parse_size(&v, "7MiB"), GPA_OK);
    CHECK_INT(v, 7u << 20);
    CHECK_INT(gpa_parse_size(&v, "512Ki"), GPA_OK);
    CHECK_INT(v, 512u << 10);
    CHECK_INT(gpa_parse_size(&v, "1M"), GPA_OK);
    CHECK_INT(v, 1000000);
    CHECK_INT(gpa_parse_size(&v, "1048576"), GPA_OK);
    CHECK_INT(v, 1048576);
    CHECK(gpa_parse_size(&v, "7Mx") != GPA_OK);
    CHECK(gpa_parse_size(&v, "") != GPA_OK);
    CHECK(gpa_parse_size(&v, "-1") != GPA_OK);
    CHECK(gpa_parse_size(&v, " 7Mi") != GPA_OK);
    CHECK(gpa_parse_size(&v, "99999999999999999999Gi") != GPA_OK);
    CHECK(gpa_parse_size(&v, "18446744073709551615Gi") != GPA_OK);

    unsigned ms = 0;
    CHECK_INT(gpa_parse_duration_ms(&ms, "5s"), GPA_OK);
    CHECK_INT(ms, 5000);
    CHECK_INT(gpa_parse_duration_ms(&ms, "500ms"), GPA_OK);
    CHECK_INT(ms, 500);
    CHECK_INT(gpa_parse_duration_ms(&ms, "2m"), GPA_OK);
    CHECK_INT(ms, 120000);
    CHECK_INT(gpa_parse_duration_ms(&ms, "1h"), GPA_OK);
    CHECK_INT(ms, 3600000);
    CHECK_INT(gpa_parse_duration_ms(&ms, "1.5s"), GPA_OK);
    CHECK_INT(ms, 1500);
    CHECK_INT(gpa_parse_duration_ms(&ms, "7"), GPA_OK);
    CHECK_INT(ms, 7000);
    CHECK(gpa_parse_duration_ms(&ms, "5sec") != GPA_OK);
    CHECK(gpa_parse_duration_ms(&ms, "-1s") != GPA_OK);
    CHECK(gpa_parse_duration_ms(&ms, "s") != GPA_OK);
    CHECK(gpa_parse_duration_ms(&ms, "9999999999h") != GPA_OK);
}

/* A fake environment for gpa_serve_config_parse. */
static const char *const *fake_env;
static const char *env_get(const char *name)
{
    for (const char *const *e = fake_env; e && *e; e += 2)
        if (strcmp(e[0], name) == 0) return e[1];
    return NULL;
}

static int parse(gpa_serve_config *c, gpa_error *err, const char *const *env, ...)
{
    char *argv[32] = {"serve"};
    int argc = 1;
    va_list ap;
    va_start(ap, env);
    for (char *a; argc < 31 && (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    fake_env = env;
    return gpa_serve_config_parse(c, argc, argv, env_get, err);
}

/* Reads "QUOTA PERIOD" (v2 cpu.max) or QUOTA then PERIOD (v1 files) as ceil(quota/period)
 * CPUs, 0 when unlimited or unreadable. */
static long long quota_in(const char *dir, bool v2)
{
    char f1[4300], f2[4300], word[32] = "";
    long long q = -1, per = 0;
    if (v2) {
        snprintf(f1, sizeof f1, "%s/cpu.max", dir);
        FILE *f = fopen(f1, "r");
        if (!f) return 0;
        if (fscanf(f, "%31s %lld", word, &per) == 2 && strcmp(word, "max") != 0) q = atoll(word);
        fclose(f);
    } else {
        snprintf(f1, sizeof f1, "%s/cpu.cfs_quota_us", dir);
        snprintf(f2, sizeof f2, "%s/cpu.cfs_period_us", dir);
        FILE *a = fopen(f1, "r"), *b = fopen(f2, "r");
        if (!a || !b || fscanf(a, "%lld", &q) != 1 || fscanf(b, "%lld", &per) != 1) q = -1;
        if (a) fclose(a);
        if (b) fclose(b);
    }
    return q > 0 && per > 0 ? (q + per - 1) / per : 0;
}

/* The test's own reading of this process's cgroup CPU quota (v2 and the v1 cpu controller,
 * every ancestor), written apart from cpu_budget.c so one shared mistake cannot hide.
 * 0 = no quota. */
static long long own_quota_cpus(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[4096];
    long long best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        char ctl[300];
        snprintf(ctl, sizeof ctl, ",%s,", c1 + 1);
        bool v2 = strcmp(line, "0") == 0 && c1[1] == '\0';
        if (!v2 && !strstr(ctl, ",cpu,")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s", c2 + 1);
        static const char *const v1_bases[] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"};
        for (;;) {
            for (int i = 0; i < (v2 ? 1 : 2); i++) {
                char dir[4200];
                snprintf(dir, sizeof dir, "%s%s", v2 ? "/sys/fs/cgroup" : v1_bases[i],
                         strcmp(path, "/") == 0 ? "" : path);
                long long n = quota_in(dir, v2);
                if (n > 0 && (best == 0 || n < best)) best = n;
            }
            char *slash = strrchr(path, '/');
            if (!slash || strcmp(path, "/") == 0) break;
            if (slash == path)
                path[1] = '\0';
            else
                *slash = '\0';
        }
    }
    fclose(f);
    return best;
}

/* What `serve` should pick without --threads: the affinity mask, capped by the quota. */
static long expected_default_threads(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : sysconf(_SC_NPROCESSORS_ONLN);
    long long q = own_quota_cpus();
    if (q > 0 && q < n) n = (long)q;
    return n < 1 ? 1 : n > 256 ? 256 : n;
}

/* Pins this process to the first `want` CPUs of `all`; false if it has fewer. */
static bool pin(const cpu_set_t *all, int want)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    int have = 0;
    for (int i = 0; i < CPU_SETSIZE && have < want; i++)
        if (CPU_ISSET(i, all)) {
            CPU_SET(i, &set);
            have++;
        }
    return have == want && sched_setaffinity(0, sizeof set, &set) == 0;
}

static void test_config(void)
{
    static gpa_serve_config c;
    gpa_error err = {0};
    static const char *const none[] = {NULL};
    CHECK_INT(parse(&c, &err, none, "--policies", "p", "--cert-dir", "/certs", NULL), GPA_OK);
    CHECK_STR(c.tls_cert, "/certs/tls.crt");
    CHECK_STR(c.tls_key, "/certs/tls.key");
    CHECK_STR(c.listen, ":8443");
    CHECK_STR(c.metrics_listen, ":9090");
    CHECK_INT(c.max_body, 7u << 20);
    CHECK_INT(c.shutdown_grace_ms, 5000);
    CHECK_INT(c.reload_interval_ms, 60000);
    CHECK_INT(c.idle_timeout_s, 120);
    CHECK_INT(c.threads, expected_default_threads());
    /* A static-CPU-manager pod: pinned to one CPU, the default is one thread whatever
     * sysconf() says. */
    cpu_set_t all;
    CHECK_INT(sched_getaffinity(0, sizeof all, &all), 0);
    if (CPU_COUNT(&all) >= 2) {
        CHECK(pin(&all, 1));
        CHECK_INT(parse(&c, &err, none, "--policies", "p", "--cert-dir", "/c", NULL), GPA_OK);
        CHECK_INT(c.threads, 1);
        CHECK_STR(c.threads_source, "affinity");
        CHECK(pin(&all, 2));
        CHECK_INT(parse(&c, &err, none, "--policies", "p", "--cert-dir", "/c", NULL), GPA_OK);
        CHECK_INT(c.threads, expected_default_threads());
        CHECK(c.threads <= 2);
        /* An explicit value still wins over the pinned default. */
        CHECK(pin(&all, 1));
        CHECK_INT(
            parse(&c, &err, none, "--policies", "p", "--cert-dir", "/c", "--threads", "7", NULL),
            GPA_OK);
        CHECK_INT(c.threads, 7);
        CHECK_STR(c.threads_source, "flag");
        CHECK_INT(sched_setaffinity(0, sizeof all, &all), 0);
    } else {
        printf("SKIP: affinity pinning needs 2 CPUs, this machine offers %d\n", CPU_COUNT(&all));
    }
    CHECK_INT(c.log_level, GPA_LOG_INFO);

    static const char *const env[] = {"GPU_ADMISSION_POLICIES",
                                      "/env/pol",
                                      "GPU_ADMISSION_MAX_BODY",
                                      "64Ki",
                                      "GPU_ADMISSION_CERT_DIR",
                                      "/env/certs",
                                      "GPU_ADMISSION_TLS_KEY",
                                      "/env/other.key",
                                      "GPU_ADMISSION_LOG_LEVEL",
                                      "debug",
                                      NULL};
    CHECK_INT(parse(&c, &err, env, NULL), GPA_OK);
    CHECK_STR(c.policies, "/env/pol");
    CHECK_INT(c.max_body, 65536);
    CHECK_STR(c.tls_cert, "/env/certs/tls.crt");
    CHECK_STR(c.tls_key, "/env/other.key"); /* explicit file beats the directory */
    CHECK_INT(c.log_level, GPA_LOG_DEBUG);
    CHECK_INT(parse(&c, &err, env, "--max-body=1Mi", "--policies", "/flag/pol", NULL), GPA_OK);
    CHECK_INT(c.max_body, 1u << 20);
    CHECK_STR(c.policies, "/flag/pol");

    CHECK_INT(parse(&c, &err, env, "--nope", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "--nope") != NULL);
    CHECK_INT(parse(&c, &err, env, "--threads", "0", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "--threads") != NULL);
    CHECK_INT(parse(&c, &err, env, "--threads", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "needs a value") != NULL);
    CHECK_INT(parse(&c, &err, env, "--idle-timeout", "10ms", NULL), GPA_EINVAL);
    /* The connection deadlines: defaults, rates with and without "/s", off, and refusals. */
    CHECK_INT(parse(&c, &err, env, NULL), GPA_OK);
    CHECK_INT(c.header_timeout_ms, 10000);
    CHECK_INT(c.min_body_rate, 1024);
    CHECK_INT(parse(&c, &err, env, "--header-timeout", "3s", "--min-body-rate", "4KiB/s", NULL),
              GPA_OK);
    CHECK_INT(c.header_timeout_ms, 3000);
    CHECK_INT(c.min_body_rate, 4096);
    CHECK_INT(parse(&c, &err, env, "--header-timeout=0", "--min-body-rate=512/s", NULL), GPA_OK);
    CHECK_INT(c.header_timeout_ms, 0);
    CHECK_INT(c.min_body_rate, 512);
    CHECK_INT(parse(&c, &err, env, "--min-body-rate", "0", NULL), GPA_OK);
    CHECK_INT(c.min_body_rate, 0);
    CHECK_INT(parse(&c, &err, env, "--header-timeout", "500ms", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "--header-timeout") != NULL);
    CHECK_INT(parse(&c, &err, env, "--min-body-rate", "1KiB/m", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "--min-body-rate") != NULL);
    CHECK_INT(parse(&c, &err, env, "--min-body-rate", "2Gi", NULL), GPA_EINVAL);
    CHECK_INT(parse(&c, &err, none, "--cert-dir", "/c", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "--policies") != NULL);
    CHECK_INT(parse(&c, &err, none, "--policies", "p", NULL), GPA_EINVAL);
    static const char *const bad_env[] = {"GPU_ADMISSION_SHUTDOWN_GRACE", "soon", NULL};
    CHECK_INT(parse(&c, &err, bad_env, "--policies", "p", "--cert-dir", "c", NULL), GPA_EINVAL);
    CHECK(strstr(err.message, "GPU_ADMISSION_SHUTDOWN_GRACE") != NULL);
    CHECK_INT(parse(&c, &err, none, "--help", NULL), GPA_OK);
    CHECK(c.help);
}

/* Captures log lines through a temporary file. */
static char *capture(void (*fn)(void))
{
    FILE *f = tmpfile();
    if (!f) return NULL;
    gpa_log_set_fd(fileno(f));
    fn();
    gpa_log_set_fd(2);
    fflush(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) buf[0] = '\0';
    fclose(f);
    return buf;
}

static void log_escapes(void)
{
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO, "m");
    gpa_log_str(&l, "s", "a\"b\\c\nd\te\x01\xc3\xa9");
    gpa_log_str(&l, "n", NULL);
    gpa_log_int(&l, "i", -42);
    gpa_log_bool(&l, "b", true);
    gpa_log_double(&l, "d", 1.23456, 3);
    gpa_log_end(&l);
}

static char big[9000];
static void log_truncated(void)
{
    memset(big, '"', sizeof big - 1); /* every byte needs an escape */
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_WARN, "big");
    gpa_log_str(&l, "first", "kept");
    gpa_log_str(&l, "huge", big);
    gpa_log_int(&l, "after", 1);
    gpa_log_end(&l);
}

static char utf8[9001];
static void log_truncated_utf8(void)
{
    for (size_t i = 0; i + 2 <= sizeof utf8 - 1; i += 2)
        memcpy(utf8 + i, "\xc3\xa9", 2); /* "é" x 4500: the cut falls inside a plain run */
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO, "utf8");
    gpa_log_str(&l, "v", utf8);
    gpa_log_end(&l);
}

/* Minimal UTF-8 well-formedness check (no overlong/surrogate checks needed here). */
static bool valid_utf8(const unsigned char *p)
{
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : 3;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80) return false;
    }
    return true;
}

/* gpa_log_str_max and gpa_log_strs: the bounded user and groups of the admission line. */
static void log_bounded(void)
{
    static char longname[600];
    memset(longname, 'u', sizeof longname - 1);
    memcpy(longname + 250, "\xc3\xa9\xc3\xa9", 4); /* the 256-byte cut falls inside an "é" */
    const char *groups[] = {"dev", "a\"b", NULL, longname};
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO, "who");
    gpa_log_str_max(&l, "user", longname, 256);
    gpa_log_str_max(&l, "short", "alice", 256);
    gpa_log_str_max(&l, "none", NULL, 256);
    gpa_log_strs(&l, "groups", groups, 4, 8);
    gpa_log_strs(&l, "empty", groups, 0, 8);
    gpa_log_end(&l);
}

static void log_groups_overflow(void)
{
    static char g[400];
    memset(g, 'g', sizeof g - 1);
    const char *many[16];
    for (int i = 0; i < 16; i++)
        many[i] = g;
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO, "full");
    gpa_log_str(&l, "decision", "denied");
    gpa_log_strs(&l, "groups", many, 16, 400); /* 16 x 400 > the 4 KiB line */
    gpa_log_int(&l, "after", 7);
    gpa_log_end(&l);
}

static void test_log_bounded(void)
{
    char *out = capture(log_bounded);
    CHECK(out != NULL);
    const char *u = out ? strstr(out, "\"user\":\"") : NULL;
    CHECK(u != NULL);
    if (u) {
        u += 8;
        const char *end = strchr(u, '"');
        /* 250 'u' then the cut backs off the half "é" at byte 253: 250 + "é" (2) + "..." */
        CHECK(end && end - u == 255);
        CHECK(end && strncmp(end - 3, "...", 3) == 0);
    }
    CHECK(out && valid_utf8((const unsigned char *)out));
    CHECK(out && strstr(out, "\"short\":\"alice\",\"none\":null,") != NULL);
    CHECK(out && strstr(out, "\"groups\":[\"dev\",\"a\\\"b\",\"\",\"uuuuu...\"],"
                             "\"empty\":[]}") != NULL);
    free(out);

    out = capture(log_groups_overflow);
    CHECK(out && strstr(out, "\"decision\":\"denied\"") != NULL);
    CHECK(out && strstr(out, "\"groups\"") == NULL); /* all or nothing */
    CHECK(out && strstr(out, "\"truncated\":true") != NULL);
    CHECK(out && strlen(out) <= 4096);
    free(out);
}

static void log_filtered(void)
{
    gpa_log_set_level(GPA_LOG_WARN);
    gpa_log_msg(GPA_LOG_INFO, "hidden", NULL);
    gpa_log_msg(GPA_LOG_ERROR, "shown", "why");
    gpa_log_set_level(GPA_LOG_INFO);
}

static void test_log(void)
{
    char *out = capture(log_escapes);
    CHECK(out && strncmp(out, "{\"ts\":\"", 7) == 0);
    CHECK(out && strstr(out, ",\"level\":\"info\",\"msg\":\"m\",\"s\":\"a\\\"b\\\\c\\nd\\te\\u0001"
                             "\xc3\xa9\",\"n\":null,\"i\":-42,\"b\":true,\"d\":1.235}\n") != NULL);
    free(out);

    out = capture(log_truncated);
    size_t len = out ? strlen(out) : 0;
    CHECK(len > 100 && len <= 4096);
    CHECK(out && out[len - 1] == '\n' && out[len - 2] == '}');
    CHECK(out && strstr(out, "\"first\":\"kept\"") != NULL);
    CHECK(out && strstr(out, "\"truncated\":true}") != NULL);
    /* the cut value still ends with a closing quote after a whole \" escape */
    CHECK(out && strstr(out, "\\\"\",\"truncated\"") != NULL);
    CHECK(out && strstr(out, "\"after\"") == NULL);
    CHECK(out && strchr(out, '\n') == out + len - 1); /* exactly one line */
    free(out);

    out = capture(log_truncated_utf8);
    len = out ? strlen(out) : 0;
    CHECK(len > 3000 && len <= 4096);
    CHECK(out && valid_utf8((const unsigned char *)out));
    CHECK(out && strstr(out, "\xc3\xa9\",\"truncated\":true}\n") != NULL);
    free(out);

    out = capture(log_filtered);
    CHECK(out && strstr(out, "hidden") == NULL);
    CHECK(out && strstr(out, "\"level\":\"error\",\"msg\":\"shown\",\"error\":\"why\"") != NULL);
    free(out);
    CHECK_INT(gpa_log_level_parse("warn"), GPA_LOG_WARN);
    CHECK_INT(gpa_log_level_parse("WARN"), -1);
}

/* The value of the last field (key "v" or "d") of an unfinished line. */
static const char *last_value(gpa_logline *l)
{
    l->buf[l->len] = '\0';
    const char *k = strstr(l->buf, ",\"v\":");
    if (!k) k = strstr(l->buf, ",\"d\":");
    return k ? k + 5 : "";
}

/* Every byte value alone and inside a plain run: escaped exactly when JSON needs it
 * (controls, DEL, '"', '\\'), copied as-is otherwise, at every run alignment. */
static void test_log_escape_bytes(void)
{
    for (int c = 1; c < 256; c++) {
        for (size_t pad = 0; pad < 5; pad++) {
            char v[16] = "abcd";
            v[pad] = (char)c;
            v[pad + 1] = 'z';
            v[pad + 2] = '\0';
            gpa_logline l;
            gpa_log_begin(&l, GPA_LOG_INFO, "m");
            gpa_log_str(&l, "v", v);
            char want[64];
            size_t n = 0;
            want[n++] = '"';
            for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
                if (*p == '"' || *p == '\\')
                    n += (size_t)snprintf(want + n, sizeof want - n, "\\%c", *p);
                else if (*p == '\n')
                    n += (size_t)snprintf(want + n, sizeof want - n, "\\n");
                else if (*p == '\r')
                    n += (size_t)snprintf(want + n, sizeof want - n, "\\r");
                else if (*p == '\t')
                    n += (size_t)snprintf(want + n, sizeof want - n, "\\t");
                else if (*p < 0x20 || *p == 0x7f)
                    n += (size_t)snprintf(want + n, sizeof want - n, "\\u%04x", *p);
                else
                    want[n++] = (char)*p;
            }
            want[n++] = '"';
            want[n] = '\0';
            CHECK_STR(last_value(&l), want);
        }
    }
}

/* gpa_log_double's own formatting agrees with printf's "%.*f" except on a value within
 * rounding error of a tie (documented there); out-of-range values fall back to printf. */
static void test_log_doubles(void)
{
    unsigned long long x = 88172645463325252ull;
    int differ = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = (double)(x % 100000000ull) / (double)(1ull << (x % 40));
        if (i % 7 == 0) v = (double)(x % 5000) / 1000.0; /* latency-like, 3 decimals */
        int d = (int)(x >> 20) % 7;
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_INFO, "m");
        gpa_log_double(&l, "d", v, d);
        char want[64];
        snprintf(want, sizeof want, "%.*f", d, v);
        if (strcmp(last_value(&l), want) != 0) {
            double scaled = v * pow(10, d);
            double frac = scaled - floor(scaled);
            CHECK(fabs(frac - 0.5) < 1e-6); /* only a tie may round the other way */
            differ++;
        }
    }
    CHECK(differ < 200); /* near-ties only: 3-decimal values shown with 2 decimals */
    static const double odd[] = {-1.5, 1e12, 3e15, -0.0, 0.0, 1e-9};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_INFO, "m");
        gpa_log_double(&l, "d", odd[i], 3);
        char want[64];
        snprintf(want, sizeof want, "%.3f", odd[i]);
        CHECK_STR(last_value(&l), want);
    }
}

/* Queued mode: 4 threads x 500 lines, one flush: every line whole, none lost, the eventfd
 * woke the flusher; then a queue overfilled without flushing drops (and counts) lines. */
static void *log_worker(void *arg)
{
    int id = (int)(long)arg;
    for (int i = 0; i < 500; i++) {
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_INFO, "queued");
        gpa_log_int(&l, "thread", id);
        gpa_log_int(&l, "i", i);
        gpa_log_end(&l);
    }
    return NULL;
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void log_queued_threads(void)
{
    int efd = eventfd(0, EFD_NONBLOCK);
    CHECK(efd >= 0);
    CHECK_INT(gpa_log_queue_start(efd), 0);
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, log_worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    uint64_t wakes = 0;
    CHECK(read(efd, &wakes, sizeof wakes) == (ssize_t)sizeof wakes && wakes >= 1);
    gpa_log_flush();
    gpa_log_queue_stop();
    close(efd);
}

/* The wake fd is poked for the first line and once more when the queue passes its
 * high-water mark, not per line. */
static void log_queue_wakes(void)
{
    int efd = eventfd(0, EFD_NONBLOCK);
    CHECK_INT(gpa_log_queue_start(efd), 0);
    static char v[200];
    memset(v, 'y', sizeof v - 1);
    size_t lines = GPA_LOG_QUEUE_HIGH / 200 + 50;
    for (size_t i = 0; i < lines; i++) {
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_INFO, "w");
        gpa_log_str(&l, "v", v);
        gpa_log_end(&l);
    }
    CHECK(gpa_log_queued() >= GPA_LOG_QUEUE_HIGH);
    uint64_t wakes = 0;
    CHECK(read(efd, &wakes, sizeof wakes) == (ssize_t)sizeof wakes);
    CHECK_INT(wakes, 2);
    gpa_log_queue_stop();
    CHECK_INT(gpa_log_queued(), 0);
    close(efd);
}

static void log_queue_overflow(void)
{
    CHECK_INT(gpa_log_queue_start(-1), 0);
    unsigned long before = gpa_log_dropped();
    static char v[3000];
    memset(v, 'x', sizeof v - 1);
    for (int i = 0; i < 400; i++) { /* ~1.2 MB into a 512 KiB queue, never flushed */
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_INFO, "fill");
        gpa_log_str(&l, "v", v);
        gpa_log_end(&l);
    }
    CHECK(gpa_log_dropped() > before + 100);
    gpa_log_queue_stop();
    gpa_log_msg(GPA_LOG_INFO, "after-stop", NULL); /* synchronous again */
}

static void test_log_queue(void)
{
    char *out = capture(log_queued_threads);
    CHECK_INT(out ? count_lines(out, "\"msg\":\"queued\"") : -1, 2000);
    CHECK_INT(out ? count_lines(out, "}\n") : -1, 2000);
    CHECK(out && strstr(out, "\"thread\":3,\"i\":499}\n") != NULL);
    free(out);
    out = capture(log_queue_wakes);
    CHECK(out && count_lines(out, "\"msg\":\"w\"") == (int)(GPA_LOG_QUEUE_HIGH / 200 + 50));
    free(out);
    out = capture(log_queue_overflow);
    int kept = out ? count_lines(out, "\"msg\":\"fill\"") : -1;
    CHECK(kept > 100 && kept < 400);
    CHECK_INT(out ? count_lines(out, "}\n") : -1, kept + 1);
    CHECK(out && strstr(out, "after-stop") != NULL);
    free(out);
}

static void test_metrics(void)
{
    char name[64];
    for (int i = 0; i < GPA_METRICS_LABEL_CAP + 44; i++) {
        snprintf(name, sizeof name, "rule-%d", i);
        gpa_metrics_rule_match(name);
    }
    gpa_metrics_rule_match("rule-0");
    gpa_metrics_denial("quote\"back\\slash");
    gpa_metrics_request(GPA_HOOK_MUTATE, "CREATE", "mutated", 0.0003);
    gpa_metrics_request(GPA_HOOK_MUTATE, "CREATE", "mutated", 0.5);
    gpa_metrics_request(GPA_HOOK_VALIDATE, NULL, NULL, 2.0);
    gpa_metrics_request_kind(GPA_HOOK_VALIDATE, "Deployment", "denied");
    gpa_metrics_request_kind(GPA_HOOK_VALIDATE, "Deployment", "denied");
    gpa_metrics_request_kind(GPA_HOOK_MUTATE, "Pod", "mutated");
    gpa_metrics_request_kind(GPA_HOOK_VALIDATE, NULL, NULL);
    for (int i = 0; i < GPA_METRICS_KIND_CAP + 3; i++) {
        char kind[32];
        snprintf(kind, sizeof kind, "Kind%d", i);
        gpa_metrics_request_kind(GPA_HOOK_VALIDATE, kind, "allowed");
    }
    gpa_metrics_http_error(413);
    gpa_metrics_http_error(99); /* ignored: not an HTTP error code */
    gpa_metrics_set_policy_revision("abc123");
    size_t len = 0;
    char *t = gpa_metrics_render(&len);
    CHECK(t && strlen(t) == len);
    int rules = 0;
    for (const char *p = t; p && (p = strstr(p, "gpu_admission_rule_matches_total{rule=\"rule-"));
         p++)
        rules++;
    CHECK_INT(rules, GPA_METRICS_LABEL_CAP);
    CHECK(t && strstr(t, "gpu_admission_rule_matches_total{rule=\"_other\"} 44\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_rule_matches_total{rule=\"rule-0\"} 2\n") != NULL);
    CHECK(t &&
          strstr(t, "gpu_admission_denials_total{reason=\"quote\\\"back\\\\slash\"} 1\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_requests_total{webhook=\"mutate\",operation=\"CREATE\","
                         "result=\"mutated\"} 2\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_requests_total{webhook=\"validate\",operation=\"unknown\","
                         "result=\"error\"} 1\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_requests_by_kind_total{webhook=\"validate\","
                         "kind=\"Deployment\",result=\"denied\"} 2\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_requests_by_kind_total{webhook=\"mutate\",kind=\"Pod\","
                         "result=\"mutated\"} 1\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_requests_by_kind_total{webhook=\"validate\","
                         "kind=\"unknown\",result=\"error\"} 1\n") != NULL);
    /* 64 slots: Deployment, Pod and 62 of the 67 others; 5 counted under _other */
    CHECK(t && strstr(t, "gpu_admission_requests_by_kind_total{webhook=\"validate\","
                         "kind=\"_other\",result=\"allowed\"} 5\n") != NULL);
    /* cumulative buckets: 0.3 ms lands in le=0.0005, 0.5 s in le=1, 2 s only in +Inf */
    CHECK(t &&
          strstr(t,
                 "gpu_admission_request_duration_seconds_bucket{webhook=\"mutate\",le=\"0.00025\"}"
                 " 0\n") != NULL);
    CHECK(t &&
          strstr(t,
                 "gpu_admission_request_duration_seconds_bucket{webhook=\"mutate\",le=\"0.0005\"}"
                 " 1\n") != NULL);
    CHECK(
        t &&
        strstr(t,
               "gpu_admission_request_duration_seconds_bucket{webhook=\"mutate\",le=\"1\"} 2\n") !=
            NULL);
    CHECK(t &&
          strstr(
              t,
              "gpu_admission_request_duration_seconds_bucket{webhook=\"validate\",le=\"1\"} 0\n") !=
              NULL);
    CHECK(t &&
          strstr(t,
                 "gpu_admission_request_duration_seconds_bucket{webhook=\"validate\",le=\"+Inf\"} "
                 "1\n") != NULL);
    /* buckets above 1 s reach the API server's timeouts (1..30 s): 2 s is under 2.5 */
    CHECK(t &&
          strstr(t,
                 "gpu_admission_request_duration_seconds_bucket{webhook=\"validate\",le=\"2.5\"} "
                 "1\n") != NULL);
    CHECK(t &&
          strstr(t, "gpu_admission_request_duration_seconds_bucket{webhook=\"mutate\",le=\"60\"} "
                    "2\n") != NULL);
    CHECK(
        t &&
        strstr(t, "gpu_admission_request_duration_seconds_sum{webhook=\"mutate\"} 0.500300000\n") !=
            NULL);
    CHECK(t && strstr(t, "gpu_admission_http_errors_total{code=\"413\"} 1\n") != NULL);
    CHECK(t && strstr(t, "code=\"99\"") == NULL);
    CHECK(t && strstr(t, "gpu_admission_policy_revision_info{revision=\"abc123\"} 1\n") != NULL);
    CHECK(t && strstr(t, "gpu_admission_log_lines_dropped_total ") != NULL);
    free(t);
}

static void test_listen(void)
{
    int fd = -1;
    unsigned port = 0;
    gpa_error err = {0};
    CHECK_INT(gpa_listen_socket(&fd, &port, "127.0.0.1:0", &err), GPA_OK);
    CHECK(port > 0 && port < 65536);
    int fd2 = -1;
    unsigned port2 = 0;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
    CHECK_INT(gpa_listen_socket(&fd2, &port2, addr, &err), GPA_EIO); /* in use */
    CHECK(strstr(err.message, "cannot listen") != NULL);
    if (fd >= 0) close(fd);
    CHECK_INT(gpa_listen_socket(&fd, &port, "8443", &err), GPA_EINVAL);
    CHECK_INT(gpa_listen_socket(&fd, &port, "127.0.0.1:", &err), GPA_EINVAL);
    CHECK_INT(gpa_listen_socket(&fd, &port, "127.0.0.1:70000", &err), GPA_EINVAL);
    CHECK_INT(gpa_listen_socket(&fd, &port, "127.0.0.1:http", &err), GPA_EINVAL);
    CHECK(gpa_listen_socket(&fd, &port, "no.such.host.invalid:0", &err) != GPA_OK);
}

static void test_cpu_parsers(void)
{
    unsigned long long n = 99;
    /* cgroup v2 cpu.max */
    CHECK_INT(gpa_cpu_max_parse(&n, "max 100000\n"), GPA_OK);
    CHECK_INT(n, 0);
    n = 99;
    CHECK_INT(gpa_cpu_max_parse(&n, "max"), GPA_OK);
    CHECK_INT(n, 0);
    CHECK_INT(gpa_cpu_max_parse(&n, "150000 100000\n"), GPA_OK);
    CHECK_INT(n, 2);
    CHECK_INT(gpa_cpu_max_parse(&n, "50000 100000"), GPA_OK);
    CHECK_INT(n, 1);
    CHECK_INT(gpa_cpu_max_parse(&n, "100000 100000"), GPA_OK);
    CHECK_INT(n, 1);
    CHECK_INT(gpa_cpu_max_parse(&n, "100001 100000"), GPA_OK);
    CHECK_INT(n, 2);
    CHECK_INT(gpa_cpu_max_parse(&n, "1000 1000000"), GPA_OK); /* 0.001 CPU -> 1 */
    CHECK_INT(n, 1);
    CHECK_INT(gpa_cpu_max_parse(&n, "6400000 100000"), GPA_OK);
    CHECK_INT(n, 64);
    CHECK_INT(gpa_cpu_max_parse(&n, "18446744073709551615 1"), GPA_OK); /* no overflow */
    CHECK(n == 18446744073709551615ull);
    static const char *const bad_v2[] = {
        "",
        "\n",
        "0 100000",
        "100000 0",
        "max 0",
        "-1 100000",
        "150000",
        "150000 ",
        "150000 100000 x",
        " 150000 100000",
        "150000  100000",
        "150000x 100000",
        "max100000",
        "maxi 100000",
        "max 100000x",
        "150000 100000\n\n",
        "+150000 100000",
        "1.5 1",
        "banana",
        "max -1",
        "150000\t100000",
    };
    for (size_t i = 0; i < sizeof bad_v2 / sizeof bad_v2[0]; i++) {
        n = 99;
        int rc = gpa_cpu_max_parse(&n, bad_v2[i]);
        if (rc == GPA_OK) fprintf(stderr, "cpu.max accepted '%s'\n", bad_v2[i]);
        CHECK(rc != GPA_OK);
        CHECK_INT(n, 0);
    }
    CHECK_INT(gpa_cpu_max_parse(&n, "99999999999999999999 100000"), GPA_ERANGE);
    CHECK_INT(gpa_cpu_max_parse(&n, "100000 99999999999999999999"), GPA_ERANGE);
    CHECK(gpa_cpu_max_parse(&n, NULL) != GPA_OK);

    /* cgroup v1 cpu.cfs_quota_us + cpu.cfs_period_us */
    n = 99;
    CHECK_INT(gpa_cfs_quota_parse(&n, "-1\n", "100000\n"), GPA_OK);
    CHECK_INT(n, 0);
    n = 99;
    CHECK_INT(gpa_cfs_quota_parse(&n, "-1", NULL), GPA_OK); /* no period needed */
    CHECK_INT(n, 0);
    CHECK_INT(gpa_cfs_quota_parse(&n, "50000\n", "100000\n"), GPA_OK);
    CHECK_INT(n, 1);
    CHECK_INT(gpa_cfs_quota_parse(&n, "150000", "100000"), GPA_OK);
    CHECK_INT(n, 2);
    CHECK_INT(gpa_cfs_quota_parse(&n, "400000", "100000"), GPA_OK);
    CHECK_INT(n, 4);
    CHECK_INT(gpa_cfs_quota_parse(&n, "250000", "1000000"), GPA_OK);
    CHECK_INT(n, 1);
    static const char *const bad_v1[][2] = {
        {"", "100000"},       {"0", "100000"},        {"-2", "100000"},  {"-1x", "100000"},
        {"50000", NULL},      {"50000", ""},          {"50000", "0"},    {"50000", "-100000"},
        {"50000 ", "100000"}, {"50000", "100000x"},   {"max", "100000"}, {NULL, "100000"},
        {"5e4", "100000"},    {"50000\n1", "100000"},
    };
    for (size_t i = 0; i < sizeof bad_v1 / sizeof bad_v1[0]; i++) {
        n = 99;
        CHECK(gpa_cfs_quota_parse(&n, bad_v1[i][0], bad_v1[i][1]) != GPA_OK);
        CHECK_INT(n, 0);
    }
    CHECK_INT(gpa_cfs_quota_parse(&n, "123456789012345678901234", "100000"), GPA_ERANGE);

    /* /proc/self/cgroup */
    static const char hybrid[] = "12:pids:/kubepods/pod1/c1\n"
                                 "5:cpuset:/cpuset-path\n"
                                 "4:cpu,cpuacct:/kubepods/burstable/pod1/c1\n"
                                 "3:cpuacct:/wrong\n"
                                 "1:name=systemd:/sys\n"
                                 "0::/unified/path\n";
    char path[64];
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, hybrid), GPA_OK);
    CHECK_STR(path, "/kubepods/burstable/pod1/c1");
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, hybrid), GPA_OK);
    CHECK_STR(path, "/unified/path");
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, "3:cpuset:/a\n2:cpuacct:/b\n1:cpu:/\n"),
              GPA_OK);
    CHECK_STR(path, "/");
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, "7:cpuacct,cpu:/x:y"), GPA_OK);
    CHECK_STR(path, "/x:y"); /* a colon in the path is part of the path */
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, "0::/\n"), GPA_OK);
    CHECK_STR(path, "/");
    /* v2 only: no v1 cpu line; v1 only: no v2 line */
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, "0::/a\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, "1:cpu:/a\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, "2:cpuset,cpuacct:/a\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, "00::/a\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, "0:cpu:/a\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, "0::relative\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, "0::\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, "x:cpu:/a\n:cpu:/b\n1:cpu\n"), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v1_cpu_path(path, sizeof path, ""), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, sizeof path, NULL), GPA_EPARSE);
    CHECK_INT(gpa_cgroup_v2_path(path, 8, "0::/exactly-too-long\n"), GPA_ERANGE);
    CHECK_INT(gpa_cgroup_v2_path(path, 8, "0::/1234567"), GPA_ERANGE); /* 8 bytes with NUL */
    CHECK_INT(gpa_cgroup_v2_path(path, 8, "0::/123456"), GPA_OK);
    CHECK_STR(path, "/123456");

    /* combining */
    gpa_cpu_source src;
    CHECK_INT(gpa_cpu_budget_combine(&src, 64, 64, 0), 64);
    CHECK_INT(src, GPA_CPU_SOURCE_AFFINITY);
    CHECK_INT(gpa_cpu_budget_combine(&src, 64, 64, 1), 1); /* limits.cpu: 1 on 64 cores */
    CHECK_INT(src, GPA_CPU_SOURCE_CGROUP);
    CHECK_STR(gpa_cpu_source_name(src), "cgroup");
    CHECK_INT(gpa_cpu_budget_combine(&src, 64, 4, 8), 4); /* cpuset tighter than quota */
    CHECK_INT(src, GPA_CPU_SOURCE_AFFINITY);
    CHECK_INT(gpa_cpu_budget_combine(&src, 64, 4, 4), 4);
    CHECK_INT(src, GPA_CPU_SOURCE_AFFINITY);
    CHECK_INT(gpa_cpu_budget_combine(&src, 8, -1, 0), 8); /* affinity unknown */
    CHECK_INT(src, GPA_CPU_SOURCE_CPUS);
    CHECK_STR(gpa_cpu_source_name(src), "cpus");
    CHECK_INT(gpa_cpu_budget_combine(&src, 8, 0, 3), 3);
    CHECK_INT(gpa_cpu_budget_combine(&src, -1, 0, 0), 1); /* nothing known */
    CHECK_INT(gpa_cpu_budget_combine(&src, 1024, 1024, 0), 256);
    CHECK_INT(gpa_cpu_budget_combine(&src, 1024, 1024, 300), 256);
    CHECK_INT(gpa_cpu_budget_combine(&src, 1024, 1024, 18446744073709551615ull), 256);
    CHECK_INT(gpa_cpu_budget_combine(NULL, 2, 2, 1), 1);
    CHECK_STR(gpa_cpu_source_name(GPA_CPU_SOURCE_AFFINITY), "affinity");
}

/* ---- a fake cgroup tree under a temporary directory */
static char cg_root[64];

static void cg_write(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", cg_root, rel);
    /* mkdir -p of the parent */
    for (char *s = p + strlen(cg_root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void cg_mkdir(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s/x", cg_root, rel);
    for (char *s = p + strlen(cg_root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void test_cpu_tree(void)
{
    strcpy(cg_root, "/tmp/gpa-cgroup-XXXXXX");
    CHECK(mkdtemp(cg_root) != NULL);

    /* v2: the parent is tighter than the child; the grandparent looser. */
    cg_write("cpu.max", "max 100000\n");
    cg_write("kubepods/cpu.max", "800000 100000\n");
    cg_write("kubepods/pod1/cpu.max", "50000 100000\n");
    cg_write("kubepods/pod1/ctr/cpu.max", "300000 100000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod1/ctr\n"), 1);
    /* the child alone is looser than its ancestors at 8 */
    cg_write("kubepods/pod2/ctr/cpu.max", "300000 100000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod2/ctr\n"), 3);
    /* the cgroup's own directory is missing (a container seeing its cgroup as the mount
     * root): the ancestors still count */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod1/gone/deeper\n"), 1);
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/elsewhere\n"), 0);
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/\n"), 0);
    /* "//", "." and a trailing slash are the same directory */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods//./pod2/ctr/\n"), 3);
    /* garbage and unreadable files set no limit, the ancestors still do */
    cg_write("kubepods/pod3/cpu.max", "banana\n");
    cg_write("kubepods/pod3/ctr/cpu.max", "0 100000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod3/ctr\n"), 8);
    cg_mkdir("kubepods/pod4/cpu.max"); /* a directory where the file should be */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod4\n"), 8);
    char huge[200];
    memset(huge, '1', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    cg_write("kubepods/pod5/cpu.max", huge); /* bigger than any real value */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod5\n"), 8);
    cg_write("kubepods/pod6/cpu.max", "");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod6\n"), 8);
    /* ".." never climbs out of the root (the path is ignored) */
    cg_write("kubepods/pod7/cpu.max", "100000 100000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/pod7\n"), 1);
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "0::/kubepods/../kubepods/pod7\n"), 0);
    /* a garbage /proc/self/cgroup text */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "garbage"), 0);
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, ""), 0);
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, NULL), 0);
    CHECK_INT(gpa_cgroup_cpu_limit("/nonexistent-gpa-root", "0::/a\n1:cpu:/b\n"), 0);

    /* v1, under cpu/: a parent tighter than the child */
    cg_write("cpu/cpu.cfs_quota_us", "-1\n");
    cg_write("cpu/cpu.cfs_period_us", "100000\n");
    cg_write("cpu/kubepods/cpu.cfs_quota_us", "150000\n");
    cg_write("cpu/kubepods/cpu.cfs_period_us", "100000\n");
    cg_write("cpu/kubepods/ctr/cpu.cfs_quota_us", "-1\n");
    cg_write("cpu/kubepods/ctr/cpu.cfs_period_us", "100000\n");
    static const char v1[] = "4:cpu,cpuacct:/kubepods/ctr\n3:memory:/other\n";
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, v1), 2);
    /* a quota without its period file is no limit */
    cg_write("cpu/kubepods/ctr/inner/cpu.cfs_quota_us", "10000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "4:cpu:/kubepods/ctr/inner\n"), 2);
    cg_write("cpu/kubepods/ctr/inner/cpu.cfs_period_us", "100000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "4:cpu:/kubepods/ctr/inner\n"), 1);
    /* the other mount name, cpu,cpuacct/ */
    cg_write("cpu,cpuacct/slice/cpu.cfs_quota_us", "250000\n");
    cg_write("cpu,cpuacct/slice/cpu.cfs_period_us", "50000\n");
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "2:cpuacct,cpu:/slice/job\n"), 5);
    /* the v1 files are only read for the cpu controller's path */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "2:cpuacct:/slice/job\n"), 0);
    /* hybrid: v1 and v2 both set limits, the tighter wins either way */
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "4:cpu:/kubepods/ctr\n0::/kubepods/pod2/ctr\n"), 2);
    CHECK_INT(gpa_cgroup_cpu_limit(cg_root, "4:cpu:/kubepods/ctr\n0::/kubepods/pod1/ctr\n"), 1);

    /* The whole chain with a fake /proc/self/cgroup file. */
    cpu_set_t all;
    CHECK_INT(sched_getaffinity(0, sizeof all, &all), 0);
    long cpus = CPU_COUNT(&all);
    gpa_cpu_source src;
    cg_write("proc-cgroup", "0::/kubepods/pod1/ctr\n");
    char proc[128];
    snprintf(proc, sizeof proc, "%s/proc-cgroup", cg_root);
    CHECK_INT(gpa_cpu_budget(&src, cg_root, proc), 1);
    CHECK_INT(src, cpus > 1 ? GPA_CPU_SOURCE_CGROUP : GPA_CPU_SOURCE_AFFINITY);
    cg_write("proc-cgroup", "0::/elsewhere\n");
    CHECK_INT(gpa_cpu_budget(&src, cg_root, proc), cpus > 256 ? 256 : cpus);
    CHECK_INT(src, GPA_CPU_SOURCE_AFFINITY);
    snprintf(proc, sizeof proc, "%s/no-such-file", cg_root);
    CHECK_INT(gpa_cpu_budget(&src, cg_root, proc), cpus > 256 ? 256 : cpus);
    CHECK_INT(gpa_cpu_budget(&src, cg_root, cg_root), cpus > 256 ? 256 : cpus); /* a dir */
    if (cpus >= 2) {
        cg_write("proc-cgroup", "4:cpu:/kubepods/ctr\n"); /* 2 CPUs of quota */
        snprintf(proc, sizeof proc, "%s/proc-cgroup", cg_root);
        CHECK_INT(gpa_cpu_budget(&src, cg_root, proc), 2);
        CHECK_INT(src, cpus > 2 ? GPA_CPU_SOURCE_CGROUP : GPA_CPU_SOURCE_AFFINITY);
        CHECK(pin(&all, 1));
        CHECK_INT(gpa_cpu_budget(&src, cg_root, proc), 1); /* the cpuset is tighter */
        CHECK_INT(src, GPA_CPU_SOURCE_AFFINITY);
        CHECK_INT(sched_setaffinity(0, sizeof all, &all), 0);
    }

    CHECK_INT(nftw(cg_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
    test_sizes();
    test_config();
    test_cpu_parsers();
    test_cpu_tree();
    test_log();
    test_log_bounded();
    test_log_escape_bytes();
    test_log_doubles();
    test_log_queue();
    test_metrics();
    test_listen();
    return check_done();
}
