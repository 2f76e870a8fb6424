/*
 * yaml_read.h - typed access to a gpa_ynode tree, for every reader of user-written YAML (the
 * policy loader, the test-suite reader, the simulator's inventory reader), with ONE rule for
 * null and tags and ONE error collector. Public because src/tools and src/sim use it.
 *
 * The rule (the policy loader's, which is what kubectl does with the same text):
 *  - a node is null when it is absent (NULL) or an UNTAGGED, UNQUOTED scalar that YAML 1.2's
 *    core schema resolves to null (null Null NULL ~ or empty). Quoted or tagged: never null.
 *  - tags: `!!str` and `!` make a scalar a string whatever it says ("!!str 1" is "1");
 *    `!!map` / `!!seq` are accepted on a mapping / list; every other tag is refused with
 *    "YAML tag T is not supported here" (never silently ignored: a tag means the writer
 *    wanted a type we would not give them).
 *  - every other scalar is typed as gpa_yaml_resolve_plain types it.
 *
 * The collector records "file:line:col: message" (or "file: message" when line <= 0) and
 * never stops the walk, so one pass finds every error. It keeps at most `max` errors (the
 * first ones, or the lowest by position: see gpa_yread_init) and counts the rest, so no input
 * can make it grow without bound. An allocation failure sets r->oom; later reports are dropped.
 * Must never: crash on any tree (NULL nodes included), or accept a value of the wrong type.
 */
#ifndef GPA_YAML_READ_H
#define GPA_YAML_READ_H

#include <stdarg.h>
#include <stdint.h>
#include "gpu_admission/yaml_tree.h"

typedef struct gpa_yerror {
    size_t file_idx; /* order key of the file the error is in */
    int line, col;
    size_t seq; /* report order */
    char *text; /* malloc'd "file:line:col: message" */
} gpa_yerror;

typedef struct gpa_yread {
    const char *file; /* prefixes every message; borrowed, must outlive the reports */
    size_t file_idx;
    size_t max;       /* errors kept */
    bool by_position; /* keep (and gpa_yread_sorted returns) the lowest by (file, line, col) */
    gpa_yerror *errs; /* kept errors, n_errs <= max */
    size_t n_errs, cap_errs;
    size_t n_total; /* every error reported, kept or not */
    size_t seq;
    bool oom;
    /* Where returned strings and arrays come from (NULL: malloc, caller frees each). */
    void *(*alloc)(void *ctx, size_t size);
    void *alloc_ctx;
} gpa_yread;

/* max == 0 keeps nothing but still counts. by_position false: the first max errors in report
 * order; true: the max lowest by (file_idx, line, col, seq) - what a caller that prints errors
 * sorted by position and cut at max would show. */
void gpa_yread_init(gpa_yread *r, const char *file, size_t max, bool by_position);
/* Frees the kept errors' texts (not r itself, nor what alloc returned). */
void gpa_yread_free(gpa_yread *r);
/* Sorts the kept errors by position (by_position) or report order and returns them. */
const gpa_yerror *gpa_yread_sorted(gpa_yread *r, size_t *n);

void gpa_yread_error(gpa_yread *r, const gpa_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gpa_yread_error_at(gpa_yread *r, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void gpa_yread_verror_at(gpa_yread *r, int line, int col, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* ---- the rule ---- */

typedef enum {
    GPA_YT_NULL,
    GPA_YT_BOOL,
    GPA_YT_INT,
    GPA_YT_FLOAT,
    GPA_YT_STRING,
    GPA_YT_MAP,
    GPA_YT_SEQ
} gpa_ytype;

bool gpa_yread_is_null(const gpa_ynode *n);
/* The type a node has (NULL: GPA_YT_NULL). A refused tag does not change the type: check
 * gpa_yread_tag_ok first. */
gpa_ytype gpa_yread_type(const gpa_ynode *n);
/* "nothing", "null", "a boolean", "an integer", "a number", "a string", "a mapping", "a list". */
const char *gpa_yread_type_name(const gpa_ynode *n);
/* false (and an error at n) when n carries a tag the rule refuses. */
bool gpa_yread_tag_ok(gpa_yread *r, const gpa_ynode *n);

/* ---- getters: each checks the tag, then the type, reports "what: expected X, got Y" and
 * returns false (enum: -1) on any problem. n must not be NULL. ---- */

bool gpa_yread_want_map(gpa_yread *r, const gpa_ynode *n, const char *what);
bool gpa_yread_want_seq(gpa_yread *r, const gpa_ynode *n, const char *what);
/* A string (quoted, !!str, or plain resolving to a string; no NUL inside), copied through
 * r->alloc. */
bool gpa_yread_str(gpa_yread *r, const gpa_ynode *n, const char *what, char **out);
/* A scalar's text as written, whatever its type, if not null: for fields where `name: 1` means
 * the name "1". Borrowed from the tree. Reports nothing: the caller words "not null". */
const char *gpa_yread_text(const gpa_ynode *n);
bool gpa_yread_int(gpa_yread *r, const gpa_ynode *n, const char *what, int64_t min, int64_t max,
                   int64_t *out);
bool gpa_yread_bool(gpa_yread *r, const gpa_ynode *n, const char *what, bool *out);
/* The index of the string in names (NULL-terminated), or -1 after reporting the allowed ones. */
int gpa_yread_enum(gpa_yread *r, const gpa_ynode *n, const char *what, const char *const *names);
/* Checks every key of mapping m is in names (NULL-terminated) and puts each value in vals[i]
 * (NULL when absent); unknown keys are reported with the allowed list. */
void gpa_yread_fields(gpa_yread *r, const gpa_ynode *m, const char *what, const char *const *names,
                      const gpa_ynode **vals);

typedef struct gpa_ypos {
    int line, col;
} gpa_ypos;

/* A list of at most max distinct strings, each passed to check (may be NULL; returns NULL or
 * why the item is wrong). items/pos (pos may be NULL) come from r->alloc; the valid items are
 * kept even when the result is false. */
bool gpa_yread_strlist(gpa_yread *r, const gpa_ynode *n, const char *what, bool allow_empty,
                       size_t max, const char *(*check)(const char *), const char *item_what,
                       char ***items, size_t *n_items, gpa_ypos **pos);
/* A mapping of at most max string -> string pairs; keys checked by check_key (reported as
 * "what: key_what \"k\" why"), values by check_value (as "what[k]: value_what \"v\" why"). */
bool gpa_yread_strmap(gpa_yread *r, const gpa_ynode *n, const char *what, size_t max,
                      const char *(*check_key)(const char *), const char *key_what,
                      const char *(*check_value)(const char *), const char *value_what,
                      char ***keys, char ***values, size_t *n_pairs);

#endif
