/*
 * output_report.c - `simulate --report`: the self-contained HTML page a platform team decides
 * from. The figures (the same as the text and JSON), a legend, per pool and per node group
 * tables, a fleet view of one strip per node (a cell per GPU, coloured by how full it is)
 * that stays readable at thousands of nodes, the unplaced pods by cause and by run of copies
 * failing alike, the denied pods, and the per-GPU detail tiles folded away until asked for. Reads
 * the packed state only; no external resources, so it opens offline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

/* Rows of a list the page still shows whole; past them it says how many more, -o json has
 * every one. */
#define LIST_ROWS 100
/* Nodes in use whose GPUs get detail tiles; past them -o json has every placement. */
#define TILE_NODES 100

static const char *CSS =
    "body{font-family:sans-serif;margin:1em;color:#222}"
    "h2{margin:1.2em 0 .4em;font-size:1.2em}h3{margin:.8em 0 .2em;font-size:1em}"
    "table{border-collapse:collapse;margin:.3em 0}"
    "th,td{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
    "th{background:#f0f0f0;text-align:left}td.n{text-align:right}"
    ".gpu{display:inline-block;margin:4px;vertical-align:top}"
    "svg text{font-size:9px;font-family:sans-serif}"
    ".legend span{display:inline-block;margin-right:1em;font-size:13px}"
    ".sw{display:inline-block;width:14px;height:14px;border:1px solid #999;"
    "vertical-align:middle;margin-right:4px}"
    ".note{color:#555;font-size:13px}"
    ".warn{background:#fdecea;border:1px solid #d9534f;padding:.2em .8em;margin:.5em 0}"
    ".warn p{margin:.3em 0;font-weight:bold}";

/* A GPU cell's colour by fill: grey when empty, light to dark green as it fills. */
static void fill_colour(char *buf, size_t cap, double f)
{
    if (f <= 0)
        snprintf(buf, cap, "#eeeeee");
    else
        snprintf(buf, cap, "hsl(145,55%%,%.0f%%)", 82.0 - 47.0 * (f > 1 ? 1 : f));
}

static void cell(gpa_sb *b, const char *v, bool num)
{
    gpa_sb_printf(b, num ? "<td class=\"n\">" : "<td>");
    gpa_sim_html_esc(b, v);
    gpa_sb_printf(b, "</td>");
}

/* a number cell with `decimals` digits after the point, `pct`: as a percentage */
static void cellf(gpa_sb *b, int decimals, double v, bool pct)
{
    gpa_sb_printf(b, "<td class=\"n\">%.*f%s</td>", decimals, pct ? 100.0 * v : v, pct ? "%" : "");
}

static void cellz(gpa_sb *b, size_t v)
{
    gpa_sb_printf(b, "<td class=\"n\">%zu</td>", v);
}

static void head_row(gpa_sb *b, const char *const *cols)
{
    gpa_sb_printf(b, "<tr>");
    for (; *cols; cols++)
        gpa_sb_printf(b, "<th>%s</th>", *cols);
    gpa_sb_printf(b, "</tr>\n");
}

static void bar(gpa_sb *b, const gpa_sim_totals *t)
{
    size_t mx = t->whole_gpu_baseline > t->gpus_used ? t->whole_gpu_baseline : t->gpus_used;
    if (t->whole_done && t->whole_used > mx) mx = t->whole_used;
    if (!mx) mx = 1;
    int rows = t->whole_done ? 3 : 2;
    gpa_sb_printf(b,
                  "<svg id=\"bar\" width=\"700\" height=\"%d\" "
                  "xmlns=\"http://www.w3.org/2000/svg\">",
                  rows * 28 + 4);
    struct {
        const char *cls, *label, *fill;
        size_t v;
    } r[3] = {{"used", "GPUs used", "#2a7", t->gpus_used},
              {"baseline", "whole-GPU baseline", "#999", t->whole_gpu_baseline},
              {"whole", "whole GPUs only, used", "#c96", t->whole_used}};
    for (int i = 0; i < rows; i++)
        gpa_sb_printf(b,
                      "<rect class=\"%s\" x=\"200\" y=\"%d\" width=\"%.1f\" height=\"20\" "
                      "fill=\"%s\"/><text x=\"0\" y=\"%d\" style=\"font-size:12px\">%s: "
                      "%zu</text>",
                      r[i].cls, 5 + 28 * i, 450.0 * (double)r[i].v / (double)mx, r[i].fill,
                      19 + 28 * i, r[i].label, r[i].v);
    gpa_sb_printf(b, "</svg>\n");
}

