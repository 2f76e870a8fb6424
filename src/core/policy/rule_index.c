/*
 * rule_index.c - load-time lookup aids the engine reads on every request: for each rule
 * and each tenant namespace glob, the glob's literal prefix (up to 8 bytes) packed into a
 * word, so rejecting a rule or tenant whose namespaces cannot match is one AND and one
 * compare over a contiguous array instead of chasing three pointers into the policy.
 *
 * Also the warning lines that depend only on the policy (per pool and per rule), formatted
 * once here so placing a pod copies them instead of formatting them per request.
 *
 * Built once by the loader into the policy's arena (freed with it); read-only afterwards.
 * It is only ever a necessary condition: a rule or tenant it lets through is still checked in
 * full, so it must never reject anything the full check would accept. Policies built without
 * it (rule_index NULL) are matched the slow way.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"
#include "policy/rule_index.h"

/* The literal prefix of a glob (up to the first '*' or '?', at most 8 bytes) and the mask of
 * the bytes it covers. An empty prefix gives mask 0: it matches every namespace. */
static gpa_glob_key glob_key(const char *pat)
{
    gpa_glob_key k = {0, 0};
    unsigned char pb[8] = {0}, mb[8] = {0};
    for (size_t i = 0; i < 8 && pat[i] && pat[i] != '*' && pat[i] != '?'; i++) {
        pb[i] = (unsigned char)pat[i];
        mb[i] = 0xFF;
    }
    memcpy(&k.prefix, pb, 8);
    memcpy(&k.mask, mb, 8);
    return k;
}

uint64_t gpa_ns_word(const char *ns)
{
    unsigned char b[8] = {0};
    for (size_t i = 0; i < 8 && ns[i]; i++)
        b[i] = (unsigned char)ns[i];
    uint64_t w;
    memcpy(&w, b, 8);
    return w;
}

