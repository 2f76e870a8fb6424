/*
 * textdiff.c - a unified diff of two short texts (expected vs actual parts of an object), for
 * readable test failures: longest common subsequence over lines, hunks with 3 lines of context.
 *
 * Quadratic in lines, so it is only meant for the parts of objects a case names; beyond
 * MAX_LINES a side the whole of both texts is printed as removed/added, never a hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "gpu_admission/textdiff.h"

#define MAX_LINES 3000
#define CONTEXT   3

typedef struct lines {
    const char **p;
    size_t *len;
    size_t n;
} lines;

static bool split(lines *l, const char *s)
{
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == '\n';
    l->p = malloc(cap * sizeof *l->p);
    l->len = malloc(cap * sizeof *l->len);
    l->n = 0;
    if (!l->p || !l->len) return false;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        l->p[l->n] = s;
        l->len[l->n++] = n;
        s += n + (nl ? 1 : 0);
    }
    return true;
}

static void put_line(gpa_sb *b, char mark, const lines *l, size_t i)
{
    gpa_sb_put(b, &mark, 1);
    gpa_sb_put(b, l->p[i], l->len[i]);
    gpa_sb_put(b, "\n", 1);
}

static bool same(const lines *a, size_t i, const lines *b, size_t j)
{
    return a->len[i] == b->len[j] && memcmp(a->p[i], b->p[j], a->len[i]) == 0;
}

/* op per step: 0 same, 1 only in a (-), 2 only in b (+) */
typedef struct step {
    unsigned char op;
    size_t ai, bi;
} step;

char *gpa_text_diff(const char *a, const char *b, const char *label_a, const char *label_b)
{
    if (!a || !b || strcmp(a, b) == 0) return NULL;
    lines la = {0}, lb = {0};
    gpa_sb out = {0};
    step *steps = NULL;
    uint32_t *dp = NULL;
    size_t ns = 0;
    if (!split(&la, a) || !split(&lb, b)) goto done;
    steps = malloc((la.n + lb.n + 1) * sizeof *steps);
    if (!steps) goto done;
    if (la.n <= MAX_LINES && lb.n <= MAX_LINES) {
        size_t w = lb.n + 1;
        dp = calloc((la.n + 1) * w, sizeof *dp);
        if (!dp) goto done;
        /* dp[i][j] = LCS of a[i..] and b[j..] */
        for (size_t i = la.n; i-- > 0;)
            for (size_t j = lb.n; j-- > 0;)
                dp[i * w + j] = same(&la, i, &lb, j) ? dp[(i + 1) * w + j + 1] + 1
                                                     : (dp[(i + 1) * w + j] >= dp[i * w + j + 1]
                                                            ? dp[(i + 1) * w + j]
                                                            : dp[i * w + j + 1]);
        size_t i = 0, j = 0;
        while (i < la.n || j < lb.n) {
            if (i < la.n && j < lb.n && same(&la, i, &lb, j))
                steps[ns++] = (step){0, i++, j++};
            else if (i < la.n && (j == lb.n || dp[(i + 1) * w + j] >= dp[i * w + j + 1]))
                steps[ns++] = (step){1, i++, j};
            else
                steps[ns++] = (step){2, i, j++};
        }
    } else {
        for (size_t i = 0; i < la.n; i++)
            steps[ns++] = (step){1, i, 0};
        for (size_t j = 0; j < lb.n; j++)
            steps[ns++] = (step){2, la.n, j};
    }
    char head[512];
    snprintf(head, sizeof head, "--- %s\n+++ %s\n", label_a ? label_a : "a",
             label_b ? label_b : "b");
    gpa_sb_put(&out, head, strlen(head));
    size_t k = 0;
    while (k < ns) {
        if (steps[k].op == 0) {
            k++;
            continue;
        }
        /* a hunk: from CONTEXT before this change to CONTEXT after the last change that is
         * at most 2*CONTEXT same lines away */
        size_t start = k >= CONTEXT ? k - CONTEXT : 0;
        size_t end = k;
        for (size_t q = k; q < ns; q++) {
            if (steps[q].op != 0) {
                end = q;
                continue;
            }
            if (q - end > 2 * CONTEXT) break;
        }
        size_t stop = end + CONTEXT + 1 < ns ? end + CONTEXT + 1 : ns;
        size_t a0 = steps[start].ai, b0 = steps[start].bi, an = 0, bn = 0;
        for (size_t q = start; q < stop; q++) {
            an += steps[q].op != 2;
            bn += steps[q].op != 1;
        }
        snprintf(head, sizeof head, "@@ -%zu,%zu +%zu,%zu @@\n", an ? a0 + 1 : a0, an,
                 bn ? b0 + 1 : b0, bn);
        gpa_sb_put(&out, head, strlen(head));
        for (size_t q = start; q < stop; q++) {
            if (steps[q].op == 2)
                put_line(&out, '+', &lb, steps[q].bi);
            else
                put_line(&out, steps[q].op ? '-' : ' ', &la, steps[q].ai);
        }
        k = stop;
    }
done:
    free(la.p);
    free(la.len);
    free(lb.p);
    free(lb.len);
    free(steps);
    free(dp);
    /* nothing written: an allocation failed before the diff began */
    return gpa_sb_take(&out);
}
