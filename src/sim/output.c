/*
 * output.c - the simulator's answer: JSON, text, the HTML report and the mig-parted
 * suggestion. All read the packed state; none changes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "sim_internal.h"

static double gb(int64_t bytes)
{
    return (double)bytes / 1e9;
}

/* Per group and per pool counts. */
typedef struct agg {
    const char *name;
    size_t nodes, gpus, used, pods, placed, unplaced, baseline;
    int64_t mem_req, mem_alloc;
} agg;

static size_t find_agg(agg *a, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(a[i].name, name) == 0) return i;
    a[*n] = (agg){.name = name};
    return (*n)++;
}

static agg *group_aggs(const gpa_sim *s, size_t *n_out)
{
    agg *a = calloc(s->inv->n_groups + 1, sizeof *a);
    size_t n = 0;
    if (!a) return NULL;
    for (size_t i = 0; i < s->inv->n_nodes; i++) {
        size_t k = find_agg(a, &n, gpa_sim_grp(s, i)->name);
        a[k].nodes++;
        a[k].gpus += (size_t)gpa_sim_grp(s, i)->gpus;
        a[k].used += s->nodes[i].used_gpus;
    }
    for (size_t i = 0; i < s->n_pods; i++)
        if (s->pods[i].node >= 0) {
            size_t k = find_agg(a, &n, gpa_sim_grp(s, (size_t)s->pods[i].node)->name);
            a[k].placed++;
            a[k].mem_req += gpa_sim_mem_requested(s, i);
            a[k].mem_alloc += s->pods[i].mem_alloc;
        }
    *n_out = n;
    return a;
}

static agg *pool_aggs(const gpa_sim *s, size_t *n_out)
{
    agg *a = calloc(s->n_tmpls + 1, sizeof *a);
    size_t n = 0;
    if (!a) return NULL;
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_tmpl *t = &s->tmpls[s->pods[i].tmpl];
        size_t k = find_agg(a, &n, t->pool ? t->pool : "(no pool)");
        a[k].pods++;
        a[k].baseline += t->gres ? (size_t)t->gcount : 0;
        if (s->pods[i].node >= 0) {
            a[k].placed++;
            a[k].mem_req += gpa_sim_mem_requested(s, i);
            a[k].mem_alloc += s->pods[i].mem_alloc;
        } else {
            a[k].unplaced++;
        }
    }
    *n_out = n;
    return a;
}

