/*
 * output_text.c - `simulate`'s default answer, for a person. Reads the packed state only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

char *gpa_sim_result_text(const gpa_sim *s)
{
    return gpa_sim_result_text_n(s, GPA_SIM_TEXT_LIST);
}

static void pct(gpa_sb *b, double share, size_t gpus)
{
    gpa_sb_printf(b, "%.1f%% (%.2f of %zu)", 100.0 * gpa_sim_ratio(share, gpus), share, gpus);
}

char *gpa_sim_result_text_n(const gpa_sim *s, size_t max_listed)
{
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    gpa_sb b = {0};
    char nb[600];
    size_t nn = 0;
    gpa_sim_nonode *nonodes = gpa_sim_pools_without_nodes(s, &nn);
    for (size_t i = 0; i < nn; i++) {
        gpa_sim_nonode_line(&b, &nonodes[i]);
        gpa_sb_printf(&b, "\n");
    }
    gpa_sim_nonodes_free(nonodes, nn);
    gpa_sb_printf(&b, "pods: %zu (placed %zu, unplaced %zu, denied %zu, skipped objects %zu)\n",
                  t.pods, t.placed, t.unplaced, t.denied, t.skipped);
    if (t.skipped_claims)
        gpa_sb_printf(&b,
                      "claims: %zu DRA claim(s) skipped: simulate places pods on GPUs, not "
                      "claims on DRA devices\n",
                      t.skipped_claims);
    gpa_sb_printf(&b, "GPUs: %zu used of %zu; whole-GPU baseline %zu", t.gpus_used, t.gpus_total,
                  t.whole_gpu_baseline);
    if (t.whole_gpu_baseline > t.gpus_used)
        gpa_sb_printf(&b, " (%zu saved, %.1fx)", t.whole_gpu_baseline - t.gpus_used,
                      t.gpus_used ? (double)t.whole_gpu_baseline / (double)t.gpus_used : 0.0);
    if (t.unplaced_gpus) gpa_sb_printf(&b, "; unplaced pods ask %zu GPU(s) more", t.unplaced_gpus);
    gpa_sb_printf(&b, "\nGPU allocation ratio: ");
    pct(&b, t.gpu_share, t.gpus_total);
    if (t.whole_done)
        gpa_sb_printf(&b,
                      "\nwhole GPUs only (simulated): %zu of %zu pods placed on %zu GPUs; %zu "
                      "placed only thanks to MIG/sharing, %zu only on whole GPUs",
                      t.whole_placed, t.placed + t.unplaced, t.whole_used, t.only_shared,
                      t.only_whole);
    gpa_sb_printf(&b, "\nGPU memory: %.1f GB requested, %.1f GB allocated\n",
                  gpa_sim_gb(t.mem_requested), gpa_sim_gb(t.mem_allocated));
    size_t na = 0;
    gpa_sim_agg *a = gpa_sim_group_aggs(s, &na);
    gpa_sb_printf(&b, "\nnode groups:\n");
    for (size_t i = 0; a && i < na; i++) {
        gpa_sb_printf(&b,
                      "  %-24s %zu nodes, %zu GPUs, %zu used (%.2f idle), %zu pods placed; "
                      "baseline %zu; ratio ",
                      a[i].name, a[i].nodes, a[i].gpus, a[i].used, (double)a[i].used - a[i].share,
                      a[i].placed, a[i].baseline);
        pct(&b, a[i].share, a[i].gpus);
        gpa_sb_printf(&b, "; GPU memory %.1f GB requested, %.1f GB allocated\n",
                      gpa_sim_gb(a[i].mem_req), gpa_sim_gb(a[i].mem_alloc));
    }
    free(a);
    a = gpa_sim_pool_aggs(s, &na);
    gpa_sb_printf(&b, "pools:\n");
    for (size_t i = 0; a && i < na; i++) {
        gpa_sb_printf(&b, "  %-24s %zu pods: %zu placed, %zu unplaced", a[i].name, a[i].pods,
                      a[i].placed, a[i].unplaced);
        if (t.whole_done) gpa_sb_printf(&b, " (%zu on whole GPUs only)", a[i].whole_placed);
        if (a[i].denied) gpa_sb_printf(&b, ", %zu denied", a[i].denied);
        gpa_sb_printf(&b, "; baseline %zu GPUs", a[i].baseline);
        if (a[i].unplaced_gpus) gpa_sb_printf(&b, ", unplaced ask %zu", a[i].unplaced_gpus);
        gpa_sb_printf(&b, "; ratio ");
        pct(&b, a[i].share, a[i].gpus);
        gpa_sb_printf(&b, "; %.1f GB requested, %.1f GB allocated\n", gpa_sim_gb(a[i].mem_req),
                      gpa_sim_gb(a[i].mem_alloc));
    }
    free(a);
    if (s->n_denied) gpa_sb_printf(&b, "\ndenied:\n");
    for (size_t i = 0; i < s->n_denied; i++)
        if (s->denied[i].pods > 1)
            gpa_sb_printf(&b, "  %s (%lld pods): %s\n", s->denied[i].pod, s->denied[i].pods,
                          s->denied[i].message);
        else
            gpa_sb_printf(&b, "  %s: %s\n", s->denied[i].pod, s->denied[i].message);
    size_t nc = 0;
    gpa_sim_cause_agg *ca = gpa_sim_cause_aggs(s, &nc);
    if (nc) gpa_sb_printf(&b, "\nunplaced by cause:\n");
    for (size_t i = 0; i < nc; i++)
        gpa_sb_printf(&b, "  %-40s %zu pod(s), %zu GPU(s) asked\n", ca[i].name, ca[i].pods,
                      ca[i].gpus);
    gpa_sim_cause_aggs_free(ca, nc);
    if (t.unplaced) gpa_sb_printf(&b, "\nunplaced:\n");
    size_t listed = 0;
    char cb[300];
    for (size_t i = 0; i < s->n_pods; i++) {
        if (s->pods[i].node >= 0 || listed++ >= max_listed) continue;
        const char *reason = s->pods[i].reason ? s->pods[i].reason : "no room";
        const char *cause = gpa_sim_cause_name(s, i, cb, sizeof cb);
        gpa_sb_printf(&b, "  %s: %s", gpa_sim_pod_name(s, i, nb, sizeof nb), reason);
        if (strcmp(cause, reason) != 0) gpa_sb_printf(&b, ", %s", cause);
        gpa_sb_printf(&b, " (%s)\n", s->pods[i].reason_detail ? s->pods[i].reason_detail : "");
    }
    if (listed > max_listed)
        gpa_sb_printf(&b, "  ... and %zu more (--all lists every one)\n", listed - max_listed);
    return gpa_sb_done(&b);
}
