/*
 * engine_claim_config.c - the NVIDIA driver's opaque configs (GpuConfig, MigDeviceConfig,
 * VfioDeviceConfig) against the device type each GPU request of a claim gets (POLICY.md
 * "Dynamic Resource Allocation": a mutation never produces a claim NVIDIA's driver refuses).
 *
 * The driver's kubelet plugin (k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin/device_state.go
 * prepareDevices) fails the claim's preparation when a config that names a request meets a
 * device of another type (a GpuConfig on a MIG device: the pod stays in ContainerCreating),
 * and skips a config that names no request (it applies to every request) on such a device.
 * So placement, which turns a generic class into the pool's, may break a claim that was
 * right as written. Each config that applies to a GPU request is kept when it fits the
 * device type the request ends up with, translated in place to that type's kind when the
 * driver defines the same settings there, or refused with what to write instead. The table
 * is in docs/policy.md ("Opaque configs and the placed device type").
 *
 * Must never: translate a config into settings the driver reads differently (a time-slice
 * interval, per-device limits keyed by a GPU's UUID), add sharing a config did not ask, or
 * translate on the validating hook (it reads the claim as the API server stores it).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_claim.h"

/* The three DeviceClasses NVIDIA's Helm chart installs, each selecting one device type
 * (deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-{gpu,mig,vfio-gpu}.yaml). */
#define CLASS_GPU  "gpu.nvidia.com"
#define CLASS_MIG  "mig.nvidia.com"
#define CLASS_VFIO "vfio.gpu.nvidia.com"

typedef enum { DEV_UNKNOWN, DEV_GPU, DEV_MIG, DEV_VFIO } dev_type;

/* "full GPUs", "a full GPU": the device type in messages. */
static const char *type_many(dev_type t)
{
    return t == DEV_MIG    ? "MIG devices"
           : t == DEV_VFIO ? "VFIO (passthrough) devices"
                           : "full GPUs";
}

static const char *type_one(dev_type t)
{
    return t == DEV_MIG    ? "a MIG device"
           : t == DEV_VFIO ? "a VFIO (passthrough) device"
                           : "a full GPU";
}

static const char *kind_name(dev_type t)
{
    return t == DEV_MIG ? "MigDeviceConfig" : t == DEV_VFIO ? "VfioDeviceConfig" : "GpuConfig";
}

static dev_type kind_type(gpa_opaque_kind k)
{
    return k == GPA_OPAQUE_GPU    ? DEV_GPU
           : k == GPA_OPAQUE_MIG  ? DEV_MIG
           : k == GPA_OPAQUE_VFIO ? DEV_VFIO
                                  : DEV_UNKNOWN;
}

static dev_type builtin_type(const char *cls)
{
    if (!cls) return DEV_UNKNOWN;
    if (strcmp(cls, CLASS_GPU) == 0) return DEV_GPU;
    if (strcmp(cls, CLASS_MIG) == 0) return DEV_MIG;
    if (strcmp(cls, CLASS_VFIO) == 0) return DEV_VFIO;
    return DEV_UNKNOWN;
}

/* A pool's devices: its class's type for NVIDIA's classes; for a class of the cluster's own,
 * MIG devices on a mig pool (its profile selector matches nothing else) and full GPUs on
 * the others (exclusive, time-slicing and MPS pools share whole GPUs). */
static dev_type pool_type(const gpa_pool *pl)
{
    dev_type t = builtin_type(pl->dra.device_class);
    if (t != DEV_UNKNOWN) return t;
    return pl->sharing == GPA_SHARING_MIG ? DEV_MIG : DEV_GPU;
}

/* The devices class cls hands out: NVIDIA's classes by name, a pool's class as that pool's;
 * UNKNOWN for any other (a generic class of the cluster's own). */
static dev_type class_type(const gpa_policy *p, const char *cls)
{
    dev_type t = builtin_type(cls);
    if (t != DEV_UNKNOWN) return t;
    const gpa_pool *pl = cls ? gpa_dra_pool_of_class(p, cls) : NULL;
    return pl ? pool_type(pl) : DEV_UNKNOWN;
}

/* The device type GPU alternative x gets: the pool's when the mutating hook places it there
 * (pl; its class is generic or the pool's), else its class's. */
static dev_type final_type(const gpa_policy *p, const gpa_claim_alt *x, const gpa_pool *pl)
{
    if (pl && (gpa_dra_is_generic(p, x->device_class) ||
               strcmp(x->device_class, pl->dra.device_class) == 0))
        return pool_type(pl);
    return class_type(p, x->device_class);
}

typedef enum { PLAN_KEEP, PLAN_TRANSLATE, PLAN_REFUSE } plan_action;

