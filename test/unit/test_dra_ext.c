/*
 * test_dra_ext.c - DRA extended resources a pod may get a GPU through (issue 33 path 6): the
 * table the loader builds (NVIDIA's GPU DeviceClasses, genericClasses, the pools' classes,
 * spec.dra.extendedResourceNames), which of them stand for nvidia.com/gpu, the strict
 * reading of extendedResourceNames, and that the map is part of the revision and of `check`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/policy.h"
#include "engine/pod.h"
#include "policy/policy_dra.h"
#include "policy/policy_model.h"

#define HEAD "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: t}\nspec:\n"
#define POOLS                                                                                      \
    "  pools:\n"                                                                                   \
    "    - {name: mig, sharing: mig, nodeSelector: {a: b}, mig: {strategy: mixed, gpu: "           \
    "A100-80GB}, dra: {deviceClass: mig-a100.example.com}}\n"                                      \
    "    - {name: ts, sharing: time-slicing, nodeSelector: {c: d}, dra: {deviceClass: "            \
    "ts.example.com}}\n"                                                                           \
    "  rules:\n    - {name: all, place: {pool: mig}}\n"

static gpa_policy *load(const char *yaml, char *errbuf, size_t cap)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"t.yaml", yaml, strlen(yaml)};
    if (gpa_policy_load_sources(&p, &src, 1, &err) != GPA_OK) {
        snprintf(errbuf, cap, "%s", err.message);
        return NULL;
    }
    errbuf[0] = '\0';
    return p;
}

static void test_table(void)
{
    char e[4200];
    gpa_policy *p = load(HEAD "  dra:\n    genericClasses: [gpu.example.com]\n"
                              "    extendedResourceNames:\n"
                              "      gpu.example.com: example.com/gpu\n"
                              "      mig-a100.example.com: example.com/mig\n"
                              "      other.example.com: example.com/other\n"
                              "      gpu.nvidia.com: nvidia.com/gpu\n" POOLS,
                         e, sizeof e);
    CHECK(p != NULL);
    if (!p) {
        fprintf(stderr, "%s\n", e);
        return;
    }
    const struct {
        const char *name;
        bool found, generic;
        const char *pool;
    } want[] = {
        {"deviceclass.resource.kubernetes.io/gpu.nvidia.com", true, true, NULL},
        {"deviceclass.resource.kubernetes.io/mig.nvidia.com", true, false, NULL},
        {"deviceclass.resource.kubernetes.io/vfio.gpu.nvidia.com", true, false, NULL},
        {"deviceclass.resource.kubernetes.io/gpu.example.com", true, true, NULL},
        {"deviceclass.resource.kubernetes.io/mig-a100.example.com", true, false, "mig"},
        {"deviceclass.resource.kubernetes.io/ts.example.com", true, false, "ts"},
        {"example.com/gpu", true, true, NULL},
        /* a class named in extendedResourceNames counts under its implicit name too */
        {"deviceclass.resource.kubernetes.io/other.example.com", true, false, NULL},
        {"example.com/mig", true, false, "mig"},
        /* a class the policy does not know, and the device plugin's names: not DRA entries */
        {"deviceclass.resource.kubernetes.io/nic.example.com", false, false, NULL},
        {"nvidia.com/gpu", false, false, NULL},
        {"nvidia.com/mig-1g.10gb", false, false, NULL},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const gpa_dra_ext *x = gpa_dra_ext_of(p, want[i].name);
        CHECK(!!x == want[i].found);
        if (!x || !want[i].found) continue;
        CHECK(x->generic == want[i].generic);
        CHECK(want[i].pool ? x->pool && strcmp(x->pool->name, want[i].pool) == 0 : !x->pool);
        /* every entry counts as a GPU resource; the generic ones stand for nvidia.com/gpu */
        CHECK(gpa_is_gpu_resource(p, want[i].name));
        CHECK(gpa_is_plain_gpu(p, want[i].name) == want[i].generic);
    }
    CHECK(!gpa_is_gpu_resource(p, "deviceclass.resource.kubernetes.io/nic.example.com"));
    CHECK(gpa_is_plain_gpu(p, "nvidia.com/gpu"));
    CHECK(!gpa_is_plain_gpu(p, "nvidia.com/gpu.shared"));
    /* nvidia.com/gpu named as gpu.nvidia.com's extendedResourceName keeps its own meaning */
    CHECK(gpa_dra_ext_of(p, "nvidia.com/gpu") == NULL);
    char *d = gpa_policy_describe(p);
    CHECK_CONTAINS(d, "extended resource names example.com/gpu = gpu.example.com, "
                      "example.com/mig = mig-a100.example.com, "
                      "example.com/other = other.example.com, nvidia.com/gpu = gpu.nvidia.com");
    CHECK_CONTAINS(d, "deviceclass.resource.kubernetes.io/gpu.nvidia.com");
    free(d);
    /* check warns for a name the chart's default prefixes do not send, not for nvidia.com/ */
    char *w = gpa_policy_warnings(p);
    CHECK_CONTAINS(w, "t.yaml:5:3: warning: dra.extendedResourceNames example.com/gpu (class "
                      "gpu.example.com) is outside nvidia.com/: pods asking it reach the webhook "
                      "only if the chart's webhook.matchConditions.resourcePrefixes lists its "
                      "prefix\n");
    CHECK(w && strstr(w, "extendedResourceNames nvidia.com/gpu") == NULL);
    free(w);
    /* the map is meaning: the revision moves with it */
    gpa_policy *q = load(HEAD "  dra:\n    genericClasses: [gpu.example.com]\n"
                              "    extendedResourceNames:\n"
                              "      gpu.example.com: example.com/gpu2\n"
                              "      mig-a100.example.com: example.com/mig\n"
                              "      gpu.nvidia.com: nvidia.com/gpu\n" POOLS,
                         e, sizeof e);
    CHECK(q != NULL);
    if (q) CHECK(strcmp(gpa_policy_revision(p), gpa_policy_revision(q)) != 0);
    gpa_policy_unref(q);
    gpa_policy_unref(p);
    /* a set without spec.dra still knows NVIDIA's classes */
    p = load(HEAD POOLS, e, sizeof e);
    CHECK(p != NULL);
    if (p) {
        CHECK(gpa_is_plain_gpu(p, "deviceclass.resource.kubernetes.io/gpu.nvidia.com"));
        CHECK(gpa_is_gpu_resource(p, "deviceclass.resource.kubernetes.io/vfio.gpu.nvidia.com"));
        CHECK(gpa_dra_ext_of(p, "deviceclass.resource.kubernetes.io/mig-a100.example.com"));
    }
    gpa_policy_unref(p);
}

