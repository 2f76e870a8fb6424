/*
 * policy_load.c - policy files -> one immutable gpa_policy, or every error found.
 *
 * Files are taken in lexical path order, documents in file order, rules in that order. Each
 * document is checked field by field (policy_schema.c helpers, pools in policy_pools.c);
 * names are resolved once every file is read; then the model is copied into one arena,
 * GPU resource names and the revision are computed, and the snapshot is returned with one
 * reference. Any error: nothing is returned and err lists "file:line:col: message" lines.
 * No I/O here (the directory reader is policy_dir.c). Must never return a partial set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/glob.h"
#include "gpu_admission/quantity.h"
#include "k8s/k8s_names.h"
#include "policy/policy_dra.h"
#include "policy/policy_isolation.h"
#include "policy/policy_loader.h"
#include "policy/policy_shared_nodes.h"

#define API_VERSION "gpu-admission.io/v1alpha1"
#define KIND        "GPUPolicy"

static const char *const trust_names[] = {"trusted", "untrusted", NULL};

static gpa_trust trust_from(int i)
{
    return i == 0 ? GPA_TRUST_TRUSTED : GPA_TRUST_UNTRUSTED;
}

static bool grow(loader *L, void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 8;
    void *na = realloc(*arr, nc * sz);
    if (!na) {
        L->r.oom = true;
        return false;
    }
    *arr = na;
    *cap = nc;
    return true;
}

/* ---- tenancy ---- */

static void load_tenant(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {"name", "namespaces", "trust", "dra", NULL};
    const gpa_ynode *v[4];
    if (!gpa_yread_want_map(&L->r, n, "tenant")) return;
    gpa_yread_fields(&L->r, n, "tenant", f, v);
    gpa_tenant t = {.pos = gpa_policy_pos(L, n), .trust = GPA_TRUST_UNTRUSTED};
    const char *why;
    if (!v[0] || gpa_yread_is_null(v[0]))
        gpa_yread_error(&L->r, n, "tenant: name is required");
    else if (gpa_yread_str(&L->r, v[0], "tenant name", &t.name) &&
             (why = gpa_k8s_dns_label(t.name)))
        gpa_yread_error(&L->r, v[0], "tenant name \"%.80s\" %s (it is used as a label value)",
                        t.name, why);
    if (!v[1] || gpa_yread_is_null(v[1])) {
        gpa_yread_error(&L->r, n, "tenant %s: namespaces is required (a list of namespace globs)",
                        t.name ? t.name : "");
    } else {
        gpa_srcpos *pos = NULL;
        gpa_policy_strlist(L, v[1], "tenant namespaces", false, NULL, "namespace glob",
                           &t.namespaces, &pos);
        for (size_t i = 0; i < t.namespaces.n; i++) {
            gpa_error ge;
            if (gpa_glob_validate(t.namespaces.items[i], &ge) != GPA_OK)
                gpa_policy_error_pos(L, pos[i], "%s", ge.message);
        }
    }
    if (v[2] && !gpa_yread_is_null(v[2])) {
        int tr = gpa_yread_enum(&L->r, v[2], "tenant trust", trust_names);
        if (tr >= 0) t.trust = trust_from(tr);
    }
    if (v[3]) gpa_policy_load_tenant_dra(L, &t, v[3]);
    if (!t.name) return;
    for (size_t i = 0; i < L->n_tenants; i++) {
        if (strcmp(L->tenants[i].name, t.name) == 0) {
            gpa_yread_error(&L->r, v[0], "tenant \"%s\" is already defined at %s:%d:%d", t.name,
                            L->tenants[i].pos.file, L->tenants[i].pos.line, L->tenants[i].pos.col);
            return;
        }
    }
    if (grow(L, (void **)&L->tenants, &L->cap_tenants, L->n_tenants, sizeof t))
        L->tenants[L->n_tenants++] = t;
}