typedef struct plan {
    plan_action act;
    dev_type to;             /* the device type the config must fit */
    const gpa_claim_alt *at; /* a GPU alternative that gets devices of type `to` */
    const char *why;         /* PLAN_REFUSE: what stands in the way and what to write */
    char buf[320];
} plan;

/* What one hook knows about the claim's configs, worked out once: bit j of a mask is config
 * j. Bounded by the reader's limits (32 configs of at most 32 names, 256 alternatives), so
 * judging every config costs configs x alternatives, whatever the names. */
typedef struct cfg_ctx {
    const gpa_claim_eng *ce;
    const gpa_pool *placing;              /* the mutating hook's pool; NULL: judged as written */
    uint32_t nvidia;                      /* a known kind of NVIDIA's driver */
    uint32_t every;                       /* names no request: applies to every one */
    uint32_t of_type[4];                  /* [t]: of kind t once this hook is done with it */
    uint32_t applies[GPA_CLAIM_MAX_ALTS]; /* applies to the alternative (Kubernetes' reading) */
    uint32_t exact[GPA_CLAIM_MAX_ALTS];   /* names it as the driver compares names */
    unsigned char ft[GPA_CLAIM_MAX_ALTS]; /* the type it ends up with (GPU alternatives) */
    unsigned char wt[GPA_CLAIM_MAX_ALTS]; /* the type of its class as written */
} cfg_ctx;
_Static_assert(GPA_CLAIM_MAX_CONFIGS <= 32, "a config is one bit of a uint32_t mask");

/* Marks alternative a as named by config j: `exactly` when the name is the allocation
 * result's (`request`, or `request/subrequest` for a firstAvailable alternative), which is
 * what the driver compares. */
static void mark(cfg_ctx *x, size_t a, size_t j, bool exactly)
{
    x->applies[a] |= 1u << j;
    if (exactly) x->exact[a] |= 1u << j;
}

/* The masks of config j, from its names: each name is a request (every alternative; exactly
 * the request's own when it has no firstAvailable) or request/subrequest (that one). */
static void read_names(cfg_ctx *x, size_t j)
{
    const gpa_claim *c = x->ce->c;
    const gpa_claim_config *g = &c->cfg[j];
    if (!g->requests || !g->requests->child) {
        x->every |= 1u << j;
        for (size_t a = 0; a < c->n_alts; a++)
            mark(x, a, j, false);
        return;
    }
    for (const cJSON *n = g->requests->child; n; n = n->next) {
        const char *s = n->valuestring;
        size_t base = strcspn(s, "/");
        for (size_t r = 0; r < c->n_requests; r++) {
            const gpa_claim_request *q = &c->req[r];
            if (strlen(q->name) != base || memcmp(q->name, s, base) != 0) continue;
            for (size_t a = q->first_alt; a < q->first_alt + q->n_alts; a++) {
                if (!s[base])
                    mark(x, a, j, !q->first_available);
                else if (q->first_available && strcmp(c->alt[a].name, s + base + 1) == 0)
                    mark(x, a, j, true);
            }
            break; /* request names are unique */
        }
    }
}

/* false when no config is a known kind of NVIDIA's driver: nothing to judge. */
static bool ctx_init(cfg_ctx *x, const gpa_claim_eng *ce, const gpa_pool *placing)
{
    const gpa_claim *c = ce->c;
    x->ce = ce;
    x->placing = placing;
    x->nvidia = x->every = 0;
    for (size_t j = 0; j < c->n_configs; j++)
        if (kind_type(c->cfg[j].kind) != DEV_UNKNOWN) x->nvidia |= 1u << j;
    if (!x->nvidia) return false;
    memset(x->of_type, 0, sizeof x->of_type);
    for (size_t a = 0; a < c->n_alts; a++) {
        const gpa_claim_alt *alt = &c->alt[a];
        x->applies[a] = x->exact[a] = 0;
        x->wt[a] = (unsigned char)(ce->gpu_alt[a] ? class_type(ce->e.p, alt->device_class)
                                                  : builtin_type(alt->device_class));
        x->ft[a] = (unsigned char)(ce->gpu_alt[a] ? final_type(ce->e.p, alt, placing) : x->wt[a]);
    }
    for (size_t j = 0; j < c->n_configs; j++)
        if (x->nvidia & (1u << j)) read_names(x, j);
    return true;
}

/* What the driver would make of settings g carries on devices of type `to`, when they are
 * written as `to`'s kind; NULL when it reads them the same, else why not and what to do. */