static void legend(gpa_sb *b)
{
    char c[40];
    gpa_sb_printf(b, "<div id=\"legend\" class=\"legend\"><b>Legend.</b> Fleet cells, one per "
                     "GPU, by how full it is: ");
    const double fs[] = {0, 0.25, 0.5, 0.75, 1};
    const char *names[] = {"empty", "1/4", "1/2", "3/4", "full"};
    for (int i = 0; i < 5; i++) {
        fill_colour(c, sizeof c, fs[i]);
        gpa_sb_printf(b, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", c,
                      names[i]);
    }
    gpa_sb_printf(b, "<br><span class=\"note\">Full = every memory slice of a MIG GPU held, every "
                     "time-slice replica held, or a whole-card pod. Detail tiles: memory slices "
                     "as columns, a MIG instance over the slices it holds, replicas as stacked "
                     "bands, coloured by tenant (the pod's gpu-admission.io/tenant label, else "
                     "its namespace); a dashed box is a free instance of a fixed layout.</span>"
                     "</div>\n");
}

static void pools_table(gpa_sb *b, const gpa_sim *s, const gpa_sim_totals *t)
{
    size_t na = 0;
    gpa_sim_agg *a = gpa_sim_pool_aggs(s, &na);
    static const char *cols[] = {"pool",
                                 "pods",
                                 "placed",
                                 "unplaced",
                                 "denied",
                                 "placed on whole GPUs only",
                                 "whole-GPU baseline",
                                 "unplaced ask (GPUs)",
                                 "GPUs it may use",
                                 "allocation ratio",
                                 "GPU memory requested (GB)",
                                 "allocated (GB)",
                                 NULL};
    gpa_sb_printf(b, "<h2>Pools</h2>\n<table id=\"pools\">\n");
    head_row(b, cols);
    for (size_t i = 0; a && i < na; i++) {
        gpa_sb_printf(b, "<tr>");
        cell(b, a[i].name, false);
        cellz(b, a[i].pods);
        cellz(b, a[i].placed);
        cellz(b, a[i].unplaced);
        cellz(b, a[i].denied);
        if (t->whole_done)
            cellz(b, a[i].whole_placed);
        else
            cell(b, "-", true);
        cellz(b, a[i].baseline);
        cellz(b, a[i].unplaced_gpus);
        cellz(b, a[i].gpus);
        cellf(b, 1, gpa_sim_ratio(a[i].share, a[i].gpus), true);
        cellf(b, 1, gpa_sim_gb(a[i].mem_req), false);
        cellf(b, 1, gpa_sim_gb(a[i].mem_alloc), false);
        gpa_sb_printf(b, "</tr>\n");
    }
    gpa_sb_printf(b, "</table>\n");
    free(a);
}