static void load_tenancy(loader *L, const gpa_ynode *key, const gpa_ynode *n)
{
    static const char *const f[] = {"tenants", "default", NULL};
    static const char *const fd[] = {"trust", NULL};
    if (L->has_tenancy) {
        gpa_yread_error(&L->r, key,
                        "tenancy is already defined at %s:%d:%d (at most one tenancy block across "
                        "all files)",
                        L->tenancy_pos.file, L->tenancy_pos.line, L->tenancy_pos.col);
        return;
    }
    L->has_tenancy = true;
    L->tenancy_pos = gpa_policy_pos(L, key);
    if (gpa_yread_is_null(n) || !gpa_yread_want_map(&L->r, n, "tenancy")) return;
    const gpa_ynode *v[2];
    gpa_yread_fields(&L->r, n, "tenancy", f, v);
    if (v[0] && !gpa_yread_is_null(v[0]) && gpa_yread_want_seq(&L->r, v[0], "tenancy.tenants"))
        for (size_t i = 0; i < v[0]->n; i++) {
            if (L->n_tenants >= GPA_POLICY_MAX_ITEMS) {
                gpa_yread_error(&L->r, v[0]->kids[i], "too many tenants (at most %d)",
                                GPA_POLICY_MAX_ITEMS);
                break;
            }
            load_tenant(L, v[0]->kids[i]);
        }
    if (v[1] && !gpa_yread_is_null(v[1]) && gpa_yread_want_map(&L->r, v[1], "tenancy.default")) {
        const gpa_ynode *d[1];
        gpa_yread_fields(&L->r, v[1], "tenancy.default", fd, d);
        if (d[0] && !gpa_yread_is_null(d[0])) {
            int tr = gpa_yread_enum(&L->r, d[0], "tenancy.default.trust", trust_names);
            if (tr >= 0) L->default_trust = trust_from(tr);
        }
    }
}

/* ---- rules ---- */

static void load_range_int(loader *L, const gpa_ynode *n, const char *what, gpa_range *r)
{
    static const char *const f[] = {"min", "max", NULL};
    const gpa_ynode *v[2];
    if (!gpa_yread_want_map(&L->r, n, what)) return;
    gpa_yread_fields(&L->r, n, what, f, v);
    char w[64];
    snprintf(w, sizeof w, "%s.min", what);
    if (v[0] && !gpa_yread_is_null(v[0]))
        r->has_min = gpa_yread_int(&L->r, v[0], w, 0, 1 << 20, &r->min);
    snprintf(w, sizeof w, "%s.max", what);
    if (v[1] && !gpa_yread_is_null(v[1]))
        r->has_max = gpa_yread_int(&L->r, v[1], w, 0, 1 << 20, &r->max);
    if (r->has_min && r->has_max && r->min > r->max)
        gpa_yread_error(&L->r, v[0], "%s: min (%lld) is greater than max (%lld)", what,
                        (long long)r->min, (long long)r->max);
}

static bool get_quantity(loader *L, const gpa_ynode *n, const char *what, int64_t *bytes)
{
    if (n->kind != GPA_YN_SCALAR ||
        (!n->quoted && !n->tag && gpa_yaml_resolve_plain(n->value, n->len) != GPA_YS_STRING &&
         gpa_yaml_resolve_plain(n->value, n->len) != GPA_YS_INT &&
         gpa_yaml_resolve_plain(n->value, n->len) != GPA_YS_FLOAT)) {
        gpa_yread_error(&L->r, n, "%s: expected a quantity such as 40Gi, got %s", what,
                        gpa_yread_type_name(n));
        return false;
    }
    gpa_quantity q;
    gpa_error qe;
    if (gpa_quantity_parse(&q, n->value, n->len, &qe) != GPA_OK) {
        gpa_yread_error(&L->r, n, "%s: %s", what, qe.message);
        return false;
    }
    if (q.milli < 0) {
        gpa_yread_error(&L->r, n, "%s: must not be negative (got %s)", what, n->value);
        return false;
    }
    *bytes = gpa_quantity_value(&q);
    return true;
}

