/*
 * sim.h - the capacity simulator behind `gpu-admission simulate`: an inventory of GPU nodes,
 * the pods the real engine admitted, and a deterministic packing of those pods onto the nodes
 * under what the scheduler and the device plugins enforce (node affinity, taints, resources,
 * required pod (anti-)affinity, NVLink islands, MIG placement geometry, time-slice replicas).
 *
 * Pure: bytes in, strings out, no I/O. docs/simulate.md describes the model and its limits.
 */
#ifndef GPA_SIM_H
#define GPA_SIM_H

#include <cjson/cJSON.h>
#include "gpu_admission/common.h"
#include "gpu_admission/mig.h"
#include "gpu_admission/policy.h"

/* Bounds that keep a hostile or mistaken input from running without end. */
#define GPA_SIM_MAX_NODES         100000
#define GPA_SIM_MAX_GPUS_PER_NODE 64
#define GPA_SIM_MAX_REPLICAS      1024 /* time-slice replicas per GPU */
#define GPA_SIM_MAX_PODS          1000000

typedef struct gpa_sim_inventory gpa_sim_inventory;

/* Reads a GPUInventory (YAML or JSON) or a `kubectl get nodes -o json|yaml` List. Errors are
 * GPA_EPARSE / GPA_EINVAL with "source:line:col: text" in err. */
int gpa_sim_inventory_read(gpa_sim_inventory **out, const char *buf, size_t len, const char *source,
                           gpa_error *err);
void gpa_sim_inventory_free(gpa_sim_inventory *inv);
size_t gpa_sim_inventory_nodes(const gpa_sim_inventory *inv);
size_t gpa_sim_inventory_gpus(const gpa_sim_inventory *inv);

typedef struct gpa_sim gpa_sim;

/* A run over inv (which must outlive it). */
int gpa_sim_new(gpa_sim **out, const gpa_sim_inventory *inv, gpa_error *err);
void gpa_sim_free(gpa_sim *s);

/* Runs obj (a Pod or a workload; an AdmissionReview's request.object) through the real engine
 * exactly as the API server would (mutating review, patch applied, validating review): an
 * allowed pod is queued for packing `replicas` times (a workload's templates each their own
 * count), a denied one recorded with the engine's message. origin names the input in
 * messages ("pods.yaml:12"). Objects that are neither pods nor workloads are skipped and
 * counted. GPA_ERANGE when the pods would exceed GPA_SIM_MAX_PODS. */
int gpa_sim_admit(gpa_sim *s, const gpa_policy *p, const cJSON *obj, const char *origin,
                  gpa_error *err);

/* Queues an already-admitted pod (the object as stored) `copies` times; name is its label in
 * the output. For tests and for callers that judged the pod themselves. */
int gpa_sim_add_pod(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                    gpa_error *err);
int gpa_sim_add_denied(gpa_sim *s, const char *pod, const char *message, gpa_error *err);

/* Gangs (pods requiring each other's topology domain through the engine's pod affinity) placed
 * whole or not at all, as Kueue's topology-aware scheduling and gang scheduling admit them;
 * off (pod by pod, as kube-scheduler alone) unless set. Before gpa_sim_run; --compare runs and
 * the whole-GPU comparison inherit it. */
void gpa_sim_set_gangs_whole(gpa_sim *s, bool whole);

typedef enum {
    GPA_SIM_BFD,      /* best-fit decreasing (the documented heuristic) */
    GPA_SIM_EXACT,    /* exhaustive search for the fewest GPUs: tiny inputs only (tests) */
    GPA_SIM_BFD_SCAN, /* the same packing, every node of a class scanned per pod: the index's
                         reference (tests hold the two equal) */
} gpa_sim_method;

/* Places every queued pod. GPA_EINVAL for GPA_SIM_EXACT beyond its size limit. */
int gpa_sim_run(gpa_sim *s, gpa_sim_method method, gpa_error *err);

