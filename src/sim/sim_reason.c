/*
 * sim_reason.c - why an unplaced pod did not fit, worded as kube-scheduler words it: every
 * node is put under the furthest check it fails (node affinity, taints, the resource offered,
 * its size, cpu, memory, pods, the GPUs left, pod anti-affinity, pod affinity), the counts
 * read "0/N nodes are available: 4 Insufficient cpu, 16 node(s) didn't match Pod's node
 * affinity/selector", and the pod's cause is the furthest check any node reached.
 *
 * Runs only for pods the packer could not place, after it gave up; reads the packed state
 * and changes nothing but the pod's cause and detail.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "sim_internal.h"

/* The first check node n fails for pod template ti now, static or not. */
static gpa_sim_cause node_cause(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t,
                                const gpa_sim_aff_view *v, bool in_class)
{
    if (!in_class) return gpa_sim_static_cause(s, n, t);
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    const gpa_sim_node *nd = &s->nodes[n];
    if (g->cpu_milli >= 0 && nd->cpu + t->cpu > g->cpu_milli) return GPA_SIM_C_CPU;
    if (g->mem >= 0 && nd->mem + t->mem > g->mem) return GPA_SIM_C_MEM;
    if (g->max_pods >= 0 && nd->pods + 1 > g->max_pods) return GPA_SIM_C_PODS;
    gpa_sim_opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
    if (!gpa_sim_options(s, n, t, opts, GPA_SIM_MAX_GPUS_PER_NODE + 1)) return GPA_SIM_C_GPU_ROOM;
    if (v && !gpa_sim_view_anti_ok(v, s, n)) return GPA_SIM_C_ANTI;
    if (v && !gpa_sim_view_aff_ok(v, s, t, n, v->aff_free)) return GPA_SIM_C_AFF;
    return GPA_SIM_C_NONE; /* room after all: the gang's domain choice left it out */
}

static const char *phrase(gpa_sim_cause c, const gpa_sim_tmpl *t, char *buf, size_t cap)
{
    switch (c) {
    case GPA_SIM_C_AFFINITY:
        return "node(s) didn't match Pod's node affinity/selector";
    case GPA_SIM_C_TAINT:
        return "node(s) had untolerated taint";
    case GPA_SIM_C_XRES:
        snprintf(buf, cap, "Insufficient %s (no node offers it)", t->xres[0]);
        return buf;
    case GPA_SIM_C_GPU_KIND:
        snprintf(buf, cap, "Insufficient %s (not offered)", t->gres);
        return buf;
    case GPA_SIM_C_ISLAND_SIZE:
        snprintf(buf, cap, "node(s) with NVLink islands smaller than %lld GPUs", t->gcount);
        return buf;
    case GPA_SIM_C_GPU_SIZE:
        snprintf(buf, cap, "Insufficient %s (fewer than %lld on the node)", t->gres, t->gcount);
        return buf;
    case GPA_SIM_C_CPU:
        return "Insufficient cpu";
    case GPA_SIM_C_MEM:
        return "Insufficient memory";
    case GPA_SIM_C_PODS:
        return "Too many pods";
    case GPA_SIM_C_GPU_ROOM:
        snprintf(buf, cap, "Insufficient %s", t->gres ? t->gres : "GPU");
        return buf;
    case GPA_SIM_C_ANTI:
        return "node(s) didn't match pod anti-affinity rules (another tenant's pods there)";
    case GPA_SIM_C_AFF:
        return "node(s) didn't match pod affinity rules (outside the NVLink domain its group "
               "uses)";
    default:
        return "node(s) had room, left for the rest of its gang's domain";
    }
}

const char *gpa_sim_cause_name(const gpa_sim *s, size_t pi, char *buf, size_t cap)
{
    const gpa_sim_pod *p = &s->pods[pi];
    const gpa_sim_tmpl *t = &s->tmpls[p->tmpl];
    switch ((gpa_sim_cause)p->cause) {
    case GPA_SIM_C_AFFINITY:
        return "node affinity/selector";
    case GPA_SIM_C_TAINT:
        return "untolerated taint";
    case GPA_SIM_C_XRES:
        snprintf(buf, cap, "Insufficient %s", t->xres[0]);
        return buf;
    case GPA_SIM_C_GPU_KIND:
    case GPA_SIM_C_GPU_SIZE:
    case GPA_SIM_C_GPU_ROOM:
        snprintf(buf, cap, "Insufficient %s", t->gres ? t->gres : "GPU");
        return buf;
    case GPA_SIM_C_ISLAND_SIZE:
    case GPA_SIM_C_AFF:
        return "island too small"; /* NVLink island or pod-affinity domain */
    case GPA_SIM_C_CPU:
        return "Insufficient cpu";
    case GPA_SIM_C_MEM:
        return "Insufficient memory";
    case GPA_SIM_C_PODS:
        return "Too many pods";
    case GPA_SIM_C_ANTI:
        return "tenant conflict";
    case GPA_SIM_C_NONE:
        return p->reason ? p->reason : "no room";
    default:
        return "no room";
    }
}

