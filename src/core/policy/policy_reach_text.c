/*
 * policy_reach_text.c - the reachability findings (reach.h) from what the walk recorded,
 * their one-line texts, and the rule facts a witness suite needs.
 *
 * A finding names rules by name and file:line so a policy author can go to them, and gives
 * one concrete pod, so the claim can be tried with `gpu-admission mutate` or pinned by a
 * test case.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/reach.h"
#include "gpu_admission/strbuf.h"
#include "gpu_admission/glob.h"
#include "policy/policy_reach.h"
#include "policy/policy_tenancy.h"

void gpa_reach_pod_free(gpa_reach_pod *w)
{
    if (!w || (!w->ns && !w->keys && !w->values)) return; /* most rules have no such pod */
    free(w->ns);
    for (size_t i = 0; i < w->n_labels; i++) {
        free(w->keys[i]);
        free(w->values[i]);
    }
    free(w->keys);
    free(w->values);
    memset(w, 0, sizeof *w);
}

static int pod_copy(gpa_reach_pod *dst, const gpa_reach_pod *src)
{
    memset(dst, 0, sizeof *dst);
    dst->gpus = src->gpus;
    dst->has_mem = src->has_mem;
    dst->mem = src->mem;
    dst->ns = strdup(src->ns ? src->ns : "");
    dst->keys = calloc(src->n_labels + 1, sizeof *dst->keys);
    dst->values = calloc(src->n_labels + 1, sizeof *dst->values);
    if (!dst->ns || !dst->keys || !dst->values) return GPA_ENOMEM;
    for (size_t i = 0; i < src->n_labels; i++) {
        dst->keys[i] = strdup(src->keys[i]);
        dst->values[i] = strdup(src->values[i]);
        dst->n_labels++;
        if (!dst->keys[i] || !dst->values[i]) return GPA_ENOMEM;
    }
    return GPA_OK;
}

char *gpa_reach_pod_text(const gpa_reach_pod *w)
{
    gpa_sb b = {0};
    gpa_sb_printf(&b, "namespace %s, ", w->ns);
    if (w->n_labels == 0) gpa_sb_puts(&b, "no labels, ");
    for (size_t i = 0; i < w->n_labels; i++)
        gpa_sb_printf(&b, "%s %s=%s%s",
                      i                 ? ""
                      : w->n_labels > 1 ? "labels"
                                        : "label",
                      w->keys[i], w->values[i], i + 1 < w->n_labels ? "," : ", ");
    gpa_sb_printf(&b, "%" PRId64 " GPU%s, ", w->gpus, w->gpus == 1 ? "" : "s");
    if (w->has_mem)
        gpa_sb_printf(&b, "gpu-memory %" PRId64 " bytes", w->mem);
    else
        gpa_sb_puts(&b, "no gpu-memory annotation");
    return gpa_sb_take(&b);
}

static void rule_ref(gpa_sb *b, const gpa_rule *r)
{
    gpa_sb_printf(b, "%s (%s:%d)", r->name, r->pos.file, r->pos.line);
}

