/*
 * engine_match.c - who the pod is and which rule it meets: tenant and trust from the
 * namespace (lowered, never raised, by the pod's trust label), GPU demand, first matching
 * rule, and the MIG profile a mig pool gives the pod (POLICY.md "Rules", mutation 1).
 *
 * Must never take tenant or trust from the pod alone, never decide a namespace's tenant other
 * than by gpa_policy_tenant_of (policy_tenancy.c: a namespace named like a tenant it is not
 * gets no rule), and never match a pod that asks for no GPU. Cheap criteria are tested before
 * globs: a 1,000-rule policy is walked per request.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_admission/glob.h"
#include "gpu_admission/quantity.h"
#include "engine/engine_internal.h"

/* Cheap pre-check before the full glob match: the pattern's literal prefix (up to the first
 * wildcard) must be a prefix of s. Rejects most patterns of a large policy in a few
 * instructions. */
static inline bool glob_match_fast(const char *pat, const char *s)
{
    for (size_t i = 0; pat[i] && pat[i] != '*' && pat[i] != '?'; i++)
        if (s[i] != pat[i]) return false;
    return gpa_glob_match(pat, s);
}

const char *gpa_trust_name(gpa_trust t)
{
    return t == GPA_TRUST_TRUSTED ? "trusted" : "untrusted";
}

/* What explain and skip lines call the object judged. */
#define SUBJECT(e) ((e)->claim ? "claim" : "pod")

void gpa_eng_tenancy(gpa_eng *e)
{
    if (e->tenancy_done) return;
    e->tenancy_done = true;
    const gpa_policy *p = e->p;
    /* no tenancy block at all: untrusted, the safe default */
    gpa_trust base = p->has_tenancy && p->default_trust != GPA_TRUST_UNSET ? p->default_trust
                                                                           : GPA_TRUST_UNTRUSTED;
    e->tenant = e->ns;
    const char *from = "the default";
    const gpa_tenant *t = gpa_policy_tenant_of(p, e->ns, &e->taken);
    e->tenant_def = t;
    if (t) {
        e->tenant = t->name;
        if (t->trust != GPA_TRUST_UNSET) base = t->trust;
        from = "its tenant";
    }
    e->ns_trust = base;
    e->trust = base;
    const char *label = gpa_pod_label(&e->orig, GPA_LABEL_TRUST);
    if (label && strcmp(label, "untrusted") == 0) {
        e->trust = GPA_TRUST_UNTRUSTED;
    } else if (label && strcmp(label, "trusted") == 0 && base == GPA_TRUST_UNTRUSTED) {
        gpa_eng_warn(e, "label %s: trusted ignored: namespace %s is untrusted", GPA_LABEL_TRUST,
                     e->ns);
    }
    const char *lowered = e->trust == base ? ""
                          : e->claim       ? ", lowered by the claim's trust label"
                                           : ", lowered by the pod's trust label";
    if (e->taken)
        gpa_eng_explain(e,
                        "namespace %s: in no tenant, %s (%s)%s; it carries the name of tenant "
                        "%s (%s:%d): it gets none of that tenant's rules, label or rights, and "
                        "no GPU (tenant-name-taken)",
                        e->ns, gpa_trust_name(e->trust), from, lowered, e->taken->name,
                        e->taken->pos.file ? e->taken->pos.file : "?", e->taken->pos.line);
    else
        gpa_eng_explain(e, "namespace %s: tenant %s, %s (%s)%s", e->ns, e->tenant,
                        gpa_trust_name(e->trust), from, lowered);
}

void gpa_eng_demand(gpa_eng *e)
{
    e->gpus = gpa_pod_gpu_count_cached(&e->orig, e->p, &e->gpu_named, &e->scans);
    const char *mem = gpa_pod_annotation(&e->orig, GPA_ANN_GPU_MEMORY);
    if (mem) {
        gpa_quantity q;
        if (gpa_quantity_parse(&q, mem, strlen(mem), NULL) == GPA_OK && q.milli >= 0) {
            e->has_mem = true;
            e->mem_bytes = gpa_quantity_value(&q);
            e->mem_text = mem;
        } else {
            e->mem_bad = true;
        }
    }
}

/* ---------------------------------------------------------------- matching */

typedef struct why {
    char s[768];
    size_t at;
} why;

