/*
 * policy_reach_ns.c - the namespace classes of a set of globs, exactly.
 *
 * Two namespaces are in one class when they match the same globs; a rule, a tenant and
 * "the first tenant that claims it" are then the same for both. The classes are found by a
 * breadth-first walk of the product of the globs' automata (a glob with '*' and '?' is an NFA
 * whose states are its positions), restricted to what a namespace can be: a DNS-1123 label,
 * 1-63 characters of [a-z0-9-] starting and ending with a letter or digit. So "vision-?" and
 * "vision-eu" are told apart (no namespace matches both), and "team.a" matches nothing.
 *
 * Only the characters the globs write are distinct to them: every other letter or digit
 * behaves as one, so the walk uses one representative of those, plus '-'. A product state
 * keeps only the globs still alive (non-empty position set), so a set of prefix globs costs
 * about the length of its prefixes, not their product.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/policy_reach_ns.h"

#define MAX_NS_LEN 63

typedef struct walk {
    const char *const *pats;
    size_t n;
    size_t *len;    /* per glob */
    size_t *w;      /* bitset words per glob (positions 0..len) */
    size_t max_w;   /* largest w */
    uint64_t *pool; /* state keys, back to back */
    size_t pool_n, pool_cap;
    size_t *off, *klen; /* per state: where its key starts, how many words */
    uint32_t *parent;
    char *ch;
    unsigned char *depth;
    size_t n_st, cap_st;
    uint32_t *tab; /* open addressing: state index + 1 */
    size_t tab_cap;
    uint64_t *scratch; /* the next state's key while it is built */
    size_t scratch_cap;
} walk;

static bool bit(const uint64_t *b, size_t i)
{
    return (b[i / 64] >> (i % 64)) & 1;
}

static void set_bit(uint64_t *b, size_t i)
{
    b[i / 64] |= (uint64_t)1 << (i % 64);
}

/* a '*' may match nothing: a live position on a star makes the next one live too */
static void closure(const char *p, size_t len, uint64_t *b)
{
    for (size_t j = 0; j < len; j++)
        if (p[j] == '*' && bit(b, j)) set_bit(b, j + 1);
}

static uint64_t hash_key(const uint64_t *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= k[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static int grow(void **v, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap) return GPA_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *nv = realloc(*v, c * sz);
    if (!nv) return GPA_ENOMEM;
    *v = nv;
    *cap = c;
    return GPA_OK;
}

static int rehash(walk *wk)
{
    size_t cap = wk->tab_cap ? wk->tab_cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return GPA_ENOMEM;
    for (size_t s = 0; s < wk->n_st; s++) {
        uint64_t h = hash_key(wk->pool + wk->off[s], wk->klen[s]);
        size_t i = (size_t)h & (cap - 1);
        while (t[i])
            i = (i + 1) & (cap - 1);
        t[i] = (uint32_t)(s + 1);
    }
    free(wk->tab);
    wk->tab = t;
    wk->tab_cap = cap;
    return GPA_OK;
}

/* The state whose key is k (n words): its index, new (*fresh) or already known. */
static int intern(walk *wk, const uint64_t *k, size_t n, size_t parent, char c, unsigned depth,
                  size_t *idx, bool *fresh)
{
    if ((wk->n_st + 1) * 2 > wk->tab_cap && rehash(wk) != GPA_OK) return GPA_ENOMEM;
    uint64_t h = hash_key(k, n);
    size_t i = (size_t)h & (wk->tab_cap - 1);
    for (; wk->tab[i]; i = (i + 1) & (wk->tab_cap - 1)) {
        size_t s = wk->tab[i] - 1;
        if (wk->klen[s] == n && memcmp(wk->pool + wk->off[s], k, n * sizeof *k) == 0) {
            *idx = s;
            *fresh = false;
            return GPA_OK;
        }
    }
    if (grow((void **)&wk->pool, &wk->pool_cap, wk->pool_n + n, sizeof *wk->pool) != GPA_OK)
        return GPA_ENOMEM;
    size_t cap = wk->cap_st;
    if (grow((void **)&wk->off, &cap, wk->n_st + 1, sizeof *wk->off) != GPA_OK) return GPA_ENOMEM;
    cap = wk->cap_st;
    if (grow((void **)&wk->klen, &cap, wk->n_st + 1, sizeof *wk->klen) != GPA_OK) return GPA_ENOMEM;
    cap = wk->cap_st;
    if (grow((void **)&wk->parent, &cap, wk->n_st + 1, sizeof *wk->parent) != GPA_OK)
        return GPA_ENOMEM;
    cap = wk->cap_st;
    if (grow((void **)&wk->ch, &cap, wk->n_st + 1, sizeof *wk->ch) != GPA_OK) return GPA_ENOMEM;
    cap = wk->cap_st;
    if (grow((void **)&wk->depth, &cap, wk->n_st + 1, sizeof *wk->depth) != GPA_OK)
        return GPA_ENOMEM;
    wk->cap_st = cap;
    size_t s = wk->n_st++;
    memcpy(wk->pool + wk->pool_n, k, n * sizeof *k);
    wk->off[s] = wk->pool_n;
    wk->klen[s] = n;
    wk->pool_n += n;
    wk->parent[s] = (uint32_t)parent;
    wk->ch[s] = c;
    wk->depth[s] = (unsigned char)depth;
    wk->tab[i] = (uint32_t)(s + 1);
    *idx = s;
    *fresh = true;
    return GPA_OK;
}

/* Key layout: word 0 = what the last character was (0 none, 1 letter/digit, 2 '-'), then per
 * live glob (ascending): its index, then its position bitset. */
static size_t step(walk *wk, const uint64_t *k, size_t n, char c)
{
    uint64_t *out = wk->scratch;
    size_t at = 1;
    out[0] = c == '-' ? 2 : 1;
    for (size_t i = 1; i < n;) {
        size_t g = (size_t)k[i];
        const char *p = wk->pats[g];
        size_t len = wk->len[g], w = wk->w[g];
        const uint64_t *b = k + i + 1;
        uint64_t *nb = out + at + 1;
        memset(nb, 0, w * sizeof *nb);
        bool live = false;
        for (size_t j = 0; j < len; j++) {
            if (!bit(b, j)) continue;
            if (p[j] == '*') {
                set_bit(nb, j);
                live = true;
            } else if (p[j] == '?' || p[j] == c) {
                set_bit(nb, j + 1);
                live = true;
            }
        }
        if (live) {
            closure(p, len, nb);
            out[at] = g;
            at += 1 + w;
        }
        i += 1 + w;
    }
    return at;
}

static char *path_of(const walk *wk, size_t s)
{
    char buf[MAX_NS_LEN + 1];
    size_t d = wk->depth[s];
    buf[d] = '\0';
    for (size_t x = s; d > 0; x = wk->parent[x])
        buf[--d] = wk->ch[x];
    return strdup(buf);
}

static void walk_free(walk *wk)
{
    free(wk->len);
    free(wk->w);
    free(wk->pool);
    free(wk->off);
    free(wk->klen);
    free(wk->parent);
    free(wk->ch);
    free(wk->depth);
    free(wk->tab);
    free(wk->scratch);
}

void gpa_ns_classes_free(gpa_ns_classes *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++)
        free(c->witness[i]);
    free(c->witness);
    free(c->match);
    memset(c, 0, sizeof *c);
}

