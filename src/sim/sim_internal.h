/*
 * sim_internal.h - the simulator's data model, shared by its files only: the inventory
 * (inventory.c fills it), a run's templates, pods, GPU slots, static-feasibility classes and
 * topology keys, and the functions one simulator file offers the others.
 *
 * Never included outside src/sim; nothing here is part of the public sim.h.
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

#define GPA_SIM_MAX_LEVELS 8

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
    /* topology levels above the node (racks, blocks): every `nodes` consecutive nodes share
     * one value of `label`, narrowest first (docs/simulate.md) */
    struct {
        char *label;
        long long nodes;
    } levels[GPA_SIM_MAX_LEVELS];
    size_t n_levels;
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
    uint64_t label_bloom; /* sim_affinity.c: a bit per label key=value, bit 63 once computed */
} gpa_sim_tmpl;

/* Why a node cannot take a pod, in the order the checks run (kube-scheduler's filters, then
 * the device plugin's GPUs, then pod (anti-)affinity): an unplaced pod is explained by the
 * furthest check any node reached, so a pod short of cpu on the only nodes of its model is
 * short of cpu, not "matches no node". */
typedef enum {
    GPA_SIM_C_NONE,
    GPA_SIM_C_AFFINITY,    /* nodeSelector / required node affinity */
    GPA_SIM_C_TAINT,       /* a NoSchedule/NoExecute taint not tolerated */
    GPA_SIM_C_XRES,        /* an extended resource no node offers */
    GPA_SIM_C_GPU_KIND,    /* the node does not offer the pod's GPU resource */
    GPA_SIM_C_ISLAND_SIZE, /* the node's NVLink islands are smaller than the pod */
    GPA_SIM_C_GPU_SIZE,    /* more GPUs than the node has */
    GPA_SIM_C_CPU,         /* cpu: more than allocatable, or than is left */
    GPA_SIM_C_MEM,
    GPA_SIM_C_PODS,
    GPA_SIM_C_GPU_ROOM, /* the node's GPUs (slices, replicas) are taken */
    GPA_SIM_C_ANTI,     /* required pod anti-affinity, either way (tenant conflict) */
    GPA_SIM_C_AFF,      /* required pod affinity: outside the domain its group uses */
    GPA_SIM_N_CAUSES
} gpa_sim_cause;

typedef struct gpa_sim_pod {
    size_t tmpl;
    char *name;     /* NULL: the template's name, with "-copy" when copy >= 0 */
    long long copy; /* -1: the template's only pod (name as is) */
    long node;      /* -1 unplaced */
    const char *reason;
    char *reason_detail;
    int gpu_first; /* first GPU it got, -1 none */
    int64_t mem_alloc;
    unsigned char cause; /* unplaced: a gpa_sim_cause, GPA_SIM_C_NONE until explained */
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
    char *pool;     /* the pool the engine chose before refusing, NULL when none */
    long long pods; /* copies this entry stands for (a workload's template: its replicas) */
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
    size_t skipped_claims; /* of skipped: DRA claims (simulate places pods, not claims) */
    size_t *tbl;           /* open-addressing table of template index + 1, by hash */
    size_t tbl_cap;
    size_t *placed_tmpls; /* templates that ever had a pod placed, in first-placement order */
    size_t n_placed_tmpls, cap_placed_tmpls;
    gpa_sim_node *nodes;
    gpa_sim_sig *sigs;
    size_t n_sigs;
    gpa_sim_topo *topos;
    size_t n_topos;
    bool ran;
    bool gangs_whole;            /* gpa_sim_set_gangs_whole */
    unsigned char *whole_placed; /* gpa_sim_compare_whole: per pod, placed on whole GPUs */
    size_t whole_used;
    size_t apply_seq; /* bumped by every gpa_sim_apply / gpa_sim_unapply */
    /* the last explanation (sim_reason.c): reused for the next unplaced copy of the same
     * template while nothing was placed in between */
    long explained_pod;
    size_t explained_seq;
    /* per class, the static causes of the nodes outside it (n_sigs x GPA_SIM_N_CAUSES; a
     * class's row is filled the first time one of its pods is explained) */
    size_t *explain_static;
    unsigned char *explain_static_done;
};