static void why_add(why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_add(why *w, const char *fmt, ...)
{
    if (w->at >= sizeof w->s - 1) return;
    if (w->at) {
        int n = snprintf(w->s + w->at, sizeof w->s - w->at, "; ");
        w->at += (size_t)n;
        if (w->at >= sizeof w->s) w->at = sizeof w->s - 1;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->s + w->at, sizeof w->s - w->at, fmt, ap);
    va_end(ap);
    if (n > 0) w->at += (size_t)n;
    if (w->at >= sizeof w->s) w->at = sizeof w->s - 1;
}

static bool skip(gpa_eng *e, const gpa_rule *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool skip(gpa_eng *e, const gpa_rule *r, const char *fmt, ...)
{
    if (e->req->explain) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        gpa_eng_explain(e, "rule %s (%s:%d): skipped: %s", r->name, r->pos.file ? r->pos.file : "?",
                        r->pos.line, buf);
    }
    return false;
}

/* "[a-*, b]" for explain lines, cut with "..." when long. */
static void globs_text(char *buf, size_t cap, const gpa_strlist *l)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->n; i++) {
        size_t need = strlen(l->items[i]) + 2;
        if (at + need + 5 > cap) { /* keep room for "...]" */
            snprintf(buf + at, cap - at, "%s...]", i ? ", " : "[");
            return;
        }
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "[", l->items[i]);
    }
    snprintf(buf + at, cap - at, "]");
}

static bool in_range(const gpa_range *rg, int64_t v)
{
    return (!rg->has_min || v >= rg->min) && (!rg->has_max || v <= rg->max);
}

static void range_text(char *buf, size_t cap, const gpa_range *rg)
{
    char lo[24] = "-", hi[24] = "-";
    if (rg->has_min) snprintf(lo, sizeof lo, "%" PRId64, rg->min);
    if (rg->has_max) snprintf(hi, sizeof hi, "%" PRId64, rg->max);
    snprintf(buf, cap, "[%s, %s]", lo, hi);
}

static bool rule_matches(gpa_eng *e, const gpa_rule *r)
{
    const bool ex = e->req->explain;
    why w; /* not zeroed: 1,000 rules x 768 bytes of memset per request was most of the cost */
    char rg[64];
    w.at = 0;
    w.s[0] = '\0';

    if (r->gpus.has_min || r->gpus.has_max) {
        if (!in_range(&r->gpus, e->gpus)) {
            range_text(rg, sizeof rg, &r->gpus);
            return skip(e, r, "%s asks %" PRId64 " GPU(s), outside gpus %s", SUBJECT(e), e->gpus,
                        rg);
        }
        if (ex) {
            range_text(rg, sizeof rg, &r->gpus);
            why_add(&w, "%" PRId64 " GPU(s) within gpus %s", e->gpus, rg);
        }
    }
    if (r->trust != GPA_TRUST_UNSET) {
        if (r->trust != e->trust)
            return skip(e, r, "%s is %s, rule wants %s", SUBJECT(e), gpa_trust_name(e->trust),
                        gpa_trust_name(r->trust));
        if (ex) why_add(&w, "%s is %s", SUBJECT(e), gpa_trust_name(e->trust));
    }
    if (r->gpu_memory.has_min || r->gpu_memory.has_max) {
        if (!e->has_mem)
            return skip(e, r,
                        "rule has a gpuMemory criterion and the %s has no valid %s "
                        "annotation",
                        SUBJECT(e), GPA_ANN_GPU_MEMORY);
        if (!in_range(&r->gpu_memory, e->mem_bytes)) {
            range_text(rg, sizeof rg, &r->gpu_memory);
            return skip(e, r, "gpu-memory %" PRId64 " bytes outside gpuMemory %s bytes",
                        e->mem_bytes, rg);
        }
        if (ex) {
            range_text(rg, sizeof rg, &r->gpu_memory);
            why_add(&w, "gpu-memory %" PRId64 " bytes within %s", e->mem_bytes, rg);
        }
    }
    if (r->tenants.n > 0) {
        /* only a declared tenant's own namespaces: the default rule's "tenant = namespace"
         * must never make a namespace named like a tenant pass for it */
        if (!e->tenant_def) return skip(e, r, "namespace %s is in no tenant", e->ns);
        size_t i;
        for (i = 0; i < r->tenants.n; i++)
            if (strcmp(r->tenants.items[i], e->tenant_def->name) == 0) break;
        if (i == r->tenants.n)
            return skip(e, r, "tenant %s is not in the rule's tenants", e->tenant);
        if (ex) why_add(&w, "tenant %s listed", e->tenant);
    }
    /* namespaces before labels: the literal-prefix reject is cheaper than label lookups */
    if (r->namespaces.n > 0) {
        size_t i;
        for (i = 0; i < r->namespaces.n; i++)
            if (glob_match_fast(r->namespaces.items[i], e->ns)) break;
        if (i == r->namespaces.n) {
            char list[256];
            globs_text(list, sizeof list, &r->namespaces);
            return skip(e, r, "namespace %s matches none of %s", e->ns, list);
        }
        if (ex) why_add(&w, "namespace %s matches %s", e->ns, r->namespaces.items[i]);
    }
    for (size_t i = 0; i < r->labels.n; i++) {
        const char *v = gpa_pod_label(&e->orig, r->labels.keys[i]);
        if (!v || strcmp(v, r->labels.values[i]) != 0)
            return skip(e, r, "label %s is %s%s%s, rule wants %s", r->labels.keys[i], v ? "\"" : "",
                        v ? v : "absent", v ? "\"" : "", r->labels.values[i]);
        if (ex) why_add(&w, "label %s=%s", r->labels.keys[i], v);
    }
    if (ex)
        gpa_eng_explain(e, "rule %s (%s:%d): matched: %s", r->name, r->pos.file ? r->pos.file : "?",
                        r->pos.line,
                        w.at       ? w.s
                        : e->claim ? "no criteria (matches every GPU claim)"
                                   : "no criteria (matches every GPU pod)");
    return true;
}

