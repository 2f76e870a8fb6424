/*
 * test_sim_index.c - the packer's candidate index picks exactly what the full scan picks.
 *
 * GPA_SIM_BFD looks, per pod, only at its class's used nodes that may still have room and one
 * empty node per bucket of interchangeable ones, keeps one affinity view over consecutive
 * pods of a template and caches gang domain room; GPA_SIM_BFD_SCAN scores every node of the
 * class afresh for every pod. On random fleets (MIG auto and fixed, time-sliced, whole GPUs in
 * NVLink cliques spanning nodes, zones, cpu/memory/pod limits, taints) and random pods
 * (every GPU kind, gangs with pod affinity on the clique or hostname, tenants with
 * anti-affinity on hostname or zone, node selectors, cpu) both must leave the same state:
 * every pod on the same node and GPUs with the same reason, every GPU slot the same. Each
 * random fleet is also listed node by node (a `kubectl get nodes` List: a group per node,
 * the nodes of one kind merged into one shape by sim_shape.c) and packed both ways again.
 * Every other case places gangs whole (sim_gang.c): a gang that does not fit is taken back
 * off, and the index is rebuilt; the scan must still agree.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "sim_internal.h"

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static size_t app(char *b, size_t off, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t app(char *b, size_t off, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b + off, off < cap ? cap - off : 0, fmt, ap);
    va_end(ap);
    return off + (n > 0 ? (size_t)n : 0);
}

static void inventory(char *b, size_t cap)
{
    size_t o = app(b, 0, cap,
                   "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                   "  nodeGroups:\n");
    int groups = 1 + (int)rnd(4);
    for (int g = 0; g < groups; g++) {
        int count = 1 + (int)rnd(12), gpus = 1 + (int)rnd(8);
        o = app(b, o, cap, "    - name: g%d\n      count: %d\n      gpus: %d\n", g, count, gpus);
        o = app(b, o, cap, "      labels: {zone: z%u, pool: p%u}\n", rnd(3), rnd(2));
        if (rnd(3) == 0) o = app(b, o, cap, "      cpu: %u\n", 2 + rnd(30));
        if (rnd(4) == 0) o = app(b, o, cap, "      pods: %u\n", 1 + rnd(6));
        if (rnd(4) == 0) o = app(b, o, cap, "      memory: %uGi\n", 4 + rnd(60));
        if (rnd(5) == 0)
            o = app(b, o, cap, "      taints: [{key: dedicated, value: a, effect: NoSchedule}]\n");
        switch (rnd(5)) {
        case 0:
            o = app(b, o, cap, "      gpu: %s\n      mig: auto\n",
                    rnd(2) ? "A100-40GB" : "A30-24GB");
            break;
        case 1:
            o = app(b, o, cap, "      gpu: A100-40GB\n      mig: %s\n",
                    rnd(2) ? "all-balanced" : "{1g.5gb: 4, 3g.20gb: 1}");
            break;
        case 2:
            o = app(b, o, cap, "      timeSlicing: {replicas: %u}\n", 2 + rnd(4));
            break;
        default:
            o = app(b, o, cap, "      gpu: H100-80GB\n");
            if (rnd(2))
                o = app(b, o, cap, "      nvlinkIslandSize: %d\n", gpus * (1 + (int)rnd(3)));
            break;
        }
    }
}

static const char *const gres[] = {"nvidia.com/gpu",         "nvidia.com/gpu",
                                   "nvidia.com/gpu.shared",  "nvidia.com/mig-1g.5gb",
                                   "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb",
                                   "nvidia.com/mig-1g.6gb",  "nvidia.com/mig-7g.40gb"};

/* One pod spec (JSON) with `copies` copies added. */
static void pod(char *b, size_t cap, int i)
{
    const char *r = gres[rnd(8)];
    unsigned count = strcmp(r, "nvidia.com/gpu") == 0 ? 1 + rnd(4) : 1 + (rnd(4) == 0);
    unsigned tenant = rnd(3), gang = rnd(4);
    size_t o = app(b, 0, cap,
                   "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"t%u\",\"labels\":"
                   "{\"tenant\":\"t%u\",\"group\":\"g%d\"}},\"spec\":{",
                   i, tenant % 2, tenant, i % 7);
    if (rnd(4) == 0) o = app(b, o, cap, "\"nodeSelector\":{\"zone\":\"z%u\"},", rnd(3));
    if (rnd(3) == 0)
        o = app(b, o, cap,
                "\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":"
                "\"a\",\"effect\":\"NoSchedule\"}],");
    o = app(b, o, cap, "\"affinity\":{");
    bool any = false;
    if (gang == 0) {
        o = app(b, o, cap,
                "\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                "\"labelSelector\":{\"matchLabels\":{\"group\":\"g%d\"}},\"topologyKey\":"
                "\"%s\"}]}",
                i % 7, rnd(3) ? "nvidia.com/gpu.clique" : "kubernetes.io/hostname");
        any = true;
    }
    if (rnd(3) == 0) {
        o = app(b, o, cap,
                "%s\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"tenant\",\"operator\":"
                "\"NotIn\",\"values\":[\"t%u\"]}]},\"namespaceSelector\":{},\"topologyKey\":"
                "\"%s\"}]}",
                any ? "," : "", tenant, rnd(2) ? "kubernetes.io/hostname" : "zone");
    }
    o = app(b, o, cap,
            "},\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{\"%s\":"
            "\"%u\"},\"requests\":{\"cpu\":\"%u\"}}}]}}",
            r, count, rnd(3));
}

