/*
 * policy_shared_nodes.c - which node labels keep a pod off the shared (time-slicing, mps)
 * pools it is not placed in (POLICY.md "Isolation by default"), per placement context, at
 * load; and check's warning where a shared pool cannot be told apart from other nodes.
 *
 * NVIDIA's device plugin advertises time-sliced replicas as plain nvidia.com/gpu unless
 * renameByDefault is set, so a resource name never says a card is unshared: only the pool's
 * nodes do. A pool's nodes are those its nodeSelector selects, so ruling out one entry of it
 * (`key NotIn [value]`, which also holds on nodes without the label) rules out all its nodes.
 * The entry is chosen as: NVIDIA's nvidia.com/gpu.sharing-strategy (it marks every shared node,
 * also ones no pool lists), then gpu-admission.io/pool, then the first as written - always
 * one the context's own pool does not require (that would make its pods unschedulable).
 * A second set of guards, for pods asking a resource DRA may serve (nvidia.com/gpu through
 * NVIDIA's gpu.nvidia.com class, deviceclass.resource.kubernetes.io/...), counts the
 * multiAllocatable pools as shared too: the scheduler makes such a pod's claim itself and no
 * claim check judges it, so only the pod's nodes keep it off devices other claims share.
 * Must never: leave a shared pool out of a context that could reach it, or pick an entry the
 * context requires.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy_shared_nodes.h"
#include "util/arena.h"

/* ctx's nodeSelector value for key, NULL when it sets none (ctx NULL: placed nowhere). */
static const char *ctx_value(const gpa_pool *ctx, const char *key)
{
    for (size_t i = 0; ctx && i < ctx->node_selector.n; i++)
        if (strcmp(ctx->node_selector.keys[i], key) == 0) return ctx->node_selector.values[i];
    return NULL;
}

/* ctx's nodes and sp's are provably apart: both require one key with different values. */
static bool disjoint(const gpa_pool *ctx, const gpa_pool *sp)
{
    for (size_t i = 0; i < sp->node_selector.n; i++) {
        const char *v = ctx_value(ctx, sp->node_selector.keys[i]);
        if (v && strcmp(v, sp->node_selector.values[i]) != 0) return true;
    }
    return false;
}

/* The index of sp's entry to rule out for ctx, or -1 when ctx requires every one of them. */
static int pick(const gpa_pool *ctx, const gpa_pool *sp)
{
    static const char *const preferred[] = {GPA_SHARING_STRATEGY_LABEL, GPA_W_LABEL_POOL};
    const gpa_kvlist *ns = &sp->node_selector;
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < ns->n; i++)
            if (strcmp(ns->keys[i], preferred[k]) == 0 && !ctx_value(ctx, ns->keys[i]))
                return (int)i;
    for (size_t i = 0; i < ns->n; i++)
        if (!ctx_value(ctx, ns->keys[i])) return (int)i;
    return -1;
}

/* s1, s2, ... joined with ", " into a fresh arena string; NULL on OOM. */
static char *joined(gpa_arena *a, const char **items, size_t n, size_t off)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(*(const char **)((const char *)items + i * off)) + 2;
    char *s = gpa_arena_alloc(a, len), *o = s;
    if (!s) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *x = *(const char **)((const char *)items + i * off);
        o += sprintf(o, "%s%s", i ? ", " : "", x);
    }
    *o = '\0';
    return s;
}