/* Figures after gpa_sim_run. */
typedef struct gpa_sim_totals {
    size_t pods, placed, unplaced, denied, skipped;
    size_t skipped_claims; /* of skipped: DRA ResourceClaims and ResourceClaimTemplates */
    /* whole_gpu_baseline: the cards the placed pods would take from the plain device plugin
     * (one per GPU asked), so it and gpus_used count the same pods; unplaced_gpus: the GPUs
     * the unplaced pods ask, on their own */
    size_t gpus_total, gpus_used, whole_gpu_baseline, unplaced_gpus;
    double gpu_share;                     /* GPUs' worth the placed pods hold (a MIG instance its
                                             memory slices' fraction, a replica 1/replicas) */
    int64_t mem_requested, mem_allocated; /* GPU memory, bytes */
    /* after gpa_sim_compare_whole: the same pods packed on whole GPUs only */
    bool whole_done;
    size_t whole_placed, whole_used, only_shared, only_whole;
} gpa_sim_totals;
void gpa_sim_get_totals(gpa_sim_totals *out, const gpa_sim *s);

/* The comparison beside the baseline, simulated rather than counted: the same admitted pods,
 * in the same order, packed by the same heuristic on the same nodes with every GPU offered
 * whole (nvidia.com/gpu; no MIG, no time-slicing), each pod asking one card per GPU unit it
 * asked (a MIG instance or a replica is one card) and keeping its other constraints. After
 * gpa_sim_run; the figures land in gpa_sim_get_totals and every output. */
int gpa_sim_compare_whole(gpa_sim *s, gpa_error *err);

/* `simulate --compare`: the run's admitted pods (denied ones counted as denied) packed again,
 * same heuristic, on inv: another inventory or a variant of the run's. After gpa_sim_run. */
int gpa_sim_run_on(gpa_sim_totals *out, const gpa_sim *s, const gpa_sim_inventory *inv,
                   gpa_error *err);
/* Variants of an inventory, sharing its strings (free them with
 * gpa_sim_inventory_variant_free, never gpa_sim_inventory_free, before the base): every MIG
 * group (a catalog model, not time-sliced) set to mig (auto, none, all-balanced or
 * all-<profile>); or each MIG group of run s laid out as --suggest-mig proposes (its per-node
 * plan when that takes fewer GPUs, else its one layout for every GPU). */
int gpa_sim_inventory_variant_mig(gpa_sim_inventory **out, const gpa_sim_inventory *base,
                                  const char *mig, gpa_error *err);
int gpa_sim_inventory_variant_suggested(gpa_sim_inventory **out, const gpa_sim *s, gpa_error *err);
void gpa_sim_inventory_variant_free(gpa_sim_inventory *v);

/* The answer as JSON (schema in docs/simulate.md); caller cJSON_Deletes. NULL on ENOMEM. */
cJSON *gpa_sim_result_json(const gpa_sim *s);
/* Human-readable answer, at most GPA_SIM_TEXT_LIST unplaced pods listed; caller frees. */
#define GPA_SIM_TEXT_LIST 20
char *gpa_sim_result_text(const gpa_sim *s);
/* The same listing at most max_listed unplaced pods (SIZE_MAX: all), the rest counted. */
char *gpa_sim_result_text_n(const gpa_sim *s, size_t max_listed);
/* Self-contained HTML page: an SVG per used GPU and the used-vs-baseline bar; caller frees. */
char *gpa_sim_report_html(const gpa_sim *s);
/* One --compare run: its label and its figures (gpa_sim_run_on). */
typedef struct gpa_sim_compared {
    const char *name;
    gpa_sim_totals t;
} gpa_sim_compared;
/* The same page with the --compare runs side by side (v[0] the run itself) under the bar. */
char *gpa_sim_report_html_compared(const gpa_sim *s, const gpa_sim_compared *v, size_t n);
/* A mig-parted config file: per MIG node group, the layout that fits the group's placed MIG
 * pods in the fewest GPUs; caller frees. */
char *gpa_sim_suggest_mig(const gpa_sim *s);

/* The node a pod was placed on (index into the run's pod list, in queue order), NULL when
 * unplaced; for tests and the e2e comparison. */
size_t gpa_sim_pod_count(const gpa_sim *s);
/* The pod's name (a copy's index appended: "ns/web-3"), written into buf when it is built. */
const char *gpa_sim_pod_name(const gpa_sim *s, size_t i, char *buf, size_t cap);
const char *gpa_sim_pod_node(const gpa_sim *s, size_t i);
const char *gpa_sim_pod_reason(const gpa_sim *s, size_t i);

#endif