static void load_range_mem(loader *L, const gpa_ynode *n, gpa_range *r)
{
    static const char *const f[] = {"min", "max", NULL};
    const gpa_ynode *v[2];
    if (!gpa_yread_want_map(&L->r, n, "gpuMemory")) return;
    gpa_yread_fields(&L->r, n, "gpuMemory", f, v);
    if (v[0] && !gpa_yread_is_null(v[0]))
        r->has_min = get_quantity(L, v[0], "gpuMemory.min", &r->min);
    if (v[1] && !gpa_yread_is_null(v[1]))
        r->has_max = get_quantity(L, v[1], "gpuMemory.max", &r->max);
    if (r->has_min && r->has_max && r->min > r->max)
        gpa_yread_error(&L->r, v[0], "gpuMemory: min (%s) is greater than max (%s)", v[0]->value,
                        v[1]->value);
}

static const char *tenant_name_check(const char *s)
{
    return gpa_k8s_dns_label(s);
}

static void load_match(loader *L, const gpa_ynode *n, gpa_rule *r, rule_refs *refs)
{
    static const char *const f[] = {"namespaces", "labels", "gpus", "gpuMemory",
                                    "tenants",    "trust",  NULL};
    const gpa_ynode *v[6];
    if (!gpa_yread_want_map(&L->r, n, "match")) return;
    gpa_yread_fields(&L->r, n, "match", f, v);
    if (v[0] && !gpa_yread_is_null(v[0])) {
        gpa_srcpos *pos = NULL;
        gpa_policy_strlist(L, v[0], "match.namespaces", false, NULL, "namespace glob",
                           &r->namespaces, &pos);
        for (size_t i = 0; i < r->namespaces.n; i++) {
            gpa_error ge;
            if (gpa_glob_validate(r->namespaces.items[i], &ge) != GPA_OK)
                gpa_policy_error_pos(L, pos[i], "%s", ge.message);
        }
    }
    if (v[1] && !gpa_yread_is_null(v[1])) gpa_policy_labelmap(L, v[1], "match.labels", &r->labels);
    if (v[2] && !gpa_yread_is_null(v[2])) load_range_int(L, v[2], "gpus", &r->gpus);
    if (v[3] && !gpa_yread_is_null(v[3])) load_range_mem(L, v[3], &r->gpu_memory);
    if (v[4] && !gpa_yread_is_null(v[4])) {
        gpa_policy_strlist(L, v[4], "match.tenants", false, tenant_name_check, "tenant",
                           &r->tenants, &refs->tenant_pos);
        refs->tenants = r->tenants;
    }
    if (v[5] && !gpa_yread_is_null(v[5])) {
        int tr = gpa_yread_enum(&L->r, v[5], "match.trust", trust_names);
        if (tr >= 0) r->trust = trust_from(tr);
    }
}

static const char *rule_name_check(const char *s)
{
    return gpa_k8s_dns_subdomain(s);
}