static bool same_state(const gpa_sim *a, const gpa_sim *b)
{
    bool ok = a->n_pods == b->n_pods;
    for (size_t i = 0; ok && i < a->n_pods; i++) {
        const gpa_sim_pod *x = &a->pods[i], *y = &b->pods[i];
        ok =
            x->node == y->node && x->gpu_first == y->gpu_first && x->mem_alloc == y->mem_alloc &&
            x->cause == y->cause &&
            (x->reason == y->reason || (x->reason && y->reason && !strcmp(x->reason, y->reason))) &&
            (x->reason_detail == y->reason_detail ||
             (x->reason_detail && y->reason_detail && !strcmp(x->reason_detail, y->reason_detail)));
        if (!ok)
            fprintf(stderr, "test: pod %zu: node %ld vs %ld, gpu %d vs %d, %s vs %s\n", i, x->node,
                    y->node, x->gpu_first, y->gpu_first, x->reason ? x->reason : "-",
                    y->reason ? y->reason : "-");
    }
    for (size_t n = 0; ok && n < a->inv->n_nodes; n++) {
        const gpa_sim_group *g = gpa_sim_grp(a, n);
        for (int k = 0; ok && k < g->gpus; k++) {
            const gpa_sim_gpu *u = &a->nodes[n].gpus[k], *v = &b->nodes[n].gpus[k];
            ok = u->n_slots == v->n_slots && u->n_pods == v->n_pods;
            for (size_t j = 0; ok && j < u->n_slots; j++)
                ok = u->slots[j].p == v->slots[j].p && u->slots[j].start == v->slots[j].start &&
                     u->slots[j].pod == v->slots[j].pod;
            if (!ok) fprintf(stderr, "test: node %zu GPU %d differs\n", n, k);
        }
    }
    return ok;
}

/* Many gangs of one class on NVLink cliques of two nodes: the first pod of each gang weighs
 * every clique's room, which the index caches and must forget when a pod lands there. */
