/*
 * test_pod_need.c - the pod's GPU count as Kubernetes computes it, native sidecars included
 * (gpu_admission/pod_need.h, issue 33 path 4): the accumulator on its own, and the engine's
 * count (gpa_pod_gpu_count) over real pod shapes, so a regression to the pre-1.29 rule
 * (max(sum of containers, largest init container)) or to "own + every sidecar" fails here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/pod_need.h"
#include "gpu_admission/policy.h"
#include "engine/pod.h"

static const char *POLICY = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                            "metadata: {name: t}\nspec:\n  pools:\n"
                            "    - {name: whole, sharing: exclusive, nodeSelector: {a: b}}\n"
                            "  rules:\n    - {name: all, place: {pool: whole}}\n";

/* The engine's count of a pod given as JSON. */
static int64_t count(const gpa_policy *p, const char *json, bool *named)
{
    cJSON *pod = cJSON_Parse(json);
    CHECK(pod != NULL);
    gpa_pod v;
    gpa_pod_init(&v, pod);
    int64_t n = gpa_pod_gpu_count(&v, p, named);
    cJSON_Delete(pod);
    return n;
}

#define C(n) "{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":" #n "}}}"
#define S(n)                                                                                       \
    "{\"name\":\"s\",\"restartPolicy\":\"Always\",\"resources\":{\"limits\":{\"nvidia.com/"        \
    "gpu\":" #n "}}}"

static void test_accumulator(void)
{
    gpa_pod_need n = {0, 0, 0};
    gpa_pod_need_container(&n, 1);
    gpa_pod_need_init(&n, 1, true);
    gpa_pod_need_init(&n, 1, true);
    gpa_pod_need_init(&n, 1, true);
    CHECK_INT(gpa_pod_need_total(&n), 4); /* the attack: 1 + 3 sidecars */
    gpa_pod_need_init(&n, 2, false);      /* 2 + 3 sidecars running beside it */
    CHECK_INT(gpa_pod_need_total(&n), 5);
    gpa_pod_need m = {0, 0, 0};
    gpa_pod_need_init(&m, 5, false); /* before any sidecar: its own need only */
    gpa_pod_need_init(&m, 1, true);
    gpa_pod_need_container(&m, 1);
    CHECK_INT(gpa_pod_need_total(&m), 5);
    gpa_pod_need o = {0, 0, 0}; /* hostile sums stick, never wrap */
    gpa_pod_need_container(&o, INT64_MAX - 1);
    gpa_pod_need_init(&o, 5, true);
    CHECK_INT(gpa_pod_need_total(&o), INT64_MAX);
    gpa_pod_need_init(&o, INT64_MAX, false);
    CHECK_INT(gpa_pod_need_total(&o), INT64_MAX);
}

static void test_is_sidecar(void)
{
    const char *yes = "{\"restartPolicy\":\"Always\"}";
    const char *no[] = {"{}",
                        "{\"restartPolicy\":\"OnFailure\"}",
                        "{\"restartPolicy\":true}",
                        "{\"restartPolicy\":null}",
                        "{\"restartPolicy\":\"always\"}",
                        "[]",
                        "\"Always\""};
    cJSON *j = cJSON_Parse(yes);
    CHECK(gpa_init_container_is_sidecar(j));
    cJSON_Delete(j);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        j = cJSON_Parse(no[i]);
        CHECK(j != NULL);
        CHECK(!gpa_init_container_is_sidecar(j));
        cJSON_Delete(j);
    }
    CHECK(!gpa_init_container_is_sidecar(NULL));
}

static void test_engine_count(void)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"t.yaml", POLICY, strlen(POLICY)};
    CHECK_INT(gpa_policy_load_sources(&p, &src, 1, &err), GPA_OK);
    if (!p) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    bool named = false;
    /* the attack: one container and three sidecars */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[" C(1) "],\"initContainers\":[" S(1) "," S(1) "," S(
                        1) "]}}",
                    &named),
              4);
    CHECK(named);
    /* sidecars only, no GPU in the containers */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[" S(2) "]}}",
                    NULL),
              2);
    /* an init container after a sidecar runs beside it: 2 + 1 > 1 + 1 */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[" C(1) "],\"initContainers\":[" S(1) "," C(2) "]}}",
                    NULL),
              3);
    /* before it, not: max(2, 1 + 1) */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[" C(1) "],\"initContainers\":[" C(2) "," S(1) "]}}",
                    NULL),
              2);
    /* plain init containers: the old rule still holds */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[" C(1) "," C(1) "],\"initContainers\":[" C(3) "," C(
                        1) "]}}",
                    NULL),
              3);
    /* requests only on a sidecar count as its need too */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[" C(
                        1) "],\"initContainers\":[{\"name\":\"s\","
                           "\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"nvidia.com/"
                           "gpu\":\"2\"}}}]}}",
                    NULL),
              3);
    /* more containers than the scan cache holds: every one still counts */
    CHECK_INT(count(p,
                    "{\"spec\":{\"containers\":[" C(1) "," C(1) "," C(1) "],\"initContainers\":[" S(
                        1) "," S(1) "," S(1) "]}}",
                    NULL),
              6);
    gpa_policy_unref(p);
}

int main(void)
{
    test_accumulator();
    test_is_sidecar();
    test_engine_count();
    return check_done();
}
