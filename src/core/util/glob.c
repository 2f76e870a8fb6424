/*
 * glob.c - namespace globs: '*' matches any run (also empty), '?' exactly one character.
 *
 * Matching keeps only the most recent '*' as a restart point. For patterns with just '*' and
 * '?' that is complete (a later star can always absorb what an earlier one would have), and
 * it bounds the work to O(len(pattern) x len(s)) - never the exponential blow-up of naive
 * recursive backtracking on inputs like "*a*a*a*a*b". Never allocates.
 */
#include <string.h>

#include "gpu_admission/glob.h"

static bool glob_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '*' ||
           c == '?';
}

int gpa_glob_validate(const char *pattern, gpa_error *err)
{
    if (!pattern || !*pattern) return gpa_fail(err, GPA_EPARSE, "empty namespace glob");
    size_t n = strlen(pattern);
    if (n > 253) return gpa_fail(err, GPA_EPARSE, "namespace glob is longer than 253 characters");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)pattern[i];
        if (!glob_char_ok((char)c)) {
            if (c >= 0x20 && c < 0x7f)
                return gpa_fail(err, GPA_EPARSE,
                                "namespace glob \"%s\": character '%c' at position %zu is not "
                                "allowed (use a-z 0-9 . - and the wildcards * ?)",
                                pattern, c, i + 1);
            return gpa_fail(err, GPA_EPARSE,
                            "namespace glob \"%s\": byte 0x%02x at position %zu is not allowed "
                            "(use a-z 0-9 . - and the wildcards * ?)",
                            pattern, c, i + 1);
        }
    }
    return GPA_OK;
}

bool gpa_glob_match(const char *pattern, const char *s)
{
    if (!pattern || !s) return false;
    const char *p = pattern, *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '?' || (*p != '*' && *p == *s)) {
            p++;
            s++;
        } else if (*p == '*') {
            star = p++;
            resume = s;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/*
 * Non-empty intersection of two globs, bottom-up over suffix pairs: f(i,j) says whether some
 * string matches both a[i..] and b[j..]. A '*' may match nothing (advance past it) or absorb
 * one more character taken from the other side. Only rows i and i+1 are kept, so the work is
 * bounded by the two lengths and nothing is allocated.
 */
bool gpa_glob_intersects(const char *a, const char *b)
{
    if (!a || !b) return false;
    size_t la = strlen(a), lb = strlen(b);
    if (la > 253 || lb > 253) return false;
    bool next[254], cur[254];
    for (size_t i = la + 1; i-- > 0;) {
        for (size_t j = lb + 1; j-- > 0;) {
            bool v;
            if (i == la && j == lb)
                v = true;
            else if (i < la && a[i] == '*')
                v = next[j] || (j < lb && cur[j + 1]);
            else if (j < lb && b[j] == '*')
                v = cur[j + 1] || (i < la && next[j]);
            else if (i == la || j == lb)
                v = false;
            else
                v = (a[i] == '?' || b[j] == '?' || a[i] == b[j]) && next[j + 1];
            cur[j] = v;
        }
        memcpy(next, cur, sizeof cur);
    }
    return next[0];
}
