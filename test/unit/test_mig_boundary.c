/*
 * test_mig_boundary.c - MIG auto-sizing at the exact profile sizes, for every model of the
 * built-in catalog (iterated through mig.h, so a new model is covered the day it is added):
 * a gpu-memory annotation of exactly a profile's bytes ("10G" = 10 x 10^9 for 1g.10gb) is
 * given that profile, one byte more is given the next larger profile, and the largest
 * profile's exact size is admitted while one byte more is denied (mig-memory) by both hooks.
 *
 * Binary suffixes (8Gi, 10Gi) never land on a catalog size, so only decimal sizes test the
 * "fits" comparison. Must never compute the expected profile with the engine's own code.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/mig.h"
#include "gpu_admission/policy.h"

static bool is_me(const gpa_mig_profile *p)
{
    return strchr(p->name, '+') != NULL;
}

/* Every profile of the model, one rule placing every 1-GPU pod with migProfile: auto. */
static gpa_policy *load_model_policy(const char *model)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "apiVersion: gpu-admission.io/v1alpha1\n"
             "kind: GPUPolicy\n"
             "metadata: {name: mig-boundary}\n"
             "spec:\n"
             "  pools:\n"
             "    - name: mig\n"
             "      nodeSelector: {nvidia.com/gpu.product: test-%s}\n"
             "      sharing: mig\n"
             "      mig: {strategy: mixed, gpu: %s}\n"
             "  rules:\n"
             "    - name: one-gpu\n"
             "      match: {gpus: {max: 1}}\n"
             "      place: {pool: mig, migProfile: auto}\n",
             model, model);
    gpa_policy_source src = {"mig.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_sources(&p, &src, 1, &err) != GPA_OK) {
        fprintf(stderr, "%s: policy does not load: %s\n", model, err.message);
        return NULL;
    }
    return p;
}

static cJSON *mig_pod(const char *resource, const char *memory)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"m\","
             "\"annotations\":{\"gpu-admission.io/gpu-memory\":\"%s\"}},\"spec\":{\"containers\":"
             "[{\"name\":\"main\",\"image\":\"x\",\"resources\":{\"limits\":{\"%s\":1}}}]}}",
             memory, resource);
    return cJSON_Parse(buf);
}

/* The profile mutate gave the pod (by its mixed-strategy resource), NULL when none. */
static const gpa_mig_profile *given(const gpa_mig_model *m, const gpa_decision *d)
{
    const cJSON *c = d->mutated
                         ? cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(d->mutated, "spec"), "containers")
                         : NULL;
    const cJSON *lim = c ? cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(c->child, "resources"), "limits")
                         : NULL;
    const cJSON *r;
    cJSON_ArrayForEach(r, lim) {
        for (size_t i = 0; i < m->n_profiles; i++)
            if (strcmp(r->string, m->profiles[i].resource) == 0) return &m->profiles[i];
    }
    return NULL;
}

static int decide(gpa_decision *d, const gpa_policy *p, bool mutate, const char *resource,
                  const char *memory)
{
    cJSON *obj = mig_pod(resource, memory);
    gpa_request req = {.namespace_ = "default", .op = GPA_OP_CREATE, .object = obj};
    gpa_error err = {0};
    int rc = mutate ? gpa_engine_mutate(d, p, &req, &err) : gpa_engine_validate(d, p, &req, &err);
    if (rc != GPA_OK) fprintf(stderr, "engine error: %s\n", err.message);
    cJSON_Delete(obj);
    return rc;
}

/* The catalog's answer, read off the table: the fewest compute slices among the non-+me
 * profiles of exactly `bytes`, NULL when there is none. */
static const gpa_mig_profile *exact(const gpa_mig_model *m, int64_t bytes)
{
    const gpa_mig_profile *best = NULL;
    for (size_t i = 0; i < m->n_profiles; i++) {
        const gpa_mig_profile *p = &m->profiles[i];
        if (is_me(p) || p->mem_bytes != bytes) continue;
        if (!best || p->slices < best->slices) best = p;
    }
    return best;
}

/* The next size up: the least mem_bytes strictly above `bytes` (0 when none). */
static int64_t next_size(const gpa_mig_model *m, int64_t bytes)
{
    int64_t next = 0;
    for (size_t i = 0; i < m->n_profiles; i++) {
        int64_t b = m->profiles[i].mem_bytes;
        if (!is_me(&m->profiles[i]) && b > bytes && (!next || b < next)) next = b;
    }
    return next;
}

static void expect_profile(const gpa_mig_model *m, const gpa_policy *p, const char *memory,
                           const gpa_mig_profile *want)
{
    gpa_decision d;
    CHECK_INT(decide(&d, p, true, "nvidia.com/gpu", memory), GPA_OK);
    const gpa_mig_profile *got = given(m, &d);
    CHECK(d.allowed);
    CHECK(got == want);
    if (got != want)
        fprintf(stderr, "%s gpu-memory %s: given %s, want %s (%s)\n", m->name, memory,
                got ? got->name : "none", want->name, d.message ? d.message : "allowed");
    gpa_decision_clear(&d);
}

static void expect_too_big(const gpa_mig_model *m, const gpa_policy *p, bool mutate,
                           const char *resource, const char *memory)
{
    gpa_decision d;
    CHECK_INT(decide(&d, p, mutate, resource, memory), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "mig-memory");
    if (d.allowed)
        fprintf(stderr, "%s %s gpu-memory %s: allowed, want mig-memory\n", m->name,
                mutate ? "mutate" : "validate", memory);
    gpa_decision_clear(&d);
}