static void load_rule(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {"name", "match", "place", "deny", NULL};
    static const char *const fp[] = {"pool", "migProfile", NULL};
    const gpa_ynode *v[4];
    if (!gpa_yread_want_map(&L->r, n, "rule")) return;
    gpa_yread_fields(&L->r, n, "rule", f, v);
    gpa_rule r = {.pos = gpa_policy_pos(L, n)};
    rule_refs refs = {0};
    const char *why;
    if (!v[0] || gpa_yread_is_null(v[0]))
        gpa_yread_error(&L->r, n, "rule: name is required");
    else if (gpa_yread_str(&L->r, v[0], "rule name", &r.name) && (why = rule_name_check(r.name)))
        gpa_yread_error(&L->r, v[0], "rule name \"%.80s\" %s", r.name, why);
    if (v[1] && !gpa_yread_is_null(v[1])) load_match(L, v[1], &r, &refs);
    bool has_place = v[2] && !gpa_yread_is_null(v[2]), has_deny = v[3] != NULL;
    if (has_place && has_deny)
        gpa_yread_error(&L->r, v[3], "rule %s has both place and deny: give exactly one",
                        r.name ? r.name : "");
    else if (!has_place && !has_deny)
        gpa_yread_error(&L->r, n, "rule %s needs either place: {pool: ...} or deny: \"message\"",
                        r.name ? r.name : "");
    if (has_deny && gpa_yread_str(&L->r, v[3], "deny", &r.deny_message) && !r.deny_message[0])
        gpa_yread_error(&L->r, v[3],
                        "deny: the message must not be empty (it tells the user what to do)");
    if (has_place && gpa_yread_want_map(&L->r, v[2], "place")) {
        const gpa_ynode *pv[2];
        gpa_yread_fields(&L->r, v[2], "place", fp, pv);
        if (!pv[0] || gpa_yread_is_null(pv[0]))
            gpa_yread_error(&L->r, v[2], "place.pool is required");
        else if (gpa_yread_str(&L->r, pv[0], "place.pool", &refs.pool))
            refs.pool_pos = gpa_policy_pos(L, pv[0]);
        if (pv[1] && !gpa_yread_is_null(pv[1]) &&
            gpa_yread_str(&L->r, pv[1], "place.migProfile", &refs.mig_profile))
            refs.mig_pos = gpa_policy_pos(L, pv[1]);
    }
    if (!r.name) return;
    for (size_t i = 0; i < L->n_rules; i++) {
        if (strcmp(L->rules[i].name, r.name) == 0) {
            gpa_yread_error(&L->r, v[0], "rule \"%s\" is already defined at %s:%d:%d", r.name,
                            L->rules[i].pos.file, L->rules[i].pos.line, L->rules[i].pos.col);
            return;
        }
    }
    size_t cap = L->cap_rules;
    if (!grow(L, (void **)&L->rules, &cap, L->n_rules, sizeof r)) return;
    cap = L->cap_rules;
    if (!grow(L, (void **)&L->refs, &cap, L->n_rules, sizeof refs)) return;
    L->cap_rules = cap;
    L->rules[L->n_rules] = r;
    L->refs[L->n_rules] = refs;
    L->n_rules++;
}

/* ---- documents ---- */

static void load_once_enum(loader *L, const gpa_ynode *key, const gpa_ynode *v, bool *has,
                           gpa_srcpos *pos, const char *what, const char *const *names, int *out)
{
    if (*has) {
        gpa_yread_error(&L->r, key, "%s is already set at %s:%d:%d (at most once across all files)",
                        what, pos->file, pos->line, pos->col);
        return;
    }
    *has = true;
    *pos = gpa_policy_pos(L, key);
    int i = gpa_yread_enum(&L->r, v, what, names);
    if (i >= 0) *out = i;
}

