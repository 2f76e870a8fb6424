/*
 * fuzz_policy.c - fuzz target: the policy loader on arbitrary YAML. The input is split into up
 * to 4 files at lines "#%file" so cross-file rules (duplicate names, tenancy/enforcement at
 * most once, rules naming pools of another file) are exercised too.
 * Properties: an error leaves *out NULL and has a message; a success has a 64-hex revision,
 * describes itself, and loading the same sources again gives the same revision.
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEP "#%file\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024) return 0;
    static const char *const paths[] = {"p/00-a.yaml", "p/10-b.yaml", "p/20-c.yml", "p/30-d.yaml"};
    gpa_policy_source src[4];
    char *bufs[4] = {0};
    size_t n = 0, off = 0;
    size_t seplen = strlen(SEP);
    while (n < 4) {
        size_t end = size;
        if (n < 3)
            for (size_t i = off; i + seplen <= size; i++)
                if (memcmp(data + i, SEP, seplen) == 0) {
                    end = i;
                    break;
                }
        bufs[n] = fz_dup_exact(data + off, end - off);
        src[n] = (gpa_policy_source){paths[n], bufs[n], end - off};
        n++;
        if (end == size) break;
        off = end + seplen;
    }
    gpa_policy *p = (gpa_policy *)&src; /* must be overwritten */
    gpa_error err = {0};
    int rc = gpa_policy_load_sources(&p, src, n, &err);
    if (rc != GPA_OK) {
        if (p != NULL) fz_fail("policy load failed but *out is not NULL", NULL, NULL);
        if (err.message[0] == '\0') fz_fail("policy load failed without a message", NULL, NULL);
    } else {
        const char *rev = gpa_policy_revision(p);
        if (!rev || strlen(rev) != 64 || strspn(rev, "0123456789abcdef") != 64)
            fz_fail("policy revision is not 64 lowercase hex characters", NULL, NULL);
        char *desc = gpa_policy_describe(p);
        if (!desc) fz_fail("gpa_policy_describe returned NULL", NULL, NULL);
        free(desc);
        (void)gpa_policy_pool_count(p);
        (void)gpa_policy_rule_count(p);
        gpa_policy *p2 = NULL;
        if (gpa_policy_load_sources(&p2, src, n, &err) != GPA_OK ||
            strcmp(gpa_policy_revision(p2), rev) != 0)
            fz_fail("the same sources loaded twice give different results", NULL, NULL);
        gpa_policy_unref(p2);
        gpa_policy_unref(p);
    }
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    return 0;
}
