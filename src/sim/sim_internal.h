/*
 * sim_internal.h - the simulator's data model, shared by its files only.
 */
#ifndef GPA_SIM_INTERNAL_H
#define GPA_SIM_INTERNAL_H

#include "sim.h"

typedef struct gpa_sim_kv {
    char *key, *value;
} gpa_sim_kv;

typedef struct gpa_sim_taint {
    char *key, *value, *effect;
} gpa_sim_taint;

typedef enum {
    GPA_SIM_WHOLE,     /* plain device plugin: nvidia.com/gpu, one per card */
    GPA_SIM_MIG_AUTO,  /* MIG, each GPU's layout chosen as pods arrive */
    GPA_SIM_MIG_FIXED, /* MIG, every GPU carries the same fixed layout */
    GPA_SIM_TS,        /* time-slicing: `replicas` shares of each card */
} gpa_sim_mode;

typedef struct gpa_sim_group {
    char *name;
    long long count;
    int gpus;
    const gpa_mig_model *model; /* NULL: not a catalog card (no MIG) */
    int64_t gpu_mem;            /* bytes per card; 0 unknown */
    gpa_sim_mode mode;
    const gpa_mig_profile *fixed[GPA_MIG_MAX_INSTANCES];
    size_t n_fixed;
    char *mig_config; /* the mig.config label value */
    int replicas;
    char *ts_resource;
    int island;             /* GPUs per NVLink domain, 0 none */
    int64_t cpu_milli, mem; /* allocatable per node, -1 unlimited */
    long long max_pods;     /* -1 unlimited */
    gpa_sim_kv *labels;
    size_t n_labels;
    gpa_sim_taint *taints;
    size_t n_taints;
} gpa_sim_group;

typedef struct gpa_sim_node_def {
    char *name;
    size_t group;
    gpa_sim_kv *labels; /* the group's labels plus the generated ones */
    size_t n_labels;
} gpa_sim_node_def;

struct gpa_sim_inventory {
    gpa_sim_group *groups;
    size_t n_groups;
    gpa_sim_node_def *nodes;
    size_t n_nodes;
    size_t total_gpus;
};

const char *gpa_sim_label(const gpa_sim_kv *l, size_t n, const char *key);

/* ---- a run ---- */

typedef enum { GK_NONE, GK_WHOLE, GK_MIG, GK_TS } gpa_sim_gkind;

typedef struct gpa_sim_term {
    const cJSON *selector; /* labelSelector */
    const cJSON *namespaces;
    const cJSON *ns_selector; /* namespaceSelector; {} = every namespace */
    const char *topology_key;
    int key_id; /* index into the run's topology keys */
} gpa_sim_term;

/* One distinct pod spec; the queued pods are copies of templates. */
typedef struct gpa_sim_tmpl {
    cJSON *obj; /* the pod as stored after the mutating webhook, owned */
    char *name; /* ns/name, or ns/generateName */
    const char *ns;
    const cJSON *labels;
    char *tenant;
    char *pool; /* the engine's chosen pool, NULL when none */
    int64_t cpu, mem;
    char **xres; /* other extended resources asked (no node offers them) */
    size_t n_xres;
    char *gres; /* the GPU resource asked, NULL when none */
    long long gcount;
    int64_t gpu_mem_req; /* gpu-admission.io/gpu-memory, -1 when absent */
    gpa_sim_term *aff, *anti;
    size_t n_aff, n_anti;
    size_t sig;           /* static-feasibility class */
    size_t *placed_nodes; /* one entry per placed copy */
    size_t n_placed, cap_placed;
    bool cap_placed_seen; /* listed in the run's placed_tmpls */
    long long size_key;
    char *key; /* the pod minus its name: identical pods share one template */
    uint64_t hash;
} gpa_sim_tmpl;

typedef struct gpa_sim_pod {
    size_t tmpl;
    char *name;     /* NULL: the template's name, with "-copy" when copy >= 0 */
    long long copy; /* -1: the template's only pod (name as is) */
    long node;      /* -1 unplaced */
    const char *reason;
    char *reason_detail;
    int gpu_first; /* first GPU it got, -1 none */
    int64_t mem_alloc;
} gpa_sim_pod;

typedef struct gpa_sim_slot {
    const gpa_mig_profile *p; /* MIG instance profile, NULL for a replica / whole */
    int start;
    long pod; /* -1 free (fixed layouts) */
} gpa_sim_slot;

typedef struct gpa_sim_gpu {
    gpa_sim_slot *slots;
    size_t n_slots, cap_slots;
    size_t n_pods;    /* slots holding a pod */
    unsigned can_add; /* MIG auto: bit i = profile i still fits */
} gpa_sim_gpu;

typedef struct gpa_sim_node {
    gpa_sim_gpu *gpus;
    int64_t cpu, mem;
    long long pods;
    size_t used_gpus;
} gpa_sim_node;

typedef struct gpa_sim_sig {
    char *key;
    size_t *nodes; /* nodes passing the static checks */
    size_t n_nodes;
    char *why; /* when none passes: the first static reason met */
} gpa_sim_sig;

typedef struct gpa_sim_topo {
    char *key;
    int *vid; /* per node: value id, -1 when the node lacks the label */
    int n_values;
} gpa_sim_topo;

typedef struct gpa_sim_denied {
    char *pod, *message;
} gpa_sim_denied;

struct gpa_sim {
    const gpa_sim_inventory *inv;
    gpa_sim_tmpl *tmpls;
    size_t n_tmpls, cap_tmpls;
    gpa_sim_pod *pods;
    size_t n_pods, cap_pods;
    gpa_sim_denied *denied;
    size_t n_denied, cap_denied;
    size_t skipped;
    size_t *tbl; /* open-addressing table of template index + 1, by hash */
    size_t tbl_cap;
    size_t *placed_tmpls; /* templates that ever had a pod placed, in first-placement order */
    size_t n_placed_tmpls, cap_placed_tmpls;
    gpa_sim_node *nodes;
    gpa_sim_sig *sigs;
    size_t n_sigs;
    gpa_sim_topo *topos;
    size_t n_topos;
    bool ran;
};

/* Queues `copies` pods like gpa_sim_add_pod, recording the engine's pool. */
int gpa_sim_add_pod_pool(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                         const char *pool, gpa_error *err);

/* GPU memory bytes of one card of node n's group (0 unknown). */
int64_t gpa_sim_card_mem(const gpa_sim *s, size_t node);

#endif
