/*
 * inventory.c - the simulator's nodes, from a GPUInventory or a `kubectl get nodes` List.
 *
 * Read through the position-keeping YAML tree and the typed reader (yaml_read.h: the one
 * null and tag rule of every YAML reader) so every error can say file:line:col. GPUInventory groups
 * expand into `count` identical nodes whose GPU Feature Discovery labels are generated the way GFD
 * and the MIG manager would publish them; a node List is read back through those same labels, so
 * both inputs meet the packer as one model.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/clique.h"
#include "gpu_admission/quantity.h"
#include "sim_internal.h"
#include "gpu_admission/yaml_read.h"

/* The reader stops at the first problem: its collector keeps that one error, which becomes
 * the gpa_error the caller prints. */
typedef struct rd {
    const char *src;
    gpa_error *err;
    gpa_yread y;
} rd;

/* The error just reported, as the call's result. */
static int failed(rd *r)
{
    if (r->y.oom || !r->y.n_errs || !r->y.errs[0].text)
        return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
    return gpa_fail(r->err, GPA_EINVAL, "%s", r->y.errs[0].text);
}

__attribute__((format(printf, 3, 4))) static int fail_at(rd *r, const gpa_ynode *n, const char *fmt,
                                                         ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpa_yread_verror_at(&r->y, n ? n->line : 1, n ? n->col : 1, fmt, ap);
    va_end(ap);
    return failed(r);
}

static const char *kind_name(const gpa_ynode *n)
{
    return n->kind == GPA_YN_MAP ? "a mapping" : n->kind == GPA_YN_SEQ ? "a list" : "a scalar";
}

/* Any non-null scalar, as written (`name: 1` is the name "1"). */
static int want_str(const char **out, rd *r, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(&r->y, n)) return failed(r);
    if (!(*out = gpa_yread_text(n)))
        return fail_at(r, n, "%s must be a string, got %s", what,
                       gpa_yread_is_null(n) ? "null" : kind_name(n));
    return GPA_OK;
}

static int want_int(long long *out, rd *r, const gpa_ynode *n, const char *what, long long lo,
                    long long hi)
{
    if (!gpa_yread_tag_ok(&r->y, n)) return failed(r);
    if (gpa_yread_type(n) != GPA_YT_INT) return fail_at(r, n, "%s must be an integer", what);
    errno = 0;
    long long v = strtoll(n->value, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return fail_at(r, n, "%s must be between %lld and %lld, got %s", what, lo, hi, n->value);
    *out = v;
    return GPA_OK;
}

static int want_qty(int64_t *out, rd *r, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(&r->y, n)) return failed(r);
    if (n->kind != GPA_YN_SCALAR) return fail_at(r, n, "%s must be a quantity", what);
    gpa_quantity q;
    gpa_error qe;
    if (gpa_quantity_parse(&q, n->value, n->len, &qe) != GPA_OK || q.milli < 0)
        return fail_at(r, n, "%s: \"%s\" is not a non-negative quantity", what, n->value);
    *out = gpa_quantity_value(&q);
    return GPA_OK;
}

static int want_milli(int64_t *out, rd *r, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(&r->y, n)) return failed(r);
    if (n->kind != GPA_YN_SCALAR) return fail_at(r, n, "%s must be a quantity", what);
    gpa_quantity q;
    gpa_error qe;
    if (gpa_quantity_parse(&q, n->value, n->len, &qe) != GPA_OK || q.milli < 0)
        return fail_at(r, n, "%s: \"%s\" is not a non-negative quantity", what, n->value);
    *out = q.milli;
    return GPA_OK;
}

static int add_kv(gpa_sim_kv **arr, size_t *n, const char *k, const char *v)
{
    gpa_sim_kv *na = realloc(*arr, (*n + 1) * sizeof *na);
    if (!na) return GPA_ENOMEM;
    *arr = na;
    na[*n].key = strdup(k);
    na[*n].value = strdup(v);
    if (!na[*n].key || !na[*n].value) {
        free(na[*n].key);
        free(na[*n].value);
        return GPA_ENOMEM;
    }
    (*n)++;
    return GPA_OK;
}

const char *gpa_sim_label(const gpa_sim_kv *l, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].key, key) == 0) return l[i].value;
    return NULL;
}

static int set_kv(gpa_sim_kv **arr, size_t *n, const char *k, const char *v)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*arr)[i].key, k) == 0) return GPA_OK; /* the user's label wins */
    return add_kv(arr, n, k, v);
}