void gpa_sim_explain(gpa_sim *s, size_t pi)
{
    gpa_sim_pod *pod = &s->pods[pi];
    /* the copy before it failed in the same state: the same nodes answer the same way */
    if (s->explained_pod >= 0 && s->pods[s->explained_pod].tmpl == pod->tmpl &&
        s->explained_seq == s->apply_seq && (size_t)s->explained_pod != pi) {
        const gpa_sim_pod *prev = &s->pods[s->explained_pod];
        char *d = prev->reason_detail ? strdup(prev->reason_detail) : NULL;
        if (d) {
            free(pod->reason_detail);
            pod->reason_detail = d;
        }
        pod->cause = prev->cause;
        s->explained_pod = (long)pi;
        return;
    }
    size_t ti = pod->tmpl;
    const gpa_sim_tmpl *t = &s->tmpls[ti];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    unsigned char *in_class = calloc(s->inv->n_nodes + 1, 1);
    if (!in_class) return; /* out of memory: the packer's reason and detail stay */
    for (size_t i = 0; i < sg->n_nodes; i++)
        in_class[sg->nodes[i]] = 1;
    gpa_sim_aff_view v;
    gpa_error err = {0};
    bool have_view = sg->n_nodes && gpa_sim_view_build(&v, s, ti, &err) == GPA_OK;
    size_t count[GPA_SIM_N_CAUSES] = {0};
    /* nodes outside the class fail a static check, the same one for every pod of the class:
     * counted once per class, so a fleet of distinct unplaced pods costs a pass over the
     * nodes per class, not per pod */
    if (!s->explain_static && s->n_sigs) {
        s->explain_static = calloc(s->n_sigs * GPA_SIM_N_CAUSES, sizeof *s->explain_static);
        s->explain_static_done = calloc(s->n_sigs, 1);
    }
    size_t *row = s->explain_static && s->explain_static_done && t->sig < s->n_sigs
                      ? &s->explain_static[t->sig * GPA_SIM_N_CAUSES]
                      : NULL;
    if (row && !s->explain_static_done[t->sig]) {
        for (size_t n = 0; n < s->inv->n_nodes; n++)
            if (!in_class[n]) row[gpa_sim_static_cause(s, n, t)]++;
        s->explain_static_done[t->sig] = 1;
    }
    for (int c = 0; row && c < GPA_SIM_N_CAUSES; c++)
        count[c] = row[c];
    if (row)
        for (size_t i = 0; i < sg->n_nodes; i++)
            count[node_cause(s, sg->nodes[i], t, have_view ? &v : NULL, true)]++;
    else
        for (size_t n = 0; n < s->inv->n_nodes; n++)
            count[node_cause(s, n, t, have_view ? &v : NULL, in_class[n])]++;
    if (sg->n_nodes) gpa_sim_view_free(&v, s, t);
    free(in_class);
    int furthest = GPA_SIM_C_NONE;
    for (int c = GPA_SIM_N_CAUSES - 1; c > GPA_SIM_C_NONE && furthest == GPA_SIM_C_NONE; c--)
        if (count[c]) furthest = c;
    pod->cause = (unsigned char)furthest;
    /* the scheduler's message: most nodes first, the furthest check first among equals */
    gpa_sb b = {0};
    char buf[300];
    gpa_sb_printf(&b, "0/%zu nodes are available", s->inv->n_nodes);
    bool done[GPA_SIM_N_CAUSES] = {false};
    for (const char *sep = ": ";; sep = ", ") {
        int pick = -1;
        for (int c = GPA_SIM_N_CAUSES - 1; c >= 0; c--)
            if (count[c] && !done[c] && (pick < 0 || count[c] > count[pick])) pick = c;
        if (pick < 0) break;
        done[pick] = true;
        gpa_sb_printf(&b, "%s%zu %s", sep, count[pick],
                      phrase((gpa_sim_cause)pick, t, buf, sizeof buf));
    }
    char *d = gpa_sb_done(&b);
    if (d) {
        free(pod->reason_detail);
        pod->reason_detail = d;
    }
    s->explained_pod = (long)pi;
    s->explained_seq = s->apply_seq;
}