static void load_spec(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {"tenancy",   "pools", "rules",     "enforcement", "unmatched",
                                    "workloads", "dra",   "isolation", NULL};
    static const char *const enf[] = {"deny", "warn", "audit", NULL};
    static const char *const unm[] = {"allow", "deny", NULL};
    if (!gpa_yread_want_map(&L->r, n, "spec")) return;
    const gpa_ynode *v[8];
    gpa_yread_fields(&L->r, n, "spec", f, v);
    /* find the keys again for "already defined here" positions */
    const gpa_ynode *keys[8] = {0};
    for (size_t i = 0; i < n->n; i++)
        for (size_t j = 0; j < 8; j++)
            if (strcmp(gpa_ymap_key(n, i)->value, f[j]) == 0) keys[j] = gpa_ymap_key(n, i);
    if (v[0]) load_tenancy(L, keys[0], v[0]);
    if (v[1] && !gpa_yread_is_null(v[1]) && gpa_yread_want_seq(&L->r, v[1], "spec.pools"))
        for (size_t i = 0; i < v[1]->n; i++) {
            if (L->n_pools >= GPA_POLICY_MAX_ITEMS) {
                gpa_yread_error(&L->r, v[1]->kids[i], "too many pools (at most %d)",
                                GPA_POLICY_MAX_ITEMS);
                break;
            }
            gpa_policy_load_pool(L, v[1]->kids[i]);
        }
    if (v[2] && !gpa_yread_is_null(v[2]) && gpa_yread_want_seq(&L->r, v[2], "spec.rules"))
        for (size_t i = 0; i < v[2]->n; i++) {
            if (L->n_rules >= GPA_POLICY_MAX_ITEMS) {
                gpa_yread_error(&L->r, v[2]->kids[i], "too many rules (at most %d)",
                                GPA_POLICY_MAX_ITEMS);
                break;
            }
            load_rule(L, v[2]->kids[i]);
        }
    if (v[3]) {
        int e = (int)L->enforcement;
        load_once_enum(L, keys[3], v[3], &L->has_enforcement, &L->enforcement_pos, "enforcement",
                       enf, &e);
        L->enforcement = (gpa_enforcement)e;
    }
    if (v[4]) {
        int u = L->unmatched_deny ? 1 : 0;
        load_once_enum(L, keys[4], v[4], &L->has_unmatched, &L->unmatched_pos, "unmatched", unm,
                       &u);
        L->unmatched_deny = u == 1;
    }
    if (v[5]) gpa_policy_load_workloads(L, v[5]);
    if (v[6]) gpa_policy_load_dra(L, keys[6], v[6]);
    if (v[7]) gpa_policy_load_isolation(L, keys[7], v[7]);
}

static void load_metadata(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {"name", "namespace", "labels", "annotations", NULL};
    const gpa_ynode *v[4];
    if (!gpa_yread_want_map(&L->r, n, "metadata")) return;
    gpa_yread_fields(&L->r, n, "metadata", f, v);
    char *s;
    if (v[0] && !gpa_yread_is_null(v[0])) gpa_yread_str(&L->r, v[0], "metadata.name", &s);
    if (v[1] && !gpa_yread_is_null(v[1])) gpa_yread_str(&L->r, v[1], "metadata.namespace", &s);
    for (int k = 2; k < 4; k++) {
        const char *what = k == 2 ? "metadata.labels" : "metadata.annotations";
        if (!v[k] || gpa_yread_is_null(v[k]) || !gpa_yread_want_map(&L->r, v[k], what)) continue;
        for (size_t i = 0; i < v[k]->n; i++) {
            gpa_yread_str(&L->r, gpa_ymap_key(v[k], i), what, &s);
            gpa_yread_str(&L->r, gpa_ymap_val(v[k], i), what, &s);
        }
    }
}

