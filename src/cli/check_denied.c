/*
 * check_denied.c - `gpu-admission check`: a rule the analysis reaches only with pods the
 * webhooks then refuse.
 *
 * The reachability analysis (reach.h) is about matching: which rule takes a pod first. It
 * does not run the engine, so a rule that places every pod it takes where validation refuses
 * it - a MIG pool for pods asking several GPUs in one container (mig-count), a time-sliced
 * pool for an untrusted tenant (untrusted-shared) - was listed as "reached" as if it worked.
 * Here every witness pod the analysis has for a placing rule (its own, and those of findings
 * the rule takes) is judged as the API server would have it judged; when none is admitted
 * the rule gets a warning with the refusal.
 *
 * Must never: warn about a deny rule (it refuses by design) or a rule the analysis already
 * says denies every pod (gpuMemory beyond its pool), or claim more than it tried: the words
 * are "every witness pod", the pods check built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check_reach.h"
#include "gpu_admission/judge.h"

/* 1 admitted, 0 refused (reason and message kept in *why when it is the first), -1 error. */
static int judge_witness(const gpa_policy *p, const gpa_reach_pod *w, gpa_cli_denied_rule *why)
{
    cJSON *pod = gpa_cli_check_pod(w, "witness");
    if (!pod) return -1;
    gpa_judge_input in = {.object = pod, .hooks = GPA_JUDGE_BOTH};
    gpa_judgement j;
    gpa_error err = {0};
    int rc = gpa_judge(&j, p, &in, &err);
    cJSON_Delete(pod);
    if (rc != GPA_OK) return -1;
    int out = j.allowed ? 1 : 0;
    if (!j.allowed && !why->reason) {
        why->reason = strdup(j.reason ? j.reason : "denied");
        why->message = strdup(j.message ? j.message : "denied by policy");
        why->pod = gpa_reach_pod_text(w);
        if (!why->reason || !why->message || !why->pod) out = -1;
    }
    gpa_judgement_clear(&j);
    return out;
}

static void rule_clear(gpa_cli_denied_rule *d)
{
    free(d->reason);
    free(d->message);
    free(d->pod);
    memset(d, 0, sizeof *d);
}

int gpa_cli_check_denied(gpa_cli_denied *out, const gpa_policy *p, const gpa_reach *r)
{
    memset(out, 0, sizeof *out);
    if (!r || r->n_rules == 0) return 0;
    out->rules = calloc(r->n_rules, sizeof *out->rules);
    if (!out->rules) return -1;
    out->n_rules = r->n_rules;
    for (size_t i = 0; i < r->n_rules; i++) {
        if (!r->reached[i] || !gpa_policy_rule_pool(p, i)) continue;
        bool said = false; /* the analysis already says the rule denies every pod */
        for (size_t k = 0; k < r->n_findings && !said; k++)
            said = r->findings[k].kind == GPA_REACH_MEM_BEYOND && r->findings[k].rule == i;
        if (said) continue;
        gpa_cli_denied_rule *d = &out->rules[i];
        int got = judge_witness(p, &r->witness[i], d);
        for (size_t k = 0; k < r->n_findings && got == 0; k++) {
            const gpa_reach_finding *f = &r->findings[k];
            if (f->has_witness && f->witness_rule == i) got = judge_witness(p, &f->witness, d);
        }
        if (got < 0) {
            gpa_cli_denied_free(out);
            return -1;
        }
        if (got == 1) {
            rule_clear(d);
        } else {
            d->denied = true;
            out->n_denied++;
        }
    }
    return 0;
}

void gpa_cli_denied_free(gpa_cli_denied *d)
{
    for (size_t i = 0; d && d->rules && i < d->n_rules; i++)
        rule_clear(&d->rules[i]);
    if (d) free(d->rules);
    if (d) memset(d, 0, sizeof *d);
}

char *gpa_cli_denied_text(const gpa_policy *p, const gpa_cli_denied *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NULL;
    for (size_t i = 0; i < d->n_rules; i++) {
        const gpa_cli_denied_rule *x = &d->rules[i];
        if (!x->denied) continue;
        fprintf(m,
                "%s:%d:%d: warning: rule %s is reached only by pods it then denies: every "
                "witness pod is refused (%s: %s), e.g. %s\n",
                gpa_policy_rule_file(p, i), gpa_policy_rule_line(p, i), gpa_policy_rule_col(p, i),
                gpa_policy_rule_name(p, i), x->reason, x->message, x->pod);
    }
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    if (len == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
