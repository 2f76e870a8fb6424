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
    p->engine_index = x;
    return GPA_OK;
}