static int build_one(gpa_shared_guard *g, gpa_arena *a, const gpa_policy *p, const gpa_pool *ctx,
                     bool dra)
{
    memset(g, 0, sizeof *g);
    size_t n = 0;
    for (size_t i = 0; i < p->n_pools; i++)
        n += gpa_pool_shared_for(&p->pools[i], dra) && &p->pools[i] != ctx;
    if (n == 0) return GPA_OK;
    g->excl = gpa_arena_array(a, n, sizeof *g->excl);
    if (!g->excl) return GPA_ENOMEM;
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *sp = &p->pools[i];
        if (!gpa_pool_shared_for(sp, dra) || sp == ctx || disjoint(ctx, sp)) continue;
        int at = pick(ctx, sp);
        if (at < 0) {
            if (!g->inseparable) g->inseparable = sp;
            g->n_inseparable++;
            continue;
        }
        const char *key = sp->node_selector.keys[at], *value = sp->node_selector.values[at];
        gpa_shared_excl *x = NULL;
        for (size_t j = 0; j < g->n && !x; j++)
            if (strcmp(g->excl[j].key, key) == 0) x = &g->excl[j];
        if (!x) {
            x = &g->excl[g->n++];
            x->key = key;
            x->values = gpa_arena_array(a, n, sizeof *x->values);
            x->pools = gpa_arena_array(a, n, sizeof *x->pools);
            if (!x->values || !x->pools) return GPA_ENOMEM;
        }
        bool have = false;
        for (size_t j = 0; j < x->n_values && !have; j++)
            have = strcmp(x->values[j], value) == 0;
        if (!have) x->values[x->n_values++] = value;
        x->pools[x->n_pools++] = sp;
    }
    for (size_t j = 0; j < g->n; j++) {
        gpa_shared_excl *x = &g->excl[j];
        const char **names = gpa_arena_array(a, x->n_pools, sizeof *names);
        if (!names) return GPA_ENOMEM;
        for (size_t k = 0; k < x->n_pools; k++)
            names[k] = x->pools[k]->name;
        char *vals = joined(a, x->values, x->n_values, sizeof *x->values);
        char *pools = joined(a, names, x->n_pools, sizeof *names);
        if (!vals || !pools) return GPA_ENOMEM;
        const char *plural = x->n_pools > 1 ? "s" : "";
        int len = snprintf(NULL, 0, GPA_W_SHARED_EXCL, x->key, vals, plural, pools);
        char *s = len >= 0 ? gpa_arena_alloc(a, (size_t)len + 1) : NULL;
        if (!s) return GPA_ENOMEM;
        snprintf(s, (size_t)len + 1, GPA_W_SHARED_EXCL, x->key, vals, plural, pools);
        x->line = (gpa_sv){s, gpa_warn_shorten(s, (size_t)len)};
    }
    return GPA_OK;
}

/* "!(s1)" or "!((s1) && (s2) ...)": true exactly for the devices the pool's selectors do not
 * all accept. */
static int exclude_cel(gpa_pool *pl, gpa_arena *a)
{
    const gpa_strlist *sel = &pl->dra.selectors;
    size_t len = 4;
    for (size_t i = 0; i < sel->n; i++)
        len += strlen(sel->items[i]) + 6;
    char *s = gpa_arena_alloc(a, len);
    if (!s) return GPA_ENOMEM;
    if (sel->n == 1) {
        snprintf(s, len, "!(%s)", sel->items[0]);
    } else {
        size_t at = (size_t)snprintf(s, len, "!(");
        for (size_t i = 0; i < sel->n; i++)
            at += (size_t)snprintf(s + at, len - at, "%s(%s)", i ? " && " : "", sel->items[i]);
        snprintf(s + at, len - at, ")");
    }
    pl->dra.exclude_cel = s;
    return GPA_OK;
}

/* The literal of `X == 'lit'` (or "lit") and X, trimmed; false for any other form. */
static bool eq_literal(const char *s, const char **x, size_t *xn, const char **lit, size_t *ln)
{
    const char *eq = strstr(s, "==");
    if (!eq || strstr(eq + 2, "==")) return false;
    const char *b = s, *e = eq;
    while (*b == ' ')
        b++;
    while (e > b && e[-1] == ' ')
        e--;
    const char *r = eq + 2;
    while (*r == ' ')
        r++;
    char q = *r;
    if ((q != '\'' && q != '"') || e == b) return false;
    const char *end = strchr(r + 1, q);
    if (!end || strchr(r + 1, '\\')) return false;
    for (const char *t = end + 1; *t; t++)
        if (*t != ' ') return false;
    /* X itself must be a plain path (no operators that would change what == binds to) */
    for (const char *t = b; t < e; t++)
        if (strchr("|&!<>=?:", *t)) return false;
    *x = b;
    *xn = (size_t)(e - b);
    *lit = r + 1;
    *ln = (size_t)(end - r - 1);
    return true;
}