static int read_labels(gpa_sim_group *g, rd *r, const gpa_ynode *n)
{
    if (gpa_yread_is_null(n)) return GPA_OK;
    if (n->kind != GPA_YN_MAP)
        return fail_at(r, n, "labels must be a mapping, got %s", kind_name(n));
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *v = gpa_ymap_val(n, i);
        if (v->kind != GPA_YN_SCALAR)
            return fail_at(r, v, "label %s must be a string", gpa_ymap_key(n, i)->value);
        if (add_kv(&g->labels, &g->n_labels, gpa_ymap_key(n, i)->value, v->value) != GPA_OK)
            return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
    }
    return GPA_OK;
}

static int read_taints(gpa_sim_group *g, rd *r, const gpa_ynode *n)
{
    if (gpa_yread_is_null(n)) return GPA_OK;
    if (n->kind != GPA_YN_SEQ) return fail_at(r, n, "taints must be a list, got %s", kind_name(n));
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *t = n->kids[i];
        if (t->kind != GPA_YN_MAP) return fail_at(r, t, "a taint must be a mapping");
        const char *key = NULL, *value = "", *effect = NULL;
        for (size_t k = 0; k < t->n; k++) {
            const char *kk = gpa_ymap_key(t, k)->value;
            const gpa_ynode *v = gpa_ymap_val(t, k);
            int rc = GPA_OK;
            if (strcmp(kk, "key") == 0)
                rc = want_str(&key, r, v, "taint key");
            else if (strcmp(kk, "value") == 0)
                rc = gpa_yread_is_null(v) ? GPA_OK : want_str(&value, r, v, "taint value");
            else if (strcmp(kk, "effect") == 0)
                rc = want_str(&effect, r, v, "taint effect");
            else if (strcmp(kk, "timeAdded") == 0)
                continue;
            else
                rc = fail_at(r, gpa_ymap_key(t, k), "unknown taint field %s", kk);
            if (rc) return rc;
        }
        if (!key) return fail_at(r, t, "a taint needs a key");
        if (!effect || (strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") &&
                        strcmp(effect, "NoExecute")))
            return fail_at(r, t, "taint effect must be NoSchedule, PreferNoSchedule or NoExecute");
        gpa_sim_taint *na = realloc(g->taints, (g->n_taints + 1) * sizeof *na);
        if (!na) return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
        g->taints = na;
        na[g->n_taints].key = strdup(key);
        na[g->n_taints].value = strdup(value);
        na[g->n_taints].effect = strdup(effect);
        g->n_taints++;
    }
    return GPA_OK;
}

/* A mig-parted config name the catalog can lay out: all-balanced, all-<profile> (with
 * "+" written "." as mig-parted names them: all-1g.10gb.me); the count of instances, or -1
 * when the name is none of them. all-enabled is MIG mode with no instances (mig-parted's
 * `mig-devices: {}`): GPUs no pod can use until a layout is applied. */
static long named_layout(const gpa_mig_profile **out, const gpa_mig_model *m, const char *name)
{
    if (strcmp(name, "all-enabled") == 0) return 0;
    if (strcmp(name, "all-balanced") == 0) {
        size_t k = gpa_mig_balanced(out, GPA_MIG_MAX_INSTANCES, m);
        return k ? (long)k : -1;
    }
    if (strncmp(name, "all-", 4) != 0) return -1;
    for (size_t i = 0; i < m->n_profiles; i++) {
        const gpa_mig_profile *p = &m->profiles[i];
        const char *suffix = p->resource + strlen("nvidia.com/mig-");
        if (strcmp(name + 4, suffix) != 0) continue;
        size_t k = 0;
        for (; k < (size_t)p->max_instances && k < GPA_MIG_MAX_INSTANCES; k++)
            out[k] = p;
        return (long)k;
    }
    return -1;
}