/* The profile auto-sizing picks: least memory that holds the pod's gpu-memory, ties broken
 * by fewer compute slices; the smallest without the annotation. Media-extension (+me)
 * profiles are never picked automatically: they are a deliberate choice. */
static const gpa_mig_profile *auto_profile(const gpa_eng *e)
{
    const gpa_pool *pool = e->pool;
    const gpa_pool_text *pt = pool->n_profiles <= 64 ? gpa_eng_pool_text(e) : NULL;
    const gpa_mig_profile *best = NULL;
    for (size_t i = 0; i < pool->n_profiles; i++) {
        const gpa_mig_profile *m = pool->profiles[i];
        if (pt ? (pt->plus_profiles >> i) & 1 : strchr(m->name, '+') != NULL) continue;
        if (e->has_mem && m->mem_bytes < e->mem_bytes) continue;
        if (!best || m->mem_bytes < best->mem_bytes ||
            (m->mem_bytes == best->mem_bytes && m->slices < best->slices))
            best = m;
    }
    return best;
}

/* "10.74 GB", "10 GB": decimal gigabytes, as profile names count them */
static void gb_text(char *buf, size_t cap, int64_t bytes)
{
    snprintf(buf, cap, "%.2f", (double)bytes / 1e9);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf);
        while (end > dot && (end[-1] == '0' || end[-1] == '.'))
            *--end = '\0';
    }
    strncat(buf, " GB", cap - strlen(buf) - 1);
}

bool gpa_eng_upsize_text(const gpa_eng *e, char *buf, size_t cap)
{
    if (!e->mig || !e->has_mem || !e->pool || !e->rule ||
        (!e->rule->mig_auto && e->rule->mig_profile))
        return false;
    const gpa_mig_profile *skipped = NULL;
    for (size_t i = 0; i < e->pool->n_profiles; i++) {
        const gpa_mig_profile *m = e->pool->profiles[i];
        if (strchr(m->name, '+') || m->mem_bytes >= e->mem_bytes) continue;
        if (!skipped || m->mem_bytes > skipped->mem_bytes ||
            (m->mem_bytes == skipped->mem_bytes && m->slices > skipped->slices))
            skipped = m;
    }
    if (!skipped) return false;
    /* the value demand read (a claim template's may be on the template itself, not where
     * e->orig's annotations point) */
    const char *q = e->mem_text;
    char want[32], have[32];
    gb_text(want, sizeof want, e->mem_bytes);
    gb_text(have, sizeof have, skipped->mem_bytes);
    snprintf(buf, cap, "%s (%s) > %s (%s): %s", q ? q : "gpu-memory", want, skipped->name, have,
             e->mig->name);
    return true;
}

/* A pod no rule matched that one would match with a gpu-memory annotation: the first rule in
 * order that failed only for lack of it (its other criteria hold for this pod; earlier rules
 * fail on criteria the annotation does not change). NULL when none. */
static const gpa_rule *needs_annotation(gpa_eng *e)
{
    if (e->has_mem) return NULL;
    const gpa_request *saved = e->req;
    gpa_request quiet = *saved; /* a probe: no skip line per rule */
    quiet.explain = false;
    e->req = &quiet;
    const gpa_rule *found = NULL;
    e->has_mem = true;
    for (size_t i = 0; i < e->p->n_rules && !found; i++) {
        const gpa_rule *r = &e->p->rules[i];
        if (!r->gpu_memory.has_min && !r->gpu_memory.has_max) continue;
        e->mem_bytes = r->gpu_memory.has_min ? r->gpu_memory.min : 0;
        if (rule_matches(e, r)) found = r;
    }
    e->has_mem = false;
    e->mem_bytes = 0;
    e->req = saved;
    return found;
}