static void test_errors(void)
{
    const struct {
        const char *map, *want;
    } bad[] = {
        {"{gpu.example.com: example.com/gpu, other.example.com: example.com/gpu}",
         "example.com/gpu is the name of both gpu.example.com and other.example.com"},
        {"{gpu.example.com: deviceclass.resource.kubernetes.io/gpu.example.com}",
         "is the implicit name of a class"},
        {"{gpu.example.com: gpu}", "is not an extended resource name (domain/name)"},
        {"{gpu.example.com: 'example.com/a b'}", "extended resource name"},
        {"{Not_A_Class: example.com/gpu}", "device class"},
        {"[example.com/gpu]", "dra.extendedResourceNames"},
        {"{gpu.example.com: 3}", "dra.extendedResourceNames"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char yaml[1024], e[4200];
        snprintf(yaml, sizeof yaml, HEAD "  dra:\n    extendedResourceNames: %s\n" POOLS,
                 bad[i].map);
        gpa_policy *p = load(yaml, e, sizeof e);
        CHECK(p == NULL);
        gpa_policy_unref(p);
        CHECK_CONTAINS(e, bad[i].want);
        CHECK_CONTAINS(e, "t.yaml:");
    }
}

int main(void)
{
    test_table();
    test_errors();
    return check_done();
}