static int read_mig(gpa_sim_group *g, rd *r, const gpa_ynode *n)
{
    if (n->kind == GPA_YN_SCALAR) {
        if (strcmp(n->value, "none") == 0 || strcmp(n->value, "all-disabled") == 0) {
            g->mode = GPA_SIM_WHOLE;
            return GPA_OK;
        }
        if (!g->model) return fail_at(r, n, "mig needs gpu: a model of the MIG catalog");
        if (strcmp(n->value, "auto") == 0) {
            g->mode = GPA_SIM_MIG_AUTO;
            g->mig_config = strdup("auto");
            return GPA_OK;
        }
        long k = named_layout(g->fixed, g->model, n->value);
        if (k < 0)
            return fail_at(r, n,
                           "mig: \"%s\" is not auto, none, all-enabled, all-balanced or "
                           "all-<profile> of %s",
                           n->value, g->model->name);
        g->n_fixed = (size_t)k;
        g->mode = GPA_SIM_MIG_FIXED;
        g->mig_config = strdup(n->value);
        return GPA_OK;
    }
    if (n->kind != GPA_YN_MAP)
        return fail_at(r, n, "mig must be auto, none, a config name or {profile: count}");
    if (!g->model) return fail_at(r, n, "mig needs gpu: a model of the MIG catalog");
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *k = gpa_ymap_key(n, i), *v = gpa_ymap_val(n, i);
        const gpa_mig_profile *p = gpa_mig_profile_find(g->model, k->value);
        if (!p) return fail_at(r, k, "%s has no MIG profile %s", g->model->name, k->value);
        long long c;
        if (want_int(&c, r, v, "a profile count", 0, GPA_MIG_MAX_INSTANCES)) return r->err->code;
        if (g->n_fixed + (size_t)c > GPA_MIG_MAX_INSTANCES)
            return fail_at(r, v, "more than %d MIG instances on one GPU", GPA_MIG_MAX_INSTANCES);
        for (long long j = 0; j < c; j++)
            g->fixed[g->n_fixed++] = p;
    }
    if (!g->n_fixed) return fail_at(r, n, "a fixed MIG layout needs at least one instance");
    if (!gpa_mig_layout_valid(NULL, g->model, g->fixed, g->n_fixed))
        return fail_at(r, n,
                       "this MIG layout does not fit one %s (memory slices, compute slices or "
                       "placement: see docs/policy.md, the MIG catalog)",
                       g->model->name);
    g->mode = GPA_SIM_MIG_FIXED;
    g->mig_config = strdup("custom");
    return GPA_OK;
}

/* levels: [{label, nodes}], narrowest first: the node labels of racks and blocks, so gangs
 * placed by topology level (docs/policy.md) are simulated as the scheduler places them. */
static int read_levels(gpa_sim_group *g, rd *r, const gpa_ynode *n)
{
    if (n->kind != GPA_YN_SEQ) return fail_at(r, n, "levels must be a list of {label, nodes}");
    if (n->n > GPA_SIM_MAX_LEVELS) return fail_at(r, n, "at most %d levels", GPA_SIM_MAX_LEVELS);
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *m = n->kids[i], *label = NULL, *nodes = NULL;
        if (m->kind != GPA_YN_MAP) return fail_at(r, m, "a level must be a mapping {label, nodes}");
        for (size_t j = 0; j < m->n; j++) {
            const char *k = gpa_ymap_key(m, j)->value;
            if (strcmp(k, "label") == 0)
                label = gpa_ymap_val(m, j);
            else if (strcmp(k, "nodes") == 0)
                nodes = gpa_ymap_val(m, j);
            else
                return fail_at(r, gpa_ymap_key(m, j), "unknown level field %s (label, nodes)", k);
        }
        if (!label) return fail_at(r, m, "a level needs label (the node label of the domain)");
        if (!nodes) return fail_at(r, m, "a level needs nodes (nodes per domain)");
        const char *s;
        long long c;
        if (want_str(&s, r, label, "label") ||
            want_int(&c, r, nodes, "nodes", 1, GPA_SIM_MAX_NODES))
            return r->err->code;
        for (size_t j = 0; j < g->n_levels; j++)
            if (strcmp(g->levels[j].label, s) == 0)
                return fail_at(r, label, "level label %s is repeated", s);
        if (g->n_levels && c <= g->levels[g->n_levels - 1].nodes)
            return fail_at(r, nodes,
                           "level %s has %lld nodes, not more than the level before it (%lld): "
                           "levels go narrowest first",
                           s, c, g->levels[g->n_levels - 1].nodes);
        if (!(g->levels[g->n_levels].label = strdup(s))) return GPA_ENOMEM;
        g->levels[g->n_levels++].nodes = c;
    }
    return GPA_OK;
}

