/*
 * output_nonodes.c - pools whose pods no node of the inventory can take by their node
 * requirements, named at the top of every answer. A pool's nodeSelector reaches its pods as
 * the engine writes it (a required node affinity expression in every term), so what every
 * stored pod of a pool asks of a node is the pool's selector plus whatever all of them ask
 * besides; when no node meets those requirements together, every pod of the pool comes out
 * "no node matches" and the planner needs to know why. The usual why is a label value that is
 * almost right (NVIDIA-H100-80GB where GPU Feature Discovery writes NVIDIA-H100-80GB-HBM3):
 * the closest value the inventory's nodes carry for that label is named beside it.
 *
 * Reads the admitted pods and the nodes' labels only, never the packing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

/* distinct label values looked at for the closest one (a requirement on a per-node label such
 * as the hostname has as many values as nodes) */
#define MAX_VALUES 4096

/* The expressions every required node affinity term of pod spec `spec` carries, and its
 * nodeSelector entries as `In [value]` expressions: what the pod asks of any node. */
static cJSON *requirements(const cJSON *spec)
{
    cJSON *out = cJSON_CreateArray();
    if (!out) return NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector")) {
        if (!cJSON_IsString(e)) continue;
        cJSON *x = cJSON_CreateObject();
        cJSON *vals = cJSON_CreateArray();
        if (!x || !vals) {
            cJSON_Delete(x);
            cJSON_Delete(vals);
            cJSON_Delete(out);
            return NULL;
        }
        cJSON_AddStringToObject(x, "key", e->string);
        cJSON_AddStringToObject(x, "operator", "In");
        cJSON_AddItemToArray(vals, cJSON_CreateString(e->valuestring));
        cJSON_AddItemToObject(x, "values", vals);
        cJSON_AddItemToArray(out, x);
    }
    const cJSON *terms = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "affinity"),
                                             "nodeAffinity"),
            "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    const cJSON *first = cJSON_GetArrayItem(terms, 0);
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(first, "matchExpressions")) {
        bool everywhere = true;
        const cJSON *t;
        cJSON_ArrayForEach(t, terms) {
            bool here = false;
            const cJSON *f;
            cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "matchExpressions"))
                here = here || cJSON_Compare(e, f, true);
            everywhere = everywhere && here;
        }
        if (everywhere) cJSON_AddItemToArray(out, cJSON_Duplicate(e, true));
    }
    return out;
}

static bool has_req(const cJSON *reqs, const cJSON *r)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, reqs)
        if (cJSON_Compare(x, r, true)) return true;
    return false;
}

/* "key=value", "key In [a, b]", "key Exists", "key Gt 3" */
static void req_text(gpa_sb *b, const cJSON *r)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "key");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(r, "operator");
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(r, "values");
    const char *ks = cJSON_IsString(k) ? k->valuestring : "?";
    const char *os = cJSON_IsString(op) ? op->valuestring : "?";
    if (strcmp(os, "In") == 0 && cJSON_GetArraySize(vals) == 1 &&
        cJSON_IsString(cJSON_GetArrayItem(vals, 0))) {
        gpa_sb_printf(b, "%s=%s", ks, cJSON_GetArrayItem(vals, 0)->valuestring);
        return;
    }
    gpa_sb_printf(b, "%s %s", ks, os);
    if (!cJSON_GetArraySize(vals)) return;
    gpa_sb_printf(b, " [");
    const cJSON *v;
    bool sep = false;
    cJSON_ArrayForEach(v, vals) {
        gpa_sb_printf(b, "%s%s", sep ? ", " : "", cJSON_IsString(v) ? v->valuestring : "?");
        sep = true;
    }
    gpa_sb_printf(b, "]");
}

/* Levenshtein distance, two rows (label values are at most 63 characters). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255) return la > lb ? la : lb;
    size_t prev[256], cur[256];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

/* The value of label `key` on the inventory's nodes closest to one of `wanted` (fewest edits,
 * then the most nodes, then the first seen); NULL when no node has the label. */
static const char *closest_value(const gpa_sim *s, const char *key, const cJSON *wanted,
                                 size_t *nodes)
{
    const char *vals[MAX_VALUES];
    size_t counts[MAX_VALUES], nv = 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const char *v = gpa_sim_node_label(s, n, key);
        if (!v) continue;
        size_t i = 0;
        while (i < nv && strcmp(vals[i], v) != 0)
            i++;
        if (i == nv) {
            if (nv == MAX_VALUES) continue;
            vals[nv] = v;
            counts[nv++] = 0;
        }
        counts[i]++;
    }
    const char *best = NULL;
    size_t bd = 0;
    *nodes = 0;
    for (size_t i = 0; i < nv; i++) {
        size_t d = (size_t)-1;
        const cJSON *w;
        cJSON_ArrayForEach(w, wanted)
            if (cJSON_IsString(w)) {
                size_t x = distance(w->valuestring, vals[i]);
                if (x < d) d = x;
            }
        if (!best || d < bd || (d == bd && counts[i] > *nodes)) {
            best = vals[i];
            bd = d;
            *nodes = counts[i];
        }
    }
    return best;
}