/* Gangs by job: placed whole, where, or why not (output_gangs.c); at most LIST_ROWS. */
static void gangs_table(gpa_sb *b, const gpa_sim *s)
{
    size_t n = 0;
    gpa_sim_gang_agg *a = gpa_sim_gang_aggs(s, &n);
    if (n) {
        static const char *cols[] = {"job",  "pods",    "placed",  "unplaced",
                                     "gang", "domains", "why not", NULL};
        gpa_sb_printf(b, "<h2>Gangs by job (%zu)</h2>\n<table id=\"gangs\">\n", n);
        head_row(b, cols);
        for (size_t i = 0; i < n && i < LIST_ROWS; i++) {
            gpa_sb_printf(b, "<tr>");
            cell(b, a[i].job, false);
            cellz(b, a[i].pods);
            cellz(b, a[i].placed);
            cellz(b, a[i].unplaced);
            cell(b, gpa_sim_gang_state(&a[i]), false);
            gpa_sb_printf(b, "<td>");
            for (size_t k = 0; k < a[i].n_domains; k++) {
                gpa_sb_printf(b, "%s", k ? ", " : "");
                gpa_sim_html_esc(b, a[i].domains[k]);
            }
            if (a[i].more_domains) gpa_sb_printf(b, ", ...");
            if (a[i].n_domains) {
                gpa_sb_printf(b, " (");
                gpa_sim_html_esc(b, a[i].topology_key);
                gpa_sb_printf(b, ")");
            }
            gpa_sb_printf(b, "</td>");
            gpa_sb_printf(b, "<td>");
            if (a[i].reason) {
                gpa_sim_html_esc(b, a[i].reason);
                gpa_sb_printf(b, ": ");
                gpa_sim_html_esc(b, a[i].detail ? a[i].detail : "");
            }
            gpa_sb_printf(b, "</td></tr>\n");
        }
        gpa_sb_printf(b, "</table>\n");
        if (n > LIST_ROWS)
            gpa_sb_printf(b, "<p class=\"note\">... and %zu more (-o json lists every one).</p>\n",
                          n - LIST_ROWS);
    }
    gpa_sim_gang_aggs_free(a, n);
}

static void groups_table(gpa_sb *b, const gpa_sim *s)
{
    size_t na = 0;
    gpa_sim_agg *a = gpa_sim_group_aggs(s, &na);
    static const char *cols[] = {"node group",
                                 "nodes",
                                 "GPUs",
                                 "used",
                                 "idle on used (GPUs)",
                                 "pods placed",
                                 "whole-GPU baseline",
                                 "allocation ratio",
                                 "GPU memory requested (GB)",
                                 "allocated (GB)",
                                 NULL};
    gpa_sb_printf(b, "<h2>Node groups</h2>\n<table id=\"groups\">\n");
    head_row(b, cols);
    for (size_t i = 0; a && i < na; i++) {
        gpa_sb_printf(b, "<tr>");
        cell(b, a[i].name, false);
        cellz(b, a[i].nodes);
        cellz(b, a[i].gpus);
        cellz(b, a[i].used);
        cellf(b, 2, (double)a[i].used - a[i].share, false);
        cellz(b, a[i].placed);
        cellz(b, a[i].baseline);
        cellf(b, 1, gpa_sim_ratio(a[i].share, a[i].gpus), true);
        cellf(b, 1, gpa_sim_gb(a[i].mem_req), false);
        cellf(b, 1, gpa_sim_gb(a[i].mem_alloc), false);
        gpa_sb_printf(b, "</tr>\n");
    }
    gpa_sb_printf(b, "</table>\n");
    free(a);
}