static int read_group(gpa_sim_group *g, rd *r, const gpa_ynode *n)
{
    if (n->kind != GPA_YN_MAP) return fail_at(r, n, "a node group must be a mapping");
    g->count = 1;
    g->cpu_milli = g->mem = -1;
    g->max_pods = -1;
    const gpa_ynode *mig = NULL, *ts = NULL, *name = NULL, *gpus = NULL;
    for (size_t i = 0; i < n->n; i++) {
        const char *k = gpa_ymap_key(n, i)->value;
        const gpa_ynode *v = gpa_ymap_val(n, i);
        int rc = GPA_OK;
        long long ll;
        const char *s;
        if (strcmp(k, "name") == 0) {
            name = v;
            rc = want_str(&s, r, v, "name");
            if (!rc) g->name = strdup(s);
        } else if (strcmp(k, "count") == 0) {
            rc = want_int(&g->count, r, v, "count", 0, GPA_SIM_MAX_NODES);
        } else if (strcmp(k, "gpus") == 0) {
            gpus = v;
            rc = want_int(&ll, r, v, "gpus", 0, GPA_SIM_MAX_GPUS_PER_NODE);
            g->gpus = (int)ll;
        } else if (strcmp(k, "gpu") == 0) {
            rc = want_str(&s, r, v, "gpu");
            if (!rc && !(g->model = gpa_mig_model_find(s))) {
                char list[512] = "";
                size_t off = 0;
                for (size_t m = 0; gpa_mig_model_name_at(m) && off < sizeof list; m++)
                    off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", m ? ", " : "",
                                            gpa_mig_model_name_at(m));
                rc = fail_at(r, v,
                             "unknown GPU model %s (the MIG catalog has: %s; for other "
                             "cards leave gpu out and set gpuMemory)",
                             s, list);
            }
            if (!rc && !g->gpu_mem)
                g->gpu_mem = g->model->profiles[g->model->n_profiles - 1].mem_bytes;
        } else if (strcmp(k, "gpuMemory") == 0) {
            rc = want_qty(&g->gpu_mem, r, v, "gpuMemory");
        } else if (strcmp(k, "labels") == 0) {
            rc = read_labels(g, r, v);
        } else if (strcmp(k, "taints") == 0) {
            rc = read_taints(g, r, v);
        } else if (strcmp(k, "mig") == 0) {
            mig = v;
        } else if (strcmp(k, "timeSlicing") == 0) {
            ts = v;
        } else if (strcmp(k, "nvlinkIslandSize") == 0) {
            rc = want_int(&ll, r, v, "nvlinkIslandSize", 1, 100000);
            g->island = (int)ll;
        } else if (strcmp(k, "cpu") == 0) {
            rc = want_milli(&g->cpu_milli, r, v, "cpu");
        } else if (strcmp(k, "memory") == 0) {
            rc = want_qty(&g->mem, r, v, "memory");
        } else if (strcmp(k, "pods") == 0) {
            rc = want_int(&g->max_pods, r, v, "pods", 0, 100000);
        } else if (strcmp(k, "levels") == 0) {
            rc = read_levels(g, r, v);
        } else {
            rc = fail_at(r, gpa_ymap_key(n, i),
                         "unknown node group field %s (name, count, gpus, gpu, gpuMemory, labels, "
                         "taints, mig, timeSlicing, nvlinkIslandSize, levels, cpu, memory, pods)",
                         k);
        }
        if (rc) return rc;
    }
    if (!name) return fail_at(r, n, "a node group needs a name");
    if (!gpus) return fail_at(r, n, "node group %s needs gpus (GPUs per node)", g->name);
    if (mig && ts)
        return fail_at(r, ts, "node group %s: mig and timeSlicing exclude each other", g->name);
    if (mig && read_mig(g, r, mig)) return r->err->code;
    if (ts) {
        if (ts->kind != GPA_YN_MAP) return fail_at(r, ts, "timeSlicing must be a mapping");
        g->mode = GPA_SIM_TS;
        g->replicas = 0;
        for (size_t i = 0; i < ts->n; i++) {
            const char *k = gpa_ymap_key(ts, i)->value;
            const gpa_ynode *v = gpa_ymap_val(ts, i);
            long long ll;
            const char *s;
            if (strcmp(k, "replicas") == 0) {
                if (want_int(&ll, r, v, "replicas", 1, GPA_SIM_MAX_REPLICAS)) return r->err->code;
                g->replicas = (int)ll;
            } else if (strcmp(k, "resource") == 0) {
                if (want_str(&s, r, v, "resource")) return r->err->code;
                free(g->ts_resource);
                g->ts_resource = strdup(s);
            } else {
                return fail_at(r, gpa_ymap_key(ts, i), "unknown timeSlicing field %s", k);
            }
        }
        if (!g->replicas) return fail_at(r, ts, "timeSlicing needs replicas");
    }
    if (g->mode == GPA_SIM_TS && !g->ts_resource) g->ts_resource = strdup("nvidia.com/gpu.shared");
    return GPA_OK;
}

static char *fmt_dup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_dup(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}

/* The labels GFD, the MIG manager and the time-slicing config would publish on node `idx`
 * (0-based within its group) of g; the group's own labels win over generated ones. */
