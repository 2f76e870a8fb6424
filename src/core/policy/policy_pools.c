/*
 * policy_pools.c - one `spec.pools[]` entry -> gpa_pool: node selector, tolerations, sharing
 * mode and its block (mig / timeSlicing / mps), runtime class, topology. Checks everything a
 * pool can get wrong on its own; cross-file checks (duplicate names) are in policy_load.c.
 * Must never leave a pool half-valid in the model: the caller discards the whole set on any
 * recorded error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/k8s_names.h"
#include "policy/policy_dra.h"
#include "policy/policy_loader.h"

static const char *const sharing_names[] = {"exclusive", "mig", "time-slicing", "mps", NULL};

/* ---- tolerations ---- */

static bool load_toleration(loader *L, const gpa_ynode *n, gpa_toleration *t)
{
    static const char *const f[] = {"key",    "operator",          "value",
                                    "effect", "tolerationSeconds", NULL};
    static const char *const ops[] = {"Exists", "Equal", NULL};
    static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
    const gpa_ynode *v[5];
    if (!gpa_yread_want_map(&L->r, n, "toleration")) return false;
    gpa_yread_fields(&L->r, n, "toleration", f, v);
    bool ok = true;
    const char *why;
    if (v[0] && !gpa_yread_is_null(v[0])) {
        if (!gpa_yread_str(&L->r, v[0], "toleration key", &t->key))
            ok = false;
        else if (t->key[0] && (why = gpa_k8s_qualified_name(t->key)) != NULL) {
            gpa_yread_error(&L->r, v[0], "toleration key \"%.80s\" %s", t->key, why);
            ok = false;
        }
    }
    if (v[1] && !gpa_yread_is_null(v[1])) {
        int op = gpa_yread_enum(&L->r, v[1], "toleration operator", ops);
        if (op < 0)
            ok = false;
        else
            t->op = (char *)ops[op];
    }
    if (v[2] && !gpa_yread_is_null(v[2])) {
        if (!gpa_yread_str(&L->r, v[2], "toleration value", &t->value))
            ok = false;
        else if ((why = gpa_k8s_label_value(t->value)) != NULL) {
            gpa_yread_error(&L->r, v[2], "toleration value \"%.80s\" %s", t->value, why);
            ok = false;
        }
    }
    if (v[3] && !gpa_yread_is_null(v[3])) {
        /* empty effect = all effects, as in the Kubernetes API */
        char *e = NULL;
        if (!gpa_yread_str(&L->r, v[3], "toleration effect", &e)) {
            ok = false;
        } else if (e[0]) {
            int ei = gpa_yread_enum(&L->r, v[3], "toleration effect", effects);
            if (ei < 0)
                ok = false;
            else
                t->effect = (char *)effects[ei];
        } else {
            t->effect = e;
        }
    }
    if (v[4] && !gpa_yread_is_null(v[4])) {
        if (!gpa_yread_int(&L->r, v[4], "tolerationSeconds", INT64_MIN / 2, INT64_MAX / 2,
                           &t->seconds))
            ok = false;
        else
            t->has_seconds = true;
    }
    if (!ok) return false;
    bool exists = t->op && strcmp(t->op, "Exists") == 0;
    if (exists && t->value && t->value[0]) {
        gpa_yread_error(&L->r, v[2], "toleration with operator Exists must not have a value");
        return false;
    }
    if ((!t->key || !t->key[0]) && !exists) {
        gpa_yread_error(&L->r, n, "a toleration without a key must use operator: Exists");
        return false;
    }
    if (t->has_seconds && (!t->effect || strcmp(t->effect, "NoExecute") != 0)) {
        gpa_yread_error(&L->r, v[4], "tolerationSeconds is only valid with effect: NoExecute");
        return false;
    }
    /* own copies of the static enum strings, so every pointer lives in the arena */
    if (t->op && !(t->op = gpa_arena_strdup(L->arena, t->op))) L->r.oom = true;
    if (t->effect && !(t->effect = gpa_arena_strdup(L->arena, t->effect))) L->r.oom = true;
    return true;
}