static gpa_reach_finding *add(gpa_reach *out, gpa_reach_kind kind, size_t rule, const char *file,
                              int line, int col)
{
    gpa_reach_finding *nf = realloc(out->findings, (out->n_findings + 1) * sizeof *nf);
    if (!nf) return NULL;
    out->findings = nf;
    gpa_reach_finding *f = &nf[out->n_findings++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->rule = rule;
    f->witness_rule = SIZE_MAX;
    f->line = line;
    f->col = col;
    if (file && !(f->file = strdup(file))) return NULL;
    return f;
}

static int witness(gpa_reach_finding *f, const gpa_reach_pod *w)
{
    f->has_witness = true;
    return pod_copy(&f->witness, w);
}

/* Why a rule matches no pod at all, when the lint has not said so already. */
static const char *empty_reason(const gpa_rule *r)
{
    if ((r->gpus.has_max && r->gpus.max < 1) ||
        (r->gpus.has_min && r->gpus.has_max && r->gpus.min > r->gpus.max))
        return "its gpus range holds no count of 1 or more";
    if (r->gpu_memory.has_min && r->gpu_memory.has_max && r->gpu_memory.min > r->gpu_memory.max)
        return "its gpuMemory range is empty";
    if (r->namespaces.n > 0 && r->tenants.n > 0)
        return "no namespace (a DNS label) matches its namespaces, is in its tenants and has "
               "the trust it asks for";
    if (r->namespaces.n > 0)
        return "no namespace (a DNS label, a-z 0-9 and '-') matches its namespaces with the "
               "trust it asks for";
    return "no namespace is in its tenants with the trust it asks for";
}

/* A namespace one of the rule's globs matches that is in no tenant and named like a tenant
 * (so no rule ever sees its GPU pods), or NULL. */
static const char *taken_name(const gpa_policy *p, const gpa_rule *r)
{
    for (size_t t = 0; t < p->n_tenants; t++) {
        const char *nm = p->tenants[t].name;
        const gpa_tenant *taken = NULL;
        bool meets = false;
        for (size_t j = 0; j < r->namespaces.n && !meets; j++)
            meets = gpa_glob_match(r->namespaces.items[j], nm);
        if (meets && !gpa_policy_tenant_of(p, nm, &taken) && taken) return nm;
    }
    return NULL;
}

static int never(gpa_reach *out, const gpa_policy *p, size_t i, const uint64_t *takers, size_t rw,
                 const gpa_reach_pod *shadow, const size_t *shadow_by, const gpa_reach_pod *bypass,
                 const size_t *bypass_by)
{
    const gpa_rule *r = &p->rules[i];
    gpa_reach_finding *f = add(out, GPA_REACH_NEVER, i, r->pos.file, r->pos.line, r->pos.col);
    if (!f) return GPA_ENOMEM;
    size_t n = 0;
    for (size_t t = 0; t < p->n_rules; t++)
        n += (takers[i * rw + t / 64] >> (t % 64)) & 1;
    gpa_sb b = {0};
    gpa_sb_printf(&b, "rule %s never reached: ", r->name);
    if (n == 0) {
        gpa_sb_printf(&b, "it matches no GPU pod (%s)", empty_reason(r));
        const char *nm = taken_name(p, r);
        if (nm)
            gpa_sb_printf(&b,
                          "; namespace %s is in no tenant and carries tenant %s's name: its "
                          "GPU pods are denied (tenant-name-taken)",
                          nm, nm);
    } else {
        f->by = calloc(n, sizeof *f->by);
        if (!f->by) {
            free(gpa_sb_take(&b));
            return GPA_ENOMEM;
        }
        gpa_sb_printf(&b, "every pod it matches is taken first by rule%s ", n > 1 ? "s" : "");
        for (size_t t = 0; t < p->n_rules; t++)
            if ((takers[i * rw + t / 64] >> (t % 64)) & 1) {
                if (f->n_by) gpa_sb_puts(&b, " \xe2\x88\xaa "); /* U+222A union */
                rule_ref(&b, &p->rules[t]);
                f->by[f->n_by++] = t;
            }
        bool denied_placed = r->deny_message && bypass_by[i] != SIZE_MAX;
        const gpa_reach_pod *w = denied_placed ? &bypass[i] : &shadow[i];
        size_t by = denied_placed ? bypass_by[i] : shadow_by[i];
        char *wt = gpa_reach_pod_text(w);
        if (!wt || witness(f, w) != GPA_OK) {
            free(wt);
            free(gpa_sb_take(&b));
            return GPA_ENOMEM;
        }
        f->witness_rule = by;
        gpa_sb_printf(&b, "; e.g. %s %s rule %s", wt,
                      denied_placed ? "would be denied but is placed by" : "goes to",
                      p->rules[by].name);
        free(wt);
    }
    f->message = gpa_sb_take(&b);
    return f->message ? GPA_OK : GPA_ENOMEM;
}

static int bypassed(gpa_reach *out, const gpa_policy *p, size_t i, const gpa_reach_pod *w,
                    size_t by)
{
    const gpa_rule *r = &p->rules[i];
    gpa_reach_finding *f = add(out, GPA_REACH_BYPASS, i, r->pos.file, r->pos.line, r->pos.col);
    if (!f || !(f->by = calloc(1, sizeof *f->by))) return GPA_ENOMEM;
    f->by[0] = by;
    f->n_by = 1;
    f->witness_rule = by;
    char *wt = gpa_reach_pod_text(w);
    if (!wt || witness(f, w) != GPA_OK) {
        free(wt);
        return GPA_ENOMEM;
    }
    gpa_sb b = {0};
    gpa_sb_printf(&b, "rule %s denies, but is partly bypassed: rule ", r->name);
    rule_ref(&b, &p->rules[by]);
    gpa_sb_printf(&b, " places some pods it would deny, e.g. %s (move %s above %s, or narrow %s)",
                  wt, r->name, p->rules[by].name, p->rules[by].name);
    free(wt);
    f->message = gpa_sb_take(&b);
    return f->message ? GPA_OK : GPA_ENOMEM;
}

/* The largest profile a pod with gpu-memory can get in the pool: auto never picks a +me
 * profile, a fixed profile is checked against the pool's largest (engine_validate.c). */
static const gpa_mig_profile *mem_limit(const gpa_rule *r)
{
    const gpa_pool *pool = r->pool;
    const gpa_mig_profile *best = NULL;
    bool is_auto = r->mig_auto || !r->mig_profile;
    for (size_t i = 0; i < pool->n_profiles; i++) {
        const gpa_mig_profile *m = pool->profiles[i];
        if (is_auto && strchr(m->name, '+')) continue;
        if (!best || m->mem_bytes > best->mem_bytes) best = m;
    }
    return best;
}

static int mem_beyond(gpa_reach *out, const gpa_policy *p, size_t i, const gpa_reach_pod *w)
{
    const gpa_rule *r = &p->rules[i];
    if (r->deny_message || !r->pool || r->pool->sharing != GPA_SHARING_MIG ||
        !r->gpu_memory.has_min)
        return GPA_OK;
    const gpa_mig_profile *m = mem_limit(r);
    if (m && m->mem_bytes >= r->gpu_memory.min) return GPA_OK;
    gpa_reach_finding *f = add(out, GPA_REACH_MEM_BEYOND, i, r->pos.file, r->pos.line, r->pos.col);
    if (!f || witness(f, w) != GPA_OK) return GPA_ENOMEM;
    f->witness_rule = i;
    gpa_sb b = {0};
    if (m)
        gpa_sb_printf(&b,
                      "rule %s denies every pod it matches: its gpuMemory min %" PRId64
                      " bytes is more than the largest MIG profile pool %s offers it, %s (%" PRId64
                      " bytes)",
                      r->name, r->gpu_memory.min, r->pool->name, m->name, m->mem_bytes);
    else
        gpa_sb_printf(&b,
                      "rule %s denies every pod it matches: pool %s offers no MIG profile "
                      "auto may pick (only +me profiles), and its pods carry gpu-memory",
                      r->name, r->pool->name);
    f->message = gpa_sb_take(&b);
    return f->message ? GPA_OK : GPA_ENOMEM;
}

static int unmatched(gpa_reach *out, const gpa_policy *p, size_t t, const gpa_reach_pod *w)
{
    const gpa_tenant *tn = t < p->n_tenants ? &p->tenants[t] : NULL;
    gpa_reach_finding *f = add(out, GPA_REACH_UNMATCHED, t, tn ? tn->pos.file : NULL,
                               tn ? tn->pos.line : 0, tn ? tn->pos.col : 0);
    if (!f || (tn && !(f->tenant = strdup(tn->name)))) return GPA_ENOMEM;
    char *wt = gpa_reach_pod_text(w);
    if (!wt || witness(f, w) != GPA_OK) {
        free(wt);
        return GPA_ENOMEM;
    }
    gpa_sb b = {0};
    if (tn)
        gpa_sb_printf(&b,
                      "tenant %s: some GPU pods match no rule and are allowed unplaced "
                      "(unmatched: allow), e.g. %s",
                      tn->name, wt);
    else
        gpa_sb_printf(&b,
                      "namespaces in no tenant: some GPU pods match no rule and are allowed "
                      "unplaced (unmatched: allow), e.g. %s",
                      wt);
    free(wt);
    f->message = gpa_sb_take(&b);
    return f->message ? GPA_OK : GPA_ENOMEM;
}

int gpa_reach_findings(const gpa_policy *p, gpa_reach *out, const bool *reached,
                       const uint64_t *takers, size_t rw, const gpa_reach_pod *shadow,
                       const size_t *shadow_by, const gpa_reach_pod *bypass,
                       const size_t *bypass_by, const bool *has_unm, const gpa_reach_pod *unm)
{
    for (size_t i = 0; i < p->n_rules; i++) {
        int rc = GPA_OK;
        if (!reached[i]) {
            if (!gpa_lint_rule_dead(p, i))
                rc = never(out, p, i, takers, rw, shadow, shadow_by, bypass, bypass_by);
        } else {
            if (p->rules[i].deny_message && bypass_by[i] != SIZE_MAX)
                rc = bypassed(out, p, i, &bypass[i], bypass_by[i]);
            if (rc == GPA_OK) rc = mem_beyond(out, p, i, &out->witness[i]);
        }
        if (rc != GPA_OK) return rc;
    }
    if (p->unmatched_deny) return GPA_OK;
    for (size_t t = 0; t <= p->n_tenants; t++)
        if (has_unm[t] && unmatched(out, p, t, &unm[t]) != GPA_OK) return GPA_ENOMEM;
    return GPA_OK;
}

void gpa_reach_free(gpa_reach *r)
{
    if (!r) return;
    for (size_t i = 0; r->witness && i < r->n_rules; i++)
        gpa_reach_pod_free(&r->witness[i]);
    free(r->witness);
    free(r->reached);
    for (size_t i = 0; i < r->n_findings; i++) {
        gpa_reach_finding *f = &r->findings[i];
        free(f->by);
        free(f->file);
        free(f->tenant);
        free(f->message);
        gpa_reach_pod_free(&f->witness);
    }
    free(r->findings);
    free(r);
}

size_t gpa_reach_warning_count(const gpa_reach *r)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->n_findings; i++)
        n += r->findings[i].kind != GPA_REACH_UNMATCHED;
    return n;
}

