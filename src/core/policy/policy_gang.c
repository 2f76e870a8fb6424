/*
 * policy_gang.c - the domain a gang is placed in (policy_gang.h).
 *
 * The domain is chosen from the pool's declared sizes only, never from what is free: pod
 * affinity binds the gang to one domain of that label, and the scheduler picks which one.
 */
#include "policy/policy_gang.h"

#include "gpu_admission/strbuf.h"

const char *gpa_gang_domain(const gpa_topology *t, int64_t gang_gpus, int64_t *gpus)
{
    const char *widest = t->island_label;
    int64_t widest_gpus = t->island_gpus;
    if (t->n_levels) {
        widest = t->levels[t->n_levels - 1].label;
        widest_gpus = t->levels[t->n_levels - 1].gpus;
    }
    *gpus = widest_gpus;
    if (gang_gpus <= 0) return widest;
    if (gang_gpus <= t->island_gpus) {
        *gpus = t->island_gpus;
        return t->island_label;
    }
    for (size_t i = 0; i < t->n_levels; i++)
        if (gang_gpus <= t->levels[i].gpus) {
            *gpus = t->levels[i].gpus;
            return t->levels[i].label;
        }
    return NULL;
}

const char *gpa_gang_src_name(gpa_gang_src s)
{
    switch (s) {
    case GPA_GANG_SRC_OURS:
        return "annotation " GPA_ANN_GANG_SIZE;
    case GPA_GANG_SRC_KUEUE:
        return "annotation kueue.x-k8s.io/pod-group-total-count";
    case GPA_GANG_SRC_LWS:
        return "annotation leaderworkerset.sigs.k8s.io/size";
    case GPA_GANG_SRC_PET_NNODES:
        return "env PET_NNODES";
    case GPA_GANG_SRC_TF_CONFIG:
        return "env TF_CONFIG";
    default:
        return "";
    }
}

void gpa_gang_sum_add(gpa_gang_sum *s, int64_t pods, int64_t pod_gpus)
{
    /* a CPU-only replica is not in the gang's GPUs nor in its pods: the gang-size annotation
     * and the domain count the pods that share NVLink, not the operator's world */
    if (pods <= 0 || pod_gpus <= 0) return;
    int64_t g;
    if (__builtin_mul_overflow(pods, pod_gpus, &g) ||
        __builtin_add_overflow(s->gpus, g, &s->gpus) ||
        __builtin_add_overflow(s->pods, pods, &s->pods)) {
        s->overflow = true;
        s->gpus = INT64_MAX;
    }
}

bool gpa_gang_parse(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    int64_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9') return false;
        v = v * 10 + (*c - '0');
        if (v > GPA_GANG_MAX_PODS) return false;
    }
    if (v < 1) return false;
    *out = v;
    return true;
}

void gpa_gang_warnings(gpa_sb *o, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *a = &p->pools[i];
        const gpa_topology *t = &a->topology;
        if (!a->has_topology || !t->group_labels_set || t->gpus_per_node <= 0 ||
            t->mode != GPA_TOPO_REQUIRED || gpa_gang_levels(t))
            continue;
        gpa_sb_printf(o,
                      "%s:%d:%d: warning: pool %s gives grouped pods (groupLabels) required pod "
                      "affinity to one %s, but declares no islandGpus: where an island is one "
                      "%d-GPU node (HGX) a gang of two full pods can never be placed; set "
                      "topology.islandGpus and levels (docs/policy.md, Topology levels)\n",
                      a->pos.file, a->pos.line, a->pos.col, a->name, t->island_label,
                      t->gpus_per_node);
    }
}