static void load_tolerations(loader *L, const gpa_ynode *n, gpa_pool *p)
{
    if (!gpa_yread_want_seq(&L->r, n, "tolerations")) return;
    p->tolerations = gpa_arena_array(L->arena, n->n, sizeof *p->tolerations);
    if (!p->tolerations) {
        L->r.oom = true;
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        gpa_toleration t = {0};
        if (load_toleration(L, n->kids[i], &t)) p->tolerations[p->n_tolerations++] = t;
    }
}

/* ---- mig ---- */

static int cmp_profile(const void *a, const void *b)
{
    const gpa_mig_profile *x = *(const gpa_mig_profile *const *)a;
    const gpa_mig_profile *y = *(const gpa_mig_profile *const *)b;
    if (x->mem_bytes != y->mem_bytes) return x->mem_bytes < y->mem_bytes ? -1 : 1;
    if (x->slices != y->slices) return x->slices < y->slices ? -1 : 1;
    /* same size and slices (1g.10gb vs 1g.10gb+me): the plain one first */
    return strcmp(x->name, y->name);
}

static void model_profiles(char *buf, size_t cap, const gpa_mig_model *m)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < m->n_profiles && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", m->profiles[i].name);
}

static void load_mig(loader *L, const gpa_ynode *n, gpa_pool *p, const gpa_ynode *pool_node)
{
    static const char *const f[] = {"strategy", "gpu", "profiles", "product", NULL};
    static const char *const strategies[] = {"mixed", "single", NULL};
    const gpa_ynode *v[4];
    if (!gpa_yread_want_map(&L->r, n, "mig")) return;
    gpa_yread_fields(&L->r, n, "mig", f, v);
    p->mig_strategy = GPA_MIG_MIXED;
    if (v[0] && !gpa_yread_is_null(v[0])) {
        int s = gpa_yread_enum(&L->r, v[0], "mig.strategy", strategies);
        if (s >= 0) p->mig_strategy = (gpa_mig_strategy)s;
    }
    char *gpu = NULL;
    if (!v[1] || gpa_yread_is_null(v[1])) {
        gpa_yread_error(&L->r, n,
                        "mig.gpu is required: the GPU model in the MIG catalog (e.g. A100-80GB)");
    } else if (gpa_yread_str(&L->r, v[1], "mig.gpu", &gpu)) {
        p->mig_model = gpa_mig_model_find(gpu);
        if (!p->mig_model) {
            char list[256];
            size_t off = 0;
            list[0] = '\0';
            for (size_t i = 0; gpa_mig_model_name_at(i) && off < sizeof list; i++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "",
                                        gpa_mig_model_name_at(i));
            gpa_yread_error(&L->r, v[1], "unknown MIG GPU model \"%.80s\" (known: %s)", gpu, list);
        }
    }
    bool single = p->mig_strategy == GPA_MIG_SINGLE;
    if (v[3] && !gpa_yread_is_null(v[3])) {
        const char *why;
        if (!single) {
            gpa_yread_error(&L->r, v[3], "mig.product is only used with strategy: single");
        } else if (gpa_yread_str(&L->r, v[3], "mig.product", &p->mig_product)) {
            if ((why = gpa_k8s_label_value(p->mig_product)) != NULL || !p->mig_product[0]) {
                gpa_yread_error(&L->r, v[3],
                                "mig.product \"%.80s\" is not a valid node label value: %s",
                                p->mig_product, why ? why : "must not be empty");
                p->mig_product = NULL;
            }
        }
    } else if (single) {
        gpa_yread_error(
            &L->r, n,
            "mig.product is required with strategy: single (the gpu.product label base, e.g. "
            "NVIDIA-A100-SXM4-80GB)");
    }
    if (!p->mig_model) return;
    const gpa_mig_model *m = p->mig_model;
    char known[256];
    model_profiles(known, sizeof known, m);
    const gpa_mig_profile **prof = gpa_arena_array(L->arena, m->n_profiles, sizeof *prof);
    if (!prof) {
        L->r.oom = true;
        return;
    }
    size_t np = 0;
    if (v[2] && !gpa_yread_is_null(v[2])) {
        gpa_strlist names;
        gpa_srcpos *pos = NULL;
        gpa_policy_strlist(L, v[2], "mig.profiles", false, NULL, "MIG profile", &names, &pos);
        for (size_t i = 0; i < names.n; i++) {
            const gpa_mig_profile *pr = gpa_mig_profile_find(m, names.items[i]);
            if (!pr) {
                gpa_yread_error_at(&L->r, pos[i].line, pos[i].col,
                                   "GPU model %s has no MIG profile \"%.80s\" (profiles: %s)",
                                   m->name, names.items[i], known);
                continue;
            }
            if (single && strchr(pr->name, '+')) {
                gpa_yread_error_at(
                    &L->r, pos[i].line, pos[i].col,
                    "MIG profile %s cannot be used with strategy: single ('+' is not "
                    "allowed in the gpu.product node label); use strategy: mixed",
                    pr->name);
                continue;
            }
            prof[np++] = pr;
        }
    } else {
        for (size_t i = 0; i < m->n_profiles; i++)
            if (!single || !strchr(m->profiles[i].name, '+')) prof[np++] = &m->profiles[i];
    }
    qsort(prof, np, sizeof *prof, cmp_profile);
    p->profiles = prof;
    p->n_profiles = np;
    (void)pool_node;
}

