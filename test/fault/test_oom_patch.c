/*
 * test_oom_patch.c - applying a JSON Patch (gpa_patch_apply: the CLI's `mutate` self-check and
 * the golden tests apply the webhook's patches with it) with every allocation failing in turn
 * (fault.h). The patch is the golden case 001's (annotations added, nvidia.com/gpu removed and
 * nvidia.com/mig-1g.10gb added in limits and requests, a toleration, a node affinity) plus one
 * op of each other kind: replace, test, copy, move. A run must leave the pod exactly patched, or
 * answer GPA_ENOMEM with the pod untouched (the patch is applied to a copy, all or nothing);
 * never another error, which would blame the patch.
 *
 * Must never: count the test's own working copy (made and compared under fault_hold).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fault.h"
#include "gpu_admission/patch.h"

static const char pod_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"llm-small\",\"namespace\":"
    "\"inference-a\",\"annotations\":{\"gpu-admission.io/gpu-memory\":\"8Gi\"}},\"spec\":{"
    "\"containers\":[{\"name\":\"server\",\"image\":\"vllm/vllm-openai:v0.6.0\",\"resources\":{"
    "\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"4\"},\"requests\":{\"nvidia.com/gpu\":\"1\","
    "\"cpu\":\"4\"}}}]}}";

static const char patch_json[] =
    "[{\"op\":\"add\",\"path\":\"/metadata/annotations/gpu-admission.io~1rule\",\"value\":"
    "\"inference-small\"},"
    "{\"op\":\"add\",\"path\":\"/metadata/annotations/gpu-admission.io~1policy\",\"value\":"
    "\"0f1e2d3c\"},"
    "{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpu\"},"
    "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb\","
    "\"value\":\"1\"},"
    "{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/requests/nvidia.com~1gpu\"},"
    "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/requests/nvidia.com~1mig-1g.10gb\","
    "\"value\":\"1\"},"
    "{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[{\"key\":\"nvidia.com/gpu\","
    "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]},"
    "{\"op\":\"add\",\"path\":\"/spec/affinity\",\"value\":{\"nodeAffinity\":{"
    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
    "\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\",\"operator\":\"In\",\"values\":["
    "\"NVIDIA-A100-SXM4-80GB\"]}]}]}}}},"
    "{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"vllm/vllm-openai:v0.6.1"
    "\"},"
    "{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"llm-small\"},"
    "{\"op\":\"copy\",\"from\":\"/metadata/annotations\",\"path\":\"/metadata/labels\"},"
    "{\"op\":\"move\",\"from\":\"/metadata/labels/gpu-admission.io~1policy\",\"path\":"
    "\"/metadata/labels/policy\"}]";

typedef struct patch_case {
    cJSON *pod, *patch;
    cJSON *want; /* the clean run's result */
    bool same_as_want, same_as_pod;
    gpa_error err;
} patch_case;

static int run_patch(void *ctx)
{
    patch_case *c = ctx;
    c->err = (gpa_error){0};
    fault_hold(true);
    cJSON *doc = cJSON_Duplicate(c->pod, 1);
    fault_hold(false);
    if (!doc) {
        printf("FAIL cannot copy the pod\n");
        exit(1);
    }
    int rc = gpa_patch_apply(doc, c->patch, &c->err);
    fault_stop_failing();
    c->same_as_pod = cJSON_Compare(doc, c->pod, true);
    c->same_as_want = c->want ? cJSON_Compare(doc, c->want, true) : false;
    if (!c->want && rc == GPA_OK) {
        /* the warm-up run: its result is what every later run must give (its blocks are not
         * counted: the live count is per run, and the warm-up's is not checked) */
        c->want = doc;
        return rc;
    }
    cJSON_Delete(doc);
    return rc;
}

static const char *check_patch(void *ctx, int rc, int clean_rc, bool fired)
{
    patch_case *c = ctx;
    if (!fired && !c->same_as_want) return "the clean run did not give its own result";
    if (rc == GPA_ENOMEM) return c->same_as_pod ? NULL : "GPA_ENOMEM with the pod changed";
    if (rc != GPA_OK) {
        static char why[sizeof c->err.message + 64];
        snprintf(why, sizeof why, "rc %d instead of GPA_ENOMEM: %s", rc, c->err.message);
        return why;
    }
    return c->same_as_want ? NULL : "GPA_OK with a pod patched otherwise";
}

int main(void)
{
    fault_init();
    patch_case c = {.pod = cJSON_Parse(pod_json), .patch = cJSON_Parse(patch_json)};
    if (!c.pod || !c.patch) {
        printf("FAIL the test's pod or patch does not parse\n");
        return 1;
    }
    fault_case fc = {"patch/apply golden 001 + replace, test, copy, move", run_patch, check_patch,
                     &c};
    int failed = fault_run_case(&fc);
    cJSON_Delete(c.want);
    cJSON_Delete(c.pod);
    cJSON_Delete(c.patch);
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
