/*
 * fault.c - the allocation wrappers and the N-th-failure loop behind fault.h.
 *
 * Why --wrap and not a malloc defined in the test: under ASan (scripts/test.sh's second ctest)
 * the sanitizer's runtime is the process's malloc; a second definition in the executable would
 * take its place and blind ASan/LSan. --wrap only renames our objects' references to
 * __wrap_malloc, whose __real_malloc is still the sanitizer's, so every block stays checked and
 * LSan's exit report still covers every run. The core has no single allocation function to
 * hook (some eighty direct calls across its layers), and a counting macro would need a second
 * build of the core; the wrap tests the very objects the server links.
 *
 * Must never: allocate while armed (it counts with plain integers), or fail an allocation the
 * run did not ask for (disarmed, the wrappers are pass-through).
 */
#include "fault.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <execinfo.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <yaml.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);
int __wrap_asprintf(char **out, const char *fmt, ...);

struct fault_state {
    bool armed;
    bool persistent;       /* every allocation from fail_at on fails, not only the fail_at-th */
    unsigned long count;   /* allocation requests seen while armed */
    unsigned long fail_at; /* 0: never */
    bool fired;
    long live;              /* blocks allocated minus blocks freed while armed */
    bool frozen;            /* fault_stop_failing, fault_hold: no counting or failing for now */
    unsigned long trace_at; /* FAULT_TRACE=N: print the stack of the N-th allocation */
};
static struct fault_state st;

/* True when this allocation request must fail. */
static bool tick(void)
{
    if (!st.armed || st.frozen) return false;
    st.count++;
    if (st.trace_at && st.count == st.trace_at && st.fail_at == st.trace_at) {
        void *frames[32];
        st.armed = false; /* backtrace may load libgcc, which allocates */
        int n = backtrace(frames, 32);
        fprintf(stderr, "fault: allocation %lu is\n", st.count);
        backtrace_symbols_fd(frames, n, 2);
        st.armed = true;
    }
    if (st.fail_at && (st.count == st.fail_at || (st.persistent && st.count > st.fail_at))) {
        st.fired = true;
        return true;
    }
    return false;
}

static void *born(void *p)
{
    if (p && st.armed) st.live++;
    return p;
}

void *__wrap_malloc(size_t n)
{
    return tick() ? NULL : born(__real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t sz)
{
    return tick() ? NULL : born(__real_calloc(n, sz));
}

void *__wrap_realloc(void *p, size_t n)
{
    if (!p) return __wrap_malloc(n);
    if (n == 0) { /* glibc frees p; failing it would mean nothing */
        void *r = __real_realloc(p, 0);
        if (!r && st.armed) st.live--;
        return r;
    }
    return tick() ? NULL : __real_realloc(p, n);
}

void __wrap_free(void *p)
{
    if (p && st.armed) st.live--;
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    return tick() ? NULL : born(__real_strdup(s));
}

char *__wrap_strndup(const char *s, size_t n)
{
    return tick() ? NULL : born(__real_strndup(s, n));
}

int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
    if (tick()) return -1;
    int r = __real_vasprintf(out, fmt, ap);
    if (r >= 0) born(*out);
    return r;
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __wrap_vasprintf(out, fmt, ap);
    va_end(ap);
    return r;
}

/* OpenSSL's blocks may fail like any other but are left out of the live count: OpenSSL keeps
 * caches (fetched methods, names) that outlive a run and are freed only at exit, so a block
 * still held after a run is not a leak of ours; LSan's exit report still sees a context we
 * forget to free, which no exit handler frees. */
static void *ossl_malloc(size_t n, const char *file, int line)
{
    return tick() ? NULL : __real_malloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
    if (p && n == 0) return __real_realloc(p, 0);
    return tick() ? NULL : __real_realloc(p, n);
}

static void ossl_free(void *p, const char *file, int line)
{
    __real_free(p);
}