static void load_document(loader *L, const gpa_ynode *root)
{
    static const char *const f[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    const gpa_ynode *v[4];
    if (!gpa_yread_want_map(&L->r, root, "policy document")) return;
    gpa_yread_fields(&L->r, root, "policy document", f, v);
    bool ok = true;
    char *s = NULL;
    if (!v[0] || gpa_yread_is_null(v[0])) {
        gpa_yread_error(&L->r, root, "apiVersion is required: apiVersion: " API_VERSION);
        ok = false;
    } else if (!gpa_yread_str(&L->r, v[0], "apiVersion", &s)) {
        ok = false;
    } else if (strcmp(s, API_VERSION) != 0) {
        gpa_yread_error(&L->r, v[0], "apiVersion must be " API_VERSION ", got \"%.80s\"", s);
        ok = false;
    }
    if (!v[1] || gpa_yread_is_null(v[1])) {
        gpa_yread_error(&L->r, root, "kind is required: kind: " KIND);
        ok = false;
    } else if (!gpa_yread_str(&L->r, v[1], "kind", &s)) {
        ok = false;
    } else if (strcmp(s, KIND) != 0) {
        gpa_yread_error(&L->r, v[1], "kind must be " KIND ", got \"%.80s\"", s);
        ok = false;
    }
    if (v[2] && !gpa_yread_is_null(v[2])) load_metadata(L, v[2]);
    /* the spec of some other kind of object would only produce noise */
    if (ok && v[3] && !gpa_yread_is_null(v[3])) load_spec(L, v[3]);
}

static void load_file(loader *L, const gpa_policy_source *src)
{
    if (src->len > GPA_POLICY_MAX_FILE) {
        gpa_yread_error_at(&L->r, 1, 1,
                           "file is larger than %u MiB; split the policy into several files",
                           GPA_POLICY_MAX_FILE >> 20);
        return;
    }
    gpa_ystream *ys = NULL;
    int line = 1, col = 1;
    gpa_error ye;
    int rc = gpa_ystream_parse(&ys, src->data ? src->data : "", src->data ? src->len : 0, &line,
                               &col, &ye);
    if (rc == GPA_ENOMEM) {
        L->r.oom = true;
        return;
    }
    if (rc) {
        gpa_yread_error_at(&L->r, line, col, "%s", ye.message);
        return;
    }
    for (size_t i = 0; i < ys->n_dups; i++)
        gpa_yread_error_at(&L->r, ys->dups[i].line, ys->dups[i].col,
                           "duplicate key \"%.80s\" (first at %d:%d)", ys->dups[i].key,
                           ys->dups[i].first_line, ys->dups[i].first_col);
    for (size_t i = 0; i < ys->n_docs; i++)
        if (ys->docs[i]) load_document(L, ys->docs[i]);
    gpa_ystream_free(ys);
}

/* ---- resolution and the final snapshot ---- */

static void offered_list(char *buf, size_t cap, const gpa_pool *p)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->n_profiles && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", p->profiles[i]->name);
}

static const char *const sharing_label[] = {"exclusive", "mig", "time-slicing", "mps"};

static void resolve_rules(loader *L, gpa_pool *pools)
{
    for (size_t i = 0; i < L->n_rules; i++) {
        gpa_rule *r = &L->rules[i];
        rule_refs *rf = &L->refs[i];
        for (size_t k = 0; k < rf->tenants.n; k++) {
            bool found = false;
            for (size_t t = 0; t < L->n_tenants && !found; t++)
                found = strcmp(L->tenants[t].name, rf->tenants.items[k]) == 0;
            if (!found)
                gpa_policy_error_pos(L, rf->tenant_pos[k],
                                     "rule %s: tenant \"%s\" is not defined in tenancy.tenants",
                                     r->name, rf->tenants.items[k]);
        }
        if (!rf->pool) continue;
        const gpa_pool *p = NULL;
        for (size_t k = 0; k < L->n_pools && !p; k++)
            if (strcmp(pools[k].name, rf->pool) == 0) p = &pools[k];
        if (!p) {
            char list[512];
            size_t off = 0;
            list[0] = '\0';
            for (size_t k = 0; k < L->n_pools && off < sizeof list; k++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", k ? ", " : "",
                                        pools[k].name);
            gpa_policy_error_pos(L, rf->pool_pos, "rule %s: no pool named \"%s\" (pools: %s)",
                                 r->name, rf->pool, L->n_pools ? list : "none defined");
            continue;
        }
        r->pool = p;
        if (p->sharing == GPA_SHARING_MIG) r->mig_auto = true;
        if (!rf->mig_profile) continue;
        if (p->sharing != GPA_SHARING_MIG) {
            gpa_policy_error_pos(
                L, rf->mig_pos,
                "rule %s: migProfile is only valid for pools with sharing: mig (pool %s is "
                "%s)",
                r->name, p->name, sharing_label[p->sharing]);
            continue;
        }
        if (strcmp(rf->mig_profile, "auto") == 0) continue;
        r->mig_auto = false;
        for (size_t k = 0; k < p->n_profiles && !r->mig_profile; k++)
            if (strcmp(p->profiles[k]->name, rf->mig_profile) == 0) r->mig_profile = p->profiles[k];
        if (!r->mig_profile) {
            char list[256];
            offered_list(list, sizeof list, p);
            gpa_policy_error_pos(
                L, rf->mig_pos,
                "rule %s: pool %s does not offer MIG profile \"%.80s\" (offered: auto, %s)",
                r->name, p->name, rf->mig_profile, list);
        }
    }
}

