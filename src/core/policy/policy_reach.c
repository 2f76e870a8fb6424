/*
 * policy_reach.c - which rule takes which GPU pods first, exactly (reach.h).
 *
 * The cells: namespace classes (policy_reach_ns.c) fix the tenant, the namespace's trust and
 * every glob; then one dimension per label key the rules test (absent, each value written,
 * any other value) - the trust label among them when a rule tests trust, since a pod lowers
 * its trust with it - then GPU count and gpu-memory as intervals cut at the rules' bounds
 * (memory also "annotation absent"). Every pod falls in one cell and all pods of a cell meet
 * the same rules, so deciding cells decides pods.
 *
 * Cells are not enumerated one by one: per namespace class the rules that can match are
 * split dimension by dimension, classes that keep the same rules are taken together, and a
 * region stops being split as soon as its first rule matches all of it - that rule takes the
 * whole region, and every later rule still listed there loses pods to it. So a 200-rule set
 * is decided in milliseconds (docs/performance.md) while staying exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/glob.h"
#include "gpu_admission/reach.h"
#include "policy/policy_reach.h"
#include "policy/policy_tenancy.h"

#define TRUST_LABEL "gpu-admission.io/trust"

enum { D_LABEL, D_GPUS, D_MEM };

typedef struct dim {
    int kind;
    size_t n; /* classes */
    size_t w; /* words of a class set */
    size_t off;
    /* D_LABEL: class 0 = absent, 1..n_vals = vals, n_vals + 1 = any other value (other) */
    const char *key;
    size_t n_vals;
    const char **vals;
    char *other;
    /* D_GPUS: class i = [lo[i], lo[i+1] - 1]; D_MEM: class 0 = absent, class i = lo[i - 1]... */
    size_t n_lo;
    int64_t *lo;
} dim;

typedef struct an {
    const gpa_policy *p;
    gpa_ns_classes ns;
    size_t *rule_pat, *rule_off; /* per rule from rule_off[i]: the pattern of each glob */
    size_t nd;
    dim *d;
    size_t tw;        /* words of all sets of one rule */
    uint64_t *sets;   /* [base][rule] x tw; base 0 = namespace trusted, 1 = untrusted */
    bool *dead;       /* [base][rule]: some dimension empty, or trust it can never get */
    size_t *nf;       /* [base][rule] x nd: the dimensions whose set is not full ... */
    size_t *n_nf;     /* ... and how many */
    size_t trust_dim; /* SIZE_MAX when no rule tests trust */
    /* the walk */
    size_t cls;
    int base;
    const gpa_tenant *tenant;
    uint64_t *region; /* the region being decided: per dimension, its classes (tw words) */
    size_t cells;
    /* results */
    bool *reached;
    gpa_reach_pod *witness;
    uint64_t *takers; /* [rule] x rw: bit t = rule t takes some of its pods */
    size_t rw;
    bool *has_shadow;
    gpa_reach_pod *shadow;
    size_t *shadow_by;
    size_t *bypass_by; /* SIZE_MAX none */
    gpa_reach_pod *bypass;
    bool *has_unm;
    gpa_reach_pod *unm; /* per tenant, then default */
    bool oom;
    const bool *skip; /* one-namespace mode: rules that cannot meet it (NULL: none skipped) */
} an;

static bool sbit(const uint64_t *b, size_t i)
{
    return (b[i / 64] >> (i % 64)) & 1;
}

static void sset(uint64_t *b, size_t i)
{
    b[i / 64] |= (uint64_t)1 << (i % 64);
}

static uint64_t *rset(an *a, int base, size_t r, size_t d)
{
    return a->sets + ((size_t)base * a->p->n_rules + r) * a->tw + a->d[d].off;
}

static bool set_full(const dim *d, const uint64_t *s)
{
    for (size_t c = 0; c < d->n; c++)
        if (!sbit(s, c)) return false;
    return true;
}

