/*
 * output_report.c - `simulate --report`: the self-contained HTML page. Reads the packed
 * state only; no external resources, so it opens offline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

static void html_esc(gpa_sb *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            gpa_sb_printf(b, "&lt;");
            break;
        case '>':
            gpa_sb_printf(b, "&gt;");
            break;
        case '&':
            gpa_sb_printf(b, "&amp;");
            break;
        case '"':
            gpa_sb_printf(b, "&quot;");
            break;
        case '\'':
            gpa_sb_printf(b, "&#39;");
            break;
        default:
            gpa_sb_printf(b, "%c", *s);
        }
    }
}

static unsigned tenant_hue(const char *t)
{
    unsigned h = 2166136261u;
    for (; t && *t; t++)
        h = (h ^ (unsigned char)*t) * 16777619u;
    return t ? h % 360 : 0;
}

char *gpa_sim_report_html(const gpa_sim *s)
{
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    gpa_sb b = {0};
    char nb[600];
    gpa_sb_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      "<title>gpu-admission simulate</title>\n<style>"
                      "body{font-family:sans-serif;margin:1em}"
                      ".gpu{display:inline-block;margin:4px;vertical-align:top}"
                      "text{font-size:9px;font-family:sans-serif}"
                      "</style></head><body>\n<h1>GPU capacity simulation</h1>\n");
    gpa_sb_printf(&b,
                  "<p id=\"summary\">%zu pods: %zu placed, %zu unplaced, %zu denied. GPU memory "
                  "%.1f GB requested, %.1f GB allocated.</p>\n",
                  t.pods, t.placed, t.unplaced, t.denied, gpa_sim_gb(t.mem_requested),
                  gpa_sim_gb(t.mem_allocated));
    gpa_sb_printf(&b,
                  "<p id=\"figures\">GPUs: %zu used of %zu; whole-GPU baseline of the placed "
                  "pods %zu; unplaced pods ask %zu more. GPU allocation ratio %.1f%% (%.2f of "
                  "%zu).",
                  t.gpus_used, t.gpus_total, t.whole_gpu_baseline, t.unplaced_gpus,
                  100.0 * gpa_sim_ratio(t.gpu_share, t.gpus_total), t.gpu_share, t.gpus_total);
    if (t.whole_done)
        gpa_sb_printf(&b,
                      " Whole GPUs only (simulated): %zu of %zu pods placed on %zu GPUs; %zu "
                      "placed only thanks to MIG/sharing, %zu only on whole GPUs.",
                      t.whole_placed, t.placed + t.unplaced, t.whole_used, t.only_shared,
                      t.only_whole);
    gpa_sb_printf(&b, "</p>\n");
    /* the bar: used vs baseline, scaled to the larger */
    size_t mx = t.whole_gpu_baseline > t.gpus_used ? t.whole_gpu_baseline : t.gpus_used;
    if (!mx) mx = 1;
    double wu = 400.0 * (double)t.gpus_used / (double)mx;
    double wb = 400.0 * (double)t.whole_gpu_baseline / (double)mx;
    gpa_sb_printf(
        &b,
        "<svg id=\"bar\" width=\"620\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\">"
        "<rect class=\"used\" x=\"150\" y=\"5\" width=\"%.1f\" height=\"20\" "
        "fill=\"#2a7\"/><text x=\"0\" y=\"19\" style=\"font-size:12px\">GPUs used: %zu</text>"
        "<rect class=\"baseline\" x=\"150\" y=\"33\" width=\"%.1f\" height=\"20\" "
        "fill=\"#999\"/><text x=\"0\" y=\"47\" style=\"font-size:12px\">whole-GPU baseline: "
        "%zu</text></svg>\n",
        wu, t.gpus_used, wb, t.whole_gpu_baseline);
    gpa_sb_printf(&b, "<h2>GPUs in use</h2>\n<div id=\"gpus\">\n");
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const gpa_sim_node *nd = &s->nodes[n];
        const gpa_sim_group *g = gpa_sim_grp(s, n);
        for (int k = 0; k < g->gpus; k++) {
            const gpa_sim_gpu *u = &nd->gpus[k];
            if (!u->n_pods) continue;
            int slots = g->model && (g->mode == GPA_SIM_MIG_AUTO || g->mode == GPA_SIM_MIG_FIXED)
                            ? g->model->mem_slots
                            : 8;
            const double W = 320.0, H = 150.0, top = 16.0;
            double sw = W / slots;
            gpa_sb_printf(&b, "<div class=\"gpu\"><svg class=\"gpu-svg\" data-node=\"");
            html_esc(&b, s->inv->nodes[n].name);
            gpa_sb_printf(&b,
                          "\" data-gpu=\"%d\" width=\"%.0f\" height=\"%.0f\" "
                          "xmlns=\"http://www.w3.org/2000/svg\"><text x=\"2\" y=\"11\">",
                          k, W + 2, H + top + 2);
            html_esc(&b, s->inv->nodes[n].name);
            gpa_sb_printf(&b, " GPU %d (%s)</text>", k, g->model ? g->model->name : "GPU");
            for (int i = 0; i < slots; i++)
                gpa_sb_printf(&b,
                              "<rect class=\"slot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                              "height=\"%.1f\" fill=\"#f4f4f4\" stroke=\"#ccc\"/>",
                              1 + i * sw, top, sw, H);
            size_t shown = 0;
            for (size_t j = 0; j < u->n_slots; j++) {
                const gpa_sim_slot *sl = &u->slots[j];
                double x, w, y = top, h = H;
                if (sl->p) {
                    x = 1 + sl->start * sw;
                    w = sl->p->mem_slots * sw;
                } else if (g->mode == GPA_SIM_TS) {
                    /* a replica: a horizontal band of the card, shares stacked */
                    x = 1;
                    w = W;
                    h = H / g->replicas;
                    y = top + (double)shown * h;
                } else {
                    x = 1;
                    w = W;
                }
                if (sl->pod < 0) {
                    gpa_sb_printf(
                        &b,
                        "<rect class=\"free-instance\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"%.1f\" fill=\"none\" stroke=\"#888\" "
                        "stroke-dasharray=\"3\"/>",
                        x + 1, y + 1, w - 2, h - 2);
                    continue;
                }
                shown++;
                const gpa_sim_tmpl *tm = &s->tmpls[s->pods[sl->pod].tmpl];
                /* the tenant label the engine writes on shared pools; elsewhere pods carry
                 * none, and the namespace stands in (tenants are sets of namespaces) */
                const char *who = tm->tenant ? tm->tenant : tm->ns;
                gpa_sb_printf(&b, "<g class=\"instance\" data-tenant=\"");
                html_esc(&b, who);
                gpa_sb_printf(&b, "\"><title>");
                html_esc(&b, gpa_sim_pod_name(s, (size_t)sl->pod, nb, sizeof nb));
                gpa_sb_printf(&b,
                              "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                              "fill=\"hsl(%u,60%%,70%%)\" stroke=\"#333\"/>",
                              x + 1, y + 1, w - 2, h - 2, tenant_hue(who));
                gpa_sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(%d %.1f %.1f)\">",
                              x + 4, y + 11, sl->p && w < 100 ? 90 : 0, x + 4, y + 11);
                if (sl->p) {
                    html_esc(&b, sl->p->name);
                    gpa_sb_printf(&b, " ");
                }
                html_esc(&b, gpa_sim_pod_name(s, (size_t)sl->pod, nb, sizeof nb));
                gpa_sb_printf(&b, "</text></g>");
            }
            gpa_sb_printf(&b, "</svg></div>\n");
        }
    }
    gpa_sb_printf(&b, "</div>\n</body></html>\n");
    return gpa_sb_done(&b);
}