/* ---- time-slicing / mps ---- */

static void load_shared(loader *L, const gpa_ynode *n, gpa_pool *p, const char *what)
{
    static const char *const f[] = {"resource", "replicas", NULL};
    const gpa_ynode *v[2];
    if (!gpa_yread_want_map(&L->r, n, what)) return;
    gpa_yread_fields(&L->r, n, what, f, v);
    char w[64];
    if (v[0] && !gpa_yread_is_null(v[0])) {
        char *r = NULL;
        snprintf(w, sizeof w, "%s.resource", what);
        if (gpa_yread_str(&L->r, v[0], w, &r)) {
            const char *why = gpa_k8s_qualified_name(r);
            if (why || !strchr(r, '/'))
                gpa_yread_error(&L->r, v[0],
                                "%s \"%.80s\" is not an extended resource name (domain/name, "
                                "e.g. nvidia.com/gpu.shared)%s%s",
                                w, r, why ? ": " : "", why ? why : "");
            else if (strncmp(r, "nvidia.com/mig-", 15) == 0)
                gpa_yread_error(&L->r, v[0],
                                "%s \"%.80s\" is a MIG resource name; a shared pool serves "
                                "replicas of whole GPUs (nvidia.com/gpu.shared or nvidia.com/gpu)",
                                w, r);
            else
                p->shared_resource = r;
        }
    }
    if (v[1] && !gpa_yread_is_null(v[1])) {
        int64_t rep = 0;
        snprintf(w, sizeof w, "%s.replicas", what);
        if (gpa_yread_int(&L->r, v[1], w, 1, 1024, &rep)) p->replicas = (int)rep;
    }
}

/* ---- topology ---- */

static const char *qualified(const char *s)
{
    return gpa_k8s_qualified_name(s);
}

/* The most GPUs a domain may be said to hold: far above any fleet, low enough that gang size
 * x pod GPUs compared against it never needs more than 64 bits. */
#define TOPO_MAX_GPUS 1048576

/* topology.levels: [{label, gpus}], narrowest first, each strictly wider than the island and
 * the level before it, no label twice (nor the island's). */