static void unplaced_lists(gpa_sb *b, const gpa_sim *s, const gpa_sim_totals *t)
{
    gpa_sb_printf(b, "<h2>Unplaced pods (%zu)</h2>\n", t->unplaced);
    if (!t->unplaced) {
        gpa_sb_printf(b, "<p class=\"note\">Every admitted pod was placed.</p>\n");
        return;
    }
    size_t nc = 0;
    gpa_sim_cause_agg *ca = gpa_sim_cause_aggs(s, &nc);
    static const char *ccols[] = {"cause", "pods", "GPUs asked", NULL};
    gpa_sb_printf(b, "<table id=\"causes\">\n");
    head_row(b, ccols);
    for (size_t i = 0; i < nc; i++) {
        gpa_sb_printf(b, "<tr>");
        cell(b, ca[i].name, false);
        cellz(b, ca[i].pods);
        cellz(b, ca[i].gpus);
        gpa_sb_printf(b, "</tr>\n");
    }
    gpa_sb_printf(b, "</table>\n");
    gpa_sim_cause_aggs_free(ca, nc);
    /* copies of one pod failing the same way are one row: "web-0 ... web-2999 (3000 pods)" */
    static const char *cols[] = {"pods", "reason", "cause", "detail", NULL};
    gpa_sb_printf(b, "<table id=\"unplaced\">\n");
    head_row(b, cols);
    size_t rows = 0;
    char nb[600], nb2[600], cb[300];
    for (size_t i = 0; i < s->n_pods;) {
        if (s->pods[i].node >= 0) {
            i++;
            continue;
        }
        const gpa_sim_pod *p = &s->pods[i];
        size_t j = i + 1;
        while (j < s->n_pods && s->pods[j].node < 0 && s->pods[j].tmpl == p->tmpl &&
               s->pods[j].cause == p->cause && s->pods[j].reason == p->reason &&
               (s->pods[j].reason_detail == p->reason_detail ||
                (s->pods[j].reason_detail && p->reason_detail &&
                 strcmp(s->pods[j].reason_detail, p->reason_detail) == 0)))
            j++;
        if (rows++ < LIST_ROWS) {
            gpa_sb_printf(b, "<tr><td class=\"pod\" data-pods=\"%zu\">", j - i);
            gpa_sim_html_esc(b, gpa_sim_pod_name(s, i, nb, sizeof nb));
            if (j - i > 1) {
                gpa_sb_printf(b, " ... ");
                gpa_sim_html_esc(b, gpa_sim_pod_name(s, j - 1, nb2, sizeof nb2));
                gpa_sb_printf(b, " (%zu pods)", j - i);
            }
            gpa_sb_printf(b, "</td>");
            cell(b, p->reason ? p->reason : "no room", false);
            cell(b, gpa_sim_cause_name(s, i, cb, sizeof cb), false);
            cell(b, p->reason_detail ? p->reason_detail : "", false);
            gpa_sb_printf(b, "</tr>\n");
        }
        i = j;
    }
    gpa_sb_printf(b, "</table>\n");
    if (rows > LIST_ROWS)
        gpa_sb_printf(b, "<p class=\"note\">... and %zu more rows (-o json lists every pod).</p>\n",
                      rows - LIST_ROWS);
}

static void denied_list(gpa_sb *b, const gpa_sim *s)
{
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    gpa_sb_printf(b, "<h2>Denied pods (%zu)</h2>\n", t.denied);
    if (!s->n_denied) return;
    static const char *cols[] = {"pod", "pods", "the webhook's message", NULL};
    gpa_sb_printf(b, "<table id=\"denied\">\n");
    head_row(b, cols);
    for (size_t i = 0; i < s->n_denied && i < LIST_ROWS; i++) {
        gpa_sb_printf(b, "<tr>");
        cell(b, s->denied[i].pod, false);
        cellz(b, (size_t)s->denied[i].pods);
        cell(b, s->denied[i].message, false);
        gpa_sb_printf(b, "</tr>\n");
    }
    gpa_sb_printf(b, "</table>\n");
    if (s->n_denied > LIST_ROWS)
        gpa_sb_printf(b, "<p class=\"note\">... and %zu more (-o json lists every one).</p>\n",
                      s->n_denied - LIST_ROWS);
}

/* One SVG per node group: a strip per node, a cell per GPU. Small groups get one node per
 * line with its name; large ones a grid of strips, the name on hover. */