void gpa_eng_match(gpa_eng *e)
{
    if (e->matched_done) return;
    e->matched_done = true;
    if (e->gpus <= 0) {
        if (e->req->explain && e->orig.spec && gpa_jn_get(e->orig.spec, "resourceClaims"))
            gpa_eng_explain(e, "pod asks for no GPU resource: no rule applies; it names DRA "
                               "claims (spec.resourceClaims), whose GPUs are judged on the "
                               "ResourceClaims and ResourceClaimTemplates themselves");
        else
            gpa_eng_explain(e, "pod asks for no GPU: no rule applies");
        return;
    }
    gpa_eng_tenancy(e);
    if (e->claim)
        gpa_eng_explain(e, "claim asks %" PRId64 " GPU device(s)%s", e->gpus,
                        e->has_mem ? " with a gpu-memory annotation" : "");
    else
        gpa_eng_explain(e, "pod asks %" PRId64 " GPU(s)%s", e->gpus,
                        e->has_mem ? " with a gpu-memory annotation" : "");
    /* no rule at all: one without tenants (namespaces: ["*"]) would still place it and
     * label it with the tenant name it took (gpa_eng_check denies it) */
    if (e->taken) {
        gpa_eng_explain(e, "no rule is tried: the namespace took tenant %s's name", e->taken->name);
        return;
    }
    /* the load-time prefix index rejects most rules of a large policy without touching them;
     * --explain walks every rule so it can say why each was skipped */
    const gpa_rule_index *x = e->req->explain ? NULL : e->p->rule_index;
    uint64_t w = gpa_ns_word(e->ns);
    size_t cand[GPA_GLOB_CANDIDATES];
    size_t nc = x && x->n_rules > GPA_GLOB_WALK_MAX ? gpa_glob_lookup_find(&x->rules_lk, w, cand)
                                                    : SIZE_MAX;
    if (nc != SIZE_MAX) { /* the few rules whose namespace prefix fits, in rule order */
        for (size_t i = 0; i < nc && !e->rule; i++)
            if (rule_matches(e, &e->p->rules[cand[i]])) e->rule = &e->p->rules[cand[i]];
    } else {
        for (size_t i = 0; i < e->p->n_rules; i++) {
            if (x && !gpa_glob_key_may_match(&x->rule_keys[i], w)) continue;
            if (rule_matches(e, &e->p->rules[i])) {
                e->rule = &e->p->rules[i];
                break;
            }
        }
    }
    if (!e->rule) {
        gpa_eng_explain(e, "no rule matched: unmatched GPU %s are %s", e->claim ? "claims" : "pods",
                        e->p->unmatched_deny ? "denied" : "allowed");
        const gpa_rule *na = needs_annotation(e);
        if (na) {
            e->needs_mem_rule = na;
            gpa_eng_explain(e,
                            "rule %s (%s:%d) would match with a %s annotation: its gpuMemory "
                            "criterion matches only %s that carry one",
                            na->name, na->pos.file ? na->pos.file : "?", na->pos.line,
                            GPA_ANN_GPU_MEMORY, e->claim ? "claims" : "pods");
            if (!e->p->unmatched_deny)
                gpa_eng_warn(e, "no rule matched: rule %s needs the %s annotation", na->name,
                             GPA_ANN_GPU_MEMORY);
        }
        return;
    }
    if (e->rule->deny_message) return;
    e->pool = e->rule->pool;
    if (e->pool && e->pool->sharing == GPA_SHARING_MIG) {
        e->mig =
            (!e->rule->mig_auto && e->rule->mig_profile) ? e->rule->mig_profile : auto_profile(e);
        char up[160];
        if (e->mig && gpa_eng_upsize_text(e, up, sizeof up))
            gpa_eng_explain(e, "MIG profile %s (smallest that holds gpu-memory: %s)", e->mig->name,
                            up);
        else if (e->mig)
            gpa_eng_explain(e, "MIG profile %s (%s)", e->mig->name,
                            !e->rule->mig_auto && e->rule->mig_profile ? "fixed by the rule"
                            : e->has_mem ? "smallest that holds gpu-memory"
                                         : "smallest offered");
    }
}