bool gpa_cel_eq_contradicts(const char *a, const char *b)
{
    const char *xa, *la, *xb, *lb;
    size_t nxa, nla, nxb, nlb;
    if (!a || !b || !eq_literal(a, &xa, &nxa, &la, &nla) || !eq_literal(b, &xb, &nxb, &lb, &nlb))
        return false;
    return nxa == nxb && memcmp(xa, xb, nxa) == 0 && (nla != nlb || memcmp(la, lb, nla) != 0);
}

int gpa_shared_guards_build(gpa_policy *p, gpa_arena *a)
{
    for (size_t i = 0; i < p->n_pools; i++)
        if (gpa_pool_dra_shared(&p->pools[i]) && p->pools[i].dra.selectors.n > 0 &&
            exclude_cel(&p->pools[i], a) != GPA_OK)
            return GPA_ENOMEM;
    bool any_dra = false;
    for (size_t i = 0; i < p->n_pools; i++)
        any_dra |= gpa_pool_dra_shared(&p->pools[i]) && !gpa_pool_is_shared(&p->pools[i]);
    for (int dra = 0; dra <= (int)any_dra; dra++) {
        gpa_shared_guard *g = gpa_arena_array(a, p->n_pools + 1, sizeof *g);
        if (!g) return GPA_ENOMEM;
        for (size_t i = 0; i <= p->n_pools; i++) {
            int rc = build_one(&g[i], a, p, i < p->n_pools ? &p->pools[i] : NULL, dra);
            if (rc != GPA_OK) return rc;
        }
        p->shared_guards_dra = g;
        if (!dra) p->shared_guards = g;
    }
    return GPA_OK;
}

void gpa_shared_nodes_warnings(gpa_sb *o, const gpa_policy *p)
{
    if (!p->shared_guards) return;
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *sp = &p->pools[i];
        if (!gpa_pool_is_shared(sp)) continue;
        if (sp->node_selector.n == 0) {
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: shared pool %s has no nodeSelector, so every node "
                          "may be one of its time-shared nodes: GPU pods no rule places in it "
                          "are denied (shared-pool-unplaced); give it a nodeSelector, e.g. %s\n",
                          sp->pos.file, sp->pos.line, sp->pos.col, sp->name,
                          GPA_SHARING_STRATEGY_LABEL);
            continue;
        }
        for (size_t j = 0; j < p->n_pools; j++) {
            const gpa_pool *q = &p->pools[j];
            if (q == sp || p->shared_guards[j].inseparable != sp) continue;
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: pool %s cannot be told apart from shared pool %s: "
                          "its nodeSelector holds all of %s's, so every node of it is a shared "
                          "node and its pods are denied (shared-pool-unplaced); give the pools "
                          "different node labels (e.g. %s)\n",
                          q->pos.file, q->pos.line, q->pos.col, q->name, sp->name, sp->name,
                          GPA_SHARING_STRATEGY_LABEL);
        }
    }
    /* multiAllocatable pools are shared only for pods DRA may serve (nvidia.com/gpu included) */
    for (size_t i = 0; p->shared_guards_dra != p->shared_guards && i < p->n_pools; i++) {
        const gpa_pool *sp = &p->pools[i];
        if (!gpa_pool_dra_shared(sp) || gpa_pool_is_shared(sp)) continue;
        if (sp->node_selector.n == 0) {
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: multiAllocatable pool %s has no nodeSelector, so "
                          "every node may hold its shared DRA devices: GPU pods asking "
                          "nvidia.com/gpu or a DRA extended resource that no rule places in it "
                          "are denied (shared-pool-unplaced); give it a nodeSelector\n",
                          sp->pos.file, sp->pos.line, sp->pos.col, sp->name);
            continue;
        }
        for (size_t j = 0; j < p->n_pools; j++) {
            const gpa_pool *q = &p->pools[j];
            if (q == sp || p->shared_guards_dra[j].inseparable != sp) continue;
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: pool %s cannot be told apart from multiAllocatable "
                          "pool %s: its nodeSelector holds all of %s's, so its pods asking "
                          "nvidia.com/gpu or a DRA extended resource are denied "
                          "(shared-pool-unplaced); give the pools different node labels\n",
                          q->pos.file, q->pos.line, q->pos.col, q->name, sp->name, sp->name);
        }
    }
}