char *gpa_reach_text(const gpa_reach *r, bool info)
{
    if (!r || r->n_findings == 0) return NULL;
    gpa_sb b = {0};
    for (size_t i = 0; i < r->n_findings; i++) {
        const gpa_reach_finding *f = &r->findings[i];
        if ((f->kind == GPA_REACH_UNMATCHED) != info) continue;
        const char *sev = f->kind == GPA_REACH_UNMATCHED ? "info" : "warning";
        if (f->file)
            gpa_sb_printf(&b, "%s:%d:%d: %s: %s\n", f->file, f->line, f->col, sev, f->message);
        else
            gpa_sb_printf(&b, "%s: %s\n", sev, f->message);
    }
    if (b.len == 0) {
        free(gpa_sb_take(&b));
        return NULL;
    }
    return gpa_sb_take(&b);
}

const char *gpa_policy_rule_name(const gpa_policy *p, size_t i)
{
    return p && i < p->n_rules ? p->rules[i].name : NULL;
}

const char *gpa_policy_rule_file(const gpa_policy *p, size_t i)
{
    return p && i < p->n_rules ? p->rules[i].pos.file : NULL;
}

int gpa_policy_rule_line(const gpa_policy *p, size_t i)
{
    return p && i < p->n_rules ? p->rules[i].pos.line : 0;
}

int gpa_policy_rule_col(const gpa_policy *p, size_t i)
{
    return p && i < p->n_rules ? p->rules[i].pos.col : 0;
}

const char *gpa_policy_rule_pool(const gpa_policy *p, size_t i)
{
    if (!p || i >= p->n_rules || p->rules[i].deny_message || !p->rules[i].pool) return NULL;
    return p->rules[i].pool->name;
}

bool gpa_policy_unmatched_denied(const gpa_policy *p)
{
    return p && p->unmatched_deny;
}
