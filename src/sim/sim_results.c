/*
 * sim_results.c - the figures after a run: totals, GPU memory asked and given, and each
 * pod's name, node and reason. Read-only over the packed state.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

int64_t gpa_sim_mem_requested(const gpa_sim *s, size_t i)
{
    const gpa_sim_pod *p = &s->pods[i];
    const gpa_sim_tmpl *t = &s->tmpls[p->tmpl];
    if (!t->gres) return 0;
    return t->gpu_mem_req >= 0 ? t->gpu_mem_req : p->mem_alloc;
}

int64_t gpa_sim_card_mem(const gpa_sim *s, size_t node)
{
    return gpa_sim_grp(s, node)->gpu_mem;
}

void gpa_sim_get_totals(gpa_sim_totals *out, const gpa_sim *s)
{
    memset(out, 0, sizeof *out);
    /* pods everywhere: a denied workload template stands for its replicas */
    for (size_t i = 0; i < s->n_denied; i++)
        out->denied += (size_t)s->denied[i].pods;
    out->pods = s->n_pods + out->denied;
    out->skipped = s->skipped;
    out->skipped_claims = s->skipped_claims;
    out->gpus_total = s->inv->total_gpus;
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_pod *p = &s->pods[i];
        const gpa_sim_tmpl *t = &s->tmpls[p->tmpl];
        size_t asked = t->gres ? (size_t)t->gcount : 0;
        if (p->node >= 0) {
            out->placed++;
            /* the baseline counts placed pods only: counting the unplaced ones too credited
             * the policy with cards for pods it never fitted */
            out->whole_gpu_baseline += asked;
            out->gpu_share += gpa_sim_pod_share(s, i);
            out->mem_allocated += p->mem_alloc;
            /* a pod without a GPU resource got no GPU (its only option is n = 0) */
            out->mem_requested += gpa_sim_mem_requested(s, i);
        } else {
            out->unplaced++;
            out->unplaced_gpus += asked;
        }
        if (s->whole_placed) {
            bool w = s->whole_placed[i];
            out->whole_placed += w;
            out->only_shared += p->node >= 0 && !w;
            out->only_whole += p->node < 0 && w;
        }
    }
    out->gpus_used = gpa_sim_gpus_used(s);
    out->whole_done = s->whole_placed != NULL;
    out->whole_used = s->whole_used;
}

double gpa_sim_pod_share(const gpa_sim *s, size_t i)
{
    const gpa_sim_pod *p = &s->pods[i];
    const gpa_sim_tmpl *t = &s->tmpls[p->tmpl];
    if (p->node < 0 || !t->gres) return 0;
    const gpa_sim_group *g = gpa_sim_grp(s, (size_t)p->node);
    const gpa_mig_profile *prof;
    switch (gpa_sim_offer(s, (size_t)p->node, t, &prof)) {
    case GK_MIG:
        return (double)t->gcount * prof->mem_slots / g->model->mem_slots;
    case GK_TS:
        return (double)t->gcount / g->replicas;
    case GK_WHOLE:
        return (double)t->gcount;
    default:
        return 0;
    }
}

size_t gpa_sim_pod_count(const gpa_sim *s)
{
    return s->n_pods;
}

const char *gpa_sim_pod_name(const gpa_sim *s, size_t i, char *buf, size_t cap)
{
    const gpa_sim_pod *p = &s->pods[i];
    if (p->name) return p->name;
    const char *base = s->tmpls[p->tmpl].name;
    if (p->copy < 0) return base;
    snprintf(buf, cap, "%s-%lld", base, p->copy);
    return buf;
}

const char *gpa_sim_pod_node(const gpa_sim *s, size_t i)
{
    return s->pods[i].node >= 0 ? s->inv->nodes[s->pods[i].node].name : NULL;
}

const char *gpa_sim_pod_reason(const gpa_sim *s, size_t i)
{
    return s->pods[i].node >= 0 ? NULL : s->pods[i].reason;
}