/* One way to put a pod on a node: the GPUs each unit of its demand goes to, and how good a
 * fit it is, compared entry by entry, lower first: the empty GPUs it opens, 1 when the node
 * holds no pod yet, the room it leaves (the tightest fit is smallest), the GPU index. */
typedef struct gpa_sim_opt {
    int n;
    int gpu[GPA_SIM_MAX_GPUS_PER_NODE];
    long long score[4];
} gpa_sim_opt;

/* Per placement attempt: which topology values each term allows or forbids. aff_ok[a] and
 * anti[k] are arrays over the value ids of the term's / key's topology key (gpa_sim_topo). */
typedef struct gpa_sim_aff_view {
    bool aff_free;          /* no placed pod matches any affinity term: self-match allowed */
    unsigned char **aff_ok; /* per affinity term: value id -> 1 when a matching pod is there */
    unsigned char **anti;   /* per topology key: value id -> 1 when forbidden */
    bool any_anti;
} gpa_sim_aff_view;

/* The group node n belongs to. Inline: the packer asks it for every node it scores. */
static inline const gpa_sim_group *gpa_sim_grp(const gpa_sim *s, size_t n)
{
    return &s->inv->groups[s->inv->nodes[n].group];
}

/* A GPU no pod holds any part of, so a whole-GPU pod may take it. */
static inline bool gpa_sim_gpu_whole_free(const gpa_sim_gpu *u)
{
    return u->n_pods == 0;
}

/* ---- functions one simulator file offers the others, by file; a file calls only files
 * listed below its own (sim.c explains the order) ---- */

/* sim_results.c */
/* GPU memory placed pod i asked for: its gpu-memory annotation, else what it got. */
int64_t gpa_sim_mem_requested(const gpa_sim *s, size_t i);
/* GPU memory bytes of one card of node n's group (0 unknown). */
int64_t gpa_sim_card_mem(const gpa_sim *s, size_t node);
/* GPUs' worth placed pod i holds: whole cards, a MIG instance's share of the memory slices,
 * a time-slice replica 1/replicas; 0 for an unplaced pod or one without a GPU. */
double gpa_sim_pod_share(const gpa_sim *s, size_t i);

/* sim_reason.c */
/* Sets unplaced pod pi's cause and its scheduler-style detail ("0/N nodes are available:
 * ..."), counting for every node the furthest check it fails. */
void gpa_sim_explain(gpa_sim *s, size_t pi);
/* The cause's name for the summary: "Insufficient cpu", "Insufficient nvidia.com/gpu",
 * "tenant conflict", ...; written into buf when it names a resource. */
const char *gpa_sim_cause_name(const gpa_sim *s, size_t pi, char *buf, size_t cap);

/* sim_gang.c */
/* One pod of a gang placed so far, and how, so a failed gang can be taken back off. */
typedef struct gpa_sim_gang_member {
    size_t pod;
    gpa_sim_opt opt;
} gpa_sim_gang_member;
/* The gang template t belongs to (namespace, topology key and selector of a pod affinity term
 * matching its own labels), NULL when none or on ENOMEM; caller frees. */
char *gpa_sim_gang_key(const gpa_sim_tmpl *t);
/* Pod `failed` of a gang of gang_size pods found no node: takes the n_placed placed ones back
 * off (reverse order, gpa_sim_unapply) and gives them its reason and cause, its detail
 * saying the gang goes whole or not at all. GPA_ENOMEM leaves the run unusable. */
int gpa_sim_gang_fail(gpa_sim *s, const gpa_sim_gang_member *placed, size_t n_placed, size_t failed,
                      size_t gang_size);
/* Pod pi gets pod from's reason, cause and detail (the rest of a failed gang). */
int gpa_sim_gang_copy_reason(gpa_sim *s, size_t pi, size_t from);

/* sim_shape.c */
/* Per node, its shape: the first group whose empty nodes pack exactly like its own (same
 * GPUs, layout, sharing, island, pod count), so empty nodes of one shape in one feasibility
 * class are interchangeable; caller frees, NULL on ENOMEM. */
size_t *gpa_sim_shapes(const gpa_sim *s);

