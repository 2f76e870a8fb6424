/*
 * strbuf.c - the growable string builder of strbuf.h: doubling growth, always terminated,
 * failures latched rather than reported per call.
 *
 * Must never: write past cap, or leave p unterminated after an append that succeeded.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"

/* Room for n more bytes plus the terminator; false (oom latched) when there is none. */
static bool reserve(gpa_sb *b, size_t n)
{
    if (b->oom) return false;
    if (n > SIZE_MAX / 4 - b->len) {
        b->oom = true;
        return false;
    }
    if (b->len + n + 1 <= b->cap) return true;
    size_t nc = b->cap ? b->cap * 2 : 256;
    while (nc < b->len + n + 1)
        nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
        b->oom = true;
        return false;
    }
    b->p = np;
    b->cap = nc;
    return true;
}

void gpa_sb_put(gpa_sb *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gpa_sb_puts(gpa_sb *b, const char *s)
{
    gpa_sb_put(b, s, strlen(s));
}

void gpa_sb_fill(gpa_sb *b, char c, size_t n)
{
    if (!reserve(b, n)) return;
    memset(b->p + b->len, c, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gpa_sb_printf(gpa_sb *b, const char *fmt, ...)
{
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    va_list again;
    va_copy(again, ap);
    /* One pass when it fits; otherwise the first pass only measured. */
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && b->p && (size_t)n < room) {
        b->len += (size_t)n;
    } else if (n < 0) {
        b->oom = true;
    } else if (reserve(b, (size_t)n)) {
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

char *gpa_sb_take(gpa_sb *b)
{
    char *p = b->oom ? NULL : b->p;
    if (b->oom) free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return p;
}

char *gpa_sb_done(gpa_sb *b)
{
    bool failed = b->oom;
    char *p = gpa_sb_take(b);
    if (!p && !failed) p = strdup("");
    return p;
}

void gpa_sb_free(gpa_sb *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}