static bool all_hold(const gpa_sim *s, size_t n, const cJSON *reqs)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs)
        if (!gpa_sim_node_expr_holds(s, n, r)) return false;
    return true;
}

/* Fills x for pool `pool` whose pods all ask `common`, when no node meets it all. */
static bool judge_pool(gpa_sim_nonode *x, const gpa_sim *s, const char *pool, const cJSON *common)
{
    if (!cJSON_GetArraySize(common)) return false;
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        if (all_hold(s, n, common)) return false;
    gpa_sb b = {0};
    const cJSON *r, *alone = NULL;
    cJSON_ArrayForEach(r, common) {
        size_t n = 0;
        while (n < s->inv->n_nodes && !gpa_sim_node_expr_holds(s, n, r))
            n++;
        if (n == s->inv->n_nodes) {
            alone = r;
            break;
        }
    }
    *x = (gpa_sim_nonode){.pool = pool};
    if (alone) {
        req_text(&b, alone);
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(alone, "key");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(alone, "operator");
        if (cJSON_IsString(k) && cJSON_IsString(op) && strcmp(op->valuestring, "In") == 0) {
            const char *c =
                closest_value(s, k->valuestring, cJSON_GetObjectItemCaseSensitive(alone, "values"),
                              &x->closest_nodes);
            x->closest = c ? strdup(c) : NULL;
            x->label = strdup(k->valuestring);
        }
    } else {
        /* each requirement met somewhere, never all on one node */
        bool sep = false;
        cJSON_ArrayForEach(r, common) {
            if (sep) gpa_sb_printf(&b, " and ");
            req_text(&b, r);
            sep = true;
        }
        x->together = true;
    }
    x->requirement = gpa_sb_done(&b);
    if (!x->requirement) { /* out of memory: nothing to say rather than half a line */
        free(x->closest);
        free(x->label);
        *x = (gpa_sim_nonode){0};
        return false;
    }
    return true;
}

gpa_sim_nonode *gpa_sim_pools_without_nodes(const gpa_sim *s, size_t *n_out)
{
    *n_out = 0;
    gpa_sim_nonode *out = calloc(s->n_tmpls + 1, sizeof *out);
    bool *seen = calloc(s->n_tmpls + 1, sizeof *seen);
    if (!out || !seen) {
        free(out);
        free(seen);
        return NULL;
    }
    for (size_t i = 0; i < s->n_tmpls; i++) {
        const gpa_sim_tmpl *t = &s->tmpls[i];
        if (seen[i] || !t->pool) continue;
        cJSON *common = requirements(cJSON_GetObjectItemCaseSensitive(t->obj, "spec"));
        for (size_t j = i; common && j < s->n_tmpls; j++) {
            const gpa_sim_tmpl *u = &s->tmpls[j];
            if (!u->pool || strcmp(u->pool, t->pool) != 0) continue;
            seen[j] = true;
            if (j == i) continue;
            cJSON *theirs = requirements(cJSON_GetObjectItemCaseSensitive(u->obj, "spec"));
            if (!theirs) {
                cJSON_Delete(common);
                common = NULL;
                break;
            }
            for (int k = cJSON_GetArraySize(common) - 1; k >= 0; k--)
                if (!has_req(theirs, cJSON_GetArrayItem(common, k)))
                    cJSON_DeleteItemFromArray(common, k);
            cJSON_Delete(theirs);
        }
        if (!common) {
            gpa_sim_nonodes_free(out, *n_out);
            free(seen);
            *n_out = 0;
            return NULL;
        }
        if (judge_pool(&out[*n_out], s, t->pool, common)) (*n_out)++;
        cJSON_Delete(common);
    }
    free(seen);
    return out;
}

void gpa_sim_nonodes_free(gpa_sim_nonode *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        free(a[i].requirement);
        free(a[i].closest);
        free(a[i].label);
    }
    free(a);
}

void gpa_sim_nonode_line(gpa_sb *b, const gpa_sim_nonode *x)
{
    if (x->together)
        gpa_sb_printf(b, "pool %s matches no node: its pods ask %s, which no node has together",
                      x->pool, x->requirement);
    else if (!x->label)
        gpa_sb_printf(b, "pool %s matches no node: its pods ask %s, which no node has", x->pool,
                      x->requirement);
    else if (!x->closest)
        gpa_sb_printf(b, "pool %s matches no node: its pods ask %s; no node has the label %s",
                      x->pool, x->requirement, x->label);
    else
        gpa_sb_printf(b,
                      "pool %s matches no node: its pods ask %s; the closest value nodes carry "
                      "is %s=%s (%zu nodes)",
                      x->pool, x->requirement, x->label, x->closest, x->closest_nodes);
}
