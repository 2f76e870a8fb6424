/*
 * policy_reach_tenants.c - what `check` says about the tenants themselves (reach.h): pairs of
 * tenants whose globs can both match one namespace, and tenant names a namespace in no
 * tenant could carry (POLICY.md "Tenancy and trust").
 *
 * Overlaps are exact: the tenants' globs are split into namespace classes by the same product
 * of glob automata the rule reachability uses (policy_reach_ns.c), so a pair is reported only
 * when some DNS-label namespace matches a glob of each, and the namespace named is one (the
 * shortest, then the least) that really does. A tenant's name is judged by the engine's own
 * function (gpa_policy_tenant_of): the report says what the webhook would do with a namespace
 * of that name, not what a second reading of the globs thinks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/glob.h"
#include "gpu_admission/reach.h"
#include "gpu_admission/strbuf.h"
#include "k8s/k8s_names.h"
#include "policy/policy_reach_ns.h"
#include "policy/policy_tenancy.h"

/* One overlapping pair while the classes are walked: its best witness so far. */
typedef struct pair {
    size_t a, b;
    size_t cls;    /* the class of the witness */
    size_t ga, gb; /* the glob (pattern index) of a and of b that match it */
} pair;

typedef struct pairs {
    pair *v;
    size_t n, cap;
    size_t *tab; /* open addressing over (a, b): index + 1 */
    size_t tab_cap;
    size_t more;    /* distinct pairs past GPA_TENANCY_MAX_PAIRS */
    uint64_t *seen; /* n_tenants x n_tenants bits: every pair met, listed or not */
} pairs;

static bool shorter(const gpa_ns_classes *c, size_t x, size_t y)
{
    size_t lx = strlen(c->witness[x]), ly = strlen(c->witness[y]);
    return lx != ly ? lx < ly : strcmp(c->witness[x], c->witness[y]) < 0;
}

/* Records that class cls holds a namespace of tenants a < b, through globs ga and gb. */
static void pair_add(pairs *ps, size_t nt, const gpa_ns_classes *c, size_t a, size_t b, size_t cls,
                     size_t ga, size_t gb)
{
    size_t bit = a * nt + b;
    bool met = (ps->seen[bit / 64] >> (bit % 64)) & 1;
    ps->seen[bit / 64] |= (uint64_t)1 << (bit % 64);
    size_t h = (a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full) & (ps->tab_cap - 1);
    for (; ps->tab[h]; h = (h + 1) & (ps->tab_cap - 1)) {
        pair *q = &ps->v[ps->tab[h] - 1];
        if (q->a == a && q->b == b) {
            if (shorter(c, cls, q->cls)) *q = (pair){a, b, cls, ga, gb};
            return;
        }
    }
    if (ps->n >= ps->cap) {
        if (!met) ps->more++;
        return;
    }
    ps->v[ps->n] = (pair){a, b, cls, ga, gb};
    ps->tab[h] = ++ps->n;
}

