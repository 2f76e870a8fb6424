/*
 * workload.h - the pod templates inside workload objects (Deployment, Job, CronJob,
 * PyTorchJob, JobSet, RayCluster, ... and the kinds a policy adds under spec.workloads.kinds).
 *
 * The validating webhook judges a workload by judging, through the Pod path, each pod its
 * controller would create; the CLI's mutate/review/check and the test/diff/simulate tools do
 * the same through this API. Pure: no I/O.
 */
#ifndef GPA_WORKLOAD_H
#define GPA_WORKLOAD_H

#include <cjson/cJSON.h>
#include "common.h"
#include "policy.h"

/* More templates than this in one object are refused (a clear error naming the path) rather
 * than judged one by one: no real workload has that many, and each costs a pod review. */
#define GPA_WORKLOAD_MAX_TEMPLATES 256

/* One pod template inside a workload object. */
typedef struct gpa_workload_template {
    char *path;         /* concrete dotted path, e.g. "spec.pytorchReplicaSpecs.Worker.template"
                           (array elements as "[i]": "spec.workerGroupSpecs[0].template") */
    cJSON *pod;         /* the Pod its controller would create: {"apiVersion":"v1","kind":"Pod",
                           "metadata": template metadata + namespace, "spec": template spec};
                           owned */
    long long replicas; /* pods the controller would run from it, best effort: the product
                           of every "replicas", "parallelism" and "numOfHosts" number on the
                           objects along the path (a missing one counts 1: Deployment/RS/RC/
                           StatefulSet replicas, Job and CronJob parallelism, replica specs,
                           JobSet replicatedJobs x parallelism, Ray worker groups x hosts);
                           LeaderWorkerSet workers x (size - 1 with a leaderTemplate, else
                           size); DaemonSet and PodTemplate 1. Capped at
                           GPA_WORKLOAD_MAX_REPLICAS, never negative */
} gpa_workload_template;

#define GPA_WORKLOAD_MAX_REPLICAS 1000000000LL

typedef struct gpa_workload_templates gpa_workload_templates; /* opaque list */

/* Is (apiVersion's group, kind) a workload kind for this policy (built-ins +
 * spec.workloads.kinds)? Any version matches. p may be NULL: built-ins only. */
int gpa_workload_kind_known(const gpa_policy *p, const char *api_version, const char *kind);

/* Templates of obj (a workload object, its kind read from its apiVersion and kind). GPA_OK
 * with count 0 when obj is not a workload kind or has no template at the configured paths (a
 * missing or null step is not an error). namespace_ overrides metadata.namespace when
 * non-NULL. GPA_EINVAL when a step has the wrong type (a template that is not an object, a key
 * under a list, `*` over a string) or there are more than GPA_WORKLOAD_MAX_TEMPLATES
 * templates; err names the concrete path ("spec.template: expected an object, got string").
 * GPA_ENOMEM. */
int gpa_workload_templates_read(gpa_workload_templates **out, const gpa_policy *p, const cJSON *obj,
                                const char *namespace_, gpa_error *err);
size_t gpa_workload_templates_count(const gpa_workload_templates *t);
const gpa_workload_template *gpa_workload_templates_get(const gpa_workload_templates *t, size_t i);
void gpa_workload_templates_free(gpa_workload_templates *t);

#endif