void fault_init(void)
{
    if (!CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free)) {
        fprintf(stderr, "fault: OpenSSL allocated before fault_init; its allocations would "
                        "escape the count\n");
        exit(1);
    }
    cJSON_Hooks h = {__wrap_malloc, __wrap_free};
    cJSON_InitHooks(&h);
    /* OpenSSL keeps a per-thread error state, made on the first error and kept for the
     * thread's life: made here, so a run whose failure is OpenSSL's first error does not count
     * that state as a leak of the run. */
    ERR_raise(ERR_LIB_USER, 1);
    ERR_clear_error();
}

bool fault_yaml_reached(void)
{
    yaml_parser_t parser;
    st = (struct fault_state){.armed = true};
    int ok = yaml_parser_initialize(&parser);
    if (ok) yaml_parser_delete(&parser);
    st.armed = false;
    return st.count > 0;
}

void fault_stop_failing(void)
{
    st.frozen = true;
}

void fault_hold(bool on)
{
    st.frozen = on;
}

unsigned long fault_last_count(void)
{
    return st.count;
}

/* One run of c with allocation fail_at failing (0: none). */
static int run_once(const fault_case *c, unsigned long fail_at, bool persistent, long *live,
                    bool *fired)
{
    const char *trace = getenv("FAULT_TRACE");
    st = (struct fault_state){.armed = true,
                              .fail_at = fail_at,
                              .persistent = persistent,
                              .trace_at = trace ? strtoul(trace, NULL, 10) : 0};
    int rc = c->run(c->ctx);
    st.armed = false;
    *live = st.live;
    *fired = st.fired;
    return rc;
}

int fault_run_case(const fault_case *c)
{
    long live;
    bool fired;
    run_once(c, 0, false, &live, &fired); /* warm-up: OpenSSL's fetch cache, cJSON's hooks */
    int clean_rc = run_once(c, 0, false, &live, &fired);
    unsigned long total = st.count;
    int failures = 0;
    if (live != 0) {
        printf("FAIL %s: the clean run left %ld blocks allocated\n", c->name, live);
        failures++;
    }
    const char *why = c->check(c->ctx, clean_rc, clean_rc, false);
    if (why) {
        printf("FAIL %s: the clean run: %s (rc %d)\n", c->name, why, clean_rc);
        return failures + 1;
    }
    if (total == 0) {
        printf("FAIL %s: no allocation counted (the wrappers are not linked in)\n", c->name);
        return failures + 1;
    }
    unsigned long runs = 0, errors = 0;
    /* Every N once transiently; persistently every N up to 600 allocations, then a stride that
     * keeps ~600 runs (a persistent failure mostly tests the error path's own allocations,
     * which the first failing N of each stretch reaches), so a policy load stays seconds
     * under ASan. */
    unsigned long stride = total > 600 ? (total + 599) / 600 : 1;
    for (int mode = 0; mode < 2; mode++) {
        for (unsigned long n = 1; n <= total; n += mode ? stride : 1) {
            int rc = run_once(c, n, mode == 1, &live, &fired);
            runs++;
            if (rc != clean_rc) errors++;
            const char *bad = c->check(c->ctx, rc, clean_rc, fired);
            if (!bad && live != 0) bad = "blocks left allocated";
            if (!bad && !fired) bad = "the failure point was never reached (the path varies)";
            if (bad) {
                /* The first few are enough to act on; the count says how wide it is. */
                if (failures < 5)
                    printf("FAIL %s: allocation %lu of %lu failing (%s): %s (rc %d, %ld "
                           "blocks live)\n",
                           c->name, n, total, mode ? "and every later one" : "only that one", bad,
                           rc, live);
                failures++;
            }
        }
    }
    printf("%s %s: %lu allocations, %lu runs (%lu ended in an error, %lu answered as the clean "
           "run), %d failed\n",
           failures ? "FAIL" : "ok", c->name, total, runs, errors, runs - errors, failures);
    fflush(stdout);
    return failures;
}