/* The alphabet the walk needs: each letter/digit a glob writes, one letter/digit none writes
 * (if any is left), and '-'; sorted, so the first namespace found is the least. */
static size_t alphabet(const char *const *pats, size_t n, char *out)
{
    bool seen[256] = {0};
    for (size_t i = 0; i < n; i++)
        for (const char *s = pats[i]; *s; s++)
            seen[(unsigned char)*s] = true;
    const char *all = "-0123456789abcdefghijklmnopqrstuvwxyz";
    bool spare = false;
    size_t k = 0;
    for (const char *a = all; *a; a++) {
        if (*a == '-' || seen[(unsigned char)*a]) {
            out[k++] = *a;
        } else if (!spare) {
            out[k++] = *a;
            spare = true;
        }
    }
    return k;
}

int gpa_ns_classes_build(gpa_ns_classes *out, const char *const *pats, size_t n, gpa_error *err)
{
    memset(out, 0, sizeof *out);
    out->n_pat = n;
    out->words = n / 64 + 1;
    walk wk = {.pats = pats, .n = n};
    int rc = GPA_ENOMEM;
    size_t cls_cap = 0, vtab_cap = 0;
    uint32_t *vtab = NULL; /* class vectors: open addressing, index + 1 */
    uint64_t *vec = calloc(out->words, sizeof *vec);
    wk.len = calloc(n + 1, sizeof *wk.len);
    wk.w = calloc(n + 1, sizeof *wk.w);
    if (!vec || !wk.len || !wk.w) goto done;
    size_t root_n = 1;
    for (size_t g = 0; g < n; g++) {
        wk.len[g] = strlen(pats[g]);
        wk.w[g] = (wk.len[g] + 1 + 63) / 64;
        if (wk.w[g] > wk.max_w) wk.max_w = wk.w[g];
        root_n += 1 + wk.w[g];
    }
    wk.scratch_cap = root_n;
    wk.scratch = calloc(root_n, sizeof *wk.scratch);
    if (!wk.scratch) goto done;
    /* the root: every glob alive at position 0 */
    size_t at = 1;
    wk.scratch[0] = 0;
    for (size_t g = 0; g < n; g++) {
        wk.scratch[at] = g;
        uint64_t *b = wk.scratch + at + 1;
        memset(b, 0, wk.w[g] * sizeof *b);
        set_bit(b, 0);
        closure(pats[g], wk.len[g], b);
        at += 1 + wk.w[g];
    }
    size_t root;
    bool fresh;
    if (intern(&wk, wk.scratch, at, 0, 0, 0, &root, &fresh) != GPA_OK) goto done;
    char alpha[40];
    size_t na = alphabet(pats, n, alpha);
    uint64_t *cur = malloc(root_n * sizeof *cur);
    if (!cur) goto done;
    for (size_t s = 0; s < wk.n_st; s++) {
        size_t kn = wk.klen[s];
        memcpy(cur, wk.pool + wk.off[s], kn * sizeof *cur);
        unsigned d = wk.depth[s];
        if (d >= 1 && cur[0] == 1) { /* a namespace ends here: its class */
            memset(vec, 0, out->words * sizeof *vec);
            for (size_t i = 1; i < kn;) {
                size_t g = (size_t)cur[i];
                if (bit(cur + i + 1, wk.len[g])) set_bit(vec, g);
                i += 1 + wk.w[g];
            }
            if ((out->n + 1) * 2 > vtab_cap) { /* grow and rehash the class table */
                size_t nc = vtab_cap ? vtab_cap * 2 : 256;
                uint32_t *t = calloc(nc, sizeof *t);
                if (!t) goto done_cur;
                for (size_t c = 0; c < out->n; c++) {
                    size_t i = (size_t)hash_key(out->match + c * out->words, out->words) & (nc - 1);
                    while (t[i])
                        i = (i + 1) & (nc - 1);
                    t[i] = (uint32_t)(c + 1);
                }
                free(vtab);
                vtab = t;
                vtab_cap = nc;
            }
            size_t i = (size_t)hash_key(vec, out->words) & (vtab_cap - 1);
            bool known = false;
            for (; vtab[i]; i = (i + 1) & (vtab_cap - 1))
                if (memcmp(out->match + (vtab[i] - 1) * out->words, vec,
                           out->words * sizeof *vec) == 0) {
                    known = true;
                    break;
                }
            if (!known) {
                size_t c = cls_cap;
                if (grow((void **)&out->match, &c, (out->n + 1) * out->words, sizeof *out->match))
                    goto done_cur;
                cls_cap = c;
                char **nw = realloc(out->witness, (out->n + 1) * sizeof *nw);
                if (!nw) goto done_cur;
                out->witness = nw;
                char *w = path_of(&wk, s);
                if (!w) goto done_cur;
                memcpy(out->match + out->n * out->words, vec, out->words * sizeof *vec);
                out->witness[out->n++] = w;
                vtab[i] = (uint32_t)out->n;
            }
        }
        if (d >= MAX_NS_LEN) continue;
        for (size_t a = 0; a < na; a++) {
            if (alpha[a] == '-' && d == 0) continue; /* a namespace starts with a letter/digit */
            size_t nk = step(&wk, cur, kn, alpha[a]);
            size_t idx;
            if (intern(&wk, wk.scratch, nk, s, alpha[a], d + 1, &idx, &fresh) != GPA_OK)
                goto done_cur;
            if (wk.n_st > GPA_NS_MAX_STATES) {
                rc = gpa_fail(err, GPA_ERANGE,
                              "reachability: the %zu namespace globs make more than %d "
                              "automaton states; analysis refused (simplify the globs)",
                              n, GPA_NS_MAX_STATES);
                goto done_cur;
            }
        }
    }
    out->states = wk.n_st;
    rc = GPA_OK;
done_cur:
    free(cur);
done:
    if (rc == GPA_ENOMEM) gpa_fail(err, GPA_ENOMEM, "reachability: out of memory");
    if (rc != GPA_OK) gpa_ns_classes_free(out);
    free(vtab);
    free(vec);
    walk_free(&wk);
    return rc;
}

static int pair(const char *a, const char *b, bool covers, bool *out)
{
    const char *pats[2] = {a, b};
    gpa_ns_classes c;
    int rc = gpa_ns_classes_build(&c, pats, 2, NULL);
    if (rc != GPA_OK) return rc;
    *out = covers;
    for (size_t i = 0; i < c.n; i++) {
        bool ma = gpa_ns_class_matches(&c, i, 0), mb = gpa_ns_class_matches(&c, i, 1);
        if (covers && mb && !ma) *out = false;
        if (!covers && ma && mb) *out = true;
    }
    gpa_ns_classes_free(&c);
    return GPA_OK;
}

int gpa_ns_glob_covers(const char *a, const char *b, bool *out)
{
    return pair(a, b, true, out);
}

int gpa_ns_glob_meet(const char *a, const char *b, bool *out)
{
    return pair(a, b, false, out);
}
