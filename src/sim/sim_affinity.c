/*
 * sim_affinity.c - required pod affinity and anti-affinity as the scheduler checks them:
 * topology keys turned into per-node value ids once per run, then per placement attempt a
 * view of which values each term allows or forbids given the pods already placed (both
 * directions for anti-affinity; the first pod of a group may satisfy its own affinity).
 *
 * Reads the placed pods, never changes them; a view is freed before the next attempt.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* The scheduler's namespace rule: the listed namespaces united with those namespaceSelector
 * picks; neither given means the term owner's namespace. Namespaces carry no labels here
 * but the one the API server sets, kubernetes.io/metadata.name, so a selector on anything
 * else matches none (docs/simulate.md). */
static bool ns_matches(const gpa_sim_term *term, const char *owner_ns, const char *ns)
{
    bool listed = cJSON_GetArraySize(term->namespaces) > 0;
    if (listed && gpa_sim_str_in(term->namespaces, ns)) return true;
    if (cJSON_IsObject(term->ns_selector)) {
        if (!term->ns_selector->child) return true;
        char lbl[300];
        snprintf(lbl, sizeof lbl, "{\"kubernetes.io/metadata.name\":\"%.250s\"}", ns);
        cJSON *labels = cJSON_Parse(lbl);
        bool m = labels && gpa_sim_selector_matches(term->ns_selector, labels);
        cJSON_Delete(labels);
        return m;
    }
    return listed ? false : strcmp(owner_ns, ns) == 0;
}

/* A label pair's bit in a 63-bit filter (bit 63 marks a template's filter as computed). */
static uint64_t pair_bit(const char *k, const char *v)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = k; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ '=') * 1099511628211ULL;
    for (const char *p = v; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return 1ULL << (h % 63);
}

static uint64_t labels_bloom(gpa_sim_tmpl *t)
{
    if (!t->label_bloom) {
        uint64_t b = 1ULL << 63;
        const cJSON *l;
        cJSON_ArrayForEach(l, t->labels)
            if (cJSON_IsString(l)) b |= pair_bit(l->string, l->valuestring);
        t->label_bloom = b;
    }
    return t->label_bloom;
}

/* The pairs a selector requires (matchLabels, and In with one value): a template whose filter
 * lacks one of their bits cannot match, so the full match runs only on the rest. */
static uint64_t selector_needs(const cJSON *sel)
{
    uint64_t need = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sel, "matchLabels")) {
        if (cJSON_IsString(e)) need |= pair_bit(e->string, e->valuestring);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sel, "matchExpressions")) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "operator");
        const cJSON *vals = cJSON_GetObjectItemCaseSensitive(e, "values");
        if (cJSON_IsString(k) && cJSON_IsString(op) && strcmp(op->valuestring, "In") == 0 &&
            cJSON_GetArraySize(vals) == 1 && cJSON_IsString(vals->child))
            need |= pair_bit(k->valuestring, vals->child->valuestring);
    }
    return need;
}

void gpa_sim_view_free(gpa_sim_aff_view *v, const gpa_sim *s, const gpa_sim_tmpl *t)
{
    if (v->aff_ok)
        for (size_t i = 0; i < t->n_aff; i++)
            free(v->aff_ok[i]);
    free(v->aff_ok);
    if (v->anti)
        for (size_t i = 0; i < s->n_topos; i++)
            free(v->anti[i]);
    free(v->anti);
}

int gpa_sim_view_build(gpa_sim_aff_view *v, gpa_sim *s, size_t ti, gpa_error *err)
{
    memset(v, 0, sizeof *v);
    gpa_sim_tmpl *t = &s->tmpls[ti];
    v->aff_free = true;
    if (t->n_aff) {
        v->aff_ok = calloc(t->n_aff, sizeof *v->aff_ok);
        if (!v->aff_ok) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t a = 0; a < t->n_aff; a++) {
        const gpa_sim_topo *tp = &s->topos[t->aff[a].key_id];
        v->aff_ok[a] = calloc((size_t)tp->n_values + 1, 1);
        if (!v->aff_ok[a]) return gpa_fail(err, GPA_ENOMEM, "out of memory");
        uint64_t need = selector_needs(t->aff[a].selector);
        for (size_t q0 = 0; q0 < s->n_placed_tmpls; q0++) {
            gpa_sim_tmpl *ot = &s->tmpls[s->placed_tmpls[q0]];
            if (!ot->n_placed || (labels_bloom(ot) & need) != need ||
                !ns_matches(&t->aff[a], t->ns, ot->ns) ||
                !gpa_sim_selector_matches(t->aff[a].selector, ot->labels))
                continue;
            v->aff_free = false;
            for (size_t q = 0; q < ot->n_placed; q++) {
                int vid = tp->vid[ot->placed_nodes[q]];
                if (vid >= 0) v->aff_ok[a][vid] = 1;
            }
        }
    }
    /* Anti-affinity both ways: this pod's terms against placed pods, placed pods' terms
     * against this pod. */
    for (size_t q0 = 0; q0 < s->n_placed_tmpls; q0++) {
        const gpa_sim_tmpl *ot = &s->tmpls[s->placed_tmpls[q0]];
        if (!ot->n_placed) continue;
        for (int dir = 0; dir < 2; dir++) {
            const gpa_sim_tmpl *owner = dir ? ot : t, *other = dir ? t : ot;
            for (size_t a = 0; a < owner->n_anti; a++) {
                const gpa_sim_term *term = &owner->anti[a];
                if (!ns_matches(term, owner->ns, other->ns) ||
                    !gpa_sim_selector_matches(term->selector, other->labels))
                    continue;
                if (!v->anti) {
                    v->anti = calloc(s->n_topos, sizeof *v->anti);
                    if (!v->anti) return gpa_fail(err, GPA_ENOMEM, "out of memory");
                }
                const gpa_sim_topo *tp = &s->topos[term->key_id];
                if (!v->anti[term->key_id]) {
                    v->anti[term->key_id] = calloc((size_t)tp->n_values + 1, 1);
                    if (!v->anti[term->key_id]) return gpa_fail(err, GPA_ENOMEM, "out of memory");
                }
                v->any_anti = true;
                for (size_t q = 0; q < ot->n_placed; q++) {
                    int vid = tp->vid[ot->placed_nodes[q]];
                    if (vid >= 0) v->anti[term->key_id][vid] = 1;
                }
            }
        }
    }
    if (v->aff_free)
        for (size_t a = 0; a < t->n_aff; a++)
            if (!ns_matches(&t->aff[a], t->ns, t->ns) ||
                !gpa_sim_selector_matches(t->aff[a].selector, t->labels))
                v->aff_free = false; /* cannot satisfy its own affinity: never schedulable */
    if (v->aff_free && t->n_aff) {
        /* self-match: any node carrying the topology keys will do */
    }
    return GPA_OK;
}