static int gangs(void)
{
    int differ = 0;
    for (int c = 0; c < 150; c++) {
        char inv_yaml[1024];
        int gpus = rnd(2) ? 4 : 8, nodes = 4 + (int)rnd(10);
        snprintf(inv_yaml, sizeof inv_yaml,
                 "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                 "  nodeGroups:\n    - {name: h, count: %d, gpus: %d, gpu: H100-80GB, "
                 "nvlinkIslandSize: %d}\n    - {name: w, count: %u, gpus: %d}\n",
                 nodes, gpus, gpus * 2, rnd(3), gpus);
        gpa_sim_inventory *inv = NULL;
        gpa_error err = {0};
        CHECK_INT(gpa_sim_inventory_read(&inv, inv_yaml, strlen(inv_yaml), "inv", &err), GPA_OK);
        if (!inv) continue;
        int ng = 2 + (int)rnd(12);
        unsigned shape[3] = {1 + rnd(gpus), 1 + rnd(gpus), 1 + rnd(gpus)};
        gpa_sim *s[2] = {NULL, NULL};
        for (int m = 0; m < 2; m++) {
            CHECK_INT(gpa_sim_new(&s[m], inv, &err), GPA_OK);
            gpa_sim_set_gangs_whole(s[m], c % 2 == 1);
            unsigned long long keep = rng;
            for (int g = 0; g < ng; g++) {
                char p[1024];
                snprintf(p, sizeof p,
                         "{\"metadata\":{\"name\":\"j%d\",\"namespace\":\"t\",\"labels\":"
                         "{\"group\":\"g%d\"}},\"spec\":{\"affinity\":{\"podAffinity\":{"
                         "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":"
                         "{\"matchLabels\":{\"group\":\"g%d\"}},\"topologyKey\":"
                         "\"nvidia.com/gpu.clique\"}]}},\"containers\":[{\"name\":\"m\","
                         "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%u\"}}}]}}",
                         g, g, g, shape[rnd(3)]);
                cJSON *pj = cJSON_Parse(p);
                char name[16];
                snprintf(name, sizeof name, "t/j%d", g);
                CHECK_INT(gpa_sim_add_pod(s[m], pj, name, 2 + rnd(3), &err), GPA_OK);
                cJSON_Delete(pj);
            }
            if (m == 0) rng = keep; /* the same pods for both runs */
            CHECK_INT(gpa_sim_run(s[m], m ? GPA_SIM_BFD_SCAN : GPA_SIM_BFD, &err), GPA_OK);
        }
        bool same = same_state(s[0], s[1]);
        CHECK(same);
        differ += !same;
        gpa_sim_free(s[0]);
        gpa_sim_free(s[1]);
        gpa_sim_inventory_free(inv);
    }
    return differ;
}

/* The repository's own simulate inputs, admitted through the real engine, both ways. */
static void repo_inputs(void)
{
    static const char *const invs[] = {"a100-one.yaml", "cluster.yaml"};
    static const char *const wls[] = {"fourteen-small.yaml", "mixed.yaml"};
    gpa_policy *pol = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_policy_load_dir(&pol, GPA_SIM_TEST_DIR "/policies", &err), GPA_OK);
    if (!pol) return;
    for (size_t i = 0; i < 2; i++)
        for (size_t w = 0; w < 2; w++) {
            char path[512];
            size_t il = 0, wl = 0;
            snprintf(path, sizeof path, "%s/inventories/%s", GPA_SIM_TEST_DIR, invs[i]);
            char *ib = check_slurp(path, &il);
            snprintf(path, sizeof path, "%s/workloads/%s", GPA_SIM_TEST_DIR, wls[w]);
            char *wb = check_slurp(path, &wl);
            gpa_sim_inventory *inv = NULL;
            gpa_objects *o = NULL;
            CHECK(ib && wb);
            CHECK_INT(gpa_sim_inventory_read(&inv, ib, il, invs[i], &err), GPA_OK);
            CHECK_INT(gpa_objects_read(&o, wb, wl, wls[w], &err), GPA_OK);
            gpa_sim *s[2] = {NULL, NULL};
            for (int m = 0; inv && o && m < 2; m++) {
                CHECK_INT(gpa_sim_new(&s[m], inv, &err), GPA_OK);
                for (size_t k = 0; k < gpa_objects_count(o); k++)
                    CHECK_INT(gpa_sim_admit(s[m], pol, gpa_objects_get(o, k), wls[w], &err),
                              GPA_OK);
                CHECK_INT(gpa_sim_run(s[m], m ? GPA_SIM_BFD_SCAN : GPA_SIM_BFD, &err), GPA_OK);
            }
            if (s[0] && s[1]) CHECK(same_state(s[0], s[1]));
            CHECK(s[0] && s[0]->n_pods > 0);
            gpa_sim_free(s[0]);
            gpa_sim_free(s[1]);
            gpa_objects_free(o);
            gpa_sim_inventory_free(inv);
            free(ib);
            free(wb);
        }
    gpa_policy_unref(pol);
}

