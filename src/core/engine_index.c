/*
 * engine_index.c - load-time lookup aids the engine reads on every request: for each rule
 * and each tenant namespace glob, the glob's literal prefix (up to 8 bytes) packed into a
 * word, so rejecting a rule or tenant whose namespaces cannot match is one AND and one
 * compare over a contiguous array instead of chasing three pointers into the policy.
 *
 * Built once by the loader into the policy's arena (freed with it); read-only afterwards.
 * It is only ever a necessary condition: a rule or tenant it lets through is still checked in
 * full, so it must never reject anything the full check would accept. Policies built without
 * it (engine_index NULL) are matched the slow way.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "engine_internal.h"

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
                        gpa_glob_key (*key)(const gpa_engine_index *, size_t),
                        const gpa_engine_index *x)
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

static gpa_glob_key rule_key_at(const gpa_engine_index *x, size_t i)
{
    return x->rule_keys[i];
}

static gpa_glob_key tenant_key_at(const gpa_engine_index *x, size_t i)
{
    return x->tenant_globs[i].key;
}

int gpa_engine_index_build(gpa_policy *p, gpa_arena *a)
{
    gpa_engine_index *x = gpa_arena_alloc(a, sizeof *x);
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
    int rc = lookup_build(&x->rules_lk, a, x->n_rules, rule_key_at, x);
    if (rc == GPA_OK) rc = lookup_build(&x->tenants_lk, a, n, tenant_key_at, x);
    if (rc != GPA_OK) return rc;
    p->engine_index = x;
    return GPA_OK;
}
