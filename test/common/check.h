/*
 * check.h - the smallest test harness that can fail loudly: CHECK* record a failure with
 * file:line and keep going, so one run shows every broken expectation; check_done() prints
 * "N checks, M failed" and returns the exit code ctest reads.
 */
#ifndef GPA_TEST_CHECK_H
#define GPA_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_total, check_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_total++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        check_total++;                                                                             \
        if (va_ != vb_) {                                                                          \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a,    \
                    va_, #b, vb_);                                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *sa_ = (a), *sb_ = (b);                                                         \
        check_total++;                                                                             \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                               \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a,      \
                    sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");                                   \
        }                                                                                          \
    } while (0)

/* substring check: haystack contains needle */
#define CHECK_CONTAINS(h, n)                                                                       \
    do {                                                                                           \
        const char *sh_ = (h), *sn_ = (n);                                                         \
        check_total++;                                                                             \
        if (!sh_ || !strstr(sh_, sn_)) {                                                           \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,         \
                    sh_ ? sh_ : "(null)", sn_);                                                    \
        }                                                                                          \
    } while (0)

static inline int check_done(void)
{
    printf("%d checks, %d failed\n", check_total, check_failed);
    return check_failed ? 1 : 0;
}

/* A whole file, NUL-terminated (malloc'd; NULL when it cannot be read); *len its size when
 * len is not NULL. Shared by the tests that read fixtures. */
static inline char *check_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n < 0 ? NULL : malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = '\0';
    fclose(f);
    if (b && len) *len = (size_t)n;
    return b;
}

#endif
