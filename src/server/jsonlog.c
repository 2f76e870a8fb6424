/*
 * jsonlog.c - one JSON log line per event on stderr (see jsonlog.h).
 *
 * Must never: block a request thread on the destination, allocate per line, or emit a
 * partial line; a value too long for the line buffer is cut at a character boundary and the
 * line marked "truncated":true.
 */
#include "jsonlog.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = GPA_LOG_INFO;
static atomic_int log_fd = 2;

/* Queued mode: lines are appended to `buf`; the flusher swaps it with `spare` under the lock
 * and writes the full one outside it. */
#define QUEUE_CAP (512u * 1024u)
_Static_assert(GPA_LOG_QUEUE_HIGH < QUEUE_CAP, "high-water mark inside the queue");
static struct {
    pthread_mutex_t lock;
    char *buf, *spare;
    size_t len;
    int wake_fd;
    atomic_bool on;
    atomic_ulong dropped;
    pthread_mutex_t flush_lock; /* one flusher at a time */
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .flush_lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int gpa_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, level_names[i]) == 0) return i;
    return -1;
}

void gpa_log_set_level(gpa_log_level l)
{
    atomic_store(&log_level, (int)l);
}

bool gpa_log_enabled(gpa_log_level l)
{
    return (int)l >= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void gpa_log_set_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

static void write_all(const char *p, size_t len)
{
    int fd = atomic_load_explicit(&log_fd, memory_order_relaxed);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
}

/* Room kept back so the closing "}\n" and a truncation marker always fit. */
#define RESERVE 32

static void put_raw(gpa_logline *l, const char *s, size_t n)
{
    if (l->len + n > sizeof l->buf - RESERVE) {
        l->truncated = true;
        return;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

/* Escapes s as a JSON string body; stops cleanly (never mid-escape) when full. */
/* Cuts back to a character boundary and marks the line truncated. */
static void truncate_here(gpa_logline *l)
{
    /* Do not leave half a UTF-8 sequence behind. */
    while (l->len > 0 && ((unsigned char)l->buf[l->len - 1] & 0xC0) == 0x80)
        l->len--;
    if (l->len > 0 && ((unsigned char)l->buf[l->len - 1] & 0xC0) == 0xC0) l->len--;
    l->truncated = true;
}

/* 1 for bytes copied as they are; everything else needs an escape (controls, DEL, '"',
 * '\\'). NUL never reaches the table: values are NUL-terminated and measured first. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, /* 0x70 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x80 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x90 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xa0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xb0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xc0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xd0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xe0 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0xf0 */
};

static void put_escaped(gpa_logline *l, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const size_t limit = sizeof l->buf - RESERVE - 1;
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    while (p < end) {
        /* Runs of bytes that need no escape (nearly everything) are copied at once. */
        const unsigned char *run = p;
        while (run + 4 <= end &&
               plain_byte[run[0]] & plain_byte[run[1]] & plain_byte[run[2]] & plain_byte[run[3]])
            run += 4;
        while (run < end && plain_byte[*run])
            run++;
        size_t rn = (size_t)(run - p);
        if (rn) {
            if (l->len + rn > limit) {
                memcpy(l->buf + l->len, p, limit - l->len);
                l->len = limit;
                truncate_here(l);
                return;
            }
            memcpy(l->buf + l->len, p, rn);
            l->len += rn;
            p = run;
            if (p == end) break;
        }
        char tmp[6];
        size_t n = 2;
        tmp[0] = '\\';
        switch (*p) {
        case '"':
            tmp[1] = '"';
            break;
        case '\\':
            tmp[1] = '\\';
            break;
        case '\n':
            tmp[1] = 'n';
            break;
        case '\r':
            tmp[1] = 'r';
            break;
        case '\t':
            tmp[1] = 't';
            break;
        default: /* other control characters and DEL */
            tmp[1] = 'u', tmp[2] = '0', tmp[3] = '0';
            tmp[4] = hex[*p >> 4], tmp[5] = hex[*p & 15];
            n = 6;
        }
        if (l->len + n > limit) {
            truncate_here(l);
            return;
        }
        memcpy(l->buf + l->len, tmp, n);
        l->len += n;
        p++;
    }
}

static void put_key(gpa_logline *l, const char *key)
{
    put_raw(l, ",\"", 2);
    put_escaped(l, key);
    put_raw(l, "\":", 2);
}

/* Decimal digits of v into out (no sign), returns the length; out has room for 20. */
static size_t put_u64(char *out, unsigned long long v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

void gpa_log_begin(gpa_logline *l, gpa_log_level level, const char *msg)
{
    l->len = 0;
    l->truncated = false;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* The date and time change once a second; each thread formats them once per second. */
    static _Thread_local time_t cached_sec = -1;
    static _Thread_local char cached[32]; /* {"ts":"YYYY-MM-DDTHH:MM:SS */
    static _Thread_local size_t cached_len;
    if (ts.tv_sec != cached_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        int n = snprintf(cached, sizeof cached, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                         tm.tm_sec);
        cached_len = n > 0 && (size_t)n < sizeof cached ? (size_t)n : 0;
        cached_sec = ts.tv_sec;
    }
    long ms = ts.tv_nsec / 1000000;
    char frac[7] = {
        '.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 'Z', '"',
        0};
    put_raw(l, cached, cached_len);
    put_raw(l, frac, 6);
    put_raw(l, ",\"level\":\"", 10);
    put_escaped(l, level_names[level]);
    put_raw(l, "\"", 1);
    gpa_log_str(l, "msg", msg);
}

/* Each field is all-or-nothing except a long string value, which is cut; a field that
 * cannot start is rolled back so the line stays valid JSON. */
static bool field_fits(gpa_logline *l, size_t start)
{
    if (l->truncated) {
        l->len = start;
        return false;
    }
    return true;
}

void gpa_log_str(gpa_logline *l, const char *key, const char *value)
{
    size_t start = l->len;
    if (l->truncated) return;
    put_key(l, key);
    put_raw(l, value ? "\"" : "null", value ? 1 : 4);
    if (!field_fits(l, start) || !value) return;
    put_escaped(l, value);
    /* put_escaped keeps one byte back for exactly this quote. */
    l->buf[l->len++] = '"';
}

/* value cut to at most max bytes (max >= 4) on a UTF-8 boundary, "..." marking the cut; tmp
 * has room for max + 1 bytes. */
static const char *cut_value(char *tmp, const char *value, size_t max)
{
    size_t n = strlen(value);
    if (n <= max) return value;
    size_t cut = max - 3;
    while (cut > 0 && ((unsigned char)value[cut] & 0xC0) == 0x80)
        cut--;
    memcpy(tmp, value, cut);
    memcpy(tmp + cut, "...", 4);
    return tmp;
}

void gpa_log_str_max(gpa_logline *l, const char *key, const char *value, size_t max)
{
    char tmp[GPA_LOG_VALUE_MAX + 1];
    if (max < 4 || max > GPA_LOG_VALUE_MAX) max = GPA_LOG_VALUE_MAX;
    gpa_log_str(l, key, value ? cut_value(tmp, value, max) : NULL);
}

void gpa_log_strs(gpa_logline *l, const char *key, const char *const *values, size_t n,
                  size_t max_each)
{
    char tmp[GPA_LOG_VALUE_MAX + 1];
    if (max_each < 4 || max_each > GPA_LOG_VALUE_MAX) max_each = GPA_LOG_VALUE_MAX;
    size_t start = l->len;
    if (l->truncated) return;
    put_key(l, key);
    put_raw(l, "[", 1);
    for (size_t i = 0; i < n && !l->truncated; i++) {
        if (i) put_raw(l, ",", 1);
        put_raw(l, "\"", 1);
        if (!l->truncated) put_escaped(l, cut_value(tmp, values[i] ? values[i] : "", max_each));
        put_raw(l, "\"", 1);
    }
    put_raw(l, "]", 1);
    /* all or nothing: half an array would be a list of groups the user is not all in */
    field_fits(l, start);
}

void gpa_log_int(gpa_logline *l, const char *key, long long value)
{
    char tmp[32];
    size_t n = 0;
    if (value < 0) tmp[n++] = '-';
    n += put_u64(tmp + n, value < 0 ? 0ull - (unsigned long long)value : (unsigned long long)value);
    size_t start = l->len;
    if (l->truncated) return;
    put_key(l, key);
    put_raw(l, tmp, n);
    field_fits(l, start);
}

/* "%.*f" for the values log lines carry (latencies: small, non-negative, 0-6 decimals)
 * without printf's exact-binary machinery, which cost more than the rest of the line. Exact
 * ties round to even as printf does; the scaling multiply itself rounds, so a value within
 * one ulp of a tie can still land on the other side in the last digit, which a log line can
 * live with. Anything else (negative, -0, huge, NaN) goes to printf. */
static int fixed_point(char *out, double value, int decimals)
{
    static const double scale[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    if (decimals < 0 || decimals > 6 || signbit(value) || !(value < 1e12)) return -1;
    unsigned long long v = (unsigned long long)nearbyint(value * scale[decimals]);
    unsigned long long p10 = (unsigned long long)scale[decimals];
    size_t n = put_u64(out, v / p10);
    if (decimals) {
        out[n++] = '.';
        unsigned long long frac = v % p10;
        for (int i = decimals - 1; i >= 0; i--, frac /= 10)
            out[n + (size_t)i] = (char)('0' + frac % 10);
        n += (size_t)decimals;
    }
    return (int)n;
}

void gpa_log_double(gpa_logline *l, const char *key, double value, int decimals)
{
    char tmp[64];
    int n = fixed_point(tmp, value, decimals);
    if (n < 0) n = snprintf(tmp, sizeof tmp, "%.*f", decimals, value);
    size_t start = l->len;
    if (l->truncated) return;
    put_key(l, key);
    put_raw(l, tmp, (size_t)n);
    field_fits(l, start);
}

void gpa_log_bool(gpa_logline *l, const char *key, bool value)
{
    size_t start = l->len;
    if (l->truncated) return;
    put_key(l, key);
    put_raw(l, value ? "true" : "false", value ? 4 : 5);
    field_fits(l, start);
}

void gpa_log_end(gpa_logline *l)
{
    if (l->truncated) {
        const char *mark = ",\"truncated\":true";
        memcpy(l->buf + l->len, mark, strlen(mark));
        l->len += strlen(mark);
    }
    l->buf[l->len++] = '}';
    l->buf[l->len++] = '\n';
    if (atomic_load_explicit(&q.on, memory_order_acquire)) {
        bool wake = false, queued = false;
        pthread_mutex_lock(&q.lock);
        if (q.buf && q.len + l->len <= QUEUE_CAP) {
            /* Wake the flusher for the first line (it then waits a little to batch) and
             * again when the queue passes half full (it then writes at once). */
            wake =
                q.len == 0 || (q.len < GPA_LOG_QUEUE_HIGH && q.len + l->len >= GPA_LOG_QUEUE_HIGH);
            memcpy(q.buf + q.len, l->buf, l->len);
            q.len += l->len;
            queued = true;
        }
        int fd = q.wake_fd;
        pthread_mutex_unlock(&q.lock);
        if (!queued) {
            atomic_fetch_add_explicit(&q.dropped, 1, memory_order_relaxed);
            return;
        }
        if (wake && fd >= 0) {
            uint64_t one = 1;
            ssize_t w = write(fd, &one, sizeof one);
            (void)w; /* a full eventfd counter already means "wake up" */
        }
        return;
    }
    write_all(l->buf, l->len);
}

int gpa_log_queue_start(int wake_fd)
{
    char *a = malloc(QUEUE_CAP), *b = malloc(QUEUE_CAP);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    pthread_mutex_lock(&q.lock);
    q.buf = a;
    q.spare = b;
    q.len = 0;
    q.wake_fd = wake_fd;
    pthread_mutex_unlock(&q.lock);
    atomic_store_explicit(&q.on, true, memory_order_release);
    return 0;
}

void gpa_log_flush(void)
{
    pthread_mutex_lock(&q.flush_lock);
    pthread_mutex_lock(&q.lock);
    char *full = q.buf;
    size_t n = q.len;
    q.buf = q.spare;
    q.spare = full;
    q.len = 0;
    pthread_mutex_unlock(&q.lock);
    if (full && n) write_all(full, n);
    pthread_mutex_unlock(&q.flush_lock);
}

void gpa_log_queue_stop(void)
{
    /* Lines written after this go straight out; then drain what was queued before. */
    atomic_store_explicit(&q.on, false, memory_order_release);
    gpa_log_flush();
    pthread_mutex_lock(&q.flush_lock);
    pthread_mutex_lock(&q.lock);
    /* A thread that saw `on` just before it flipped may still append: flush once more. */
    char *a = q.buf, *b = q.spare;
    size_t n = q.len;
    q.buf = q.spare = NULL;
    q.len = 0;
    q.wake_fd = -1;
    pthread_mutex_unlock(&q.lock);
    if (a && n) write_all(a, n);
    pthread_mutex_unlock(&q.flush_lock);
    free(a);
    free(b);
}

size_t gpa_log_queued(void)
{
    pthread_mutex_lock(&q.lock);
    size_t n = q.len;
    pthread_mutex_unlock(&q.lock);
    return n;
}

unsigned long gpa_log_dropped(void)
{
    return atomic_load(&q.dropped);
}

void gpa_log_msg(gpa_log_level level, const char *msg, const char *error)
{
    if (!gpa_log_enabled(level)) return;
    gpa_logline l;
    gpa_log_begin(&l, level, msg);
    if (error) gpa_log_str(&l, "error", error);
    gpa_log_end(&l);
}
