/*
 * output_tiles.c - the report's detail tiles: one SVG per GPU in use, its memory slices as
 * columns, each MIG instance over the slices it holds, time-slice replicas as stacked bands,
 * whole-card pods over the card, coloured by tenant. Reads the packed state only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

void gpa_sim_html_esc(gpa_sb *b, const char *s)
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

unsigned gpa_sim_tenant_hue(const char *t)
{
    unsigned h = 2166136261u;
    for (; t && *t; t++)
        h = (h ^ (unsigned char)*t) * 16777619u;
    return t ? h % 360 : 0;
}

void gpa_sim_report_tile(gpa_sb *b, const gpa_sim *s, size_t n, int k)
{
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    const gpa_sim_gpu *u = &s->nodes[n].gpus[k];
    char nb[600];
    int slots = g->model && (g->mode == GPA_SIM_MIG_AUTO || g->mode == GPA_SIM_MIG_FIXED)
                    ? g->model->mem_slots
                    : 8;
    const double W = 320.0, H = 150.0, top = 16.0;
    double sw = W / slots;
    gpa_sb_printf(b, "<div class=\"gpu\"><svg class=\"gpu-svg\" data-node=\"");
    gpa_sim_html_esc(b, s->inv->nodes[n].name);
    gpa_sb_printf(b,
                  "\" data-gpu=\"%d\" width=\"%.0f\" height=\"%.0f\" "
                  "xmlns=\"http://www.w3.org/2000/svg\"><text x=\"2\" y=\"11\">",
                  k, W + 2, H + top + 2);
    gpa_sim_html_esc(b, s->inv->nodes[n].name);
    gpa_sb_printf(b, " GPU %d (%s)</text>", k, g->model ? g->model->name : "GPU");
    for (int i = 0; i < slots; i++)
        gpa_sb_printf(b,
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
            gpa_sb_printf(b,
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
        gpa_sb_printf(b, "<g class=\"instance\" data-tenant=\"");
        gpa_sim_html_esc(b, who);
        gpa_sb_printf(b, "\"><title>");
        gpa_sim_html_esc(b, gpa_sim_pod_name(s, (size_t)sl->pod, nb, sizeof nb));
        gpa_sb_printf(b,
                      "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                      "fill=\"hsl(%u,60%%,70%%)\" stroke=\"#333\"/>",
                      x + 1, y + 1, w - 2, h - 2, gpa_sim_tenant_hue(who));
        gpa_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(%d %.1f %.1f)\">", x + 4,
                      y + 11, sl->p && w < 100 ? 90 : 0, x + 4, y + 11);
        if (sl->p) {
            gpa_sim_html_esc(b, sl->p->name);
            gpa_sb_printf(b, " ");
        }
        gpa_sim_html_esc(b, gpa_sim_pod_name(s, (size_t)sl->pod, nb, sizeof nb));
        gpa_sb_printf(b, "</text></g>");
    }
    gpa_sb_printf(b, "</svg></div>\n");
}

double gpa_sim_gpu_fill(const gpa_sim *s, size_t n, int k)
{
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    const gpa_sim_gpu *u = &s->nodes[n].gpus[k];
    if (!u->n_pods) return 0;
    if (g->mode == GPA_SIM_TS) return (double)u->n_pods / (g->replicas ? g->replicas : 1);
    if (g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) return 1;
    int held = 0;
    for (size_t j = 0; j < u->n_slots; j++)
        if (u->slots[j].pod >= 0 && u->slots[j].p) held += u->slots[j].p->mem_slots;
    return (double)held / g->model->mem_slots;
}
