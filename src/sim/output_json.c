/*
 * output_json.c - `simulate -o json`: the answer as one JSON object (schema in
 * docs/simulate.md). Reads the packed state only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

cJSON *gpa_sim_result_json(const gpa_sim *s)
{
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    cJSON *r = cJSON_CreateObject();
    if (!r) return NULL;
    char nb[600];
    /* first: a pool no node can take is what explains the rest of the answer */
    cJSON *nonodes = cJSON_AddArrayToObject(r, "poolsWithoutNodes");
    size_t nn = 0;
    gpa_sim_nonode *nx = gpa_sim_pools_without_nodes(s, &nn);
    for (size_t i = 0; i < nn; i++) {
        cJSON *o = cJSON_CreateObject();
        gpa_sb line = {0};
        gpa_sim_nonode_line(&line, &nx[i]);
        char *msg = gpa_sb_done(&line);
        cJSON_AddStringToObject(o, "pool", nx[i].pool);
        cJSON_AddStringToObject(o, "requirement", nx[i].requirement);
        if (nx[i].label) cJSON_AddStringToObject(o, "label", nx[i].label);
        if (nx[i].closest) {
            cJSON_AddStringToObject(o, "closestValue", nx[i].closest);
            cJSON_AddNumberToObject(o, "closestValueNodes", (double)nx[i].closest_nodes);
        }
        cJSON_AddStringToObject(o, "message", msg ? msg : "");
        free(msg);
        cJSON_AddItemToArray(nonodes, o);
    }
    gpa_sim_nonodes_free(nx, nn);
    cJSON_AddNumberToObject(r, "pods", (double)t.pods);
    cJSON_AddNumberToObject(r, "placed", (double)t.placed);
    cJSON_AddNumberToObject(r, "skipped", (double)t.skipped);
    cJSON_AddNumberToObject(r, "skippedClaims", (double)t.skipped_claims);
    cJSON *den = cJSON_AddArrayToObject(r, "denied");
    for (size_t i = 0; i < s->n_denied; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pod", s->denied[i].pod);
        cJSON_AddStringToObject(o, "message", s->denied[i].message);
        cJSON_AddNumberToObject(o, "pods", (double)s->denied[i].pods);
        cJSON_AddItemToArray(den, o);
    }
    cJSON *unp = cJSON_AddArrayToObject(r, "unplaced");
    cJSON *pl = cJSON_AddArrayToObject(r, "placements");
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_pod *p = &s->pods[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pod", gpa_sim_pod_name(s, i, nb, sizeof nb));
        if (p->node < 0) {
            char cb[300];
            cJSON_AddStringToObject(o, "reason", p->reason ? p->reason : "no room");
            cJSON_AddStringToObject(o, "cause", gpa_sim_cause_name(s, i, cb, sizeof cb));
            if (p->reason_detail) cJSON_AddStringToObject(o, "detail", p->reason_detail);
            cJSON_AddItemToArray(unp, o);
        } else {
            cJSON_AddStringToObject(o, "node", s->inv->nodes[p->node].name);
            if (p->gpu_first >= 0) cJSON_AddNumberToObject(o, "gpu", p->gpu_first);
            cJSON_AddItemToArray(pl, o);
        }
    }
    size_t nc = 0;
    gpa_sim_cause_agg *ca = gpa_sim_cause_aggs(s, &nc);
    cJSON *bc = cJSON_AddArrayToObject(r, "unplacedByCause");
    for (size_t i = 0; i < nc; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "cause", ca[i].name);
        cJSON_AddNumberToObject(o, "pods", (double)ca[i].pods);
        cJSON_AddNumberToObject(o, "gpus", (double)ca[i].gpus);
        cJSON_AddItemToArray(bc, o);
    }
    gpa_sim_cause_aggs_free(ca, nc);
    cJSON *g = cJSON_AddObjectToObject(r, "gpus");
    cJSON_AddNumberToObject(g, "total", (double)t.gpus_total);
    cJSON_AddNumberToObject(g, "used", (double)t.gpus_used);
    cJSON_AddNumberToObject(g, "wholeGpuBaseline", (double)t.whole_gpu_baseline);
    cJSON_AddNumberToObject(g, "saved", (double)t.whole_gpu_baseline - (double)t.gpus_used);
    cJSON_AddNumberToObject(g, "unplacedGpus", (double)t.unplaced_gpus);
    cJSON_AddNumberToObject(g, "allocatedShare", gpa_sim_round3(t.gpu_share));
    cJSON_AddNumberToObject(g, "allocationRatio", gpa_sim_ratio(t.gpu_share, t.gpus_total));
    if (t.whole_done) {
        cJSON *w = cJSON_AddObjectToObject(r, "wholeGpuOnly");
        cJSON_AddNumberToObject(w, "placed", (double)t.whole_placed);
        cJSON_AddNumberToObject(w, "unplaced", (double)(t.placed + t.unplaced - t.whole_placed));
        cJSON_AddNumberToObject(w, "used", (double)t.whole_used);
        cJSON_AddNumberToObject(w, "placedOnlyWithSharing", (double)t.only_shared);
        cJSON_AddNumberToObject(w, "placedOnlyWhole", (double)t.only_whole);
    }
    cJSON *m = cJSON_AddObjectToObject(r, "memory");
    cJSON_AddNumberToObject(m, "requestedBytes", (double)t.mem_requested);
    cJSON_AddNumberToObject(m, "allocatedBytes", (double)t.mem_allocated);
    size_t na = 0;
    gpa_sim_agg *a = gpa_sim_group_aggs(s, &na);
    cJSON *ga = cJSON_AddArrayToObject(r, "groups");
    for (size_t i = 0; a && i < na; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", a[i].name);
        cJSON_AddNumberToObject(o, "nodes", (double)a[i].nodes);
        cJSON_AddNumberToObject(o, "gpus", (double)a[i].gpus);
        cJSON_AddNumberToObject(o, "used", (double)a[i].used);
        cJSON_AddNumberToObject(o, "placed", (double)a[i].placed);
        cJSON_AddNumberToObject(o, "wholeGpuBaseline", (double)a[i].baseline);
        cJSON_AddNumberToObject(o, "allocatedShare", gpa_sim_round3(a[i].share));
        cJSON_AddNumberToObject(o, "idleOnUsed", gpa_sim_round3((double)a[i].used - a[i].share));
        cJSON_AddNumberToObject(o, "allocationRatio", gpa_sim_ratio(a[i].share, a[i].gpus));
        cJSON_AddNumberToObject(o, "memoryRequestedBytes", (double)a[i].mem_req);
        cJSON_AddNumberToObject(o, "memoryAllocatedBytes", (double)a[i].mem_alloc);
        cJSON_AddItemToArray(ga, o);
    }
    free(a);
    a = gpa_sim_pool_aggs(s, &na);
    cJSON *pa = cJSON_AddArrayToObject(r, "pools");
    for (size_t i = 0; a && i < na; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pool", a[i].name);
        cJSON_AddNumberToObject(o, "pods", (double)a[i].pods);
        cJSON_AddNumberToObject(o, "placed", (double)a[i].placed);
        cJSON_AddNumberToObject(o, "unplaced", (double)a[i].unplaced);
        cJSON_AddNumberToObject(o, "denied", (double)a[i].denied);
        cJSON_AddNumberToObject(o, "wholeGpuBaseline", (double)a[i].baseline);
        cJSON_AddNumberToObject(o, "unplacedGpus", (double)a[i].unplaced_gpus);
        cJSON_AddNumberToObject(o, "gpus", (double)a[i].gpus);
        cJSON_AddNumberToObject(o, "allocatedShare", gpa_sim_round3(a[i].share));
        cJSON_AddNumberToObject(o, "allocationRatio", gpa_sim_ratio(a[i].share, a[i].gpus));
        if (t.whole_done)
            cJSON_AddNumberToObject(o, "wholeGpuOnlyPlaced", (double)a[i].whole_placed);
        cJSON_AddNumberToObject(o, "memoryRequestedBytes", (double)a[i].mem_req);
        cJSON_AddNumberToObject(o, "memoryAllocatedBytes", (double)a[i].mem_alloc);
        cJSON_AddItemToArray(pa, o);
    }
    free(a);
    cJSON *gangs = cJSON_AddArrayToObject(r, "gangs");
    size_t ng = 0;
    gpa_sim_gang_agg *gg = gpa_sim_gang_aggs(s, &ng);
    for (size_t i = 0; i < ng; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "job", gg[i].job ? gg[i].job : "");
        cJSON_AddStringToObject(o, "topologyKey", gg[i].topology_key);
        cJSON_AddNumberToObject(o, "pods", (double)gg[i].pods);
        cJSON_AddNumberToObject(o, "placed", (double)gg[i].placed);
        cJSON_AddNumberToObject(o, "unplaced", (double)gg[i].unplaced);
        cJSON_AddStringToObject(o, "gang", gpa_sim_gang_state(&gg[i]));
        cJSON *dv = cJSON_AddArrayToObject(o, "domains");
        for (size_t k = 0; k < gg[i].n_domains; k++)
            cJSON_AddItemToArray(dv, cJSON_CreateString(gg[i].domains[k]));
        if (gg[i].reason) {
            cJSON_AddStringToObject(o, "reason", gg[i].reason);
            cJSON_AddStringToObject(o, "detail", gg[i].detail ? gg[i].detail : "");
        }
        cJSON_AddItemToArray(gangs, o);
    }
    gpa_sim_gang_aggs_free(gg, ng);
    cJSON *nodes = cJSON_AddArrayToObject(r, "nodes");
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const gpa_sim_node *nd = &s->nodes[n];
        if (!nd->pods) continue; /* only nodes in use: an inventory may hold thousands */
        const gpa_sim_group *gr = gpa_sim_grp(s, n);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", s->inv->nodes[n].name);
        cJSON_AddStringToObject(o, "group", gr->name);
        cJSON_AddNumberToObject(o, "pods", (double)nd->pods);
        cJSON_AddNumberToObject(o, "gpusUsed", (double)nd->used_gpus);
        cJSON *gl = cJSON_AddArrayToObject(o, "gpus");
        for (int k = 0; k < gr->gpus; k++) {
            const gpa_sim_gpu *u = &nd->gpus[k];
            if (!u->n_pods) continue;
            cJSON *go = cJSON_CreateObject();
            cJSON_AddNumberToObject(go, "index", k);
            cJSON *il = cJSON_AddArrayToObject(go, "instances");
            for (size_t j = 0; j < u->n_slots; j++) {
                const gpa_sim_slot *sl = &u->slots[j];
                cJSON *io = cJSON_CreateObject();
                if (sl->p) {
                    cJSON_AddStringToObject(io, "profile", sl->p->name);
                    cJSON_AddNumberToObject(io, "start", sl->start);
                    cJSON_AddNumberToObject(io, "size", sl->p->mem_slots);
                } else {
                    cJSON_AddStringToObject(io, "profile",
                                            gr->mode == GPA_SIM_TS ? "replica" : "whole");
                }
                if (sl->pod >= 0) {
                    cJSON_AddStringToObject(io, "pod",
                                            gpa_sim_pod_name(s, (size_t)sl->pod, nb, sizeof nb));
                    const char *ten = s->tmpls[s->pods[sl->pod].tmpl].tenant;
                    if (ten) cJSON_AddStringToObject(io, "tenant", ten);
                }
                cJSON_AddItemToArray(il, io);
            }
            cJSON_AddItemToArray(gl, go);
        }
        cJSON_AddItemToArray(nodes, o);
    }
    return r;
}