static int node_labels(gpa_sim_node_def *nd, const gpa_sim_group *g, long long idx)
{
    char v[128];
    for (size_t i = 0; i < g->n_labels; i++)
        if (add_kv(&nd->labels, &nd->n_labels, g->labels[i].key, g->labels[i].value))
            return GPA_ENOMEM;
    int rc = set_kv(&nd->labels, &nd->n_labels, "kubernetes.io/hostname", nd->name);
    snprintf(v, sizeof v, "%d", g->gpus);
    rc |= set_kv(&nd->labels, &nd->n_labels, "nvidia.com/gpu.count", v);
    if (g->model) {
        /* the value GFD writes: the NVML name with spaces written '-' (the catalog's first
         * product of the model, docs/simulate.md's table), "-SHARED" appended when the cards
         * are time-sliced under their own name (renameByDefault: false); NVIDIA-<model> only
         * for models no public label was found for */
        const char *prod =
            g->model->products && g->model->products[0] ? g->model->products[0] : NULL;
        bool shared = g->mode == GPA_SIM_TS && g->ts_resource &&
                      strcmp(g->ts_resource, "nvidia.com/gpu") == 0;
        if (prod)
            snprintf(v, sizeof v, "%s%s", prod, shared ? "-SHARED" : "");
        else
            snprintf(v, sizeof v, "NVIDIA-%s%s", g->model->name, shared ? "-SHARED" : "");
        rc |= set_kv(&nd->labels, &nd->n_labels, "nvidia.com/gpu.product", v);
    }
    snprintf(v, sizeof v, "%d", g->mode == GPA_SIM_TS ? g->replicas : 1);
    rc |= set_kv(&nd->labels, &nd->n_labels, "nvidia.com/gpu.replicas", v);
    rc |= set_kv(&nd->labels, &nd->n_labels, "nvidia.com/gpu.sharing-strategy",
                 g->mode == GPA_SIM_TS ? "time-slicing" : "none");
    if (g->model)
        rc |= set_kv(&nd->labels, &nd->n_labels, "nvidia.com/mig.config",
                     g->mig_config ? g->mig_config : "all-disabled");
    if (g->mode == GPA_SIM_MIG_AUTO || g->mode == GPA_SIM_MIG_FIXED)
        rc |= set_kv(&nd->labels, &nd->n_labels, "nvidia.com/mig.strategy", "mixed");
    if (g->island) {
        /* An island wider than a node spans island/gpus whole nodes; a narrower one splits
         * the node, which the packer handles per GPU. */
        long long per = g->gpus > 0 && g->island > g->gpus ? g->island / g->gpus : 1;
        /* the value GFD writes, <clusterUUID>.<cliqueId> (NVIDIA/k8s-device-plugin
         * internal/lm/imex.go): one cluster UUID per group, derived from its name, so runs
         * are reproducible and two groups never share a domain */
        gpa_clique_format(v, sizeof v, g->name, (unsigned long)(idx / per));
        rc |= set_kv(&nd->labels, &nd->n_labels, GPA_LABEL_CLIQUE, v);
        snprintf(v, sizeof v, "%d", g->island);
        rc |= set_kv(&nd->labels, &nd->n_labels, "gpu-admission.io/nvlink-island-size", v);
    }
    for (size_t l = 0; l < g->n_levels; l++) {
        snprintf(v, sizeof v, "%s-%lld", g->name, idx / g->levels[l].nodes);
        rc |= set_kv(&nd->labels, &nd->n_labels, g->levels[l].label, v);
    }
    return rc ? GPA_ENOMEM : GPA_OK;
}

static int expand(gpa_sim_inventory *inv, rd *r, const gpa_ynode *at)
{
    size_t total = 0;
    for (size_t i = 0; i < inv->n_groups; i++)
        total += (size_t)inv->groups[i].count;
    if (total > GPA_SIM_MAX_NODES)
        return fail_at(r, at, "%zu nodes in all exceed the simulator's limit of %d", total,
                       GPA_SIM_MAX_NODES);
    inv->nodes = calloc(total ? total : 1, sizeof *inv->nodes);
    if (!inv->nodes) return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
    for (size_t i = 0; i < inv->n_groups; i++) {
        const gpa_sim_group *g = &inv->groups[i];
        for (long long k = 0; k < g->count; k++) {
            gpa_sim_node_def *nd = &inv->nodes[inv->n_nodes++];
            nd->group = i;
            nd->name = g->count == 1 && g->n_labels &&
                               gpa_sim_label(g->labels, g->n_labels, "kubernetes.io/hostname")
                           ? strdup(gpa_sim_label(g->labels, g->n_labels, "kubernetes.io/hostname"))
                           : fmt_dup("%s-%lld", g->name, k);
            if (!nd->name || node_labels(nd, g, k))
                return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
            inv->total_gpus += (size_t)g->gpus;
        }
    }
    return GPA_OK;
}

