/*
 * fault.h - the allocation-failure harness the test/fault/ tests share (SQLite's habit): run an
 * operation once to count its allocations, then once per N = 1..count with the N-th allocation
 * failing, and check each run ends in a clean error with nothing left allocated.
 *
 * How allocations are reached, and what is not (fault.c says why this mechanism):
 *   - our code (gpa_core, gpa_server, the test): malloc, calloc, realloc, strdup, strndup,
 *     asprintf, vasprintf, free, by the linker's --wrap (each test executable links with
 *     -Wl,--wrap=...), so ASan's interceptors stay the real allocator underneath;
 *   - cJSON (a shared library): cJSON_InitHooks routes its malloc/free through the same
 *     wrappers;
 *   - libyaml: linked statically into these tests (libyaml.a) so --wrap reaches its
 *     yaml_malloc/yaml_realloc/yaml_strdup too; when only the shared library exists the tests
 *     say so and libyaml's internal allocations are not failed;
 *   - OpenSSL (the policy revision's SHA-256): CRYPTO_set_mem_functions routes it;
 *   - not reached: allocations inside glibc itself (opendir, fopen, stdio buffers, qsort's
 *     scratch), which nothing in the core can observe failing except as the call's own error.
 *
 * Must never: allocate while armed on its own behalf, or let one run's failure leak into the
 * next (the counter, the live-block count and the failure point are reset per run).
 */
#ifndef GPA_TEST_FAULT_H
#define GPA_TEST_FAULT_H

#include <stdbool.h>
#include <stddef.h>

/* Call first in main: installs the cJSON and OpenSSL hooks; exits 1 when OpenSSL had already
 * allocated (the hook would miss allocations). */
void fault_init(void);

/* One operation under test. run does the whole operation (including freeing what it made) and
 * returns its return code; it may record what it answered for check. check judges one armed run:
 * clean_rc is the rc of the unarmed run, fired says whether the injected failure happened.
 * Returns NULL when fine, else a short reason (static text). */
typedef struct fault_case {
    const char *name;
    int (*run)(void *ctx);
    const char *(*check)(void *ctx, int rc, int clean_rc, bool fired);
    void *ctx;
} fault_case;

/* Runs c: warm-up, counting run, then every N transiently (only the N-th allocation fails)
 * and persistently (the N-th and all later ones fail; every N up to 600, beyond that a stride
 * keeping ~600 runs). Prints one summary line
 * ("name: N allocations, 2N runs ok" or the failing N and reason) and returns the number of
 * failed runs. */
int fault_run_case(const fault_case *c);

/* For a run that must put shared state back after the operation (the server's policy store):
 * from here to the end of the run nothing fails and nothing is counted, but blocks are still
 * tracked, so what the restore frees and allocates balances what the operation did. */
void fault_stop_failing(void);

/* The same for a stretch of the run (the test's own setup inside it, e.g. a working copy the
 * operation changes in place): fault_hold(true) ... fault_hold(false). */
void fault_hold(bool on);

/* True when libyaml's allocations are reached (it is linked statically). */
bool fault_yaml_reached(void);

/* Allocations counted while armed, for tests that want to assert a path allocates at all. */
unsigned long fault_last_count(void);

#endif