static void fleet(gpa_sb *b, const gpa_sim *s)
{
    gpa_sb_printf(b, "<h2>Fleet</h2>\n<div id=\"fleet\">\n");
    char col[40];
    for (size_t gi = 0, first = 0; first < s->inv->n_nodes; gi++) {
        /* a run of nodes of one group name (a node List makes a group per node) */
        const char *gname = gpa_sim_grp(s, first)->name;
        size_t end = first, used = 0, gpus = 0, maxg = 1;
        while (end < s->inv->n_nodes && strcmp(gpa_sim_grp(s, end)->name, gname) == 0) {
            used += s->nodes[end].used_gpus;
            gpus += (size_t)gpa_sim_grp(s, end)->gpus;
            if ((size_t)gpa_sim_grp(s, end)->gpus > maxg) maxg = (size_t)gpa_sim_grp(s, end)->gpus;
            end++;
        }
        size_t nn = end - first;
        bool named = nn <= 16;
        /* named strips are few: bigger cells */
        const double cw = named ? 16 : 10, ch = 14, pad = 6, namew = named ? 130 : 0;
        double strip = (double)maxg * cw + pad;
        size_t per_row = named ? 1 : (size_t)(1300.0 / strip);
        if (!per_row) per_row = 1;
        /* topology domains (cliques, racks) as boxes: each domain starts a box of its own, d
         * nodes, `span` strips wide; dpr boxes per line, rpd lines per box */
        size_t d = 0;
        const char *dkey = gpa_sim_domain_key(s, first, end, &d);
        if (!dkey) d = per_row;
        size_t span = d < per_row ? d : per_row, dpr = d < per_row ? per_row / d : 1;
        size_t rpd = (d + span - 1) / span, ndom = (nn + d - 1) / d;
        const double lab = dkey ? 14 : 0, gap = dkey ? 8 : 0;
        const double boxw = (double)span * strip + gap, boxh = (double)rpd * (ch + 4) + lab + 4;
        const double lineh = dkey ? boxh : (double)rpd * (ch + 4);
        /* blocks of domains (racks in blocks) as outer boxes, per_blk domains each, whole lines of
         * dpr2 domains; without, one block of every domain */
        size_t d2 = 0, per_blk = ndom ? ndom : 1, dpr2 = dpr;
        const char *bkey = dkey ? gpa_sim_block_key(s, first, end, dkey, d, &d2) : NULL;
        if (bkey) {
            per_blk = d2 / d;
            for (dpr2 = dpr < per_blk ? dpr : per_blk; per_blk % dpr2;)
                dpr2--;
        }
        size_t lpb = (per_blk + dpr2 - 1) / dpr2, nblk = (ndom + per_blk - 1) / per_blk;
        const double lab2 = bkey ? 16 : 0, inset = bkey ? 4 : 0;
        const double blkh = lab2 + (double)lpb * lineh + (bkey ? 6 : 0);
        gpa_sb_printf(b, "<h3>");
        gpa_sim_html_esc(b, gname);
        gpa_sb_printf(b, ": %zu node(s), %zu GPUs, %zu used", nn, gpus, used);
        if (dkey) {
            gpa_sb_printf(b, "; a box per ");
            gpa_sim_html_esc(b, dkey);
            gpa_sb_printf(b, " (%zu nodes)", d);
        }
        if (bkey) {
            gpa_sb_printf(b, " in a box per ");
            gpa_sim_html_esc(b, bkey);
            gpa_sb_printf(b, " (%zu nodes)", d2);
        }
        gpa_sb_printf(b, "</h3>\n");
        gpa_sb_printf(b,
                      "<svg class=\"fleet-group\" width=\"%.0f\" height=\"%.0f\" "
                      "xmlns=\"http://www.w3.org/2000/svg\">",
                      namew + (double)dpr2 * boxw + 2 * inset, (double)nblk * blkh + 2);
        for (size_t i = 0; i < nn; i++) {
            size_t n = first + i;
            const gpa_sim_group *g = gpa_sim_grp(s, n);
            size_t dom = i / d, j = i % d, blk = dom / per_blk, dk = dom % per_blk;
            double bx = namew + inset + (double)(dk % dpr2) * boxw,
                   by = (double)blk * blkh + lab2 + (double)(dk / dpr2) * lineh;
            if (bkey && dk == 0 && j == 0) {
                const char *v = gpa_sim_node_label(s, n, bkey);
                gpa_sb_printf(b, "<g class=\"block\" data-block=\"");
                gpa_sim_html_esc(b, v);
                gpa_sb_printf(b, "\"><title>");
                gpa_sim_html_esc(b, bkey);
                gpa_sb_printf(b, "=");
                gpa_sim_html_esc(b, v);
                gpa_sb_printf(b,
                              "</title><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
                              "height=\"%.0f\" fill=\"none\" stroke=\"#222\" "
                              "stroke-width=\"1.5\"/><text x=\"%.0f\" y=\"%.0f\" "
                              "style=\"font-size:11px;font-weight:bold\">",
                              namew + 1, (double)blk * blkh + lab2 - 2,
                              (double)dpr2 * boxw + 2 * inset - 2, (double)lpb * lineh + 4,
                              namew + 3, (double)blk * blkh + lab2 - 5);
                gpa_sim_html_esc(b, v);
                gpa_sb_printf(b, "</text></g>");
            }
            double x0 = bx + gap / 2 + (double)(j % span) * strip,
                   y0 = by + lab + (double)(j / span) * (ch + 4);
            if (dkey && j == 0) {
                /* lines this domain fills (the last one may be short) */
                size_t here = ((nn - i < d ? nn - i : d) + span - 1) / span;
                const char *v = gpa_sim_node_label(s, n, dkey);
                gpa_sb_printf(b, "<g class=\"domain\" data-domain=\"");
                gpa_sim_html_esc(b, v);
                gpa_sb_printf(b, "\"><title>");
                gpa_sim_html_esc(b, dkey);
                gpa_sb_printf(b, "=");
                gpa_sim_html_esc(b, v);
                gpa_sb_printf(b,
                              "</title><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
                              "height=\"%.0f\" fill=\"none\" stroke=\"#555\" "
                              "stroke-dasharray=\"4 2\"/><text x=\"%.0f\" y=\"%.0f\" "
                              "style=\"font-size:10px\">",
                              bx + 1, by + lab - 1, boxw - 3, (double)here * (ch + 4) + 3, bx + 3,
                              by + lab - 4);
                gpa_sim_html_esc(b, v);
                gpa_sb_printf(b, "</text></g>");
            }
            gpa_sb_printf(b, "<g class=\"node\" data-node=\"");
            gpa_sim_html_esc(b, s->inv->nodes[n].name);
            gpa_sb_printf(b, "\"><title>");
            gpa_sim_html_esc(b, s->inv->nodes[n].name);
            gpa_sb_printf(b, ": %zu of %d GPUs used, %lld pods</title>", s->nodes[n].used_gpus,
                          g->gpus, s->nodes[n].pods);
            if (named) {
                gpa_sb_printf(b, "<text x=\"0\" y=\"%.0f\" style=\"font-size:11px\">", y0 + 11);
                gpa_sim_html_esc(b, s->inv->nodes[n].name);
                gpa_sb_printf(b, "</text>");
            }
            for (int k = 0; k < g->gpus; k++) {
                fill_colour(col, sizeof col, gpa_sim_gpu_fill(s, n, k));
                gpa_sb_printf(b,
                              "<rect class=\"cell\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
                              "height=\"%.0f\" fill=\"%s\" stroke=\"#999\" stroke-width=\"0.5\"/>",
                              x0 + k * cw, y0 + 2, cw - 1, ch, col);
            }
            gpa_sb_printf(b, "</g>");
        }
        gpa_sb_printf(b, "</svg>\n");
        first = end;
        (void)gi;
    }
    gpa_sb_printf(b, "</div>\n");
}

