/*
 * workload_internal.h - the template walker behind workload.h (policy/workload.c), private to
 * src/core: the review codec visits templates in place (no copies) through it, the public API
 * builds owned pods from the same walk, and the policy loader checks paths with the same
 * syntax. Policy layer: the kinds include the policy's own.
 */
#ifndef GPA_WORKLOAD_INTERNAL_H
#define GPA_WORKLOAD_INTERNAL_H

#include <cjson/cJSON.h>
#include "gpu_admission/workload.h"
#include "policy/policy_gang.h"
#include "policy/policy_model.h"

/* Longest template path accepted (segments), for the loader and the walker. */
#define GPA_WL_MAX_SEGMENTS 16
/* Room for a concrete path in messages; longer ones are cut with "...". */
#define GPA_WL_PATH_CAP 512

/* The paths that hold a kind's templates: the built-in ones and/or the policy's. */
typedef struct gpa_wl_kind {
    const char *api_group; /* as matched */
    const char *kind;
    const char *const *builtin; /* NULL-terminated, NULL when not built in */
    unsigned flags;
    const gpa_workload_kind *extra; /* spec.workloads.kinds entry, NULL when none */
} gpa_wl_kind;

/* Finds (group, kind) among the built-ins and p's kinds (p may be NULL). group is glen bytes
 * (not necessarily NUL-terminated). Returns true when it is a workload kind. */
bool gpa_wl_find(gpa_wl_kind *out, const gpa_policy *p, const char *group, size_t glen,
                 const char *kind);

/* Called for each template found: path is the concrete path (valid during the call), tmpl the
 * PodTemplateSpec object (metadata, spec), replicas the best-effort pod count. Returns GPA_OK
 * to go on, anything else stops the walk with that code. */
typedef int (*gpa_wl_visit)(void *ctx, const char *path, const cJSON *tmpl, long long replicas);

/* Visits every template of obj at k's paths, in path order then document order. Same errors
 * as gpa_workload_templates_read (GPA_EINVAL naming the path); a visitor's code is returned
 * as is. */
int gpa_wl_walk(const gpa_wl_kind *k, const cJSON *obj, gpa_wl_visit fn, void *ctx, gpa_error *err);

/* NULL when path is a valid template path, else why not (static text). */
const char *gpa_wl_path_error(const char *path);

/* The built-in kinds, for `check` output and docs: fills *group, *kind and *paths of the
 * i-th (NULL-terminated paths); false past the end. */
bool gpa_wl_builtin(size_t i, const char **group, const char **kind, const char *const **paths);

/* workload_gang.c: kinds whose templates make one gang (the training operators, JobSet,
 * LeaderWorkerSet; never a policy's own kind). */
/* Pods in one gang of obj as its operator counts them (0: not a gang kind): every replica,
 * CPU-only ones included (PET_NNODES, LWS's size); the gang's GPU pods are summed from the
 * templates with gpa_gang_sum_add. */
long long gpa_wl_gang_pods(const gpa_wl_kind *k, const cJSON *obj);
/* Of those, the pods the template at path makes (replicas: the walk's count for it). */
long long gpa_wl_gang_share(const gpa_wl_kind *k, const cJSON *obj, const char *path,
                            long long replicas);
/* Do the operator's pods carry the gang size (PET_NNODES of a non-elastic PyTorchJob, LWS's
 * size annotation)? Otherwise the pods' gang size is unknown unless the template sets
 * gpu-admission.io/gang-size. */
bool gpa_wl_gang_size_on_pods(const gpa_wl_kind *k, const cJSON *obj);
/* Do the pods obj's operator creates carry the training.kubeflow.org/ or jobset.sigs.k8s.io/
 * labels under which the pod path reads env PET_NNODES and TF_CONFIG? */
bool gpa_wl_operator_env_read(const gpa_wl_kind *k);
/* The gang size the operator writes on the pods of obj and where the pod path reads it
 * (PET_NNODES, TF_CONFIG, LWS's size annotation): *size, or GPA_GANG_SRC_NONE (*size 0) when
 * its pods carry none the pod path can read. */
gpa_gang_src gpa_wl_operator_gang_size(const gpa_wl_kind *k, const cJSON *obj, int64_t *size);
/* Adds to pod (built from the template at path) the labels, annotations and env its operator
 * adds to the pods it creates. GPA_OK or GPA_ENOMEM. */
int gpa_wl_operator_pod(const gpa_wl_kind *k, const cJSON *obj, const char *path, cJSON *pod);

#endif
