/*
 * test_oom_policy.c - the policy loader with every allocation failing in turn (fault.h):
 * gpa_policy_load_dir on the shipped policies/ and on test/golden/policies/cluster (shipped/ is
 * a byte copy of policies/), the modes/, workloads/ and isolation/ overlays loaded with cluster as
 * the golden cases load them (gpa_policy_load_sources), then what the CLI and /policy ask of a
 * loaded set (gpa_policy_describe, gpa_policy_warnings). A load must end with the same set as the
 * clean run (same revision, pools and rules) or GPA_ENOMEM with no set and a message; never a
 * schema or parse error blamed on the policy files, which would make an operator edit a
 * correct policy.
 *
 * Must never: keep a set between runs (each run loads and frees its own).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "gpu_admission/policy.h"

typedef struct load_case {
    const char *dir;          /* gpa_policy_load_dir, or else: */
    const char *files[6];     /* under test/golden/policies, NULL-terminated */
    gpa_policy_source src[6]; /* read before arming */
    size_t n_src;
    bool describe; /* also describe and list warnings of the loaded set */
    gpa_error err;
    bool got_set;
    char revision[65];
    size_t pools, rules;
    int describe_rc; /* 0 ok, 1 describe NULL */
    char clean_revision[65];
    size_t clean_pools, clean_rules;
    bool have_clean;
} load_case;

static int run_load(void *ctx)
{
    load_case *c = ctx;
    gpa_policy *p = NULL;
    c->err = (gpa_error){0};
    int rc = c->dir ? gpa_policy_load_dir(&p, c->dir, &c->err)
                    : gpa_policy_load_sources(&p, c->src, c->n_src, &c->err);
    c->got_set = p != NULL;
    c->revision[0] = '\0';
    c->describe_rc = 0;
    if (p) {
        snprintf(c->revision, sizeof c->revision, "%s", gpa_policy_revision(p));
        c->pools = gpa_policy_pool_count(p);
        c->rules = gpa_policy_rule_count(p);
        if (c->describe && rc == GPA_OK) {
            /* NULL is their out-of-memory answer; the set itself stays usable. */
            char *d = gpa_policy_describe(p);
            char *w = gpa_policy_warnings(p);
            c->describe_rc = !d;
            free(d);
            free(w);
        }
        gpa_policy_unref(p);
    }
    return rc;
}

static const char *check_load(void *ctx, int rc, int clean_rc, bool fired)
{
    load_case *c = ctx;
    if (!c->have_clean) {
        if (rc != GPA_OK) return c->err.message[0] ? c->err.message : "the clean load failed";
        if (!c->got_set || c->describe_rc) return "the clean load gave no set or no description";
        c->have_clean = true;
        memcpy(c->clean_revision, c->revision, sizeof c->revision);
        c->clean_pools = c->pools;
        c->clean_rules = c->rules;
        return NULL;
    }
    if (rc == GPA_ENOMEM) {
        if (c->got_set) return "GPA_ENOMEM but a set was returned";
        if (!c->err.message[0]) return "GPA_ENOMEM without a message";
        if (c->err.code != GPA_ENOMEM) return "GPA_ENOMEM returned, another code in err";
        return NULL;
    }
    if (rc != GPA_OK) {
        static char why[sizeof c->err.message + 64];
        snprintf(why, sizeof why, "rc %d instead of GPA_ENOMEM: %s", rc, c->err.message);
        return why;
    }
    if (!c->got_set) return "GPA_OK without a set";
    if (strcmp(c->revision, c->clean_revision) != 0 || c->pools != c->clean_pools ||
        c->rules != c->clean_rules)
        return "GPA_OK with a set that differs from the clean run's";
    return NULL; /* describe/warnings answering NULL is their documented out-of-memory answer */
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1))) {
            *len = fread(b, 1, (size_t)n, f);
            b[*len] = '\0';
        }
    }
    fclose(f);
    return b;
}

#define GOLDEN GPA_SOURCE_DIR "/test/golden/policies/"

int main(void)
{
    fault_init();
    if (!fault_yaml_reached())
        printf("note: libyaml is linked as a shared library; its own allocations are not "
               "failed (install libyaml's static archive, libyaml-dev)\n");
    load_case cases[] = {
        {.dir = GPA_SOURCE_DIR "/policies", .describe = true},
        {.dir = GPA_SOURCE_DIR "/test/golden/policies/cluster", .describe = true},
        /* modes/ and workloads/ are overlays, loaded as the golden cases load them */
        {.files = {"cluster/00-tenancy.yaml", "cluster/10-pools.yaml", "cluster/20-rules.yaml",
                   "modes/warn.yaml"}},
        {.files = {"cluster/00-tenancy.yaml", "cluster/01-settings.yaml", "cluster/10-pools.yaml",
                   "cluster/20-rules.yaml", "workloads/paddle.yaml"}},
        /* spec.isolation: its list, the revision's sorted copy, describe and lint lines */
        {.files = {"cluster/00-tenancy.yaml", "cluster/01-settings.yaml", "cluster/10-pools.yaml",
                   "cluster/20-rules.yaml", "isolation/schedulers.yaml"},
         .describe = true},
    };
    static char paths[6][4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t j = 0; cases[i].files[j]; j++) {
            gpa_policy_source *s = &cases[i].src[cases[i].n_src++];
            char *path = paths[j];
            snprintf(path, sizeof paths[j], "%s%s", GOLDEN, cases[i].files[j]);
            s->path = cases[i].files[j];
            s->data = slurp(path, &s->len);
            if (!s->data) {
                printf("FAIL cannot read %s\n", path);
                return 1;
            }
        }
    }
    static const char *const names[] = {
        "policy/load policies/ + describe", "policy/load golden cluster + describe",
        "policy/load cluster + modes/warn.yaml", "policy/load cluster + workloads/paddle.yaml",
        "policy/load cluster + isolation/schedulers.yaml + describe"};
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fault_case fc = {names[i], run_load, check_load, &cases[i]};
        failed += fault_run_case(&fc);
        for (size_t j = 0; j < cases[i].n_src; j++)
            free((char *)cases[i].src[j].data);
    }
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