static void tiles(gpa_sb *b, const gpa_sim *s, const gpa_sim_totals *t)
{
    size_t in_use = 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        in_use += s->nodes[n].used_gpus > 0;
    gpa_sb_printf(b,
                  "<h2>GPUs in use</h2>\n<details id=\"detail\"><summary>Detail tiles: %zu GPUs "
                  "on %zu node(s)%s (open)</summary>\n<div id=\"gpus\">\n",
                  t->gpus_used, in_use, in_use > TILE_NODES ? ", the first 100 nodes" : "");
    size_t shown = 0;
    for (size_t n = 0; n < s->inv->n_nodes && shown < TILE_NODES; n++) {
        if (!s->nodes[n].used_gpus) continue;
        shown++;
        for (int k = 0; k < gpa_sim_grp(s, n)->gpus; k++)
            if (s->nodes[n].gpus[k].n_pods) gpa_sim_report_tile(b, s, n, k);
    }
    gpa_sb_printf(b, "</div>\n");
    if (in_use > TILE_NODES)
        gpa_sb_printf(b,
                      "<p class=\"note\">%zu more nodes in use are not drawn; -o json has every "
                      "placement.</p>\n",
                      in_use - TILE_NODES);
    gpa_sb_printf(b, "</details>\n");
}

/* The --compare runs side by side, the same columns as the text table. */
static void compare_table(gpa_sb *b, const gpa_sim_compared *v, size_t n)
{
    static const char *cols[] = {"variant",
                                 "placed",
                                 "unplaced",
                                 "GPUs used",
                                 "whole-GPU baseline",
                                 "saved",
                                 "unplaced ask (GPUs)",
                                 "allocation ratio",
                                 NULL};
    gpa_sb_printf(b, "<h2>Compared</h2>\n<table id=\"compare\">\n");
    head_row(b, cols);
    for (size_t i = 0; i < n; i++) {
        const gpa_sim_totals *t = &v[i].t;
        gpa_sb_printf(b, "<tr>");
        cell(b, v[i].name, false);
        cellz(b, t->placed);
        cellz(b, t->unplaced);
        cellz(b, t->gpus_used);
        cellz(b, t->whole_gpu_baseline);
        gpa_sb_printf(b, "<td class=\"n\">%lld</td>",
                      (long long)t->whole_gpu_baseline - (long long)t->gpus_used);
        cellz(b, t->unplaced_gpus);
        cellf(b, 1, gpa_sim_ratio(t->gpu_share, t->gpus_total), true);
        gpa_sb_printf(b, "</tr>\n");
    }
    gpa_sb_printf(b, "</table>\n");
}

