/*
 * strbuf.h - the growable string builder that the text writers (policy describe and lint,
 * JSON to YAML, the text diff, the simulator's reports, the /metrics page) build their
 * answers in.
 *
 * Transparent on purpose: a builder lives on the caller's stack, `gpa_sb b = {0};` is an
 * empty one, and recursive writers read b.p/b.len directly. An allocation failure latches
 * `oom` and every later append is a no-op, so a writer checks once, at the end (gpa_sb_done
 * or gpa_sb_take), instead of after each call.
 *
 * Not the AdmissionReview codec's buffer (src/core/format/json_write.h): that one is tuned for the
 * request path (inline appends, JSON and base64 writers); this one is for the offline tools.
 */
#ifndef GPA_STRBUF_H
#define GPA_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gpa_sb {
    char *p;         /* NUL-terminated once anything was written; NULL before */
    size_t len, cap; /* bytes written (terminator excluded), bytes allocated */
    bool oom;        /* sticky: an allocation (or vsnprintf) failed */
} gpa_sb;

/* Appends n bytes of s (which need not be terminated). */
void gpa_sb_put(gpa_sb *b, const char *s, size_t n);
void gpa_sb_puts(gpa_sb *b, const char *s);
/* Appends n copies of c (indentation). */
void gpa_sb_fill(gpa_sb *b, char c, size_t n);
__attribute__((format(printf, 2, 3))) void gpa_sb_printf(gpa_sb *b, const char *fmt, ...);

/* Hands the text to the caller (free() it): "" when nothing was written, NULL after an
 * allocation failure (the bytes are freed). The builder is left empty. */
char *gpa_sb_done(gpa_sb *b);
/* The same, except that nothing written gives NULL too (for answers where NULL means
 * "nothing to say"). */
char *gpa_sb_take(gpa_sb *b);
/* Drops the text (for a writer giving up half way). */
void gpa_sb_free(gpa_sb *b);

#endif