static bool add_resource(gpa_arena *a, gpa_strlist *l, size_t cap, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], name) == 0) return true;
    if (l->n >= cap) return false;
    l->items[l->n++] = (char *)name; /* every name already lives in the arena or catalog */
    (void)a;
    return true;
}

static int compute_gpu_resources(gpa_policy *p, gpa_arena *a)
{
    size_t cap = 1;
    for (size_t i = 0; i < p->n_pools; i++)
        cap += p->pools[i].n_profiles + 1;
    /* room for the DRA extended resources: at most one per class the policy knows */
    cap += GPA_DRA_BUILTIN_CLASSES + p->dra.generic_classes.n + p->n_pools +
           2 * p->dra.extended_names.n;
    p->gpu_resources.items = gpa_arena_array(a, cap, sizeof(char *));
    if (!p->gpu_resources.items) return GPA_ENOMEM;
    add_resource(a, &p->gpu_resources, cap, "nvidia.com/gpu");
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (pl->sharing == GPA_SHARING_MIG && pl->mig_strategy == GPA_MIG_MIXED)
            for (size_t k = 0; k < pl->n_profiles; k++)
                add_resource(a, &p->gpu_resources, cap, pl->profiles[k]->resource);
        if (pl->shared_resource) add_resource(a, &p->gpu_resources, cap, pl->shared_resource);
    }
    /* DRA extended resources last: a name the device plugin's resources already hold keeps
     * that meaning (gpa_policy_dra_ext_build leaves it out) */
    int rc = gpa_policy_dra_ext_build(p, a);
    if (rc != GPA_OK) return rc;
    for (size_t i = 0; i < p->n_dra_ext; i++)
        add_resource(a, &p->gpu_resources, cap, p->dra_ext[i].name);
    return GPA_OK;
}

static void *arena_alloc(void *arena, size_t size)
{
    return gpa_arena_alloc(arena, size);
}

static int report_errors(loader *L, gpa_error *err)
{
    size_t n_kept = 0;
    const gpa_yerror *errs = gpa_yread_sorted(&L->r, &n_kept);
    if (!err) return GPA_EPOLICY;
    err->code = GPA_EPOLICY;
    size_t off = 0, cap = sizeof err->message, shown = 0;
    const size_t reserve = 64; /* room for the "... more" line */
    err->message[0] = '\0';
    for (size_t i = 0; i < n_kept && shown < GPA_POLICY_MAX_ERRORS; i++) {
        size_t need = strlen(errs[i].text) + 1;
        if (off + need + reserve >= cap && shown > 0) break;
        /* the first error is always shown, cut if a huge path makes it longer than the
         * whole buffer */
        int w = snprintf(err->message + off, cap - reserve - off, "%s%s", shown ? "\n" : "",
                         errs[i].text);
        off += (size_t)w < cap - reserve - off ? (size_t)w : cap - reserve - off - 1;
        shown++;
    }
    size_t total = L->r.n_total;
    if (shown < total)
        snprintf(err->message + off, cap - off, "\n... and %zu more error%s", total - shown,
                 total - shown == 1 ? "" : "s");
    return GPA_EPOLICY;
}

static void loader_clear(loader *L)
{
    gpa_yread_free(&L->r);
    free(L->pools);
    free(L->rules);
    free(L->refs);
    free(L->tenants);
    free(L->files);
    free(L->wl_kinds);
}

static int cmp_src(const void *a, const void *b)
{
    const gpa_policy_source *x = *(const gpa_policy_source *const *)a;
    const gpa_policy_source *y = *(const gpa_policy_source *const *)b;
    int c = strcmp(x->path ? x->path : "", y->path ? y->path : "");
    if (c) return c;
    return x < y ? -1 : x > y;
}

