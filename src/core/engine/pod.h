/*
 * pod.h - read-only view helpers over a Pod held as cJSON (private to src/core): labels,
 * annotations, container lists, and the GPU resources a container asks for.
 *
 * Never allocates and never modifies the pod; tolerates any malformed shape (a field of the
 * wrong type reads as absent) so a hostile pod can at worst be judged, never crash us.
 */
#ifndef GPA_POD_H
#define GPA_POD_H

#include <cjson/cJSON.h>
#include "gpu_admission/labels.h" /* GPA_LABEL_TENANT, GPA_ANN_GPU_MEMORY */
#include "policy/policy_model.h"

#define GPA_LABEL_POOL   "gpu-admission.io/pool"
#define GPA_LABEL_TRUST  "gpu-admission.io/trust"
#define GPA_LABEL_GROUP  "gpu-admission.io/group"
#define GPA_ANN_RULE     "gpu-admission.io/rule"
#define GPA_ANN_POLICY   "gpu-admission.io/policy"
#define GPA_ANN_TOPOLOGY "gpu-admission.io/topology"
#define GPA_RES_GPU      "nvidia.com/gpu"
#define GPA_HOSTNAME_KEY "kubernetes.io/hostname"

typedef enum {
    GPA_PODC_MAIN,      /* spec.containers */
    GPA_PODC_INIT,      /* spec.initContainers */
    GPA_PODC_EPHEMERAL, /* spec.ephemeralContainers */
    GPA_PODC_KINDS
} gpa_podc_kind;

typedef struct gpa_pod {
    const cJSON *root;
    const cJSON *metadata;
    const cJSON *labels;                     /* object or NULL */
    const cJSON *annotations;                /* object or NULL */
    const cJSON *spec;                       /* object or NULL */
    const cJSON *containers[GPA_PODC_KINDS]; /* arrays or NULL, looked up once */
    /* spec fields the checks read, found in the same pass: objects / strings or NULL */
    const cJSON *affinity, *node_selector, *volumes;
    const char *node_name, *runtime_class, *scheduler_name;
    /* spec.resourceClaims (array: the last of a repeated key, as containers) and
     * spec.schedulingGroup (object: Kubernetes 1.36+ Workload API), NULL when absent */
    const cJSON *resource_claims, *scheduling_group;
} gpa_pod;

void gpa_pod_init(gpa_pod *v, const cJSON *pod);
/* A view of only a spec (root, metadata, labels, annotations NULL). */
void gpa_pod_init_spec(gpa_pod *v, const cJSON *spec);

/* The string member key of obj, NULL when absent or not a string. */
const char *gpa_json_str(const cJSON *obj, const char *key);
/* The object/array member key of obj, NULL when absent or of another type. */
const cJSON *gpa_json_obj(const cJSON *obj, const char *key);
const cJSON *gpa_json_arr(const cJSON *obj, const char *key);

const char *gpa_pod_label(const gpa_pod *v, const char *key);
const char *gpa_pod_annotation(const gpa_pod *v, const char *key);

/* The JSON array of containers of a kind, NULL when absent. */
const cJSON *gpa_pod_containers(const gpa_pod *v, gpa_podc_kind k);
/* "containers", "initContainers", "ephemeralContainers" */
const char *gpa_podc_field(gpa_podc_kind k);
/* The container's name for messages; "#<i>" (written into buf) when it has none. */
const char *gpa_podc_name(const cJSON *c, int i, char *buf, size_t cap);

/* nvidia.com/gpu, any nvidia.com/mig-*, or a name in the policy's gpu_resources. */
bool gpa_is_gpu_resource(const gpa_policy *p, const char *name);
bool gpa_is_mig_resource(const char *name);
/* A whole GPU of no pool in particular: nvidia.com/gpu, or a DRA extended resource of a
 * generic class (deviceclass.resource.kubernetes.io/gpu.nvidia.com, a genericClasses class,
 * or the extendedResourceName of one). Placement rewrites these alike, and the pools that
 * serve nvidia.com/gpu serve them. */
bool gpa_is_plain_gpu(const gpa_policy *p, const char *name);

/* Does pool p hand out this resource name? A DRA extended resource of the pool's own
 * dra.deviceClass is its devices by another name; a generic one is nvidia.com/gpu's twin.
 * The validating check and export vap's compiled copy of it both ask this. */
bool gpa_pool_serves(const gpa_policy *pol, const gpa_pool *p, const char *name);

/* A GPU quantity as a whole device count. Accepts a JSON integer or a quantity string
 * ("1", "2", "1e1"); false for fractions, negatives, or anything that is not a quantity. */
bool gpa_gpu_qty(int64_t *out, const cJSON *v);

/* One GPU resource of one container. */
typedef struct gpa_gpu_res {
    const char *name;
    const cJSON *limit;   /* NULL when only requested */
    const cJSON *request; /* NULL when not requested */
    int64_t count;        /* the limit's value (the request's without a limit); 0 when bad */
    bool bad;             /* a value that is not a whole non-negative number */
    bool mismatch;        /* a request that differs from the limit, or has no limit */
} gpa_gpu_res;

#define GPA_POD_MAX_GPU_RES 8

typedef struct gpa_ctr_gpus {
    size_t n;
    gpa_gpu_res res[GPA_POD_MAX_GPU_RES];
    bool overflow; /* more distinct GPU resource names than fit: judged as bad input */
    int64_t total;
} gpa_ctr_gpus;

void gpa_ctr_gpus_scan(gpa_ctr_gpus *out, const gpa_policy *p, const cJSON *container);

/* Scans remembered by container node for one request (the engine scans each container for
 * the GPU count, then again in two checks). Valid while the containers are not written: the
 * request's pod never is, and the engine's copy only before it is judged. */
#define GPA_SCAN_CACHE 4
typedef struct gpa_scan_cache {
    size_t n;
    struct {
        const cJSON *c;
        gpa_ctr_gpus g;
    } e[GPA_SCAN_CACHE];
} gpa_scan_cache;

/* The scan of container: from sc when it has it (sc may be NULL), else done into *tmp (and
 * remembered when there is room). */
const gpa_ctr_gpus *gpa_ctr_gpus_cached(gpa_scan_cache *sc, gpa_ctr_gpus *tmp, const gpa_policy *p,
                                        const cJSON *container);

/* a + b for non-negative counts, stuck at INT64_MAX instead of overflowing (hostile pods) */
static inline int64_t gpa_count_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* The pod's GPU count as the scheduler computes it (gpu_admission/pod_need.h: containers
 * plus native sidecars, or the largest init container need) over every GPU resource;
 * any_named (optional) tells whether any container names a GPU resource at all, valid or
 * not. */
int64_t gpa_pod_gpu_count(const gpa_pod *v, const gpa_policy *p, bool *any_named);
/* The same with scans taken from / kept in sc (may be NULL). */
int64_t gpa_pod_gpu_count_cached(const gpa_pod *v, const gpa_policy *p, bool *any_named,
                                 gpa_scan_cache *sc);

#endif
