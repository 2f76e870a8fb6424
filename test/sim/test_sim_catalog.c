/*
 * test_sim_catalog.c - the simulator against NVIDIA's own MIG data.
 *
 * 1. mig-parted's default config (test/fixtures/nvidia-mig-parted/
 *    deployments_systemd_config-default.yaml, PROVENANCE.md): every config must load for every
 *    catalog model it names, both as written ({profile: count}, from the entry whose
 *    device-filter names the model, else the devices: all entry) and by its name
 *    (`mig: all-1g.10gb`), and the named layout must be exactly the written one.
 * 2. `kubectl get nodes` Lists of GB200, H20 and GH200 144G HBM3e nodes: each is read as its
 *    own model (never a substring's: NVIDIA-GB200 is not a B200) and a pod asking one of its
 *    MIG instances is placed there.
 *
 * Which models a config names comes from the fixture itself: its device-filter IDs and the
 * comment heading each block (configs without a comment continue the block above; those of
 * the models the catalog does not hold, B300/GB300 and a GB200 variant, name none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/mig.h"
#include "gpu_admission/yaml_tree.h"
#include "sim_internal.h"

#define FIXTURE                                                                                    \
    GPA_SIM_TEST_DIR "/../fixtures/nvidia-mig-parted/deployments_systemd_config-default.yaml"

#define M80 "H100-80GB H800-80GB A100-80GB A800-80GB"
#define M40 "A100-40GB A800-40GB"
#define M96 "H100-96GB GH200 H20"
#define NVL "H100-94GB H800-94GB"

/* device-filter IDs of the fixture, as its comments name them (a list's IDs share a group) */
static const struct {
    const char *id, *models;
} devices[] = {
    {"0x294110DE", "GB200"},
    {"0x31C210DE", ""}, /* GB300: not in the catalog */
    {"0x2BB510DE", "RTX-PRO-6000"},
    {"0x290110DE", "B200"},
    {"0x318210DE", ""},
    /* B300 */ {"0x234810DE", "GH200-144GB"},
    {"0x233510DE", "H200-141GB"},
    {"0x233B10DE", "H200-141GB"},
    {"0x232110DE", NVL},
    {"0x233A10DE", NVL},
    {"0x233010DE", M80},
    {"0x233110DE", M80},
    {"0x232210DE", M80},
    {"0x20B210DE", M80},
    {"0x20B510DE", M80},
    {"0x20F310DE", M80},
    {"0x20F510DE", M80},
    {"0x232410DE", M80},
    {"0x20B010DE", M40},
    {"0x20B110DE", M40},
    {"0x20F110DE", M40},
    {"0x20F610DE", M40},
    {"0x20B710DE", "A30-24GB"},
    {"0x234210DE", M96},
    {"0x233D10DE", M96},
    {"0x20B610DE", M96},
    {"0x232910DE", M96},
};