static int add_group(gpa_sim_inventory *inv, gpa_sim_group **out, rd *r)
{
    gpa_sim_group *ng = realloc(inv->groups, (inv->n_groups + 1) * sizeof *ng);
    if (!ng) return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
    inv->groups = ng;
    *out = memset(&ng[inv->n_groups++], 0, sizeof *ng);
    return GPA_OK;
}

static int read_inventory(gpa_sim_inventory *inv, rd *r, const gpa_ynode *doc)
{
    const gpa_ynode *spec = gpa_ymap_get(doc, "spec");
    if (!spec || spec->kind != GPA_YN_MAP)
        return fail_at(r, spec ? spec : doc, "GPUInventory needs spec: {nodeGroups: [...]}");
    for (size_t i = 0; i < spec->n; i++)
        if (strcmp(gpa_ymap_key(spec, i)->value, "nodeGroups") != 0)
            return fail_at(r, gpa_ymap_key(spec, i), "unknown spec field %s (nodeGroups)",
                           gpa_ymap_key(spec, i)->value);
    const gpa_ynode *groups = gpa_ymap_get(spec, "nodeGroups");
    if (!groups || groups->kind != GPA_YN_SEQ)
        return fail_at(r, groups ? groups : spec, "spec.nodeGroups must be a list");
    for (size_t i = 0; i < groups->n; i++) {
        gpa_sim_group *g = NULL;
        if (add_group(inv, &g, r) || read_group(g, r, groups->kids[i])) return r->err->code;
        for (size_t k = 0; k + 1 < inv->n_groups; k++)
            if (strcmp(inv->groups[k].name, g->name) == 0)
                return fail_at(r, groups->kids[i], "duplicate node group name %s", g->name);
    }
    return expand(inv, r, groups);
}

static long long label_int(const gpa_sim_kv *l, size_t n, const char *key, long long dflt)
{
    const char *v = gpa_sim_label(l, n, key);
    if (!v) return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    return errno || *end || end == v ? dflt : x;
}

