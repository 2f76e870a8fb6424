/*
 * cel_emit.c - CEL building blocks of the policy exporters (see cel_emit.h). The meanings
 * follow the engine's one answer for each question (policy_tenancy.c for tenants,
 * engine_match.c for rule criteria, pod_need.c for the GPU count); a difference here is a
 * check the API server makes differently from the webhook, which the vap e2e suite and the
 * unit test against the glob matcher look for.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cel_emit.h"
#include "gpu_admission/glob.h"
#include "policy/policy_model.h"

void gpa_cel_quote(gpa_sb *b, const char *s)
{
    gpa_sb_put(b, "'", 1);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '\\' || *c == '\'' || *c == '"')
            gpa_sb_printf(b, "\\%c", *c);
        else if (*c == '\n')
            gpa_sb_puts(b, "\\n");
        else if (*c < 0x20 || *c == 0x7f)
            gpa_sb_printf(b, "\\x%02x", *c);
        else
            gpa_sb_put(b, (const char *)c, 1);
    }
    gpa_sb_put(b, "'", 1);
}

void gpa_cel_yaml_block(gpa_sb *b, const char *text, size_t indent)
{
    const char *s = text;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        gpa_sb_fill(b, ' ', indent);
        gpa_sb_put(b, s, n);
        gpa_sb_puts(b, "\n");
        s += n + (nl ? 1 : 0);
    }
}

static bool has_wildcard(const char *g)
{
    return strpbrk(g, "*?") != NULL;
}

/* One glob's body, unanchored. */
static void glob_body(gpa_sb *b, const char *glob)
{
    for (const char *c = glob; *c; c++) {
        if (*c == '*')
            gpa_sb_puts(b, ".*");
        else if (*c == '?')
            gpa_sb_puts(b, ".");
        else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 *c == '-' || *c == '_')
            gpa_sb_put(b, c, 1);
        else
            gpa_sb_printf(b, "\\%c", *c); /* RE2 takes \ before any punctuation as a literal */
    }
}

void gpa_cel_glob_regex(gpa_sb *b, const char *glob)
{
    gpa_sb_puts(b, "^(?:");
    glob_body(b, glob ? glob : "");
    gpa_sb_puts(b, ")$");
}

void gpa_cel_globs_match(gpa_sb *b, const char *subject, const gpa_strlist *globs)
{
    size_t n_lit = 0, n_wild = 0;
    for (size_t i = 0; i < globs->n; i++) {
        if (strcmp(globs->items[i], "*") == 0) {
            gpa_sb_puts(b, "true");
            return;
        }
        if (has_wildcard(globs->items[i]))
            n_wild++;
        else
            n_lit++;
    }
    if (n_lit + n_wild == 0) {
        gpa_sb_puts(b, "false");
        return;
    }
    gpa_sb_puts(b, "(");
    if (n_lit) {
        gpa_sb_printf(b, "%s in [", subject);
        size_t k = 0;
        for (size_t i = 0; i < globs->n; i++) {
            if (has_wildcard(globs->items[i])) continue;
            if (k++) gpa_sb_puts(b, ", ");
            gpa_cel_quote(b, globs->items[i]);
        }
        gpa_sb_puts(b, "]");
    }
    if (n_wild) {
        gpa_sb rx = {0};
        gpa_sb_puts(&rx, "^(?:");
        size_t k = 0;
        for (size_t i = 0; i < globs->n; i++) {
            if (!has_wildcard(globs->items[i])) continue;
            if (k++) gpa_sb_puts(&rx, "|");
            glob_body(&rx, globs->items[i]);
        }
        gpa_sb_puts(&rx, ")$");
        if (rx.oom) b->oom = true;
        gpa_sb_printf(b, "%s%s.matches(", n_lit ? " || " : "", subject);
        gpa_cel_quote(b, rx.p);
        gpa_sb_puts(b, ")");
        gpa_sb_free(&rx);
    }
    gpa_sb_puts(b, ")");
}

void gpa_cel_declared_tenant_range(gpa_sb *b, const gpa_policy *p, const char *ns, size_t from,
                                   size_t to)
{
    /* a list of each tenant's name or '' in policy order, the first non-empty wins: flat, so a
     * thousand tenants nest no deeper than one (a ternary chain would hit the parser's
     * recursion limit) */
    size_t n = 0;
    if (to > p->n_tenants) to = p->n_tenants;
    for (size_t i = from; i < to; i++)
        if (p->tenants[i].namespaces.n) n++;
    if (n == 0) {
        gpa_sb_puts(b, "''");
        return;
    }
    gpa_sb_puts(b, "[");
    size_t k = 0;
    for (size_t i = from; i < to; i++) {
        const gpa_tenant *t = &p->tenants[i];
        if (!t->namespaces.n) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_globs_match(b, ns, &t->namespaces);
        gpa_sb_puts(b, " ? ");
        gpa_cel_quote(b, t->name);
        gpa_sb_puts(b, " : ''");
    }
    gpa_sb_puts(b, "].filter(t, t != '')[?0].orValue('')");
}

