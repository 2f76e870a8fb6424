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
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    gpa_sb b = {0};
    char nb[600];
    gpa_sb_printf(&b, "pods: %zu (placed %zu, unplaced %zu, denied %zu, skipped objects %zu)\n",
                  t.pods, t.placed, t.unplaced, t.denied, t.skipped);
    gpa_sb_printf(&b, "GPUs: %zu used of %zu; whole-GPU baseline %zu", t.gpus_used, t.gpus_total,
                  t.whole_gpu_baseline);
    if (t.whole_gpu_baseline > t.gpus_used)
        gpa_sb_printf(&b, " (%zu saved, %.1fx)", t.whole_gpu_baseline - t.gpus_used,
                      t.gpus_used ? (double)t.whole_gpu_baseline / (double)t.gpus_used : 0.0);
    gpa_sb_printf(&b, "\nGPU memory: %.1f GB requested, %.1f GB allocated\n",
                  gpa_sim_gb(t.mem_requested), gpa_sim_gb(t.mem_allocated));
    size_t na = 0;
    gpa_sim_agg *a = gpa_sim_group_aggs(s, &na);
    gpa_sb_printf(&b, "\nnode groups:\n");
    for (size_t i = 0; a && i < na; i++)
        gpa_sb_printf(&b,
                      "  %-24s %zu nodes, %zu GPUs, %zu used, %zu pods placed; GPU memory %.1f GB "
                      "requested, %.1f GB allocated\n",
                      a[i].name, a[i].nodes, a[i].gpus, a[i].used, a[i].placed,
                      gpa_sim_gb(a[i].mem_req), gpa_sim_gb(a[i].mem_alloc));
    free(a);
    a = gpa_sim_pool_aggs(s, &na);
    gpa_sb_printf(&b, "pools:\n");
    for (size_t i = 0; a && i < na; i++)
        gpa_sb_printf(&b,
                      "  %-24s %zu pods: %zu placed, %zu unplaced; baseline %zu GPUs; %.1f GB "
                      "requested, %.1f GB allocated\n",
                      a[i].name, a[i].pods, a[i].placed, a[i].unplaced, a[i].baseline,
                      gpa_sim_gb(a[i].mem_req), gpa_sim_gb(a[i].mem_alloc));
    free(a);
    if (s->n_denied) gpa_sb_printf(&b, "\ndenied:\n");
    for (size_t i = 0; i < s->n_denied; i++)
        gpa_sb_printf(&b, "  %s: %s\n", s->denied[i].pod, s->denied[i].message);
    if (t.unplaced) gpa_sb_printf(&b, "\nunplaced:\n");
    for (size_t i = 0; i < s->n_pods; i++)
        if (s->pods[i].node < 0)
            gpa_sb_printf(&b, "  %s: %s (%s)\n", gpa_sim_pod_name(s, i, nb, sizeof nb),
                          s->pods[i].reason ? s->pods[i].reason : "no room",
                          s->pods[i].reason_detail ? s->pods[i].reason_detail : "");
    return gpa_sb_done(&b);
}