static int read_node(gpa_sim_inventory *inv, rd *r, const gpa_ynode *item)
{
    if (item->kind != GPA_YN_MAP) return fail_at(r, item, "a List item must be a mapping");
    const gpa_ynode *kind = gpa_ymap_get(item, "kind");
    if (kind && kind->kind == GPA_YN_SCALAR && strcmp(kind->value, "Node") != 0)
        return fail_at(r, kind, "expected kind Node in the List, got %s", kind->value);
    const gpa_ynode *meta = gpa_ymap_get(item, "metadata");
    const gpa_ynode *name = gpa_ymap_get(meta, "name");
    const char *nm;
    if (!name) return fail_at(r, item, "a Node needs metadata.name");
    if (want_str(&nm, r, name, "metadata.name")) return r->err->code;
    gpa_sim_group *g = NULL; /* add_group sets it; Release (-O3) cannot tell */
    if (add_group(inv, &g, r)) return r->err->code;
    g->count = 1;
    g->cpu_milli = g->mem = -1;
    g->max_pods = -1;
    if (read_labels(g, r, gpa_ymap_get(meta, "labels"))) return r->err->code;
    if (!gpa_sim_label(g->labels, g->n_labels, "kubernetes.io/hostname") &&
        add_kv(&g->labels, &g->n_labels, "kubernetes.io/hostname", nm))
        return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
    const gpa_ynode *spec = gpa_ymap_get(item, "spec");
    if (read_taints(g, r, gpa_ymap_get(spec, "taints"))) return r->err->code;
    const gpa_ynode *status = gpa_ymap_get(item, "status");
    const gpa_ynode *alloc = gpa_ymap_get(status, "allocatable");
    if (!alloc) alloc = gpa_ymap_get(status, "capacity");
    const char *product = gpa_sim_label(g->labels, g->n_labels, "nvidia.com/gpu.product");
    g->model = gpa_mig_model_for_product(product);
    /* The group name reported per node: the product (nodes of one product form one group in
     * the per-group figures). */
    g->name = strdup(product ? product : "nodes");
    long long gpus = label_int(g->labels, g->n_labels, "nvidia.com/gpu.count", -1);
    long long replicas = label_int(g->labels, g->n_labels, "nvidia.com/gpu.replicas", 1);
    const char *strategy = gpa_sim_label(g->labels, g->n_labels, "nvidia.com/gpu.sharing-strategy");
    long long mem_mib = label_int(g->labels, g->n_labels, "nvidia.com/gpu.memory", 0);
    if (mem_mib > 0)
        g->gpu_mem = mem_mib * 1048576LL;
    else if (g->model)
        g->gpu_mem = g->model->profiles[g->model->n_profiles - 1].mem_bytes;
    if (alloc && alloc->kind == GPA_YN_MAP) {
        for (size_t i = 0; i < alloc->n; i++) {
            const char *k = gpa_ymap_key(alloc, i)->value;
            const gpa_ynode *v = gpa_ymap_val(alloc, i);
            if (strcmp(k, "cpu") == 0) {
                if (want_milli(&g->cpu_milli, r, v, "cpu")) return r->err->code;
            } else if (strcmp(k, "memory") == 0) {
                if (want_qty(&g->mem, r, v, "memory")) return r->err->code;
            } else if (strcmp(k, "pods") == 0) {
                int64_t pods;
                if (want_qty(&pods, r, v, "pods")) return r->err->code;
                g->max_pods = pods;
            } else if (strncmp(k, "nvidia.com/mig-", 15) == 0) {
                int64_t c;
                if (want_qty(&c, r, v, k)) return r->err->code;
                if (!g->model)
                    return fail_at(r, v,
                                   "%s on a node whose gpu.product (%s) is not "
                                   "a MIG catalog model",
                                   k, product ? product : "none");
                const gpa_mig_profile *p = NULL;
                for (size_t m = 0; m < g->model->n_profiles; m++)
                    if (strcmp(g->model->profiles[m].resource, k) == 0) p = &g->model->profiles[m];
                if (!p) return fail_at(r, v, "%s has no MIG profile for %s", g->model->name, k);
                if (gpus <= 0)
                    return fail_at(r, item, "a MIG node needs the nvidia.com/gpu.count label");
                if (c % gpus)
                    return fail_at(r, v,
                                   "%s: %lld instances do not divide over %lld GPUs (the "
                                   "simulator gives every GPU of a node one layout)",
                                   k, (long long)c, gpus);
                for (int64_t j = 0; j < c / gpus; j++) {
                    if (g->n_fixed >= GPA_MIG_MAX_INSTANCES)
                        return fail_at(r, v, "more than %d MIG instances per GPU",
                                       GPA_MIG_MAX_INSTANCES);
                    g->fixed[g->n_fixed++] = p;
                }
            } else if (strcmp(k, "nvidia.com/gpu") == 0 ||
                       strcmp(k, "nvidia.com/gpu.shared") == 0) {
                int64_t c;
                if (want_qty(&c, r, v, k)) return r->err->code;
                if (c > 0 && strategy && strcmp(strategy, "time-slicing") == 0 && replicas > 1) {
                    g->mode = GPA_SIM_TS;
                    g->replicas =
                        (int)(replicas > GPA_SIM_MAX_REPLICAS ? GPA_SIM_MAX_REPLICAS : replicas);
                    free(g->ts_resource);
                    g->ts_resource = strdup(k);
                    if (gpus < 0) gpus = c / replicas;
                } else if (c > 0 && gpus < 0) {
                    gpus = c;
                }
            }
        }
    }
    if (gpus < 0) gpus = 0;
    if (gpus > GPA_SIM_MAX_GPUS_PER_NODE)
        return fail_at(r, item, "node %s: %lld GPUs exceed the limit of %d", nm, gpus,
                       GPA_SIM_MAX_GPUS_PER_NODE);
    g->gpus = (int)gpus;
    if (g->n_fixed) {
        if (!gpa_mig_layout_valid(NULL, g->model, g->fixed, g->n_fixed))
            return fail_at(r, item, "node %s: its MIG devices do not form a valid %s layout", nm,
                           g->model->name);
        g->mode = GPA_SIM_MIG_FIXED;
        const char *cfg = gpa_sim_label(g->labels, g->n_labels, "nvidia.com/mig.config");
        g->mig_config = strdup(cfg ? cfg : "custom");
    }
    gpa_sim_node_def nd = {.group = inv->n_groups - 1, .name = strdup(nm)};
    gpa_sim_node_def *nn = realloc(inv->nodes, (inv->n_nodes + 1) * sizeof *nn);
    if (!nn || !nd.name) {
        free(nd.name);
        return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
    }
    inv->nodes = nn;
    for (size_t i = 0; i < g->n_labels; i++)
        if (add_kv(&nd.labels, &nd.n_labels, g->labels[i].key, g->labels[i].value)) {
            inv->nodes[inv->n_nodes++] = nd;
            return gpa_fail(r->err, GPA_ENOMEM, "out of memory");
        }
    inv->nodes[inv->n_nodes++] = nd;
    inv->total_gpus += (size_t)g->gpus;
    if (inv->n_nodes > GPA_SIM_MAX_NODES)
        return fail_at(r, item, "more than %d nodes", GPA_SIM_MAX_NODES);
    return GPA_OK;
}