static const char *untranslatable(const gpa_claim_config *g, dev_type to, char *buf, size_t cap)
{
    dev_type from = kind_type(g->kind);
    if (from == DEV_VFIO)
        return "a VfioDeviceConfig asks PCI passthrough (vfio-pci for a VM), which those devices "
               "are not; remove the config, or name " CLASS_VFIO " and ask the platform team "
               "for a pool of that class";
    if (to == DEV_VFIO) {
        if (g->sharing == GPA_DRA_SHARE_NONE) return NULL;
        return "a passthrough device goes to one VM whole and VfioDeviceConfig has no sharing; "
               "remove the sharing config";
    }
    if (to == DEV_MIG && g->sharing == GPA_DRA_SHARE_TIME_SLICING && g->interval &&
        strcmp(g->interval, "Default") != 0) {
        snprintf(buf, cap,
                 "the driver sets a time-slice interval on full GPUs only (a MIG device takes "
                 "none, and MigDeviceConfig has no timeSlicingConfig), so interval %.20s cannot "
                 "hold; remove sharing.timeSlicingConfig, or ask the platform team for a rule "
                 "placing the claim on full GPUs",
                 g->interval);
        return buf;
    }
    if (g->sharing == GPA_DRA_SHARE_MPS && g->mps_uuid_keys)
        return "mpsConfig.defaultPerDevicePinnedMemoryLimit names a device by UUID, and a "
               "UUID of one device type names no device of another; key the limits by device "
               "index (\"0\", \"1\", ...)";
    return NULL;
}

/* Does a config after config i take alternative a (devices of type ft) first? The driver
 * searches the configs from the last one back and stops at the first that names a, or that
 * names no request and fits ft (each config's kind once this hook is done with it): config
 * i then never reaches a, and whatever it says about a does not matter. */
static bool shadowed(const cfg_ctx *x, size_t i, size_t a, dev_type ft)
{
    uint32_t later = i + 1 < 32 ? x->nvidia & (~0u << (i + 1)) : 0;
    return ((x->exact[a] | (x->every & x->of_type[ft])) & later) != 0;
}

/* The plan for config i: does it fit every GPU alternative it applies to (keep), fit none
 * once translated to the one type they get (translate, mutating and placed only), or
 * neither (refuse)? Configs of other drivers and strictly invalid ones are not planned here
 * (the latter are refused by check_claim). Reads the kinds of the configs after i only. */
static void make_plan(plan *pl, const cfg_ctx *x, size_t i)
{
    const gpa_claim_eng *ce = x->ce;
    const gpa_claim *c = ce->c;
    const gpa_claim_config *g = &c->cfg[i];
    pl->act = PLAN_KEEP;
    pl->to = DEV_UNKNOWN;
    pl->at = NULL;
    pl->why = NULL;
    const dev_type kt = kind_type(g->kind);
    if (kt == DEV_UNKNOWN) return;
    const bool named = !(x->every & (1u << i));
    unsigned fits = 0, misfits = 0; /* bit per dev_type of the alternatives it applies to */
    for (size_t a = 0; a < c->n_alts; a++) {
        if (!(x->applies[a] & (1u << i))) continue;
        const dev_type ft = (dev_type)x->ft[a], wt = (dev_type)x->wt[a];
        if (!ce->gpu_alt[a]) {
            /* not a GPU request: judged by no rule; its NVIDIA class still counts when the
             * config would be translated away from it */
            if (wt == kt) fits |= 1u << wt;
            continue;
        }
        if (shadowed(x, i, a, ft)) continue;
        if (ft == DEV_UNKNOWN || ft == kt) {
            fits |= 1u << ft;
            continue;
        }
        /* A config naming the request meets a device it does not fit: the driver refuses the
         * claim. One for every request is skipped there; it was meant for this request only
         * if the class as written gave devices of its kind (or of a type nobody knows). */
        if (!named && !(x->placing && (wt == kt || wt == DEV_UNKNOWN))) continue;
        if (!(misfits & (1u << ft))) pl->at = &c->alt[a];
        misfits |= 1u << ft;
        pl->to = ft;
    }
    if (!misfits) return;
    pl->act = PLAN_REFUSE;
    if ((misfits & (misfits - 1)) || (fits & ~(1u << DEV_UNKNOWN))) {
        snprintf(pl->buf, sizeof pl->buf,
                 "the config applies to requests whose devices are of different types, and "
                 "one config fits one type; write one config per device type, each naming its "
                 "requests");
        pl->why = pl->buf;
        return;
    }
    const char *no = untranslatable(g, pl->to, pl->buf, sizeof pl->buf);
    if (no) {
        pl->why = no;
        return;
    }
    if (x->placing) {
        pl->act = PLAN_TRANSLATE;
        return;
    }
    snprintf(pl->buf, sizeof pl->buf, "write kind %s%s", kind_name(pl->to),
             pl->to == DEV_MIG   ? " (its sharing takes strategy and mpsConfig)"
             : pl->to == DEV_GPU ? " (same sharing fields)"
                                 : " (no sharing)");
    pl->why = pl->buf;
}