static void load_levels(loader *L, const gpa_ynode *n, gpa_topology *t)
{
    static const char *const f[] = {"label", "gpus", NULL};
    if (!gpa_yread_want_seq(&L->r, n, "topology.levels")) return;
    if (n->n == 0) {
        gpa_yread_error(&L->r, n, "topology.levels must list at least one level (or be left out)");
        return;
    }
    t->levels = gpa_arena_array(L->arena, n->n, sizeof *t->levels);
    if (!t->levels) {
        L->r.oom = true;
        return;
    }
    int64_t prev = t->island_gpus;
    const char *prev_name = "topology.islandGpus";
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *m = n->kids[i], *v[2];
        if (!gpa_yread_want_map(&L->r, m, "topology level")) continue;
        gpa_yread_fields(&L->r, m, "topology level", f, v);
        gpa_topo_level lv = {0};
        const char *why;
        bool ok = true;
        if (!v[0] || gpa_yread_is_null(v[0])) {
            gpa_yread_error(&L->r, m,
                            "topology level needs label (the node label naming the "
                            "domain, e.g. example.com/rack)");
            ok = false;
        } else if (!gpa_yread_str(&L->r, v[0], "topology level label", &lv.label)) {
            ok = false;
        } else if ((why = qualified(lv.label)) != NULL) {
            gpa_yread_error(&L->r, v[0],
                            "topology level label \"%.80s\" is not a valid label key: %s", lv.label,
                            why);
            ok = false;
        } else {
            bool dup = t->island_label && strcmp(t->island_label, lv.label) == 0;
            for (size_t j = 0; j < t->n_levels && !dup; j++)
                dup = strcmp(t->levels[j].label, lv.label) == 0;
            if (dup) {
                gpa_yread_error(&L->r, v[0],
                                "topology level label %.80s is repeated (each level is its own "
                                "node label)",
                                lv.label);
                ok = false;
            }
        }
        if (!v[1] || gpa_yread_is_null(v[1])) {
            gpa_yread_error(&L->r, m, "topology level needs gpus (the GPUs one domain holds)");
            ok = false;
        } else if (!gpa_yread_int(&L->r, v[1], "topology level gpus", 1, TOPO_MAX_GPUS, &lv.gpus)) {
            ok = false;
        } else if (prev > 0 && lv.gpus <= prev) {
            gpa_yread_error(&L->r, v[1],
                            "topology level %s holds %lld GPUs, not more than %s (%lld): levels "
                            "go narrowest first, each strictly wider",
                            lv.label ? lv.label : "?", (long long)lv.gpus, prev_name,
                            (long long)prev);
            ok = false;
        }
        if (!ok) continue;
        prev = lv.gpus;
        prev_name = "the level before it";
        t->levels[t->n_levels++] = lv;
    }
}

static void load_topology(loader *L, const gpa_ynode *n, gpa_pool *p)
{
    static const char *const f[] = {"islandLabel", "islandSizeLabel", "gpusPerNode", "groupLabels",
                                    "mode",        "islandGpus",      "levels",      "imexChannel",
                                    NULL};
    static const char *const modes[] = {"required", "preferred", NULL};
    const gpa_ynode *v[8];
    if (!gpa_yread_want_map(&L->r, n, "topology")) return;
    gpa_yread_fields(&L->r, n, "topology", f, v);
    gpa_topology *t = &p->topology;
    const char *why;
    if (!v[0] || gpa_yread_is_null(v[0])) {
        gpa_yread_error(&L->r, n,
                        "topology.islandLabel is required (the node label naming the NVLink "
                        "domain, e.g. nvidia.com/gpu.clique)");
    } else if (gpa_yread_str(&L->r, v[0], "topology.islandLabel", &t->island_label) &&
               (why = qualified(t->island_label)) != NULL) {
        gpa_yread_error(&L->r, v[0], "topology.islandLabel \"%.80s\" is not a valid label key: %s",
                        t->island_label, why);
    }
    if (v[1] && !gpa_yread_is_null(v[1]) &&
        gpa_yread_str(&L->r, v[1], "topology.islandSizeLabel", &t->island_size_label) &&
        (why = qualified(t->island_size_label)) != NULL)
        gpa_yread_error(&L->r, v[1],
                        "topology.islandSizeLabel \"%.80s\" is not a valid label key: %s",
                        t->island_size_label, why);
    if (v[2] && !gpa_yread_is_null(v[2])) {
        int64_t g = 0;
        if (gpa_yread_int(&L->r, v[2], "topology.gpusPerNode", 1, 4096, &g))
            t->gpus_per_node = (int)g;
    }
    if (v[3] && !gpa_yread_is_null(v[3])) {
        gpa_policy_strlist(L, v[3], "topology.groupLabels", false, qualified, "group label",
                           &t->group_labels, NULL);
        t->group_labels_set = true;
    } else {
        t->group_labels.items = gpa_arena_array(L->arena, 1, sizeof(char *));
        if (!t->group_labels.items ||
            !(t->group_labels.items[0] = gpa_arena_strdup(L->arena, "gpu-admission.io/group"))) {
            L->r.oom = true;
            return;
        }
        t->group_labels.n = 1;
    }
    t->mode = GPA_TOPO_REQUIRED;
    if (v[4] && !gpa_yread_is_null(v[4])) {
        int m = gpa_yread_enum(&L->r, v[4], "topology.mode", modes);
        if (m >= 0) t->mode = (gpa_topo_mode)m;
    }
    bool has_levels = v[6] && !gpa_yread_is_null(v[6]);
    if (v[5] && !gpa_yread_is_null(v[5])) {
        int64_t g = 0;
        if (gpa_yread_int(&L->r, v[5], "topology.islandGpus", 1, TOPO_MAX_GPUS, &g))
            t->island_gpus = g;
    } else if (has_levels) {
        gpa_yread_error(&L->r, v[6],
                        "topology.levels needs topology.islandGpus (the GPUs one NVLink island "
                        "holds: 8 on HGX, 72 on GB200 NVL72), to know when a gang outgrows it");
        return;
    }
    if (has_levels && t->island_gpus > 0) load_levels(L, v[6], t);
    if (v[7] && !gpa_yread_is_null(v[7])) gpa_policy_load_imex(L, v[7], t);
}