static int entry_cmp(const void *x, const void *y)
{
    const gpa_glob_entry *a = x, *b = y;
    if (a->prefix != b->prefix) return a->prefix < b->prefix ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Buckets the n keys (key(i) gives key i) by mask; each bucket sorted by (prefix, pos). */
static int lookup_build(gpa_glob_lookup *l, gpa_arena *a, size_t n,
                        gpa_glob_key (*key)(const gpa_rule_index *, size_t),
                        const gpa_rule_index *x)
{
    memset(l, 0, sizeof *l);
    for (size_t i = 0; i < n; i++) {
        gpa_glob_key k = key(x, i);
        size_t j = 0;
        while (j < l->n_buckets && l->b[j].mask != k.mask)
            j++;
        if (j == l->n_buckets) {
            if (l->n_buckets == 9) return GPA_EINVAL; /* 9 prefix lengths (0-8) at most */
            l->b[j].mask = k.mask;
            l->n_buckets++;
        }
        l->b[j].n++;
    }
    for (size_t j = 0; j < l->n_buckets; j++) {
        l->b[j].e = gpa_arena_array(a, l->b[j].n, sizeof *l->b[j].e);
        if (!l->b[j].e) return GPA_ENOMEM;
        l->b[j].n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        gpa_glob_key k = key(x, i);
        size_t j = 0;
        while (l->b[j].mask != k.mask)
            j++;
        l->b[j].e[l->b[j].n++] = (gpa_glob_entry){k.prefix, i};
    }
    for (size_t j = 0; j < l->n_buckets; j++)
        qsort(l->b[j].e, l->b[j].n, sizeof *l->b[j].e, entry_cmp);
    return GPA_OK;
}

size_t gpa_glob_lookup_find(const gpa_glob_lookup *l, uint64_t ns_word, size_t *out)
{
    size_t n = 0;
    for (size_t j = 0; j < l->n_buckets; j++) {
        const gpa_glob_entry *e = l->b[j].e;
        uint64_t want = ns_word & l->b[j].mask;
        size_t lo = 0, hi = l->b[j].n; /* first entry with prefix >= want */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (e[mid].prefix < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < l->b[j].n && e[lo].prefix == want; lo++) {
            if (n == GPA_GLOB_CANDIDATES) return SIZE_MAX;
            /* insertion keeps out ascending (buckets interleave positions) */
            size_t at = n++;
            while (at > 0 && out[at - 1] > e[lo].pos) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = e[lo].pos;
        }
    }
    return n;
}

static gpa_glob_key rule_key_at(const gpa_rule_index *x, size_t i)
{
    return x->rule_keys[i];
}

static gpa_glob_key tenant_key_at(const gpa_rule_index *x, size_t i)
{
    return x->tenant_globs[i].key;
}

/* One line in the arena, formatted and cut exactly as gpa_eng_warn would. */
static int text(gpa_sv *out, gpa_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int text(gpa_sv *out, gpa_arena *a, const char *fmt, ...)
{
    va_list ap, cp;
    va_start(ap, fmt);
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    char *s = n >= 0 ? gpa_arena_alloc(a, (size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (!s) return GPA_ENOMEM;
    out->s = s;
    out->n = gpa_warn_shorten(s, (size_t)n);
    return GPA_OK;
}

static gpa_sv sv(const char *s)
{
    return (gpa_sv){s, strlen(s)};
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static int pool_text(gpa_pool_text *t, gpa_arena *a, const gpa_pool *pl)
{
    t->name = sv(pl->name);
    int rc = GPA_OK;
    if (pl->runtime_class)
        rc = text(&t->runtime_class, a, GPA_W_RUNTIME_CLASS, pl->runtime_class, pl->name);
    t->tolerations = gpa_arena_array(a, pl->n_tolerations + 1, sizeof *t->tolerations);
    t->node_selector = gpa_arena_array(a, pl->node_selector.n + 1, sizeof *t->node_selector);
    if (!t->tolerations || !t->node_selector) return GPA_ENOMEM;
    for (size_t i = 0; i < pl->n_tolerations && rc == GPA_OK; i++) {
        const gpa_toleration *tl = &pl->tolerations[i];
        rc = text(&t->tolerations[i], a, GPA_W_TOLERATION, tl->key ? tl->key : "*",
                  tl->op ? tl->op : "Equal", tl->value ? " " : "", or_empty(tl->value),
                  tl->effect ? tl->effect : "(any effect)", pl->name);
    }
    for (size_t i = 0; i < pl->node_selector.n && rc == GPA_OK; i++)
        rc = text(&t->node_selector[i], a, GPA_W_NODE_AFFINITY, pl->node_selector.keys[i], "In",
                  pl->node_selector.values[i], pl->name);
    if (rc == GPA_OK) rc = text(&t->pool_label, a, GPA_W_LABEL, GPA_W_LABEL_POOL, pl->name);
    if (rc == GPA_OK) rc = text(&t->isolation, a, GPA_W_ISOLATION, pl->name);
    if (rc == GPA_OK) rc = text(&t->affinity_suffix, a, "] added for pool %s", pl->name);
    for (size_t i = 0; i < pl->n_profiles && i < 64; i++)
        if (strchr(pl->profiles[i]->name, '+')) t->plus_profiles |= 1ULL << i;
    return rc;
}

static int rule_text(gpa_rule_text *t, gpa_arena *a, const gpa_rule *r)
{
    t->name = sv(r->name);
    const gpa_pool *pl = r->pool;
    if (!pl || r->deny_message) return GPA_OK;
    int rc = text(&t->placed, a, GPA_W_PLACED, pl->name, r->name);
    if (rc == GPA_OK &&
        (pl->sharing == GPA_SHARING_TIME_SLICING || pl->sharing == GPA_SHARING_MPS) &&
        pl->shared_resource)
        rc = text(&t->renamed, a, GPA_W_RENAMED, GPA_W_RES_GPU, pl->shared_resource, r->name);
    return rc;
}

static int cmp_tenant_name(const void *x, const void *y)
{
    return strcmp((*(const gpa_tenant *const *)x)->name, (*(const gpa_tenant *const *)y)->name);
}

int gpa_rule_index_build(gpa_policy *p, gpa_arena *a)
{
    gpa_rule_index *x = gpa_arena_alloc(a, sizeof *x);
    if (!x) return GPA_ENOMEM;
    memset(x, 0, sizeof *x);
    x->n_rules = p->n_rules;
    x->rule_keys = gpa_arena_array(a, p->n_rules ? p->n_rules : 1, sizeof *x->rule_keys);
    if (!x->rule_keys) return GPA_ENOMEM;
    for (size_t i = 0; i < p->n_rules; i++) {
        const gpa_rule *r = &p->rules[i];
        /* one glob: its prefix; none or several: let the full check decide */
        x->rule_keys[i] =
            r->namespaces.n == 1 ? glob_key(r->namespaces.items[0]) : (gpa_glob_key){0, 0};
    }
    size_t n = 0;
    for (size_t t = 0; t < p->n_tenants; t++)
        n += p->tenants[t].namespaces.n;
    x->n_tenant_globs = n;
    x->tenant_globs = gpa_arena_array(a, n ? n : 1, sizeof *x->tenant_globs);
    if (!x->tenant_globs) return GPA_ENOMEM;
    size_t k = 0;
    for (size_t t = 0; t < p->n_tenants; t++) {
        for (size_t j = 0; j < p->tenants[t].namespaces.n; j++, k++) {
            x->tenant_globs[k].key = glob_key(p->tenants[t].namespaces.items[j]);
            x->tenant_globs[k].pattern = p->tenants[t].namespaces.items[j];
            x->tenant_globs[k].tenant = t;
        }
    }
    x->tenants_by_name =
        gpa_arena_array(a, p->n_tenants ? p->n_tenants : 1, sizeof *x->tenants_by_name);
    if (!x->tenants_by_name) return GPA_ENOMEM;
    for (size_t t = 0; t < p->n_tenants; t++)
        x->tenants_by_name[t] = &p->tenants[t];
    qsort(x->tenants_by_name, p->n_tenants, sizeof *x->tenants_by_name, cmp_tenant_name);
    int rc = lookup_build(&x->rules_lk, a, x->n_rules, rule_key_at, x);
    if (rc == GPA_OK) rc = lookup_build(&x->tenants_lk, a, n, tenant_key_at, x);
    x->pools = gpa_arena_array(a, p->n_pools + 1, sizeof *x->pools);
    x->rules = gpa_arena_array(a, p->n_rules + 1, sizeof *x->rules);
    if (!x->pools || !x->rules) return GPA_ENOMEM;
    for (size_t i = 0; i < p->n_pools && rc == GPA_OK; i++)
        rc = pool_text(&x->pools[i], a, &p->pools[i]);
    for (size_t i = 0; i < p->n_rules && rc == GPA_OK; i++)
        rc = rule_text(&x->rules[i], a, &p->rules[i]);
    x->revision = sv(p->revision);
    for (size_t i = 0; i < p->gpu_resources.n; i++) {
        unsigned char c = (unsigned char)p->gpu_resources.items[i][0];
        x->gpu_res_first[c >> 6] |= 1ULL << (c & 63);
    }
    if (rc != GPA_OK) return rc;
    p->rule_index = x;
    return GPA_OK;
}