/* devices: all configs, by the comment of their block ("*": every model) */
static const struct {
    const char *config, *models;
} named[] = {
    {"all-disabled", "*"},
    {"all-enabled", "*"},
    {"all-1g.5gb", M40},
    {"all-1g.5gb.me", M40},
    {"all-2g.10gb", M40},
    {"all-3g.20gb", M40},
    {"all-4g.20gb", M40},
    {"all-7g.40gb", M40},
    {"all-1g.24gb.gfx", "RTX-PRO-6000"},
    {"all-1g.24gb.me.all", "RTX-PRO-6000"},
    {"all-1g.24gb-me", "RTX-PRO-6000"},
    {"all-2g.48gb", "RTX-PRO-6000"},
    {"all-2g.48gb.gfx", "RTX-PRO-6000"},
    {"all-2g.48gb.me.all", "RTX-PRO-6000"},
    {"all-2g.48gb-me", "RTX-PRO-6000"},
    {"all-4g.96gb", "RTX-PRO-6000"},
    {"all-4g.96gb.gfx", "RTX-PRO-6000"},
    {"all-1g.10gb.me", M80},
    {"all-1g.20gb", M80},
    {"all-2g.20gb", M80},
    {"all-3g.40gb", M80},
    {"all-4g.40gb", M80},
    {"all-7g.80gb", M80},
    {"all-1g.6gb", "A30-24GB"},
    {"all-1g.6gb.me", "A30-24GB"},
    {"all-2g.12gb", "A30-24GB"},
    {"all-2g.12gb.me", "A30-24GB"},
    {"all-4g.24gb", "A30-24GB"},
    /* "H100 NVL, H800 NVL, GH200"; the RTX PRO 6000 block has no all-1g.24gb of its own */
    {"all-1g.12gb", NVL " GH200"},
    {"all-1g.12gb.me", NVL " GH200"},
    {"all-1g.24gb", NVL " GH200 RTX-PRO-6000"},
    {"all-2g.24gb", NVL " GH200"},
    /* under the same comment, but no Hopper listing has 1g.24gb+me (gpu-operator #903 lists
     * 1g.12gb, 1g.12gb+me, 1g.24gb, 2g.24gb); the RTX PRO 6000 one does (cubecos #312) */
    {"all-1g.24gb.me", "RTX-PRO-6000"},
    {"all-1g.47gb", "GB200"},
    {"all-2g.47gb", "GB200"},
    {"all-3g.93gb", "GB200"},
    {"all-4g.93gb", "GB200"},
    {"all-7g.186gb", "GB200"},
    {"all-3g.47gb", NVL},
    {"all-4g.47gb", NVL},
    {"all-7g.94gb", NVL},
    {"all-3g.48gb", "H100-96GB GH200"},
    {"all-4g.48gb", "H100-96GB GH200"},
    {"all-7g.96gb", "H100-96GB GH200"},
    {"all-1g.18gb", "H200-141GB GH200-144GB"},
    {"all-1g.18gb.me", "H200-141GB GH200-144GB"},
    {"all-1g.23gb", "GB200 B200"},
    {"all-1g.23gb.me", "GB200 B200"},
    {"all-2g.35gb", "H200-141GB"},
    {"all-3g.71gb", "H200-141GB"},
    {"all-4g.71gb", "H200-141GB"},
    {"all-7g.141gb", "H200-141GB"},
    {"all-1g.34gb", ""},    /* B300 */
    {"all-1g.34gb.me", ""}, /* B300 */
    {"all-1g.35gb.me", ""}, /* GB300 */
    {"all-1g.36gb", "GH200-144GB"},
    {"all-1g.45gb", "B200"},
    {"all-1g.67gb", ""},
    {"all-1g.70gb", ""},
    {"all-2g.36gb", "GH200-144GB"},
    {"all-2g.45gb", "B200"},
    {"all-2g.67gb", ""},
    {"all-2g.70gb", ""},
    {"all-3g.72gb", "GH200-144GB"},
    {"all-3g.90gb", "B200"},
    {"all-3g.95gb", ""},
    {"all-3g.135gb", ""},
    {"all-3g.139gb", ""},
    {"all-4g.72gb", "GH200-144GB"},
    {"all-4g.90gb", "B200"},
    {"all-4g.95gb", ""},
    {"all-4g.135gb", ""},
    {"all-4g.139gb", ""},
    {"all-7g.144gb", "GH200-144GB"},
    {"all-7g.180gb", "B200"},
    {"all-7g.189gb", ""},
    {"all-7g.269gb", ""},
    {"all-7g.278gb", ""},
};