/* The inventory as the `kubectl get nodes -o json` List of its nodes: every node listed on its
 * own (its own group when read back), labels as generated, GPUs as allocatable resources
 * (auto MIG, which a List cannot say, as whole cards). Read back, listed nodes of one kind
 * share a shape (sim_shape.c) and the index offers one empty node per shape. */
static char *as_node_list(const gpa_sim_inventory *inv)
{
    size_t cap = 4096 + inv->n_nodes * 2048, o = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    o = app(b, o, cap, "{\"kind\":\"List\",\"items\":[");
    for (size_t n = 0; n < inv->n_nodes; n++) {
        const gpa_sim_node_def *d = &inv->nodes[n];
        const gpa_sim_group *g = &inv->groups[d->group];
        o = app(b, o, cap, "%s{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{",
                n ? "," : "", d->name);
        for (size_t l = 0; l < d->n_labels; l++)
            o = app(b, o, cap, "%s\"%s\":\"%s\"", l ? "," : "", d->labels[l].key,
                    d->labels[l].value);
        o = app(b, o, cap, "}},\"spec\":{\"taints\":[");
        for (size_t t = 0; t < g->n_taints; t++)
            o = app(b, o, cap, "%s{\"key\":\"%s\",\"value\":\"%s\",\"effect\":\"%s\"}",
                    t ? "," : "", g->taints[t].key, g->taints[t].value, g->taints[t].effect);
        /* some nodes of a kind with less room than their twins: they must not be taken for
         * them (a node's cpu, memory and pod count are part of its shape) */
        long long pods = g->max_pods < 0 ? 110LL : g->max_pods;
        long long cpu = g->cpu_milli, mem = g->mem;
        if (rnd(4) == 0) pods = 1 + rnd(3);
        if (rnd(4) == 0) cpu = 1000 + 500 * rnd(4);
        if (rnd(5) == 0) mem = (1LL + rnd(3)) << 30;
        o = app(b, o, cap, "]},\"status\":{\"allocatable\":{\"pods\":\"%lld\"", pods);
        if (cpu >= 0) o = app(b, o, cap, ",\"cpu\":\"%lldm\"", cpu);
        if (mem >= 0) o = app(b, o, cap, ",\"memory\":\"%lld\"", mem);
        if (g->mode == GPA_SIM_MIG_FIXED) {
            for (size_t i = 0; i < g->n_fixed; i++) {
                bool first = true;
                size_t k = 0;
                for (size_t j = 0; j < g->n_fixed; j++) {
                    first = first && !(j < i && g->fixed[j] == g->fixed[i]);
                    k += g->fixed[j] == g->fixed[i];
                }
                if (first)
                    o = app(b, o, cap, ",\"%s\":\"%zu\"", g->fixed[i]->resource,
                            k * (size_t)g->gpus);
            }
        } else if (g->mode == GPA_SIM_TS) {
            o = app(b, o, cap, ",\"%s\":\"%d\"", g->ts_resource, g->gpus * g->replicas);
        } else {
            o = app(b, o, cap, ",\"nvidia.com/gpu\":\"%d\"", g->gpus);
        }
        o = app(b, o, cap, "}}}");
    }
    o = app(b, o, cap, "]}");
    if (o >= cap) {
        free(b);
        return NULL;
    }
    return b;
}