static bool set_empty(const dim *d, const uint64_t *s)
{
    for (size_t c = 0; c < d->n; c++)
        if (sbit(s, c)) return false;
    return true;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Interval starts: floor, each min, each max + 1 (clamped to floor..INT64_MAX), unique. */
static int cuts(dim *d, const gpa_policy *p, const bool *skip, bool mem)
{
    int64_t floor = mem ? 0 : 1;
    d->lo = malloc((2 * p->n_rules + 1) * sizeof *d->lo);
    if (!d->lo) return GPA_ENOMEM;
    size_t n = 0;
    d->lo[n++] = floor;
    for (size_t i = 0; i < p->n_rules; i++) {
        if (skip && skip[i]) continue;
        const gpa_range *g = mem ? &p->rules[i].gpu_memory : &p->rules[i].gpus;
        if (g->has_min && g->min > floor) d->lo[n++] = g->min;
        if (g->has_max && g->max < INT64_MAX && g->max + 1 > floor) d->lo[n++] = g->max + 1;
    }
    qsort(d->lo, n, sizeof *d->lo, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || d->lo[i] != d->lo[u - 1]) d->lo[u++] = d->lo[i];
    d->n_lo = u;
    d->n = mem ? u + 1 : u;
    return GPA_OK;
}

static size_t value_class(const dim *d, const char *v)
{
    for (size_t i = 0; i < d->n_vals; i++)
        if (strcmp(d->vals[i], v) == 0) return i + 1;
    return d->n_vals + 1;
}

static int label_dim(dim *d, const gpa_policy *p, const bool *skip, const char *key)
{
    d->kind = D_LABEL;
    d->key = key;
    d->vals = malloc((p->n_rules + 1) * sizeof *d->vals);
    if (!d->vals) return GPA_ENOMEM;
    size_t n = 0;
    if (strcmp(key, TRUST_LABEL) == 0) d->vals[n++] = "untrusted";
    for (size_t i = 0; i < p->n_rules; i++)
        for (size_t j = 0; j < p->rules[i].labels.n && !(skip && skip[i]); j++)
            if (strcmp(p->rules[i].labels.keys[j], key) == 0)
                d->vals[n++] = p->rules[i].labels.values[j];
    qsort(d->vals, n, sizeof *d->vals, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(d->vals[i], d->vals[u - 1]) != 0) d->vals[u++] = d->vals[i];
    d->n_vals = u;
    d->n = u + 2;
    /* a value no rule writes: "other", else "other-N" */
    char buf[32] = "other";
    for (int k = 1; value_class(d, buf) != d->n_vals + 1; k++)
        snprintf(buf, sizeof buf, "other-%d", k);
    d->other = strdup(buf);
    return d->other ? GPA_OK : GPA_ENOMEM;
}

static int build_dims(an *a)
{
    const gpa_policy *p = a->p;
    bool trust_used = false;
    size_t nk = 0;
    const char **keys = malloc((p->n_rules * 8 + 2) * sizeof *keys);
    size_t cap = p->n_rules * 8 + 2;
    if (!keys) return GPA_ENOMEM;
    for (size_t i = 0; i < p->n_rules; i++) {
        const gpa_rule *r = &p->rules[i];
        if (a->skip && a->skip[i]) continue;
        if (r->trust != GPA_TRUST_UNSET) trust_used = true;
        for (size_t j = 0; j < r->labels.n; j++) {
            bool seen = false;
            for (size_t k = 0; k < nk && !seen; k++)
                seen = strcmp(keys[k], r->labels.keys[j]) == 0;
            if (seen) continue;
            if (nk + 2 > cap) {
                cap *= 2;
                const char **nkeys = realloc(keys, cap * sizeof *keys);
                if (!nkeys) {
                    free(keys);
                    return GPA_ENOMEM;
                }
                keys = nkeys;
            }
            keys[nk++] = r->labels.keys[j];
        }
    }
    bool trust_listed = false;
    for (size_t k = 0; k < nk; k++)
        trust_listed |= strcmp(keys[k], TRUST_LABEL) == 0;
    if (trust_used && !trust_listed) keys[nk++] = TRUST_LABEL;
    a->nd = nk + 2;
    a->d = calloc(a->nd, sizeof *a->d);
    int rc = a->d ? GPA_OK : GPA_ENOMEM;
    a->trust_dim = SIZE_MAX;
    for (size_t k = 0; k < nk && rc == GPA_OK; k++) {
        rc = label_dim(&a->d[k], p, a->skip, keys[k]);
        if (strcmp(keys[k], TRUST_LABEL) == 0) a->trust_dim = k;
    }
    free(keys);
    if (rc != GPA_OK) return rc;
    a->d[nk].kind = D_GPUS;
    a->d[nk + 1].kind = D_MEM;
    if (cuts(&a->d[nk], p, a->skip, false) != GPA_OK ||
        cuts(&a->d[nk + 1], p, a->skip, true) != GPA_OK)
        return GPA_ENOMEM;
    a->tw = 0;
    for (size_t k = 0; k < a->nd; k++) {
        a->d[k].w = a->d[k].n / 64 + 1;
        a->d[k].off = a->tw;
        a->tw += a->d[k].w;
    }
    return GPA_OK;
}

static bool in_range(const gpa_range *g, int64_t v)
{
    return (!g->has_min || v >= g->min) && (!g->has_max || v <= g->max);
}

/* Each rule's set per dimension, for a namespace that is trusted (base 0) or not (1). */
static int build_sets(an *a)
{
    const gpa_policy *p = a->p;
    size_t nr = p->n_rules;
    a->sets = calloc(2 * nr * a->tw + 1, sizeof *a->sets);
    a->dead = calloc(2 * nr + 1, sizeof *a->dead);
    a->nf = calloc(2 * nr * a->nd + 1, sizeof *a->nf);
    a->n_nf = calloc(2 * nr + 1, sizeof *a->n_nf);
    if (!a->sets || !a->dead || !a->nf || !a->n_nf) return GPA_ENOMEM;
    for (int base = 0; base < 2; base++)
        for (size_t i = 0; i < nr; i++) {
            const gpa_rule *r = &p->rules[i];
            bool dead = r->trust == GPA_TRUST_TRUSTED && base == 1;
            if (a->skip && a->skip[i]) {
                a->dead[base * nr + i] = true;
                continue;
            }
            for (size_t k = 0; k < a->nd; k++) {
                dim *d = &a->d[k];
                uint64_t *s = rset(a, base, i, k);
                /* a label the rule tests: the one class of its value, looked up once */
                size_t want = SIZE_MAX;
                if (d->kind == D_LABEL)
                    for (size_t j = 0; j < r->labels.n; j++)
                        if (strcmp(r->labels.keys[j], d->key) == 0)
                            want = value_class(d, r->labels.values[j]);
                for (size_t c = 0; c < d->n; c++) {
                    bool in = true;
                    if (d->kind == D_LABEL) {
                        in = want == SIZE_MAX || c == want;
                        /* the trust label lowers, never raises: class 1 = "untrusted" */
                        if (k == a->trust_dim && base == 0 && r->trust == GPA_TRUST_TRUSTED)
                            in = in && c != 1;
                        if (k == a->trust_dim && base == 0 && r->trust == GPA_TRUST_UNTRUSTED)
                            in = in && c == 1;
                    } else if (d->kind == D_GPUS) {
                        in = in_range(&r->gpus, d->lo[c]);
                    } else {
                        bool crit = r->gpu_memory.has_min || r->gpu_memory.has_max;
                        in = c == 0 ? !crit : in_range(&r->gpu_memory, d->lo[c - 1]);
                    }
                    if (in) sset(s, c);
                }
                if (set_empty(d, s)) dead = true;
            }
            a->dead[base * nr + i] = dead;
            size_t *nf = a->nf + (base * nr + i) * a->nd, n = 0;
            for (size_t k = 0; k < a->nd; k++)
                if (!set_full(&a->d[k], rset(a, base, i, k))) nf[n++] = k;
            a->n_nf[base * nr + i] = n;
        }
    return GPA_OK;
}

/* ---------------------------------------------------------------- witnesses */

/* A pod of the current region that rule r matches (any pod of it when r is SIZE_MAX): per
 * dimension the first class both allow. */
static void make_pod(an *a, gpa_reach_pod *w, size_t r)
{
    memset(w, 0, sizeof *w);
    w->ns = strdup(a->ns.witness[a->cls]);
    w->keys = calloc(a->nd + 1, sizeof *w->keys);
    w->values = calloc(a->nd + 1, sizeof *w->values);
    if (!w->ns || !w->keys || !w->values) goto oom;
    for (size_t k = 0; k < a->nd; k++) {
        const uint64_t *s = r == SIZE_MAX ? NULL : rset(a, a->base, r, k);
        const uint64_t *g = a->region + a->d[k].off;
        size_t c = 0;
        while (c < a->d[k].n && !(sbit(g, c) && (!s || sbit(s, c))))
            c++;
        if (c == a->d[k].n) c = 0; /* cannot happen: r meets the region on every dimension */
        dim *dm = &a->d[k];
        if (dm->kind == D_LABEL) {
            if (c == 0) continue;
            const char *v = c <= dm->n_vals ? dm->vals[c - 1] : dm->other;
            w->keys[w->n_labels] = strdup(dm->key);
            w->values[w->n_labels] = strdup(v);
            w->n_labels++;
            if (!w->keys[w->n_labels - 1] || !w->values[w->n_labels - 1]) goto oom;
        } else if (dm->kind == D_GPUS) {
            w->gpus = dm->lo[c];
        } else if (c > 0) {
            w->has_mem = true;
            w->mem = dm->lo[c - 1];
        }
    }
    return;
oom:
    a->oom = true;
}

/* ---------------------------------------------------------------- the walk */

static void take(an *a, const size_t *L, size_t m)
{
    const gpa_policy *p = a->p;
    size_t f = L[0];
    a->cells++;
    if (!a->reached[f]) {
        a->reached[f] = true;
        make_pod(a, &a->witness[f], f);
    }
    for (size_t i = 1; i < m; i++) {
        size_t r = L[i];
        sset(a->takers + r * a->rw, f);
        if (!a->has_shadow[r]) {
            a->has_shadow[r] = true;
            a->shadow_by[r] = f;
            make_pod(a, &a->shadow[r], r);
        }
        if (p->rules[r].deny_message && !p->rules[f].deny_message && a->bypass_by[r] == SIZE_MAX) {
            a->bypass_by[r] = f;
            make_pod(a, &a->bypass[r], r);
        }
    }
}

/* Can this region still tell anything new? Only rules listed here can take its pods: not
 * when each is already reached (a deny rule: and already seen bypassed), and the tenant's
 * unmatched witness is known. A rule never reached is unsettled everywhere, so every pod it
 * matches is still decided and the rules that take them are all found. */
static bool settled(const an *a, const size_t *L, size_t m)
{
    const gpa_policy *p = a->p;
    size_t t = a->tenant ? (size_t)(a->tenant - p->tenants) : p->n_tenants;
    if (!a->has_unm[t] && !p->unmatched_deny) return false;
    for (size_t i = 0; i < m; i++) {
        size_t r = L[i];
        if (!a->reached[r]) return false;
        if (p->rules[r].deny_message && a->bypass_by[r] == SIZE_MAX) return false;
    }
    return true;
}

static bool meets(const uint64_t *x, const uint64_t *y, size_t w)
{
    for (size_t i = 0; i < w; i++)
        if (x[i] & y[i]) return true;
    return false;
}

static bool within(const uint64_t *x, const uint64_t *y, size_t w)
{
    for (size_t i = 0; i < w; i++)
        if (x[i] & ~y[i]) return false;
    return true;
}

/* Decides the region (a box: per dimension a set of classes) for the rules L that meet it,
 * in rule order. The first rule either holds the whole region - it takes it - or the region
 * is cut in two on a dimension where it does not: the part the first rule holds there and
 * the rest, each with the rules that still meet it. */
static void node(an *a, const size_t *L, size_t m)
{
    if (a->oom) return;
    size_t nr = a->p->n_rules;
    if (m == 0) {
        a->cells++;
        size_t t = a->tenant ? (size_t)(a->tenant - a->p->tenants) : a->p->n_tenants;
        if (!a->has_unm[t]) {
            a->has_unm[t] = true;
            make_pod(a, &a->unm[t], SIZE_MAX);
        }
        return;
    }
    if (settled(a, L, m)) return;
    size_t f = L[0];
    const size_t *nf = a->nf + ((size_t)a->base * nr + f) * a->nd;
    size_t d = SIZE_MAX;
    for (size_t i = 0; i < a->n_nf[(size_t)a->base * nr + f] && d == SIZE_MAX; i++) {
        const dim *dm = &a->d[nf[i]];
        if (!within(a->region + dm->off, rset(a, a->base, f, nf[i]), dm->w)) d = nf[i];
    }
    if (d == SIZE_MAX) {
        take(a, L, m);
        return;
    }
    const dim *dm = &a->d[d];
    uint64_t *g = a->region + dm->off;
    const uint64_t *fs = rset(a, a->base, f, d);
    uint64_t *save = malloc(dm->w * sizeof *save);
    size_t *sub = malloc(m * sizeof *sub);
    if (!save || !sub) {
        a->oom = true;
        free(save);
        free(sub);
        return;
    }
    memcpy(save, g, dm->w * sizeof *g);
    for (int part = 0; part < 2 && !a->oom; part++) {
        for (size_t i = 0; i < dm->w; i++)
            g[i] = part == 0 ? save[i] & fs[i] : save[i] & ~fs[i];
        size_t k = 0;
        for (size_t i = part; i < m; i++) /* the rest drops the first rule */
            if (meets(g, rset(a, a->base, L[i], d), dm->w)) sub[k++] = L[i];
        node(a, sub, k);
    }
    memcpy(g, save, dm->w * sizeof *g);
    free(save);
    free(sub);
}

/* The class's tenant, asked of the engine's own function for one namespace of the class:
 * every tenant glob and every tenant name is among the class's globs, so all its namespaces
 * get the same answer. *taken: the class is a namespace in no tenant named like a tenant,
 * whose GPU pods no rule ever sees. */
static const gpa_tenant *class_tenant(const an *a, size_t cls, const gpa_tenant **taken)
{
    return gpa_policy_tenant_of(a->p, a->ns.witness[cls], taken);
}

static bool rule_meets_class(const an *a, size_t i, size_t cls, const gpa_tenant *t)
{
    const gpa_rule *r = &a->p->rules[i];
    if (r->namespaces.n > 0) {
        bool any = false;
        for (size_t j = 0; j < r->namespaces.n && !any; j++)
            any = gpa_ns_class_matches(&a->ns, cls, a->rule_pat[a->rule_off[i] + j]);
        if (!any) return false;
    }
    if (r->tenants.n > 0) {
        bool any = false;
        /* a rule's tenants are declared ones: a namespace in no tenant never meets them */
        for (size_t j = 0; j < r->tenants.n && t && !any; j++)
            any = strcmp(r->tenants.items[j], t->name) == 0;
        if (!any) return false;
    }
    return true;
}

static bool ns_chars(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-')) return false;
    return true;
}

/* The distinct globs so far, hashed: a glob written by several tenants and rules is walked
 * once, and a 1,000-rule set is not compared glob by glob (that was most of a denial's
 * advice). */
typedef struct pat_set {
    const char **pats;
    size_t n;
    size_t *tab; /* index + 1 */
    size_t cap;  /* power of two, > 2 x the globs there can be */
} pat_set;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t pat_id(pat_set *ps, const char *g)
{
    if (!ps->tab) { /* one namespace: each glob is matched once anyway, no need to merge */
        ps->pats[ps->n] = g;
        return ps->n++;
    }
    size_t i = (size_t)str_hash(g) & (ps->cap - 1);
    for (; ps->tab[i]; i = (i + 1) & (ps->cap - 1))
        if (strcmp(ps->pats[ps->tab[i] - 1], g) == 0) return ps->tab[i] - 1;
    ps->pats[ps->n] = g;
    ps->tab[i] = ++ps->n;
    return ps->n - 1;
}

static int build_ns(an *a, const char *one_ns, gpa_error *err)
{
    const gpa_policy *p = a->p;
    size_t n = 0, nn = p->n_tenants, ng = 0;
    for (size_t t = 0; t < p->n_tenants; t++)
        ng += p->tenants[t].namespaces.n;
    for (size_t i = 0; i < p->n_rules; i++)
        ng += p->rules[i].namespaces.n;
    n = ng + nn;
    const char **pats = malloc((n + 1) * sizeof *pats);
    pat_set ps = {.pats = pats, .cap = 16};
    while (ps.cap < 2 * n + 2)
        ps.cap *= 2;
    ps.tab = one_ns ? NULL : calloc(ps.cap, sizeof *ps.tab);
    a->rule_pat = calloc(ng + 1, sizeof *a->rule_pat);
    a->rule_off = calloc(p->n_rules + 1, sizeof *a->rule_off);
    if (!pats || (!one_ns && !ps.tab) || !a->rule_pat || !a->rule_off) {
        free(pats);
        free(ps.tab);
        return gpa_fail(err, GPA_ENOMEM, "reachability: out of memory");
    }
    /* the tenants' globs: class_tenant's answer is the same for every namespace of a class */
    for (size_t t = 0; t < p->n_tenants; t++)
        for (size_t j = 0; j < p->tenants[t].namespaces.n; j++)
            (void)pat_id(&ps, p->tenants[t].namespaces.items[j]);
    size_t q = 0;
    for (size_t i = 0; i < p->n_rules; i++) {
        a->rule_off[i] = q;
        for (size_t j = 0; j < p->rules[i].namespaces.n; j++)
            a->rule_pat[q++] = pat_id(&ps, p->rules[i].namespaces.items[j]);
    }
    /* each tenant's name: the namespace of that name in no tenant is a class of its own
     * (taken: class_tenant), never merged with the namespaces around it */
    for (size_t t = 0; t < p->n_tenants; t++)
        if (*p->tenants[t].name && ns_chars(p->tenants[t].name))
            (void)pat_id(&ps, p->tenants[t].name);
    size_t u = ps.n;
    free(ps.tab);
    int rc = GPA_OK;
    if (one_ns) { /* one namespace: one class, its globs matched directly */
        a->ns.n_pat = u;
        a->ns.words = u / 64 + 1;
        a->ns.match = calloc(a->ns.words, sizeof *a->ns.match);
        a->ns.witness = calloc(1, sizeof *a->ns.witness);
        if (a->ns.match && a->ns.witness && (a->ns.witness[0] = strdup(one_ns))) {
            a->ns.n = 1;
            for (size_t g = 0; g < u; g++)
                if (gpa_glob_match(pats[g], one_ns)) a->ns.match[g / 64] |= (uint64_t)1 << (g % 64);
        } else {
            free(a->ns.match);
            free(a->ns.witness);
            memset(&a->ns, 0, sizeof a->ns);
            rc = gpa_fail(err, GPA_ENOMEM, "reachability: out of memory");
        }
    } else {
        rc = gpa_ns_classes_build(&a->ns, pats, u, err);
    }
    free(pats);
    return rc;
}

static void free_an(an *a)
{
    gpa_ns_classes_free(&a->ns);
    free(a->rule_pat);
    free(a->rule_off);
    for (size_t k = 0; a->d && k < a->nd; k++) {
        free(a->d[k].vals);
        free(a->d[k].other);
        free(a->d[k].lo);
    }
    free(a->d);
    free(a->sets);
    free(a->dead);
    free(a->nf);
    free(a->n_nf);
    free(a->region);
    free(a->takers);
    free(a->has_shadow);
    size_t nr = a->p->n_rules;
    for (size_t i = 0; a->shadow && i < nr; i++)
        gpa_reach_pod_free(&a->shadow[i]);
    for (size_t i = 0; a->bypass && i < nr; i++)
        gpa_reach_pod_free(&a->bypass[i]);
    for (size_t i = 0; a->unm && i <= a->p->n_tenants; i++)
        gpa_reach_pod_free(&a->unm[i]);
    free(a->shadow);
    free(a->shadow_by);
    free(a->bypass);
    free(a->bypass_by);
    free(a->has_unm);
    free(a->unm);
}

static int analyze(const gpa_policy *p, const char *one_ns, gpa_reach **out, gpa_error *err)
{
    *out = NULL;
    if (!p) return gpa_fail(err, GPA_EINVAL, "reachability: no policy");
    an a = {.p = p};
    size_t nr = p->n_rules;
    int rc = build_ns(&a, one_ns, err);
    if (rc != GPA_OK) goto done;
    rc = GPA_ENOMEM;
    bool *skip = NULL;
    if (one_ns) { /* only the rules that can meet the namespace make its dimensions */
        skip = calloc(nr + 1, sizeof *skip);
        if (!skip) goto oom;
        const gpa_tenant *taken, *t = class_tenant(&a, 0, &taken);
        for (size_t i = 0; i < nr; i++)
            skip[i] = taken || !rule_meets_class(&a, i, 0, t);
        a.skip = skip;
    }
    int built = build_dims(&a) == GPA_OK && build_sets(&a) == GPA_OK;
    a.skip = NULL;
    free(skip);
    if (!built) goto oom;
    a.rw = nr / 64 + 1;
    a.region = calloc(a.tw + 1, sizeof *a.region);
    a.reached = calloc(nr + 1, sizeof *a.reached);
    a.witness = calloc(nr + 1, sizeof *a.witness);
    a.takers = calloc(nr * a.rw + 1, sizeof *a.takers);
    a.has_shadow = calloc(nr + 1, sizeof *a.has_shadow);
    a.shadow = calloc(nr + 1, sizeof *a.shadow);
    a.shadow_by = calloc(nr + 1, sizeof *a.shadow_by);
    a.bypass = calloc(nr + 1, sizeof *a.bypass);
    a.bypass_by = malloc((nr + 1) * sizeof *a.bypass_by);
    a.has_unm = calloc(p->n_tenants + 1, sizeof *a.has_unm);
    a.unm = calloc(p->n_tenants + 1, sizeof *a.unm);
    size_t *L = malloc((nr + 1) * sizeof *L);
    if (!a.region || !a.reached || !a.witness || !a.takers || !a.has_shadow || !a.shadow ||
        !a.shadow_by || !a.bypass || !a.bypass_by || !a.has_unm || !a.unm || !L) {
        free(L);
        goto oom;
    }
    for (size_t i = 0; i < nr; i++)
        a.bypass_by[i] = SIZE_MAX;
    gpa_trust def = p->has_tenancy && p->default_trust != GPA_TRUST_UNSET ? p->default_trust
                                                                          : GPA_TRUST_UNTRUSTED;
    for (size_t cls = 0; cls < a.ns.n && !a.oom; cls++) {
        const gpa_tenant *taken, *t = class_tenant(&a, cls, &taken);
        if (taken) continue; /* its GPU pods are denied before any rule (tenant-name-taken) */
        gpa_trust tr = t && t->trust != GPA_TRUST_UNSET ? t->trust : def;
        a.cls = cls;
        a.tenant = t;
        a.base = tr == GPA_TRUST_TRUSTED ? 0 : 1;
        size_t m = 0;
        for (size_t i = 0; i < nr; i++)
            if (!a.dead[a.base * nr + i] && rule_meets_class(&a, i, cls, t)) L[m++] = i;
        for (size_t k = 0; k < a.nd; k++)
            for (size_t c = 0; c < a.d[k].n; c++)
                sset(a.region + a.d[k].off, c);
        node(&a, L, m);
    }
    free(L);
    if (a.oom) goto oom;
    gpa_reach *r = calloc(1, sizeof *r);
    if (!r) goto oom;
    r->n_rules = nr;
    r->reached = a.reached;
    r->witness = a.witness;
    a.reached = NULL;
    a.witness = NULL;
    r->n_ns_classes = a.ns.n;
    r->n_cells = a.cells;
    if (!one_ns && gpa_reach_findings(p, r, r->reached, a.takers, a.rw, a.shadow, a.shadow_by,
                                      a.bypass, a.bypass_by, a.has_unm, a.unm) != GPA_OK) {
        gpa_reach_free(r);
        goto oom;
    }
    *out = r;
    rc = GPA_OK;
    goto done;
oom:
    rc = gpa_fail(err, GPA_ENOMEM, "reachability: out of memory");
done:
    if (a.witness)
        for (size_t i = 0; i < nr; i++)
            gpa_reach_pod_free(&a.witness[i]);
    free(a.witness);
    free(a.reached);
    free_an(&a);
    return rc;
}

int gpa_reach_analyze(const gpa_policy *p, gpa_reach **out, gpa_error *err)
{
    return analyze(p, NULL, out, err);
}

int gpa_reach_analyze_ns(const gpa_policy *p, const char *ns, gpa_reach **out, gpa_error *err)
{
    if (!ns) return gpa_fail(err, GPA_EINVAL, "reachability: no namespace");
    return analyze(p, ns, out, err);
}