cJSON *gpa_sim_result_json(const gpa_sim *s)
{
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    cJSON *r = cJSON_CreateObject();
    if (!r) return NULL;
    char nb[600];
    cJSON_AddNumberToObject(r, "pods", (double)t.pods);
    cJSON_AddNumberToObject(r, "placed", (double)t.placed);
    cJSON_AddNumberToObject(r, "skipped", (double)t.skipped);
    cJSON *den = cJSON_AddArrayToObject(r, "denied");
    for (size_t i = 0; i < s->n_denied; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pod", s->denied[i].pod);
        cJSON_AddStringToObject(o, "message", s->denied[i].message);
        cJSON_AddItemToArray(den, o);
    }
    cJSON *unp = cJSON_AddArrayToObject(r, "unplaced");
    cJSON *pl = cJSON_AddArrayToObject(r, "placements");
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_pod *p = &s->pods[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pod", gpa_sim_pod_name(s, i, nb, sizeof nb));
        if (p->node < 0) {
            cJSON_AddStringToObject(o, "reason", p->reason ? p->reason : "no room");
            if (p->reason_detail) cJSON_AddStringToObject(o, "detail", p->reason_detail);
            cJSON_AddItemToArray(unp, o);
        } else {
            cJSON_AddStringToObject(o, "node", s->inv->nodes[p->node].name);
            if (p->gpu_first >= 0) cJSON_AddNumberToObject(o, "gpu", p->gpu_first);
            cJSON_AddItemToArray(pl, o);
        }
    }
    cJSON *g = cJSON_AddObjectToObject(r, "gpus");
    cJSON_AddNumberToObject(g, "total", (double)t.gpus_total);
    cJSON_AddNumberToObject(g, "used", (double)t.gpus_used);
    cJSON_AddNumberToObject(g, "wholeGpuBaseline", (double)t.whole_gpu_baseline);
    cJSON_AddNumberToObject(g, "saved", (double)t.whole_gpu_baseline - (double)t.gpus_used);
    cJSON *m = cJSON_AddObjectToObject(r, "memory");
    cJSON_AddNumberToObject(m, "requestedBytes", (double)t.mem_requested);
    cJSON_AddNumberToObject(m, "allocatedBytes", (double)t.mem_allocated);
    size_t na = 0;
    agg *a = group_aggs(s, &na);
    cJSON *ga = cJSON_AddArrayToObject(r, "groups");
    for (size_t i = 0; a && i < na; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", a[i].name);
        cJSON_AddNumberToObject(o, "nodes", (double)a[i].nodes);
        cJSON_AddNumberToObject(o, "gpus", (double)a[i].gpus);
        cJSON_AddNumberToObject(o, "used", (double)a[i].used);
        cJSON_AddNumberToObject(o, "placed", (double)a[i].placed);
        cJSON_AddNumberToObject(o, "memoryRequestedBytes", (double)a[i].mem_req);
        cJSON_AddNumberToObject(o, "memoryAllocatedBytes", (double)a[i].mem_alloc);
        cJSON_AddItemToArray(ga, o);
    }
    free(a);
    a = pool_aggs(s, &na);
    cJSON *pa = cJSON_AddArrayToObject(r, "pools");
    for (size_t i = 0; a && i < na; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pool", a[i].name);
        cJSON_AddNumberToObject(o, "pods", (double)a[i].pods);
        cJSON_AddNumberToObject(o, "placed", (double)a[i].placed);
        cJSON_AddNumberToObject(o, "unplaced", (double)a[i].unplaced);
        cJSON_AddNumberToObject(o, "wholeGpuBaseline", (double)a[i].baseline);
        cJSON_AddNumberToObject(o, "memoryRequestedBytes", (double)a[i].mem_req);
        cJSON_AddNumberToObject(o, "memoryAllocatedBytes", (double)a[i].mem_alloc);
        cJSON_AddItemToArray(pa, o);
    }
    free(a);
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
    gpa_sb_printf(&b, "\nGPU memory: %.1f GB requested, %.1f GB allocated\n", gb(t.mem_requested),
                  gb(t.mem_allocated));
    size_t na = 0;
    agg *a = group_aggs(s, &na);
    gpa_sb_printf(&b, "\nnode groups:\n");
    for (size_t i = 0; a && i < na; i++)
        gpa_sb_printf(&b,
                      "  %-24s %zu nodes, %zu GPUs, %zu used, %zu pods placed; GPU memory %.1f GB "
                      "requested, %.1f GB allocated\n",
                      a[i].name, a[i].nodes, a[i].gpus, a[i].used, a[i].placed, gb(a[i].mem_req),
                      gb(a[i].mem_alloc));
    free(a);
    a = pool_aggs(s, &na);
    gpa_sb_printf(&b, "pools:\n");
    for (size_t i = 0; a && i < na; i++)
        gpa_sb_printf(&b,
                      "  %-24s %zu pods: %zu placed, %zu unplaced; baseline %zu GPUs; %.1f GB "
                      "requested, %.1f GB allocated\n",
                      a[i].name, a[i].pods, a[i].placed, a[i].unplaced, a[i].baseline,
                      gb(a[i].mem_req), gb(a[i].mem_alloc));
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
                  t.pods, t.placed, t.unplaced, t.denied, gb(t.mem_requested), gb(t.mem_allocated));
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

/* The best uniform layout for a group: every GPU carries the same instances (one mig-parted
 * entry with devices: all), chosen among every valid layout of the model as the one holding
 * the group's placed instances in the fewest GPUs (ties: the least memory left idle, then the
 * most slices in profiles the workload uses). */
typedef struct uniform {
    const gpa_mig_model *m;
    const long *need; /* per profile index */
    int cur[16], best[16];
    long best_gpus, best_idle, best_slots;
} uniform;

static void uniform_eval(uniform *u)
{
    long gpus = 0, slots = 0;
    for (size_t i = 0; i < u->m->n_profiles; i++) {
        if (!u->need[i]) continue;
        slots += (long)u->cur[i] * u->m->profiles[i].mem_slots;
        if (!u->cur[i]) return;
        long g = (u->need[i] + u->cur[i] - 1) / u->cur[i];
        if (g > gpus) gpus = g;
    }
    if (!gpus) return;
    long idle = gpus * u->m->mem_slots;
    for (size_t i = 0; i < u->m->n_profiles; i++)
        idle -= u->need[i] * u->m->profiles[i].mem_slots;
    /* ties: more slices in the profiles the workload uses, room for it to grow */
    if (u->best_gpus < 0 || gpus < u->best_gpus || (gpus == u->best_gpus && idle < u->best_idle) ||
        (gpus == u->best_gpus && idle == u->best_idle && slots > u->best_slots)) {
        u->best_gpus = gpus;
        u->best_idle = idle;
        u->best_slots = slots;
        memcpy(u->best, u->cur, sizeof u->best);
    }
}