static bool word_in(const char *list, const char *w)
{
    if (strcmp(list, "*") == 0) return true;
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

static const char *device_models(const char *id)
{
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (strcmp(devices[i].id, id) == 0) return devices[i].models;
    return NULL;
}

/* Reads a one-group inventory; NULL (and the error printed) when it does not load. */
static gpa_sim_inventory *load(const char *model, const char *mig)
{
    char y[2048];
    snprintf(y, sizeof y,
             "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
             "    - name: g\n      gpus: 1\n      gpu: %s\n      mig: %s\n",
             model, mig);
    gpa_sim_inventory *inv = NULL;
    gpa_error err = {0};
    if (gpa_sim_inventory_read(&inv, y, strlen(y), "inv.yaml", &err) != GPA_OK) {
        fprintf(stderr, "test: %s mig: %s: %s\n", model, mig, err.message);
        return NULL;
    }
    return inv;
}

static int cmp_ptr(const void *a, const void *b)
{
    const void *x = *(const void *const *)a, *y = *(const void *const *)b;
    return x < y ? -1 : x > y;
}

/* The layout as a sorted multiset, to compare the named and the written forms. */
static size_t layout_of(const gpa_mig_profile **out, const gpa_sim_inventory *inv)
{
    size_t n = inv->groups[0].n_fixed;
    memcpy(out, inv->groups[0].fixed, n * sizeof *out);
    qsort(out, n, sizeof *out, cmp_ptr);
    return n;
}

/* One config entry on one model: the written layout and the name must both load, alike. */
static void check_case(const char *config, const gpa_ynode *entry, const char *model)
{
    const gpa_ynode *en = gpa_ymap_get(entry, "mig-enabled");
    const gpa_ynode *devs = gpa_ymap_get(entry, "mig-devices");
    bool enabled = en && strcmp(en->value, "true") == 0;
    char written[512] = "";
    size_t off = 0;
    if (!enabled)
        snprintf(written, sizeof written, "none");
    else if (!devs || devs->n == 0)
        snprintf(written, sizeof written, "all-enabled"); /* the only spelling of zero */
    else {
        off += (size_t)snprintf(written + off, sizeof written - off, "{");
        for (size_t i = 0; i < devs->n; i++)
            off +=
                (size_t)snprintf(written + off, sizeof written - off, "%s\"%s\": %s", i ? ", " : "",
                                 gpa_ymap_key(devs, i)->value, gpa_ymap_val(devs, i)->value);
        snprintf(written + off, sizeof written - off, "}");
    }
    gpa_sim_inventory *a = load(model, written), *b = load(model, config);
    CHECK(a != NULL);
    CHECK(b != NULL);
    if (a && b) {
        const gpa_mig_profile *la[GPA_MIG_MAX_INSTANCES], *lb[GPA_MIG_MAX_INSTANCES];
        size_t na = layout_of(la, a), nb = layout_of(lb, b);
        CHECK_INT(nb, na);
        CHECK(na == nb && memcmp(la, lb, na * sizeof *la) == 0);
        CHECK_INT(b->groups[0].mode, enabled ? GPA_SIM_MIG_FIXED : GPA_SIM_WHOLE);
        if (nb != na)
            fprintf(stderr, "test: %s on %s: %zu vs %zu instances\n", config, model, nb, na);
    }
    gpa_sim_inventory_free(a);
    gpa_sim_inventory_free(b);
}

static size_t cases, configs_seen, configs_without_model;

static void mig_parted(void)
{
    size_t len = 0;
    char *buf = check_slurp(FIXTURE, &len);
    CHECK(buf != NULL);
    if (!buf) return;
    gpa_ystream *ys = NULL;
    int line = 0, col = 0;
    gpa_error perr;
    CHECK_INT(gpa_ystream_parse(&ys, buf, len, &line, &col, &perr), GPA_OK);
    const gpa_ynode *cfgs = ys ? gpa_ymap_get(ys->docs[0], "mig-configs") : NULL;
    CHECK(cfgs != NULL && cfgs->kind == GPA_YN_MAP);
    for (size_t c = 0; cfgs && c < cfgs->n; c++) {
        const char *config = gpa_ymap_key(cfgs, c)->value;
        const gpa_ynode *entries = gpa_ymap_val(cfgs, c);
        configs_seen++;
        const char *fallback = NULL;
        for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
            if (strcmp(named[i].config, config) == 0) fallback = named[i].models;
        size_t models_named = 0;
        for (size_t m = 0; gpa_mig_model_name_at(m); m++) {
            const char *model = gpa_mig_model_name_at(m);
            /* the entry whose device-filter names the model, else the devices: all one */
            const gpa_ynode *use = NULL;
            bool any_filter = false;
            for (size_t e = 0; e < entries->n; e++) {
                const gpa_ynode *f = gpa_ymap_get(entries->kids[e], "device-filter");
                if (!f) continue;
                any_filter = true;
                size_t nf = f->kind == GPA_YN_SEQ ? f->n : 1;
                for (size_t k = 0; k < nf; k++) {
                    const char *id = f->kind == GPA_YN_SEQ ? f->kids[k]->value : f->value;
                    const char *ms = device_models(id);
                    if (!ms)
                        fprintf(stderr, "test: %s: device %s not in the test's table\n", config,
                                id);
                    CHECK(ms != NULL);
                    if (ms && word_in(ms, model)) use = entries->kids[e];
                }
            }
            if (!use && !any_filter && fallback && word_in(fallback, model)) use = entries->kids[0];
            if (!use) continue;
            models_named++;
            cases++;
            check_case(config, use, model);
        }
        if (!fallback && !entries->n) fprintf(stderr, "test: %s has no entries\n", config);
        bool filtered = entries->n && gpa_ymap_get(entries->kids[0], "device-filter");
        if (!filtered && !fallback)
            fprintf(stderr, "test: config %s not in the test's table\n", config);
        CHECK(filtered || fallback != NULL);
        if (!models_named) configs_without_model++;
    }
    gpa_ystream_free(ys);
    free(buf);
    /* the fixture as saved: 81 configs; 16 name only B300/GB300/GB200-189GB models */
    CHECK_INT(configs_seen, 81);
    CHECK_INT(configs_without_model, 16);
    CHECK_INT(cases, 165);
    printf("mig-parted: %zu configs, %zu model x config cases, %zu configs naming no catalog "
           "model\n",
           configs_seen, cases, configs_without_model);

    /* what the old catalog got wrong, one by one */
    gpa_sim_inventory *inv = load("B200", "all-1g.47gb"); /* a GB200 profile */
    CHECK(inv == NULL);
    gpa_sim_inventory_free(inv);
    inv = load("GH200", "all-1g.36gb"); /* a GH200 144G profile, not the 96 GB one's */
    CHECK(inv == NULL);
    gpa_sim_inventory_free(inv);
}

/* A one-node `kubectl get nodes -o json` List; the pod asks one `res`. */
static void node_list(const char *product, int gpus, const char *res, int count,
                      const char *want_model, int64_t want_mem, size_t want_fixed)
{
    char y[4096];
    snprintf(y, sizeof y,
             "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"apiVersion\": \"v1\", "
             "\"kind\": \"Node\", \"metadata\": {\"name\": \"n0\", \"labels\": {"
             "\"nvidia.com/gpu.product\": \"%s\", \"nvidia.com/gpu.count\": \"%d\", "
             "\"nvidia.com/mig.strategy\": \"mixed\"}}, \"status\": {\"allocatable\": {"
             "\"cpu\": \"72\", \"memory\": \"800Gi\", \"pods\": \"110\", \"%s\": \"%d\"}}}]}",
             product, gpus, res, count);
    gpa_sim_inventory *inv = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_sim_inventory_read(&inv, y, strlen(y), "nodes.json", &err), GPA_OK);
    if (!inv) {
        fprintf(stderr, "test: %s: %s\n", product, err.message);
        return;
    }
    const gpa_sim_group *g = &inv->groups[0];
    CHECK(g->model != NULL);
    if (g->model) CHECK_STR(g->model->name, want_model);
    CHECK_INT(g->gpu_mem, want_mem);
    CHECK_INT(g->mode, GPA_SIM_MIG_FIXED);
    CHECK_INT(g->n_fixed, want_fixed);
    gpa_sim *s = NULL;
    CHECK_INT(gpa_sim_new(&s, inv, &err), GPA_OK);
    char pod[512];
    snprintf(pod, sizeof pod,
             "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", "
             "\"namespace\": \"d\"}, \"spec\": {\"containers\": [{\"name\": \"m\", \"image\": "
             "\"x\", \"resources\": {\"limits\": {\"%s\": 1}}}]}}",
             res);
    cJSON *pj = cJSON_Parse(pod);
    CHECK_INT(gpa_sim_add_pod(s, pj, "d/p", (long long)count + 1, &err), GPA_OK);
    CHECK_INT(gpa_sim_run(s, GPA_SIM_BFD, &err), GPA_OK);
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    /* every instance the node offers takes one pod; one more has none left */
    CHECK_INT(t.placed, (size_t)count);
    CHECK_INT(t.unplaced, 1);
    CHECK_INT(t.gpus_used, (size_t)gpus);
    cJSON_Delete(pj);
    gpa_sim_free(s);
    gpa_sim_inventory_free(inv);
}

int main(void)
{
    mig_parted();
    /* the cases: GB200 read as B200 (1g.47gb refused, 180 GB for 186 GB); H20
     * unknown; GH200 144G given the 96 GB profiles */
    node_list("NVIDIA-GB200", 4, "nvidia.com/mig-1g.47gb", 16, "GB200", 186000000000LL, 4);
    node_list("NVIDIA-H20", 8, "nvidia.com/mig-1g.12gb", 56, "H20", 96000000000LL, 7);
    node_list("NVIDIA-GH200-144G-HBM3e", 1, "nvidia.com/mig-1g.36gb", 4, "GH200-144GB",
              144000000000LL, 4);
    node_list("NVIDIA-B200", 8, "nvidia.com/mig-3g.90gb", 16, "B200", 180000000000LL, 2);
    return check_done();
}