int gpa_sim_view_add_own(gpa_sim_aff_view *v, gpa_sim *s, size_t ti, size_t n, gpa_error *err)
{
    /* gpa_sim_view_build's loops with the placed template and the placement limited to t and
     * n (both anti-affinity directions are the same term when owner and other are t) */
    const gpa_sim_tmpl *t = &s->tmpls[ti];
    for (size_t a = 0; a < t->n_aff; a++) {
        if (!ns_matches(&t->aff[a], t->ns, t->ns) ||
            !gpa_sim_selector_matches(t->aff[a].selector, t->labels))
            continue;
        v->aff_free = false;
        int vid = s->topos[t->aff[a].key_id].vid[n];
        if (vid >= 0) v->aff_ok[a][vid] = 1;
    }
    for (size_t a = 0; a < t->n_anti; a++) {
        const gpa_sim_term *term = &t->anti[a];
        if (!ns_matches(term, t->ns, t->ns) || !gpa_sim_selector_matches(term->selector, t->labels))
            continue;
        if (!v->anti && !(v->anti = calloc(s->n_topos, sizeof *v->anti)))
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        const gpa_sim_topo *tp = &s->topos[term->key_id];
        if (!v->anti[term->key_id] &&
            !(v->anti[term->key_id] = calloc((size_t)tp->n_values + 1, 1)))
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        v->any_anti = true;
        int vid = tp->vid[n];
        if (vid >= 0) v->anti[term->key_id][vid] = 1;
    }
    return GPA_OK;
}

bool gpa_sim_view_aff_ok(const gpa_sim_aff_view *v, const gpa_sim *s, const gpa_sim_tmpl *t,
                         size_t n, bool self_ok)
{
    for (size_t a = 0; a < t->n_aff; a++) {
        int vid = s->topos[t->aff[a].key_id].vid[n];
        if (vid < 0) return false;
        if (self_ok) continue;
        if (!v->aff_ok[a][vid]) return false;
    }
    return true;
}

bool gpa_sim_view_anti_ok(const gpa_sim_aff_view *v, const gpa_sim *s, size_t n)
{
    if (!v->any_anti) return true;
    for (size_t k = 0; k < s->n_topos; k++) {
        if (!v->anti[k]) continue;
        int vid = s->topos[k].vid[n];
        if (vid >= 0 && v->anti[k][vid]) return false;
    }
    return true;
}

int gpa_sim_topo_id(gpa_sim *s, const char *key, gpa_error *err)
{
    for (size_t i = 0; i < s->n_topos; i++)
        if (strcmp(s->topos[i].key, key) == 0) return (int)i;
    gpa_sim_topo *nt = realloc(s->topos, (s->n_topos + 1) * sizeof *nt);
    if (!nt) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->topos = nt;
    gpa_sim_topo *t = &nt[s->n_topos];
    t->key = strdup(key);
    t->vid = malloc((s->inv->n_nodes ? s->inv->n_nodes : 1) * sizeof *t->vid);
    t->n_values = 0;
    if (!t->key || !t->vid) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    /* Value ids by first appearance; quadratic only in distinct values of one key. */
    const char **vals = malloc((s->inv->n_nodes ? s->inv->n_nodes : 1) * sizeof *vals);
    if (!vals) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    bool hostname = strcmp(key, "kubernetes.io/hostname") == 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const char *v = gpa_sim_node_label(s, n, key);
        t->vid[n] = -1;
        if (!v) continue;
        if (hostname) {
            t->vid[n] = (int)n; /* hostnames are unique per node */
            continue;
        }
        int id = -1;
        for (int k = t->n_values - 1; k >= 0 && k >= t->n_values - 64; k--)
            if (strcmp(vals[k], v) == 0) id = k;
        if (id < 0)
            for (int k = 0; k < t->n_values - 64 && id < 0; k++)
                if (strcmp(vals[k], v) == 0) id = k;
        if (id < 0) {
            vals[t->n_values] = v;
            id = t->n_values++;
        }
        t->vid[n] = id;
    }
    if (hostname) t->n_values = (int)s->inv->n_nodes;
    free(vals);
    s->n_topos++;
    return (int)(s->n_topos - 1);
}