static int cmp_pair(const void *x, const void *y)
{
    const pair *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static gpa_tenancy_finding *add(gpa_tenancy_report *r, gpa_tenancy_kind kind, const gpa_tenant *at)
{
    gpa_tenancy_finding *f = &r->findings[r->n++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->b = SIZE_MAX;
    f->owner = SIZE_MAX;
    f->line = at->pos.line;
    f->col = at->pos.col;
    if (at->pos.file && !(f->file = strdup(at->pos.file))) return NULL;
    return f;
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d) *oom = true;
    return d;
}

static int overlap_findings(const gpa_policy *p, gpa_tenancy_report *r, pairs *ps,
                            const gpa_ns_classes *c, const char *const *pats)
{
    qsort(ps->v, ps->n, sizeof *ps->v, cmp_pair);
    for (size_t i = 0; i < ps->n; i++) {
        const pair *q = &ps->v[i];
        const gpa_tenant *ta = &p->tenants[q->a], *tb = &p->tenants[q->b], *taken;
        const char *ns = c->witness[q->cls];
        const gpa_tenant *own = gpa_policy_tenant_of(p, ns, &taken);
        gpa_tenancy_finding *f = add(r, GPA_TENANCY_OVERLAP, tb);
        if (!f) return GPA_ENOMEM;
        f->a = q->a;
        f->b = q->b;
        f->owner = own ? (size_t)(own - p->tenants) : SIZE_MAX;
        bool oom = false;
        f->ns = dup_or_null(ns, &oom);
        f->glob_a = dup_or_null(pats[q->ga], &oom);
        f->glob_b = dup_or_null(pats[q->gb], &oom);
        gpa_sb m = {0};
        gpa_sb_printf(&m,
                      "tenants %s and %s can both match namespace %s (%s's glob \"%s\", %s's "
                      "glob \"%s\"): tenants are tried in order, so ",
                      ta->name, tb->name, ns, ta->name, pats[q->ga], tb->name, pats[q->gb]);
        if (own == ta)
            gpa_sb_printf(&m, "it belongs to %s, the first", ta->name);
        else
            gpa_sb_printf(&m, "it belongs to %s, listed before both", own ? own->name : "?");
        gpa_sb_printf(&m, ", with its trust, rules and rights; make the globs disjoint, or "
                          "list first the tenant that must own such namespaces");
        f->message = gpa_sb_take(&m);
        if (oom || !f->ns || !f->message) return GPA_ENOMEM;
    }
    return GPA_OK;
}

/* Tenant t's name, when a namespace can have it (a DNS label), judged as the engine would. */
static int name_finding(const gpa_policy *p, gpa_tenancy_report *r, size_t t)
{
    const gpa_tenant *tn = &p->tenants[t], *taken;
    if (gpa_k8s_dns_label(tn->name) != NULL) return GPA_OK; /* no namespace is named so */
    const gpa_tenant *own = gpa_policy_tenant_of(p, tn->name, &taken);
    if (own == tn) return GPA_OK;
    gpa_tenancy_finding *f = add(r, GPA_TENANCY_NAME_UNCLAIMED, tn);
    if (!f) return GPA_ENOMEM;
    f->a = t;
    f->owner = own ? (size_t)(own - p->tenants) : SIZE_MAX;
    bool oom = false;
    f->ns = dup_or_null(tn->name, &oom);
    gpa_sb m = {0};
    if (!own) {
        gpa_sb_printf(&m,
                      "tenant %s: its globs do not claim namespace %s, its own name; a namespace "
                      "of that name, created by anyone who may create namespaces, is in no "
                      "tenant and its GPU pods and claims are denied (tenant-name-taken); add "
                      "\"%s\" to the tenant's namespaces (and create that namespace), or rename "
                      "the tenant",
                      tn->name, tn->name, tn->name);
    } else {
        const char *g = NULL;
        for (size_t j = 0; j < own->namespaces.n && !g; j++)
            if (gpa_glob_match(own->namespaces.items[j], tn->name)) g = own->namespaces.items[j];
        f->glob_a = dup_or_null(g, &oom);
        gpa_sb_printf(&m,
                      "tenant %s: namespace %s, its own name, belongs to tenant %s (glob "
                      "\"%s\"), listed %s it; claim it in tenant %s's namespaces and keep it out "
                      "of %s's, or rename the tenant",
                      tn->name, tn->name, own->name, g ? g : "?", own < tn ? "before" : "after",
                      tn->name, own->name);
    }
    f->message = gpa_sb_take(&m);
    return oom || !f->ns || !f->message ? GPA_ENOMEM : GPA_OK;
}

int gpa_tenancy_analyze(const gpa_policy *p, gpa_tenancy_report **out, gpa_error *err)
{
    *out = NULL;
    if (!p) return gpa_fail(err, GPA_EINVAL, "tenancy analysis: no policy");
    size_t nt = p->n_tenants, ng = 0;
    for (size_t t = 0; t < nt; t++)
        ng += p->tenants[t].namespaces.n;
    const char **pats = malloc((ng + 1) * sizeof *pats);
    size_t *owner = malloc((ng + 1) * sizeof *owner); /* the tenant of each pattern */
    gpa_tenancy_report *r = calloc(1, sizeof *r);
    pairs ps = {.cap = GPA_TENANCY_MAX_PAIRS, .tab_cap = 16};
    while (ps.tab_cap < 2 * GPA_TENANCY_MAX_PAIRS) /* a power of two, never full */
        ps.tab_cap *= 2;
    ps.v = malloc(ps.cap * sizeof *ps.v);
    ps.tab = calloc(ps.tab_cap, sizeof *ps.tab);
    ps.seen = calloc((nt * nt) / 64 + 1, sizeof *ps.seen);
    size_t *hit = malloc((nt + 1) * sizeof *hit), *via = malloc((nt + 1) * sizeof *via);
    gpa_ns_classes c = {0};
    int rc = GPA_ENOMEM;
    if (!pats || !owner || !r || !ps.v || !ps.tab || !ps.seen || !hit || !via) goto oom;
    size_t k = 0;
    for (size_t t = 0; t < nt; t++)
        for (size_t j = 0; j < p->tenants[t].namespaces.n; j++, k++) {
            pats[k] = p->tenants[t].namespaces.items[j];
            owner[k] = t;
        }
    rc = gpa_ns_classes_build(&c, pats, ng, err);
    if (rc == GPA_ERANGE && err) { /* say which analysis: check prints both */
        char why[sizeof err->message];
        const char *m =
            strncmp(err->message, "reachability: ", 14) == 0 ? err->message + 14 : err->message;
        snprintf(why, sizeof why, "%s", m);
        gpa_fail(err, GPA_ERANGE, "tenants' globs: %s", why);
    }
    if (rc != GPA_OK) goto fail;
    for (size_t cls = 0; cls < c.n; cls++) {
        /* the tenants whose globs hold this class, in policy order, each with its first glob
         * that does (patterns are in tenant order, so hit[] comes out sorted) */
        size_t nh = 0;
        for (size_t g = 0; g < ng; g++) {
            if (!gpa_ns_class_matches(&c, cls, g)) continue;
            if (nh > 0 && hit[nh - 1] == owner[g]) continue;
            hit[nh] = owner[g];
            via[nh++] = g;
        }
        for (size_t i = 0; i < nh; i++)
            for (size_t j = i + 1; j < nh; j++)
                pair_add(&ps, nt, &c, hit[i], hit[j], cls, via[i], via[j]);
    }
    r->findings = calloc(ps.n + nt + 1, sizeof *r->findings);
    if (!r->findings) goto oom;
    r->more_pairs = ps.more;
    if (overlap_findings(p, r, &ps, &c, pats) != GPA_OK) goto oom;
    for (size_t t = 0; t < nt; t++)
        if (name_finding(p, r, t) != GPA_OK) goto oom;
    *out = r;
    r = NULL;
    rc = GPA_OK;
    goto done;
oom:
    rc = gpa_fail(err, GPA_ENOMEM, "tenancy analysis: out of memory");
fail:
    gpa_tenancy_report_free(r);
done:
    gpa_ns_classes_free(&c);
    free(pats);
    free(owner);
    free(ps.v);
    free(ps.tab);
    free(ps.seen);
    free(hit);
    free(via);
    return rc;
}

void gpa_tenancy_report_free(gpa_tenancy_report *r)
{
    if (!r) return;
    for (size_t i = 0; r->findings && i < r->n; i++) {
        gpa_tenancy_finding *f = &r->findings[i];
        free(f->ns);
        free(f->glob_a);
        free(f->glob_b);
        free(f->file);
        free(f->message);
    }
    free(r->findings);
    free(r);
}

char *gpa_tenancy_text(const gpa_tenancy_report *r)
{
    if (!r || (r->n == 0 && r->more_pairs == 0)) return NULL;
    gpa_sb o = {0};
    const char *last = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const gpa_tenancy_finding *f = &r->findings[i];
        if (f->file) {
            gpa_sb_printf(&o, "%s:%d:%d: warning: %s\n", f->file, f->line, f->col, f->message);
            last = f->file;
        } else {
            gpa_sb_printf(&o, "warning: %s\n", f->message);
        }
    }
    if (r->more_pairs)
        gpa_sb_printf(&o,
                      "%s%swarning: %zu more pair%s of tenants can match one namespace (only "
                      "the first %d are listed)\n",
                      last ? last : "", last ? ": " : "", r->more_pairs,
                      r->more_pairs == 1 ? "" : "s", GPA_TENANCY_MAX_PAIRS);
    return gpa_sb_take(&o);
}

size_t gpa_tenancy_warning_count(const gpa_tenancy_report *r)
{
    return r ? r->n + (r->more_pairs ? 1 : 0) : 0;
}

const char *gpa_policy_tenant_name(const gpa_policy *p, size_t i)
{
    return p && i < p->n_tenants ? p->tenants[i].name : NULL;
}