/* Groups that pack alike share a shape; the rest keep their own. */
static int shared_shapes(const gpa_sim *s)
{
    size_t *sh = gpa_sim_shapes(s);
    int merged = 0;
    for (size_t n = 0; sh && n < s->inv->n_nodes; n++)
        merged += sh[n] != s->inv->nodes[n].group;
    free(sh);
    return merged;
}

/* Two listed nodes alike but for one figure of room, the first with too little of it for the
 * pod, and a third node of another shape after them: the pod belongs on the second node.
 * cpu and memory keep the first node out of the pod's class (a static check); the pod count
 * and the GPUs must keep the two apart as shapes, or the index judges both by the first and
 * sends the pod to the third. */
static void listed_twins_differ(void)
{
    static const struct {
        const char *what, *small, *pod;
    } cases[] = {
        {"cpu", "\"cpu\":\"1\",\"nvidia.com/gpu\":\"8\"", "\"cpu\":\"2\""},
        {"memory", "\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"8\"", "\"memory\":\"2Gi\""},
        {"pods", "\"pods\":\"0\",\"nvidia.com/gpu\":\"8\"", "\"cpu\":\"1\""},
        {"GPUs", "\"nvidia.com/gpu\":\"1\"", "\"cpu\":\"1\""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char list[2048];
        snprintf(list, sizeof list,
                 "{\"kind\":\"List\",\"items\":["
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n0\"},\"status\":{"
                 "\"allocatable\":{%s}}},"
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{"
                 "\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}},"
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\"},\"status\":{"
                 "\"allocatable\":{\"nvidia.com/gpu\":\"16\",\"cpu\":\"64\"}}}]}",
                 cases[c].small);
        char pod[512];
        snprintf(pod, sizeof pod,
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\"},\"spec\":{"
                 "\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{"
                 "\"nvidia.com/gpu\":\"2\"},\"requests\":{%s}}}]}}",
                 cases[c].pod);
        gpa_sim_inventory *inv = NULL;
        gpa_error err = {0};
        CHECK_INT(gpa_sim_inventory_read(&inv, list, strlen(list), "list", &err), GPA_OK);
        for (int m = 0; inv && m < 2; m++) {
            gpa_sim *s = NULL;
            CHECK_INT(gpa_sim_new(&s, inv, &err), GPA_OK);
            cJSON *pj = cJSON_Parse(pod);
            CHECK_INT(gpa_sim_add_pod(s, pj, "t/p", 1, &err), GPA_OK);
            cJSON_Delete(pj);
            CHECK_INT(gpa_sim_run(s, m ? GPA_SIM_BFD_SCAN : GPA_SIM_BFD, &err), GPA_OK);
            const char *node = gpa_sim_pod_node(s, 0);
            if (!node || strcmp(node, "n1") != 0)
                fprintf(stderr, "test: %s: the pod went to %s, not n1\n", cases[c].what,
                        node ? node : "no node");
            CHECK(node && strcmp(node, "n1") == 0);
            gpa_sim_free(s);
        }
        gpa_sim_inventory_free(inv);
    }
}

int main(void)
{
    repo_inputs();
    listed_twins_differ();
    CHECK_INT(gangs(), 0);
    static char inv_yaml[8192], pods[40][1400];
    int cases = 0, placed = 0, unplaced = 0, listed_placed = 0, listed_nodes = 0, listed_twins = 0;
    int taken_back = 0;
    for (int c = 0; c < 400; c++) {
        inventory(inv_yaml, sizeof inv_yaml);
        int npods = 4 + (int)rnd(20);
        long long copies[40];
        for (int i = 0; i < npods; i++) {
            pod(pods[i], sizeof pods[i], i);
            copies[i] = 1 + rnd(rnd(5) == 0 ? 8 : 2);
        }
        gpa_sim_inventory *inv = NULL;
        gpa_error err = {0};
        if (gpa_sim_inventory_read(&inv, inv_yaml, strlen(inv_yaml), "inv", &err) != GPA_OK) {
            fprintf(stderr, "test: %s\n%s\n", err.message, inv_yaml);
            CHECK(false);
            continue;
        }
        gpa_sim *s[2] = {NULL, NULL};
        for (int m = 0; m < 2; m++) {
            CHECK_INT(gpa_sim_new(&s[m], inv, &err), GPA_OK);
            /* every other case with gangs whole: a gang taken back off rebuilds the index */
            gpa_sim_set_gangs_whole(s[m], c % 2 == 1);
            for (int i = 0; i < npods; i++) {
                cJSON *p = cJSON_Parse(pods[i]);
                CHECK(p != NULL);
                char name[32];
                snprintf(name, sizeof name, "t/p%d", i);
                CHECK_INT(gpa_sim_add_pod(s[m], p, name, copies[i], &err), GPA_OK);
                cJSON_Delete(p);
            }
            CHECK_INT(gpa_sim_run(s[m], m ? GPA_SIM_BFD_SCAN : GPA_SIM_BFD, &err), GPA_OK);
        }
        bool same = same_state(s[0], s[1]);
        CHECK(same);
        if (!same) fprintf(stderr, "test: case %d differs; inventory:\n%s\n", c, inv_yaml);
        gpa_sim_totals t;
        gpa_sim_get_totals(&t, s[0]);
        placed += (int)t.placed;
        unplaced += (int)t.unplaced;
        cases++;
        for (size_t i = 0; i < s[0]->n_pods; i++) /* unplaced because their gang was */
            taken_back += s[0]->pods[i].reason_detail &&
                          strstr(s[0]->pods[i].reason_detail, "placed whole or not at all");
        gpa_sim_free(s[0]);
        gpa_sim_free(s[1]);
        /* the same fleet listed node by node: the index over shapes against the full scan */
        char *listed = as_node_list(inv);
        gpa_sim_inventory *linv = NULL;
        CHECK(listed != NULL);
        if (listed &&
            gpa_sim_inventory_read(&linv, listed, strlen(listed), "list", &err) != GPA_OK) {
            fprintf(stderr, "test: %s\n%s\n", err.message, listed);
            CHECK(false);
        }
        for (int m = 0; linv && m < 2; m++) {
            CHECK_INT(gpa_sim_new(&s[m], linv, &err), GPA_OK);
            gpa_sim_set_gangs_whole(s[m], c % 2 == 1);
            for (int i = 0; i < npods; i++) {
                cJSON *p = cJSON_Parse(pods[i]);
                char name[32];
                snprintf(name, sizeof name, "t/p%d", i);
                CHECK_INT(gpa_sim_add_pod(s[m], p, name, copies[i], &err), GPA_OK);
                cJSON_Delete(p);
            }
            CHECK_INT(gpa_sim_run(s[m], m ? GPA_SIM_BFD_SCAN : GPA_SIM_BFD, &err), GPA_OK);
        }
        if (linv) {
            same = same_state(s[0], s[1]);
            CHECK(same);
            if (!same) fprintf(stderr, "test: listed case %d differs:\n%s\n", c, listed);
            gpa_sim_get_totals(&t, s[0]);
            listed_placed += (int)t.placed;
            listed_nodes += (int)linv->n_nodes;
            listed_twins += shared_shapes(s[0]);
            gpa_sim_free(s[0]);
            gpa_sim_free(s[1]);
            gpa_sim_inventory_free(linv);
        }
        free(listed);
        gpa_sim_inventory_free(inv);
    }
    printf("index vs scan: %d cases (half with gangs whole: %d gang pods taken back off), %d "
           "pods placed, %d unplaced, all identical\n",
           cases, taken_back, placed, unplaced);
    CHECK(taken_back > 50);
    printf("listed nodes, index over shapes vs scan: %d nodes (%d of them sharing another's "
           "shape), %d pods placed, all identical\n",
           listed_nodes, listed_twins, listed_placed);
    /* the listed fleets really merge nodes into shapes, and place pods */
    CHECK(listed_twins > listed_nodes / 4 && listed_placed > 1000);
    /* the cases exercise both outcomes */
    CHECK(placed > 1000 && unplaced > 1000);
    return check_done();
}
