/*
 * policy_schema.c - the loader's few schema helpers the format layer's typed reader
 * (yaml_read.h) cannot hold: positions that name a policy file, errors reported in another
 * file than the current one, and the string lists / label maps checked with the Kubernetes
 * name rules (the k8s layer sits above format). Must never stop at the first error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/k8s_names.h"
#include "policy/policy_loader.h"

void gpa_policy_error_pos(loader *L, gpa_srcpos pos, const char *fmt, ...)
{
    const char *file = L->r.file;
    size_t idx = L->r.file_idx;
    for (size_t i = 0; i < L->n_files; i++)
        if (L->files[i] == pos.file) L->r.file_idx = i;
    L->r.file = pos.file;
    va_list ap;
    va_start(ap, fmt);
    gpa_yread_verror_at(&L->r, pos.line, pos.col, fmt, ap);
    va_end(ap);
    L->r.file = file;
    L->r.file_idx = idx;
}

gpa_srcpos gpa_policy_pos(loader *L, const gpa_ynode *n)
{
    return (gpa_srcpos){L->r.file, n ? n->line : 1, n ? n->col : 1};
}

bool gpa_policy_strlist(loader *L, const gpa_ynode *n, const char *what, bool allow_empty,
                        const char *(*check)(const char *), const char *item_what, gpa_strlist *out,
                        gpa_srcpos **pos_out)
{
    gpa_ypos *yp = NULL;
    bool ok = gpa_yread_strlist(&L->r, n, what, allow_empty, GPA_POLICY_MAX_LIST, check, item_what,
                                &out->items, &out->n, pos_out ? &yp : NULL);
    if (!pos_out) return ok;
    *pos_out = NULL;
    if (!yp) return ok;
    gpa_srcpos *pos = gpa_arena_array(L->arena, out->n, sizeof *pos);
    if (!pos) {
        L->r.oom = true;
        return false;
    }
    for (size_t i = 0; i < out->n; i++)
        pos[i] = (gpa_srcpos){L->r.file, yp[i].line, yp[i].col};
    *pos_out = pos;
    return ok;
}

bool gpa_policy_labelmap(loader *L, const gpa_ynode *n, const char *what, gpa_kvlist *out)
{
    return gpa_yread_strmap(&L->r, n, what, GPA_POLICY_MAX_LIST, gpa_k8s_qualified_name,
                            "label key", gpa_k8s_label_value, "label value", &out->keys,
                            &out->values, &out->n);
}