/* sim_slots.c */
/* The ways template t fits node n's GPUs (capacity only, not cpu/memory): up to cap, each
 * scored; 0 when none. */
int gpa_sim_options(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t, gpa_sim_opt *out, int cap);
/* Whether node n has the cpu, memory and pod count left for t. */
bool gpa_sim_resources_fit(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t);
/* Places pod pi on node n as o says; GPA_ENOMEM leaves the run unusable. */
int gpa_sim_apply(gpa_sim *s, size_t pi, size_t n, const gpa_sim_opt *o);
/* Undoes the last gpa_sim_apply of pod pi exactly (the exact solver's backtracking). */
void gpa_sim_unapply(gpa_sim *s, size_t pi, const gpa_sim_opt *o);
/* GPUs holding at least one pod, over all nodes. */
size_t gpa_sim_gpus_used(const gpa_sim *s);

/* sim_affinity.c */
/* The id of a topology key (node label) in s->topos, adding it on first use; < 0 on error. */
int gpa_sim_topo_id(gpa_sim *s, const char *key, gpa_error *err);
/* Builds the view for template ti against the pods placed so far; free it with
 * gpa_sim_view_free even when this fails. */
int gpa_sim_view_build(gpa_sim_aff_view *v, gpa_sim *s, size_t ti, gpa_error *err);
void gpa_sim_view_free(gpa_sim_aff_view *v, const gpa_sim *s, const gpa_sim_tmpl *t);
/* Brings template ti's view up to date after one more pod of ti itself was placed on node n
 * (the packer keeps one view over consecutive pods of a template instead of rebuilding it
 * from every placed pod each time); the same view gpa_sim_view_build would build then. */
int gpa_sim_view_add_own(gpa_sim_aff_view *v, gpa_sim *s, size_t ti, size_t n, gpa_error *err);
/* Node n satisfies t's affinity terms (self_ok: any node with the topology keys will do). */
bool gpa_sim_view_aff_ok(const gpa_sim_aff_view *v, const gpa_sim *s, const gpa_sim_tmpl *t,
                         size_t n, bool self_ok);
/* Node n is in no topology domain the view forbids. */
bool gpa_sim_view_anti_ok(const gpa_sim_aff_view *v, const gpa_sim *s, size_t n);

/* sim_feasible.c */
/* One node selector requirement ({key, operator, values}) against node n's labels. */
bool gpa_sim_node_expr_holds(const gpa_sim *s, size_t n, const cJSON *expr);
/* A Kubernetes label selector against a labels object; a nil selector matches nothing. */
bool gpa_sim_selector_matches(const cJSON *sel, const cJSON *labels);
/* What node n offers for t's GPU resource: the demand kind, or GK_NONE; *prof the MIG
 * profile for GK_MIG. */
gpa_sim_gkind gpa_sim_offer(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t,
                            const gpa_mig_profile **prof);
/* The first static check node n fails for t (GPA_SIM_C_AFFINITY .. GPA_SIM_C_MEM), or
 * GPA_SIM_C_NONE when it passes them all. */
gpa_sim_cause gpa_sim_static_cause(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t);
/* Sets t->sig to t's static-feasibility class, computing the class's nodes when new. */
int gpa_sim_classify(gpa_sim *s, gpa_sim_tmpl *t, gpa_error *err);

/* sim_intake.c */
/* Queues `copies` pods like gpa_sim_add_pod, recording the engine's pool. */
int gpa_sim_add_pod_pool(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                         const char *pool, gpa_error *err);

/* sim_intake.c: a denied pod (or template of `pods` copies) with the engine's pool. */
int gpa_sim_add_denied_pool(gpa_sim *s, const char *pod, const char *message, const char *pool,
                            long long pods, gpa_error *err);

/* sim_util.c */
/* Grows array p (capacity *cap elements of elem bytes) to hold need; NULL on ENOMEM (p is
 * then untouched and still owned by the caller). */
void *gpa_sim_grow(void *p, size_t *cap, size_t need, size_t elem);
/* v is one of the strings in the JSON array values. */
bool gpa_sim_str_in(const cJSON *values, const char *v);
/* Node n's label key, NULL when absent. */
const char *gpa_sim_node_label(const gpa_sim *s, size_t n, const char *key);

#endif