void gpa_cel_declared_tenant(gpa_sb *b, const gpa_policy *p, const char *ns)
{
    gpa_cel_declared_tenant_range(b, p, ns, 0, p->n_tenants);
}

void gpa_cel_tenant(gpa_sb *b, const char *declared, const char *ns)
{
    gpa_sb_printf(b, "(%s != '' ? %s : %s)", declared, declared, ns);
}

static void tenant_names(gpa_sb *b, const gpa_policy *p, int trust /* -1: every tenant */)
{
    gpa_sb_puts(b, "[");
    size_t k = 0;
    for (size_t i = 0; i < p->n_tenants; i++) {
        if (trust >= 0 && p->tenants[i].trust != (gpa_trust)trust) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->tenants[i].name);
    }
    gpa_sb_puts(b, "]");
}

void gpa_cel_name_taken(gpa_sb *b, const gpa_policy *p, const char *declared, const char *ns)
{
    if (p->n_tenants == 0) {
        gpa_sb_puts(b, "false");
        return;
    }
    gpa_sb_printf(b, "(%s == '' && %s in ", declared, ns);
    tenant_names(b, p, -1);
    gpa_sb_puts(b, ")");
}

void gpa_cel_ns_trusted(gpa_sb *b, const gpa_policy *p, const char *declared)
{
    /* policy_match.c gpa_eng_tenancy: no tenancy block at all is untrusted */
    bool def = p->has_tenancy && p->default_trust == GPA_TRUST_TRUSTED;
    gpa_sb_printf(b, "(%s in ", declared);
    tenant_names(b, p, GPA_TRUST_TRUSTED);
    if (def) {
        gpa_sb_printf(b, " || !(%s in ", declared);
        tenant_names(b, p, GPA_TRUST_UNTRUSTED);
        gpa_sb_puts(b, "))");
    } else {
        gpa_sb_puts(b, ")");
    }
}

void gpa_cel_label(gpa_sb *b, const char *labels, const char *key)
{
    gpa_sb_printf(b, "%s[?", labels);
    gpa_cel_quote(b, key);
    gpa_sb_puts(b, "].orValue('')");
}

void gpa_cel_pod_trusted(gpa_sb *b, const char *ns_trusted, const char *labels)
{
    gpa_sb_printf(b, "(%s && ", ns_trusted);
    gpa_cel_label(b, labels, "gpu-admission.io/trust");
    gpa_sb_puts(b, " != 'untrusted')");
}

/* int: the whole non-negative quantity in string expression v, else 0 */
static void qty_int(gpa_sb *b, const char *v)
{
    gpa_sb_printf(b,
                  "(isQuantity(string(%s)) && quantity(string(%s)).isInteger() && "
                  "quantity(string(%s)).compareTo(quantity('0')) >= 0 ? "
                  "quantity(string(%s)).asInteger() : 0)",
                  v, v, v, v);
}

/* bool on `k`: the resource name counts as a GPU (pod.c gpa_is_gpu_resource: the policy's
 * list, and every nvidia.com/mig-<x> whether a pool offers it or not) */
static void gpu_names(gpa_sb *b, const gpa_policy *p)
{
    gpa_sb_puts(b, "(k.startsWith('nvidia.com/mig-') && k.size() > 15 || k in [");
    for (size_t i = 0; i < p->gpu_resources.n; i++) {
        if (i) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->gpu_resources.items[i]);
    }
    gpa_sb_puts(b, "])");
}

void gpa_cel_ctr_sum(gpa_sb *b, const char *c, const char *cond)
{
    char lim[160], req[160], v[200];
    snprintf(lim, sizeof lim, "%s.?resources.?limits.orValue({})", c);
    snprintf(req, sizeof req, "%s.?resources.?requests.orValue({})", c);
    gpa_sb_printf(b, "(%s.filter(k, (%s)).map(k, ", lim, cond);
    snprintf(v, sizeof v, "%s[k]", lim);
    qty_int(b, v);
    gpa_sb_printf(b, ").sum() + %s.filter(k, (%s) && !(k in %s)).map(k, ", req, cond, lim);
    snprintf(v, sizeof v, "%s[k]", req);
    qty_int(b, v);
    gpa_sb_puts(b, ").sum())");
}