/* ---- the pool ---- */

enum {
    F_NAME,
    F_NODESEL,
    F_TOLS,
    F_SHARING,
    F_MIG,
    F_TS,
    F_MPS,
    F_ALLOW,
    F_RUNTIME,
    F_TOPO,
    F_DRA,
    F_COUNT
};

void gpa_policy_load_pool(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {
        "name", "nodeSelector",   "tolerations",      "sharing",  "mig", "timeSlicing",
        "mps",  "allowUntrusted", "runtimeClassName", "topology", "dra", NULL};
    const gpa_ynode *v[F_COUNT];
    if (!gpa_yread_want_map(&L->r, n, "pool")) return;
    gpa_yread_fields(&L->r, n, "pool", f, v);
    gpa_pool p = {0};
    p.pos = gpa_policy_pos(L, n);
    const char *why;

    if (!v[F_NAME] || gpa_yread_is_null(v[F_NAME]))
        gpa_yread_error(&L->r, n, "pool: name is required");
    else if (gpa_yread_str(&L->r, v[F_NAME], "pool name", &p.name) &&
             (why = gpa_k8s_dns_label(p.name)) != NULL)
        gpa_yread_error(&L->r, v[F_NAME], "pool name \"%.80s\" %s (it is used as a label value)",
                        p.name, why);

    if (v[F_NODESEL] && !gpa_yread_is_null(v[F_NODESEL]))
        gpa_policy_labelmap(L, v[F_NODESEL], "nodeSelector", &p.node_selector);
    if (v[F_TOLS] && !gpa_yread_is_null(v[F_TOLS])) load_tolerations(L, v[F_TOLS], &p);

    int sharing = GPA_SHARING_EXCLUSIVE;
    bool sharing_ok = true;
    if (v[F_SHARING] && !gpa_yread_is_null(v[F_SHARING])) {
        sharing = gpa_yread_enum(&L->r, v[F_SHARING], "sharing", sharing_names);
        if (sharing < 0) {
            sharing_ok = false;
            sharing = GPA_SHARING_EXCLUSIVE;
        }
    }
    p.sharing = (gpa_sharing)sharing;
    const char *sname = sharing_names[sharing];

    /* each mode's block only with that mode (skip the check when sharing itself was bad) */
    static const struct {
        int field;
        gpa_sharing mode;
        const char *key;
    } blocks[] = {{F_MIG, GPA_SHARING_MIG, "mig"},
                  {F_TS, GPA_SHARING_TIME_SLICING, "timeSlicing"},
                  {F_MPS, GPA_SHARING_MPS, "mps"}};
    for (size_t i = 0; i < 3; i++) {
        const gpa_ynode *b = v[blocks[i].field];
        if (!b || p.sharing == blocks[i].mode || !sharing_ok) continue;
        gpa_yread_error(&L->r, b, "%s is only valid with sharing: %s (this pool's sharing is %s)",
                        blocks[i].key, sharing_names[blocks[i].mode], sname);
    }
    if (p.sharing == GPA_SHARING_MIG) {
        if (!v[F_MIG] || gpa_yread_is_null(v[F_MIG]))
            gpa_yread_error(&L->r, n,
                            "pool %s: sharing: mig needs a mig block naming the GPU model "
                            "(mig: {gpu: A100-80GB})",
                            p.name ? p.name : "");
        else
            load_mig(L, v[F_MIG], &p, n);
        if (p.mig_strategy == GPA_MIG_SINGLE) {
            for (size_t i = 0; i < p.node_selector.n; i++)
                if (strcmp(p.node_selector.keys[i], "nvidia.com/gpu.product") == 0)
                    gpa_yread_error(
                        &L->r, v[F_NODESEL],
                        "nodeSelector must not contain nvidia.com/gpu.product on a mig pool "
                        "with strategy: single (the webhook sets gpu.product to "
                        "<product>-MIG-<profile> itself)");
        }
    }
    if (p.sharing == GPA_SHARING_TIME_SLICING || p.sharing == GPA_SHARING_MPS) {
        int f_block = p.sharing == GPA_SHARING_MPS ? F_MPS : F_TS;
        if (v[f_block] && !gpa_yread_is_null(v[f_block]))
            load_shared(L, v[f_block], &p, p.sharing == GPA_SHARING_MPS ? "mps" : "timeSlicing");
        if (!p.shared_resource &&
            !(p.shared_resource = gpa_arena_strdup(L->arena, "nvidia.com/gpu.shared")))
            L->r.oom = true;
    }

    p.allow_untrusted = !(p.sharing == GPA_SHARING_TIME_SLICING || p.sharing == GPA_SHARING_MPS);
    if (v[F_ALLOW] && !gpa_yread_is_null(v[F_ALLOW]))
        gpa_yread_bool(&L->r, v[F_ALLOW], "allowUntrusted", &p.allow_untrusted);
    if (v[F_DRA])
        gpa_policy_load_pool_dra(L, &p, v[F_DRA],
                                 v[F_ALLOW] && !gpa_yread_is_null(v[F_ALLOW]) && p.allow_untrusted);

    if (v[F_RUNTIME] && !gpa_yread_is_null(v[F_RUNTIME]) &&
        gpa_yread_str(&L->r, v[F_RUNTIME], "runtimeClassName", &p.runtime_class) &&
        (why = gpa_k8s_dns_subdomain(p.runtime_class)) != NULL)
        gpa_yread_error(&L->r, v[F_RUNTIME], "runtimeClassName \"%.80s\" %s", p.runtime_class, why);

    if (v[F_TOPO] && !gpa_yread_is_null(v[F_TOPO])) {
        if (p.sharing != GPA_SHARING_EXCLUSIVE && sharing_ok)
            gpa_yread_error(
                &L->r, v[F_TOPO],
                "topology is only valid with sharing: exclusive (NVLink islands join whole "
                "GPUs; this pool's sharing is %s)",
                sname);
        else {
            p.has_topology = true;
            load_topology(L, v[F_TOPO], &p);
        }
    }

    /* registered even when it had errors: the set is refused anyway, and rules naming it
     * should not add a misleading "no such pool" on top */
    if (!p.name) return;
    for (size_t i = 0; i < L->n_pools; i++) {
        if (strcmp(L->pools[i].name, p.name) == 0) {
            gpa_yread_error(&L->r, v[F_NAME], "pool \"%s\" is already defined at %s:%d:%d", p.name,
                            L->pools[i].pos.file, L->pools[i].pos.line, L->pools[i].pos.col);
            return;
        }
    }
    if (L->n_pools == L->cap_pools) {
        size_t nc = L->cap_pools ? L->cap_pools * 2 : 8;
        gpa_pool *np = realloc(L->pools, nc * sizeof *np);
        if (!np) {
            L->r.oom = true;
            return;
        }
        L->pools = np;
        L->cap_pools = nc;
    }
    L->pools[L->n_pools++] = p;
}