static void one_model(const gpa_mig_model *m)
{
    gpa_policy *p = load_model_policy(m->name);
    CHECK(p != NULL);
    if (!p) return;
    const gpa_mig_profile *largest = NULL;
    for (size_t i = 0; i < m->n_profiles; i++) {
        const gpa_mig_profile *prof = &m->profiles[i];
        if (is_me(prof)) continue;
        if (!largest || prof->mem_bytes > largest->mem_bytes) largest = prof;
        const gpa_mig_profile *want = exact(m, prof->mem_bytes);
        char mem[48];
        /* the same bytes written with the decimal suffix and as a plain integer */
        snprintf(mem, sizeof mem, "%" PRId64 "G", prof->mem_bytes / 1000000000);
        expect_profile(m, p, mem, want);
        snprintf(mem, sizeof mem, "%" PRId64, prof->mem_bytes);
        expect_profile(m, p, mem, want);
        snprintf(mem, sizeof mem, "%" PRId64, prof->mem_bytes + 1);
        int64_t up = next_size(m, prof->mem_bytes);
        if (up)
            expect_profile(m, p, mem, exact(m, up));
        else
            expect_too_big(m, p, true, "nvidia.com/gpu", mem);
    }
    CHECK(largest != NULL);
    if (largest) {
        /* validate on a pod asking the largest profile directly: its own size is admitted,
         * one byte more is not */
        char mem[48];
        snprintf(mem, sizeof mem, "%" PRId64, largest->mem_bytes);
        gpa_decision d;
        CHECK_INT(decide(&d, p, false, largest->resource, mem), GPA_OK);
        CHECK(d.allowed);
        CHECK(d.reason == NULL);
        if (!d.allowed)
            fprintf(stderr, "%s validate %s at %s: %s\n", m->name, largest->name, mem, d.message);
        gpa_decision_clear(&d);
        snprintf(mem, sizeof mem, "%" PRId64, largest->mem_bytes + 1);
        expect_too_big(m, p, false, largest->resource, mem);
    }
    gpa_policy_unref(p);
}

/* +me profiles are never picked automatically, even when the pool lists them first: a pool of
 * [1g.10gb+me, 1g.10gb, 2g.20gb] gives 10G the plain 1g.10gb, and [1g.10gb+me, 2g.20gb] the
 * 2g.20gb (the one media-engine instance of a GPU is a deliberate choice). */
static void me_listed_first(void)
{
    static const char *const lists[] = {"[1g.10gb+me, 1g.10gb, 2g.20gb]", "[1g.10gb+me, 2g.20gb]"};
    static const char *const want[] = {"1g.10gb", "2g.20gb"};
    const gpa_mig_model *m = gpa_mig_model_find("A100-80GB");
    for (size_t i = 0; i < 2; i++) {
        char yaml[1024];
        snprintf(yaml, sizeof yaml,
                 "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: me}\n"
                 "spec:\n  pools:\n    - name: mig\n      sharing: mig\n"
                 "      mig: {strategy: mixed, gpu: A100-80GB, profiles: %s}\n"
                 "  rules:\n    - name: one-gpu\n      match: {gpus: {max: 1}}\n"
                 "      place: {pool: mig, migProfile: auto}\n",
                 lists[i]);
        gpa_policy_source src = {"me.yaml", yaml, strlen(yaml)};
        gpa_policy *p = NULL;
        gpa_error err = {0};
        CHECK_INT(gpa_policy_load_sources(&p, &src, 1, &err), GPA_OK);
        if (!p) {
            fprintf(stderr, "%s\n", err.message);
            continue;
        }
        expect_profile(m, p, "10G", gpa_mig_profile_find(m, want[i]));
        gpa_policy_unref(p);
    }
}

/* Profiles whose listed memory is below their name (nvidia-smi mig -lgip, docs/policy.md): auto
 * sizes by the listed bytes, so the 17.5 GB job on an H200 is not put on a 1g.18gb
 * slice holding 17.18 GB; above-name listings keep POLICY.md's name rule. Expected profiles
 * are written out, not computed. */
static void real_memory_examples(void)
{
    static const struct {
        const char *model, *memory, *want;
    } cases[] = {
        {"H200-141GB", "17.5G", "1g.35gb"},
        {"H200-141GB", "17G", "1g.18gb"},
        {"H200-141GB", "17179869184", "1g.18gb"},
        {"H200-141GB", "17179869185", "1g.35gb"},
        {"H200-141GB", "34.7G", "3g.71gb"},
        {"H100-94GB", "11.6G", "1g.24gb"},
        {"H100-94GB", "11.5G", "1g.12gb"},
        {"B200", "22.5G", "1g.45gb"},
        {"GB200", "23G", "1g.23gb"},
        {"A100-40GB", "5G", "1g.5gb"},
        {"A100-40GB", "5000000001", "1g.10gb"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gpa_mig_model *m = gpa_mig_model_find(cases[i].model);
        gpa_policy *p = load_model_policy(cases[i].model);
        CHECK(m && p);
        if (m && p) expect_profile(m, p, cases[i].memory, gpa_mig_profile_find(m, cases[i].want));
        gpa_policy_unref(p);
    }
}

int main(void)
{
    me_listed_first();
    real_memory_examples();
    size_t n = 0;
    for (const char *name; (name = gpa_mig_model_name_at(n)) != NULL; n++)
        one_model(gpa_mig_model_find(name));
    CHECK(n >= 9); /* the catalog of POLICY.md; a shrinking catalog is a bug too */
    return check_done();
}