/* Each config's kind once this hook is done with it (its own, or the kind it is translated
 * to), from the last config back, as each plan depends on the configs after it. */
static void final_kinds(cfg_ctx *x)
{
    const gpa_claim *c = x->ce->c;
    for (size_t i = c->n_configs; i-- > 0;) {
        plan pl;
        make_plan(&pl, x, i);
        dev_type k = pl.act == PLAN_TRANSLATE ? pl.to : kind_type(c->cfg[i].kind);
        x->of_type[k] |= 1u << i;
    }
}

void gpa_claim_check_configs(gpa_claim_eng *ce, const gpa_pool *pool)
{
    gpa_eng *e = &ce->e;
    const gpa_claim *c = ce->c;
    const char *what = c->is_template ? "claim template" : "claim";
    cfg_ctx x;
    if (!ctx_init(&x, ce, pool)) return;
    final_kinds(&x);
    for (size_t i = 0; i < c->n_configs; i++) {
        plan pl;
        make_plan(&pl, &x, i);
        if (pl.act != PLAN_REFUSE) continue;
        const gpa_claim_alt *at = pl.at;
        char where[160];
        if (pool && (gpa_dra_is_generic(e->p, at->device_class) ||
                     strcmp(at->device_class, pool->dra.device_class) == 0))
            snprintf(where, sizeof where, "rule %s places the %s in pool %s, which serves %s",
                     e->rule->name, what, pool->name, type_many(pl.to));
        else
            snprintf(where, sizeof where, "its class %s gives %s", at->device_class,
                     type_many(pl.to));
        const char *kind = kind_name(kind_type(c->cfg[i].kind));
        gpa_eng_violation(e, "dra-config-device-type",
                          "config[%zu] (%s) applies to %s, and %s: NVIDIA's DRA driver refuses "
                          "a %s for %s (the pod would never start); %s",
                          i, kind, at->label, where, kind, type_one(pl.to), pl.why);
    }
}

/* config i's parameters in copy (the mutating hook's arena copy of the object). */
static cJSON *params_of(const gpa_claim *c, cJSON *copy, size_t i)
{
    cJSON *spec = gpa_jn_get(copy, "spec");
    if (c->is_template) spec = gpa_jn_get(spec, "spec");
    cJSON *cfgs = gpa_jn_get(gpa_jn_get(spec, "devices"), "config");
    cJSON *cf = gpa_is_array(cfgs) ? cfgs->child : NULL;
    for (size_t k = 0; cf && k < i; k++)
        cf = cf->next;
    cJSON *params = gpa_jn_get(gpa_jn_get(cf, "opaque"), "parameters");
    return gpa_is_object(params) ? params : NULL;
}

bool gpa_claim_fit_configs(gpa_claim_eng *ce, cJSON *copy, const gpa_pool *pool)
{
    gpa_eng *e = &ce->e;
    const gpa_claim *c = ce->c;
    bool any = false;
    cfg_ctx x;
    if (!pool || !ctx_init(&x, ce, pool)) return false;
    final_kinds(&x);
    for (size_t i = 0; i < c->n_configs; i++) {
        plan pl;
        make_plan(&pl, &x, i);
        if (pl.act != PLAN_TRANSLATE) continue;
        cJSON *params = params_of(c, copy, i);
        if (!params) continue; /* the reader saw it: cannot happen */
        const char *from = kind_name(kind_type(c->cfg[i].kind)), *to = kind_name(pl.to);
        if (!gpa_eng_set_str(e, params, "kind", to)) continue;
        /* The settings are the same fields in both kinds (GpuSharing's strategy and
         * mpsConfig are MigDeviceSharing's); MIG's has no timeSlicingConfig, and only the
         * Default interval (the driver's own when none is written) gets here. */
        cJSON *sh = gpa_jn_get(params, "sharing");
        cJSON *ts = pl.to == DEV_MIG ? gpa_jn_get(sh, "timeSlicingConfig") : NULL;
        if (ts) cJSON_DetachItemViaPointer(sh, ts);
        gpa_eng_warn(e, "config[%zu]: %s -> %s for pool %s's %s", i, from, to, pool->name,
                     pl.to == DEV_VFIO ? "VFIO devices" : type_many(pl.to));
        any = true;
    }
    return any;
}