int gpa_sim_inventory_read(gpa_sim_inventory **out, const char *buf, size_t len, const char *source,
                           gpa_error *err)
{
    *out = NULL;
    rd r = {.src = source ? source : "inventory", .err = err};
    gpa_yread_init(&r.y, r.src, 1, false);
    gpa_ystream *ys = NULL;
    int line = 0, col = 0;
    gpa_error perr;
    int rc = gpa_ystream_parse(&ys, buf, len, &line, &col, &perr);
    if (rc != GPA_OK) return gpa_fail(err, rc, "%s:%d:%d: %s", r.src, line, col, perr.message);
    if (ys->n_dups) {
        rc = gpa_fail(err, GPA_EPARSE, "%s:%d:%d: duplicate key %s (first at line %d)", r.src,
                      ys->dups[0].line, ys->dups[0].col, ys->dups[0].key, ys->dups[0].first_line);
        gpa_ystream_free(ys);
        return rc;
    }
    gpa_sim_inventory *inv = calloc(1, sizeof *inv);
    if (!inv) {
        gpa_ystream_free(ys);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    rc = GPA_OK;
    size_t docs = 0;
    for (size_t d = 0; d < ys->n_docs && rc == GPA_OK; d++) {
        const gpa_ynode *doc = ys->docs[d];
        if (!doc) continue;
        if (docs++) {
            rc = fail_at(&r, doc, "one inventory per file");
            break;
        }
        if (doc->kind != GPA_YN_MAP) {
            rc = fail_at(&r, doc, "expected a GPUInventory or a List of Nodes, got %s",
                         kind_name(doc));
            break;
        }
        const gpa_ynode *kind = gpa_ymap_get(doc, "kind");
        const char *k = kind && kind->kind == GPA_YN_SCALAR ? kind->value : "";
        if (strcmp(k, "GPUInventory") == 0) {
            const gpa_ynode *av = gpa_ymap_get(doc, "apiVersion");
            if (!av || av->kind != GPA_YN_SCALAR ||
                strcmp(av->value, "gpu-admission.io/v1alpha1") != 0)
                rc = fail_at(&r, av ? av : doc,
                             "GPUInventory needs apiVersion: "
                             "gpu-admission.io/v1alpha1");
            else
                rc = read_inventory(inv, &r, doc);
        } else if (strcmp(k, "List") == 0 || strcmp(k, "NodeList") == 0) {
            const gpa_ynode *items = gpa_ymap_get(doc, "items");
            if (!items || items->kind != GPA_YN_SEQ) {
                rc = fail_at(&r, doc, "a List needs items");
                break;
            }
            for (size_t i = 0; i < items->n && rc == GPA_OK; i++)
                rc = read_node(inv, &r, items->kids[i]);
        } else {
            rc = fail_at(&r, kind ? kind : doc,
                         "expected kind GPUInventory or a List of Nodes (kubectl get nodes -o "
                         "json), got %s",
                         *k ? k : "no kind");
        }
    }
    if (rc == GPA_OK && !docs) rc = fail_at(&r, NULL, "empty inventory");
    gpa_ystream_free(ys);
    gpa_yread_free(&r.y);
    if (rc != GPA_OK) {
        gpa_sim_inventory_free(inv);
        return rc;
    }
    *out = inv;
    return GPA_OK;
}

static void free_kvs(gpa_sim_kv *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(l[i].key);
        free(l[i].value);
    }
    free(l);
}

void gpa_sim_inventory_free(gpa_sim_inventory *inv)
{
    if (!inv) return;
    for (size_t i = 0; i < inv->n_groups; i++) {
        gpa_sim_group *g = &inv->groups[i];
        free(g->name);
        free(g->mig_config);
        free(g->ts_resource);
        free_kvs(g->labels, g->n_labels);
        for (size_t l = 0; l < g->n_levels; l++)
            free(g->levels[l].label);
        for (size_t t = 0; t < g->n_taints; t++) {
            free(g->taints[t].key);
            free(g->taints[t].value);
            free(g->taints[t].effect);
        }
        free(g->taints);
    }
    free(inv->groups);
    for (size_t i = 0; i < inv->n_nodes; i++) {
        free(inv->nodes[i].name);
        free_kvs(inv->nodes[i].labels, inv->nodes[i].n_labels);
    }
    free(inv->nodes);
    free(inv);
}

size_t gpa_sim_inventory_nodes(const gpa_sim_inventory *inv)
{
    return inv ? inv->n_nodes : 0;
}

size_t gpa_sim_inventory_gpus(const gpa_sim_inventory *inv)
{
    return inv ? inv->total_gpus : 0;
}