void gpa_cel_ctr_gpus(gpa_sb *b, const gpa_policy *p, const char *c)
{
    gpa_sb names = {0};
    gpu_names(&names, p);
    if (names.oom) b->oom = true;
    gpa_cel_ctr_sum(b, c, names.p ? names.p : "false");
    gpa_sb_free(&names);
}

void gpa_cel_pod_gpus(gpa_sb *b, const gpa_policy *p, const char *spec)
{
    char inits[160];
    snprintf(inits, sizeof inits, "%s.?initContainers.orValue([])", spec);
    const char *side = ".?restartPolicy.orValue('') == 'Always'";
    /* [containers + sidecars, each ordinary init container + the sidecars before it].max() */
    gpa_sb_printf(b, "([%s.?containers.orValue([]).map(c, ", spec);
    gpa_cel_ctr_gpus(b, p, "c");
    gpa_sb_printf(b, ").sum() + %s.filter(c, c%s).map(c, ", inits, side);
    gpa_cel_ctr_gpus(b, p, "c");
    gpa_sb_printf(b, ").sum()] + %s.transformList(i, c, !(c%s), ", inits, side);
    gpa_cel_ctr_gpus(b, p, "c");
    gpa_sb_printf(b, " + %s.slice(0, i).filter(c, c%s).map(c, ", inits, side);
    gpa_cel_ctr_gpus(b, p, "c");
    gpa_sb_puts(b, ").sum())).max()");
}

static void range_cel(gpa_sb *b, const char *what, const gpa_range *r, bool qty)
{
    if (r->has_min) {
        if (qty)
            gpa_sb_printf(b, " && quantity(%s).compareTo(quantity('%" PRId64 "')) >= 0", what,
                          r->min);
        else
            gpa_sb_printf(b, " && %s >= %" PRId64, what, r->min);
    }
    if (r->has_max) {
        if (qty)
            gpa_sb_printf(b, " && quantity(%s).compareTo(quantity('%" PRId64 "')) <= 0", what,
                          r->max);
        else
            gpa_sb_printf(b, " && %s <= %" PRId64, what, r->max);
    }
}

void gpa_cel_rule_match(gpa_sb *b, const gpa_rule *r, const gpa_cel_subject *s)
{
    gpa_sb_puts(b, "(true");
    range_cel(b, s->gpus, &r->gpus, false);
    if (r->trust == GPA_TRUST_TRUSTED) gpa_sb_printf(b, " && %s", s->trusted);
    if (r->trust == GPA_TRUST_UNTRUSTED) gpa_sb_printf(b, " && !%s", s->trusted);
    if (r->gpu_memory.has_min || r->gpu_memory.has_max) {
        /* the engine: only a valid, non-negative annotation takes part */
        gpa_sb_printf(b, " && isQuantity(%s) && quantity(%s).compareTo(quantity('0')) >= 0", s->mem,
                      s->mem);
        range_cel(b, s->mem, &r->gpu_memory, true);
    }
    if (r->tenants.n) {
        gpa_sb_printf(b, " && %s in [", s->declared);
        for (size_t i = 0; i < r->tenants.n; i++) {
            if (i) gpa_sb_puts(b, ", ");
            gpa_cel_quote(b, r->tenants.items[i]);
        }
        gpa_sb_puts(b, "]");
    }
    if (r->namespaces.n) {
        gpa_sb_puts(b, " && ");
        gpa_cel_globs_match(b, s->ns, &r->namespaces);
    }
    for (size_t i = 0; i < r->labels.n; i++) {
        gpa_sb_printf(b, " && %s[?", s->labels);
        gpa_cel_quote(b, r->labels.keys[i]);
        gpa_sb_puts(b, "] == optional.of(");
        gpa_cel_quote(b, r->labels.values[i]);
        gpa_sb_puts(b, ")");
    }
    gpa_sb_puts(b, ")");
}

void gpa_cel_first_rule_range(gpa_sb *b, const gpa_policy *p, const gpa_cel_subject *s, size_t from,
                              size_t to)
{
    if (to > p->n_rules) to = p->n_rules;
    if (from >= to) {
        gpa_sb_puts(b, "-1");
        return;
    }
    gpa_sb_puts(b, "[");
    for (size_t i = from; i < to; i++) {
        if (i > from) gpa_sb_puts(b, ",\n  ");
        gpa_cel_rule_match(b, &p->rules[i], s);
    }
    gpa_sb_puts(b, "].indexOf(true)");
}

void gpa_cel_first_rule(gpa_sb *b, const gpa_policy *p, const gpa_cel_subject *s)
{
    gpa_cel_first_rule_range(b, p, s, 0, p->n_rules);
}