int gpa_policy_load_sources(gpa_policy **out, const gpa_policy_source *sources, size_t n,
                            gpa_error *err)
{
    if (!out || (!sources && n))
        return gpa_fail(err, GPA_EINVAL, "gpa_policy_load_sources: no output or sources");
    *out = NULL;
    loader L = {.default_trust = GPA_TRUST_UNTRUSTED, .enforcement = GPA_ENFORCE_DENY};
    L.arena = gpa_arena_new();
    gpa_yread_init(&L.r, NULL, GPA_POLICY_MAX_ERRORS, true);
    L.r.alloc = arena_alloc;
    L.r.alloc_ctx = L.arena;
    const gpa_policy_source **order = n ? malloc(n * sizeof *order) : NULL;
    L.files = n ? calloc(n, sizeof *L.files) : NULL;
    if (!L.arena || (n && (!order || !L.files))) {
        free(order);
        free(L.files);
        gpa_arena_free(L.arena);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &sources[i];
    qsort(order, n, sizeof *order, cmp_src);
    for (size_t i = 0; i < n && !L.r.oom; i++) {
        L.r.file = gpa_arena_strdup(L.arena, order[i]->path ? order[i]->path : "<policy>");
        if (!L.r.file) {
            L.r.oom = true;
            break;
        }
        L.files[i] = L.r.file;
        L.n_files = i + 1;
        L.r.file_idx = i;
        load_file(&L, order[i]);
    }
    free(order);

    int rc = GPA_OK;
    gpa_policy *p = NULL;
    if (!L.r.oom) {
        p = gpa_arena_alloc(L.arena, sizeof *p);
        gpa_pool *pools = gpa_arena_array(L.arena, L.n_pools, sizeof *pools);
        gpa_rule *rules = gpa_arena_array(L.arena, L.n_rules, sizeof *rules);
        gpa_tenant *tenants = gpa_arena_array(L.arena, L.n_tenants, sizeof *tenants);
        if (!p || !pools || !rules || !tenants) {
            L.r.oom = true;
        } else {
            if (L.n_pools) memcpy(pools, L.pools, L.n_pools * sizeof *pools);
            resolve_rules(&L, pools);
            if (L.n_rules) memcpy(rules, L.rules, L.n_rules * sizeof *rules);
            if (L.n_tenants) memcpy(tenants, L.tenants, L.n_tenants * sizeof *tenants);
            atomic_init(&p->refs, 1);
            p->has_tenancy = L.has_tenancy;
            p->tenants = tenants;
            p->n_tenants = L.n_tenants;
            p->default_trust = L.default_trust;
            p->pools = pools;
            p->n_pools = L.n_pools;
            p->rules = rules;
            p->n_rules = L.n_rules;
            p->enforcement = L.enforcement;
            p->unmatched_deny = L.unmatched_deny;
            p->storage = L.arena;
            if (!gpa_policy_finish_workloads(&L, p)) L.r.oom = true;
            gpa_policy_finish_dra(&L, p);
            p->isolation = L.isolation;
        }
    }
    if (L.r.oom) {
        rc = gpa_fail(err, GPA_ENOMEM, "out of memory while loading the policy");
    } else if (L.r.n_total) {
        rc = report_errors(&L, err);
    } else if ((rc = compute_gpu_resources(p, L.arena)) != GPA_OK ||
               (rc = gpa_policy_compute_revision(p)) != GPA_OK ||
               (rc = gpa_shared_guards_build(p, L.arena)) != GPA_OK ||
               (rc = gpa_rule_index_build(p, L.arena)) != GPA_OK) {
        rc = gpa_fail(err, rc, "out of memory while loading the policy");
    }
    loader_clear(&L);
    if (rc) {
        gpa_arena_free(L.arena);
        return rc;
    }
    *out = p;
    return GPA_OK;
}
