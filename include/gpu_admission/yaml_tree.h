/*
 * yaml_tree.h - a YAML stream as a small tree of nodes that remember where they were written.
 * Public so every reader of user-written YAML reports the same file:line:col: the policy loader,
 * yamljson (which needs plain-vs-quoted to type scalars), the test-suite reader and the
 * simulator's inventory reader (src/sim, which may only use public headers).
 *
 * The builder refuses anchors, aliases and nesting deeper than GPA_YAML_MAX_DEPTH, so no input
 * can make it expand or recurse without bound. Duplicate mapping keys are not fatal here: the
 * later pair is dropped and reported in ystream.dups so each caller decides (both refuse).
 */
#ifndef GPA_YAML_TREE_H
#define GPA_YAML_TREE_H

#include <stddef.h>
#include <string.h>
#include "gpu_admission/common.h"

#define GPA_YAML_MAX_DEPTH 64

typedef enum { GPA_YN_SCALAR, GPA_YN_MAP, GPA_YN_SEQ } gpa_ynode_kind;

typedef struct gpa_ynode {
    gpa_ynode_kind kind;
    int line, col; /* 1-based position of the node's first character */
    bool quoted;   /* scalar written quoted or as a block scalar (| >): always a string */
    char *tag;     /* explicit tag ("tag:yaml.org,2002:str", "!foo"), NULL when none */
    char *value;   /* scalar text, NUL-terminated (may contain NULs: see len) */
    size_t len;
    size_t n;                /* seq: items; map: pairs */
    struct gpa_ynode **kids; /* seq: n items; map: 2n (key, value, key, value, ...) */
} gpa_ynode;

typedef struct gpa_ydup {
    int line, col; /* the repeated key */
    int first_line, first_col;
    char *key;
} gpa_ydup;

typedef struct gpa_ystream {
    size_t n_docs;
    gpa_ynode **docs; /* NULL entry for an empty document */
    size_t n_dups;
    gpa_ydup *dups;
} gpa_ystream;

/* Parses buf. On failure returns GPA_EPARSE (syntax, anchors/aliases, depth, non-scalar key)
 * or GPA_ENOMEM, with *line / *col (1-based) and err->message holding only the text (no
 * position prefix) so callers can format "file:line:col: text" themselves. */
int gpa_ystream_parse(gpa_ystream **out, const char *buf, size_t len, int *line, int *col,
                      gpa_error *err);
void gpa_ystream_free(gpa_ystream *s);

/* How kubectl (sigs.k8s.io/yaml, YAML 1.2 core schema) types a PLAIN scalar: null (null Null
 * NULL ~ or empty), bool (true/false in 3 spellings), int (decimal, no leading zeros), float
 * (1.5, .5, 1e3), else string ("yes", "08", "0x10", "1Gi", ".inf"). */
typedef enum { GPA_YS_NULL, GPA_YS_BOOL, GPA_YS_INT, GPA_YS_FLOAT, GPA_YS_STRING } gpa_yscalar_type;
gpa_yscalar_type gpa_yaml_resolve_plain(const char *s, size_t n);

/* One node (and everything under it) as cJSON, typed exactly as gpa_yaml_to_json types it
 * (defined in yamljson.c). Errors carry "LINE:COL: text". For callers that need both the value
 * and where it was written (object readers, test suites). */
struct cJSON;
int gpa_ynode_to_json(struct cJSON **out, const gpa_ynode *n, gpa_error *err);

/* Map helpers */
static inline gpa_ynode *gpa_ymap_key(const gpa_ynode *m, size_t i)
{
    return m->kids[2 * i];
}
static inline gpa_ynode *gpa_ymap_val(const gpa_ynode *m, size_t i)
{
    return m->kids[2 * i + 1];
}
/* The value of key in mapping m; NULL when m is NULL or not a mapping, or has no such key
 * (keys are unique: the builder drops repeats). */
static inline const gpa_ynode *gpa_ymap_get(const gpa_ynode *m, const char *key)
{
    if (!m || m->kind != GPA_YN_MAP) return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(gpa_ymap_key(m, i)->value, key) == 0) return gpa_ymap_val(m, i);
    return NULL;
}

#endif