static void uniform_rec(uniform *u, size_t k, const gpa_mig_profile **inst, size_t n)
{
    if (k == u->m->n_profiles) {
        uniform_eval(u);
        return;
    }
    for (int c = 0; c <= u->m->profiles[k].max_instances && n + (size_t)c <= GPA_MIG_MAX_INSTANCES;
         c++) {
        for (int j = 0; j < c; j++)
            inst[n + (size_t)j] = &u->m->profiles[k];
        /* adding instances never makes an invalid layout valid: prune */
        if (c && !gpa_mig_layout_valid(NULL, u->m, inst, n + (size_t)c)) break;
        u->cur[k] = c;
        uniform_rec(u, k + 1, inst, n + (size_t)c);
    }
    u->cur[k] = 0;
}

char *gpa_sim_suggest_mig(const gpa_sim *s)
{
    gpa_sb b = {0}, body = {0};
    gpa_sb_printf(
        &b, "# mig-parted config from gpu-admission simulate. <group>-uniform: one layout for\n"
            "# every GPU of a MIG node group, the one holding the group's placed instances in\n"
            "# the fewest GPUs. <group>-<node>: per node in use, the layout the packing chose\n"
            "# per GPU (GPUs without pods keep MIG off), which may need fewer GPUs still. Label\n"
            "# nodes nvidia.com/mig.config=<entry> for the MIG manager to apply one.\n"
            "version: v1\n");
    size_t written = 0;
    for (size_t gi = 0; gi < s->inv->n_groups; gi++) {
        const gpa_sim_group *g = &s->inv->groups[gi];
        if (g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) continue;
        long need[16] = {0}, total = 0;
        for (size_t n = 0; n < s->inv->n_nodes; n++) {
            if (s->inv->nodes[n].group != gi) continue;
            for (int k = 0; k < g->gpus; k++) {
                const gpa_sim_gpu *u = &s->nodes[n].gpus[k];
                for (size_t j = 0; j < u->n_slots; j++)
                    if (u->slots[j].pod >= 0) {
                        need[u->slots[j].p - g->model->profiles]++;
                        total++;
                    }
            }
        }
        if (!total) continue;
        uniform un = {.m = g->model, .need = need, .best_gpus = -1};
        const gpa_mig_profile *inst[GPA_MIG_MAX_INSTANCES];
        uniform_rec(&un, 0, inst, 0);
        if (un.best_gpus < 0) continue;
        gpa_sb_printf(
            &body,
            "  %s-uniform:  # group %s: its %ld placed instances on %ld GPUs, every GPU the "
            "same layout%s\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n",
            g->name, g->name, total, un.best_gpus,
            un.best_gpus > (long)g->gpus * g->count ? " (more GPUs than the group has)" : "");
        for (size_t pi = 0; pi < g->model->n_profiles; pi++)
            if (un.best[pi])
                gpa_sb_printf(&body, "        \"%s\": %d\n", g->model->profiles[pi].name,
                              un.best[pi]);
        written++;
    }
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const gpa_sim_group *g = gpa_sim_grp(s, n);
        const gpa_sim_node *nd = &s->nodes[n];
        if ((g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) || !nd->used_gpus)
            continue;
        gpa_sb_printf(&body, "  %s-%s:\n", g->name, s->inv->nodes[n].name);
        written++;
        for (int k = 0; k < g->gpus; k++) {
            const gpa_sim_gpu *u = &nd->gpus[k];
            gpa_sb_printf(&body, "    - devices: [%d]\n", k);
            if (!u->n_pods) {
                gpa_sb_printf(&body, "      mig-enabled: false\n");
                continue;
            }
            gpa_sb_printf(&body, "      mig-enabled: true\n      mig-devices:\n");
            for (size_t pi = 0; pi < g->model->n_profiles; pi++) {
                const gpa_mig_profile *p = &g->model->profiles[pi];
                size_t c = 0;
                for (size_t j = 0; j < u->n_slots; j++)
                    c += u->slots[j].p == p && u->slots[j].pod >= 0;
                if (c) gpa_sb_printf(&body, "        \"%s\": %zu\n", p->name, c);
            }
        }
    }
    char *bd = gpa_sb_done(&body);
    if (!bd) {
        gpa_sb_free(&b);
        return NULL;
    }
    if (written)
        gpa_sb_printf(&b, "mig-configs:\n%s", bd);
    else
        gpa_sb_printf(&b, "mig-configs: {}\n");
    free(bd);
    return gpa_sb_done(&b);
}