char *gpa_sim_report_html(const gpa_sim *s)
{
    return gpa_sim_report_html_compared(s, NULL, 0);
}

char *gpa_sim_report_html_compared(const gpa_sim *s, const gpa_sim_compared *v, size_t n)
{
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    gpa_sb b = {0};
    gpa_sb_printf(&b,
                  "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<title>gpu-admission simulate</title>\n<style>%s</style></head><body>\n"
                  "<h1>GPU capacity simulation</h1>\n",
                  CSS);
    size_t nn = 0;
    gpa_sim_nonode *nonodes = gpa_sim_pools_without_nodes(s, &nn);
    if (nn) {
        gpa_sb_printf(&b, "<div id=\"nonodes\" class=\"warn\">");
        for (size_t i = 0; i < nn; i++) {
            gpa_sb line = {0};
            gpa_sim_nonode_line(&line, &nonodes[i]);
            char *msg = gpa_sb_done(&line);
            gpa_sb_printf(&b, "<p>");
            gpa_sim_html_esc(&b, msg ? msg : "");
            gpa_sb_printf(&b, "</p>");
            free(msg);
        }
        gpa_sb_printf(&b, "</div>\n");
    }
    gpa_sim_nonodes_free(nonodes, nn);
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
    bar(&b, &t);
    if (n) compare_table(&b, v, n);
    legend(&b);
    pools_table(&b, s, &t);
    groups_table(&b, s);
    fleet(&b, s);
    gangs_table(&b, s);
    unplaced_lists(&b, s, &t);
    denied_list(&b, s);
    tiles(&b, s, &t);
    gpa_sb_printf(&b, "</body></html>\n");
    return gpa_sb_done(&b);
}
