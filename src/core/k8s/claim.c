/*
 * claim.c - reading a DRA ResourceClaim / ResourceClaimTemplate into the view of claim.h:
 * requests in the v1 layout (`exactly`, `firstAvailable`) and the v1beta1 one (fields on the
 * request), the API's limits, and the NVIDIA driver's opaque configs (GpuConfig,
 * MigDeviceConfig, VfioDeviceConfig of resource.nvidia.com/v1beta1) decoded as strictly as the
 * driver's own strict decoder does: an unknown or duplicate field, a wrong type, an unknown
 * strategy or interval, a sharing config that does not go with its strategy.
 *
 * Must never allocate, write into the object, or read a field of the wrong type as if it were
 * right: every shape is checked before it is used, and the first problem is the answer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gpu_admission/quantity.h"
#include "k8s/claim.h"

#define TYPE(v) ((v)->type & 0xFF)

static bool is_obj(const cJSON *v)
{
    return v && TYPE(v) == cJSON_Object;
}
static bool is_arr(const cJSON *v)
{
    return v && TYPE(v) == cJSON_Array;
}
static bool is_str(const cJSON *v)
{
    return v && TYPE(v) == cJSON_String && v->valuestring;
}
static bool is_null(const cJSON *v)
{
    return !v || TYPE(v) == cJSON_NULL;
}

static const cJSON *member(const cJSON *o, const char *key)
{
    if (!is_obj(o)) return NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && strcmp(c->string, key) == 0) return is_null(c) ? NULL : c;
    return NULL;
}

static size_t count_items(const cJSON *a)
{
    size_t n = 0;
    for (const cJSON *c = a ? a->child : NULL; c; c = c->next)
        n++;
    return n;
}

static int fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

int gpa_claim_kind(const char *group, const char *kind)
{
    if (!group || !kind) return 0;
    size_t glen = strcspn(group, "/");
    if (glen != 15 || memcmp(group, "resource.k8s.io", 15) != 0) return 0;
    if (strcmp(kind, "ResourceClaim") == 0) return 1;
    if (strcmp(kind, "ResourceClaimTemplate") == 0) return 2;
    return 0;
}

int gpa_claim_kind_of(const cJSON *obj)
{
    const cJSON *av = member(obj, "apiVersion"), *k = member(obj, "kind");
    if (!is_str(av) || !is_str(k) || !strchr(av->valuestring, '/')) return 0;
    return gpa_claim_kind(av->valuestring, k->valuestring);
}

/* A whole number in JSON (integer-valued double within int64) or NULL/absent. */
static bool json_int(const cJSON *v, int64_t *out)
{
    if (!v || TYPE(v) != cJSON_Number) return false;
    double d = v->valuedouble;
    if (d != d || d < -9.2e18 || d > 9.2e18 || (double)(int64_t)d != d) return false;
    *out = (int64_t)d;
    return true;
}

/* The keys of o all in allowed (NULL-terminated), none twice; else why names the first
 * offender under path. */
static int strict_keys(const cJSON *o, const char *const *allowed, const char *path, char *why,
                       size_t cap)
{
    for (const cJSON *c = o->child; c; c = c->next) {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(c->string, allowed[i]) == 0;
        if (!ok) return fail(why, cap, "%s: unknown field \"%.60s\"", path, c->string);
        for (const cJSON *d = o->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return fail(why, cap, "%s: duplicate field \"%.60s\"", path, c->string);
    }
    return 0;
}

/* A quantity string (or number) into bytes, >= 0. */
static bool quantity_bytes(const cJSON *v, int64_t *out)
{
    char num[40];
    const char *s;
    if (is_str(v)) {
        s = v->valuestring;
    } else if (v && TYPE(v) == cJSON_Number) {
        int64_t i;
        if (!json_int(v, &i)) return false;
        snprintf(num, sizeof num, "%lld", (long long)i);
        s = num;
    } else {
        return false;
    }
    gpa_quantity q;
    if (gpa_quantity_parse(&q, s, strlen(s), NULL) != GPA_OK || q.milli < 0) return false;
    *out = gpa_quantity_value(&q);
    return true;
}

/* ------------------------------------------------------------ NVIDIA opaque parameters */

static const char *const K_MPS[] = {"defaultActiveThreadPercentage",
                                    "defaultPinnedDeviceMemoryLimit",
                                    "defaultPerDevicePinnedMemoryLimit", NULL};

static int parse_mps(const cJSON *m, const char *path, char *why, size_t cap)
{
    if (!is_obj(m)) return fail(why, cap, "%s: must be an object", path);
    if (strict_keys(m, K_MPS, path, why, cap)) return -1;
    const cJSON *pct = member(m, "defaultActiveThreadPercentage");
    int64_t v;
    if (pct) {
        if (!json_int(pct, &v))
            return fail(why, cap, "%s.defaultActiveThreadPercentage: must be a whole number", path);
        if (v < 0 || v > 100)
            return fail(why, cap,
                        "%s.defaultActiveThreadPercentage: must be between 0 and 100, got %lld",
                        path, (long long)v);
    }
    const cJSON *lim = member(m, "defaultPinnedDeviceMemoryLimit");
    if (lim) {
        if (!quantity_bytes(lim, &v))
            return fail(why, cap, "%s.defaultPinnedDeviceMemoryLimit: not a quantity", path);
        if (v / 1024 / 1024 <= 0) /* the driver's own floor: whole MiB */
            return fail(why, cap, "%s.defaultPinnedDeviceMemoryLimit: below 1Mi", path);
    }
    const cJSON *per = member(m, "defaultPerDevicePinnedMemoryLimit");
    if (per) {
        if (!is_obj(per))
            return fail(why, cap, "%s.defaultPerDevicePinnedMemoryLimit: must be a map", path);
        for (const cJSON *c = per->child; c; c = c->next) {
            if (is_null(c)) continue;
            if (!quantity_bytes(c, &v) || v / 1024 / 1024 <= 0)
                return fail(why, cap,
                            "%s.defaultPerDevicePinnedMemoryLimit[%.40s]: not a quantity of at "
                            "least 1Mi",
                            path, c->string);
        }
    }
    return 0;
}

/* Does a key of the per-device limits name a device by anything but its index (what the
 * driver's strconv.Atoi reads: digits, an optional sign)? */
static bool uuid_keys(const cJSON *per)
{
    for (const cJSON *c = per ? per->child : NULL; c; c = c->next) {
        const char *k = c->string + (c->string[0] == '-' || c->string[0] == '+');
        if (!*k || strspn(k, "0123456789") != strlen(k)) return true;
    }
    return false;
}

static const char *const K_GPU_SHARING[] = {"strategy", "timeSlicingConfig", "mpsConfig", NULL};
static const char *const K_MIG_SHARING[] = {"strategy", "mpsConfig", NULL};
static const char *const K_TS[] = {"interval", NULL};

static int parse_sharing(gpa_claim_config *cfg, const cJSON *s, bool mig, char *why, size_t cap)
{
    const char *path = "parameters.sharing";
    if (!is_obj(s)) return fail(why, cap, "%s: must be an object", path);
    if (strict_keys(s, mig ? K_MIG_SHARING : K_GPU_SHARING, path, why, cap)) return -1;
    const cJSON *st = member(s, "strategy");
    if (st && !is_str(st)) return fail(why, cap, "%s.strategy: must be a string", path);
    const char *strategy = st ? st->valuestring : "";
    const cJSON *ts = member(s, "timeSlicingConfig"), *mps = member(s, "mpsConfig");
    if (strcmp(strategy, "TimeSlicing") == 0) {
        cfg->sharing = GPA_DRA_SHARE_TIME_SLICING;
        if (mps)
            return fail(why, cap, "%s: cannot use mpsConfig with the TimeSlicing strategy", path);
    } else if (strcmp(strategy, "MPS") == 0) {
        cfg->sharing = GPA_DRA_SHARE_MPS;
        if (ts)
            return fail(why, cap, "%s: cannot use timeSlicingConfig with the MPS strategy", path);
    } else {
        return fail(why, cap,
                    "%s.strategy: unknown GPU sharing strategy \"%.40s\" (TimeSlicing or MPS)",
                    path, strategy);
    }
    if (ts) {
        if (!is_obj(ts)) return fail(why, cap, "%s.timeSlicingConfig: must be an object", path);
        if (strict_keys(ts, K_TS, "parameters.sharing.timeSlicingConfig", why, cap)) return -1;
        const cJSON *iv = member(ts, "interval");
        if (iv) {
            if (!is_str(iv))
                return fail(why, cap, "%s.timeSlicingConfig.interval: must be a string", path);
            const char *i = iv->valuestring;
            if (strcmp(i, "Default") && strcmp(i, "Short") && strcmp(i, "Medium") &&
                strcmp(i, "Long"))
                return fail(why, cap,
                            "%s.timeSlicingConfig.interval: unknown time-slice interval "
                            "\"%.40s\" (Default, Short, Medium or Long)",
                            path, i);
            cfg->interval = i;
        }
    }
    if (mps && parse_mps(mps, "parameters.sharing.mpsConfig", why, cap)) return -1;
    cfg->mps_uuid_keys = mps && uuid_keys(member(mps, "defaultPerDevicePinnedMemoryLimit"));
    return 0;
}

static const char *const K_GPU[] = {"apiVersion", "kind", "sharing", NULL};
static const char *const K_VFIO[] = {"apiVersion", "kind", "iommu", NULL};
static const char *const K_IOMMU[] = {"backendPolicy", "enableAPIDevice", NULL};

/* The parameters of an opaque config of the NVIDIA driver; the kind, or INVALID with
 * cfg->error set. */
static void parse_nvidia(gpa_claim_config *cfg, const cJSON *params)
{
    char *why = cfg->error;
    size_t cap = sizeof cfg->error;
    cfg->kind = GPA_OPAQUE_INVALID;
    if (!is_obj(params)) {
        fail(why, cap, "parameters: must be an object");
        return;
    }
    const cJSON *av = member(params, "apiVersion"), *k = member(params, "kind");
    if (!is_str(av) || strcmp(av->valuestring, GPA_DRA_NVIDIA_API) != 0) {
        fail(why, cap, "parameters.apiVersion: must be \"" GPA_DRA_NVIDIA_API "\"%s%.60s%s",
             is_str(av) ? ", got \"" : "", is_str(av) ? av->valuestring : "",
             is_str(av) ? "\"" : "");
        return;
    }
    const char *kind = is_str(k) ? k->valuestring : "";
    if (strcmp(kind, "GpuConfig") == 0 || strcmp(kind, "MigDeviceConfig") == 0) {
        bool mig = kind[0] == 'M';
        if (strict_keys(params, K_GPU, "parameters", why, cap)) return;
        const cJSON *s = member(params, "sharing");
        if (s && parse_sharing(cfg, s, mig, why, cap)) return;
        cfg->kind = mig ? GPA_OPAQUE_MIG : GPA_OPAQUE_GPU;
        return;
    }
    if (strcmp(kind, "VfioDeviceConfig") == 0) {
        if (strict_keys(params, K_VFIO, "parameters", why, cap)) return;
        const cJSON *io = member(params, "iommu");
        if (io) {
            if (!is_obj(io)) {
                fail(why, cap, "parameters.iommu: must be an object");
                return;
            }
            if (strict_keys(io, K_IOMMU, "parameters.iommu", why, cap)) return;
            const cJSON *bp = member(io, "backendPolicy");
            const char *b = is_str(bp) ? bp->valuestring : "";
            if (strcmp(b, "LegacyOnly") && strcmp(b, "PreferIommuFD")) {
                fail(why, cap,
                     "parameters.iommu.backendPolicy: unknown IOMMU backend policy \"%.40s\" "
                     "(LegacyOnly or PreferIommuFD)",
                     b);
                return;
            }
            const cJSON *ea = member(io, "enableAPIDevice");
            if (ea && TYPE(ea) != cJSON_True && TYPE(ea) != cJSON_False) {
                fail(why, cap, "parameters.iommu.enableAPIDevice: must be true or false");
                return;
            }
        }
        cfg->kind = GPA_OPAQUE_VFIO;
        return;
    }
    fail(why, cap,
         "parameters.kind: \"%.40s\" is not a kind of the " GPA_DRA_NVIDIA_DRIVER
         " driver (GpuConfig, MigDeviceConfig or VfioDeviceConfig)",
         kind);
}

/* The bytes params take printed compact: what the API server measures against its limit,
 * give or take whitespace. Stops counting past limit. */
static size_t json_size(const cJSON *v, size_t limit, size_t depth)
{
    if (!v || depth > 64) return limit + 1;
    size_t n = v->string ? strlen(v->string) + 3 : 0;
    switch (TYPE(v)) {
    case cJSON_String:
        return n + strlen(v->valuestring ? v->valuestring : "") + 2;
    case cJSON_Number:
        return n + 8;
    case cJSON_Object:
    case cJSON_Array:
        n += 2;
        for (const cJSON *c = v->child; c && n <= limit; c = c->next)
            n += json_size(c, limit, depth + 1) + 1;
        return n;
    default:
        return n + 5;
    }
}

/* ------------------------------------------------------------ requests */

static const char *const K_V1_REQUEST[] = {"name", "exactly", "firstAvailable", NULL};

/* The fields a device request (v1 ExactDeviceRequest, v1beta1 DeviceRequest) or a subrequest
 * holds, read into a. path names a in messages. */
static int read_alt(gpa_claim_alt *a, const cJSON *o, bool subrequest, const char *path, char *why,
                    size_t cap)
{
    if (!is_obj(o)) return fail(why, cap, "%s: must be an object", path);
    a->obj = o;
    const cJSON *dc = member(o, "deviceClassName");
    if (dc && !is_str(dc)) return fail(why, cap, "%s.deviceClassName: must be a string", path);
    a->device_class = dc ? dc->valuestring : NULL;
    if (!a->device_class || !*a->device_class)
        return fail(why, cap, "%s.deviceClassName: required", path);
    const cJSON *mode = member(o, "allocationMode");
    if (mode && !is_str(mode)) return fail(why, cap, "%s.allocationMode: must be a string", path);
    const char *m = mode ? mode->valuestring : "ExactCount";
    if (strcmp(m, "All") == 0)
        a->mode_all = true;
    else if (strcmp(m, "ExactCount") != 0 && *m)
        return fail(why, cap, "%s.allocationMode: must be ExactCount or All, got \"%.40s\"", path,
                    m);
    const cJSON *cnt = member(o, "count");
    a->count = a->mode_all ? 0 : 1;
    if (cnt) {
        int64_t v;
        if (!json_int(cnt, &v)) return fail(why, cap, "%s.count: must be a whole number", path);
        if (a->mode_all) {
            if (v != 0)
                return fail(why, cap, "%s.count: must not be set with allocationMode All", path);
        } else if (v < 1) {
            return fail(why, cap, "%s.count: must be a whole number >= 1, got %lld", path,
                        (long long)v);
        } else {
            a->count = v;
        }
    }
    const cJSON *aa = member(o, "adminAccess");
    if (aa) {
        if (subrequest) return fail(why, cap, "%s.adminAccess: not a field of a subrequest", path);
        if (TYPE(aa) != cJSON_True && TYPE(aa) != cJSON_False)
            return fail(why, cap, "%s.adminAccess: must be true or false", path);
        a->admin_access = TYPE(aa) == cJSON_True;
    }
    const cJSON *sel = member(o, "selectors");
    if (sel) {
        if (!is_arr(sel)) return fail(why, cap, "%s.selectors: must be a list", path);
        size_t i = 0;
        for (const cJSON *s = sel->child; s; s = s->next, i++) {
            if (i >= GPA_CLAIM_MAX_SELECTORS)
                return fail(why, cap, "%s.selectors: more than %d (the API's limit)", path,
                            GPA_CLAIM_MAX_SELECTORS);
            const cJSON *cel = member(s, "cel");
            const cJSON *ex = member(cel, "expression");
            if (!is_obj(s) || !is_obj(cel) || !is_str(ex))
                return fail(why, cap, "%s.selectors[%zu]: must be {cel: {expression: string}}",
                            path, i);
            size_t len = strlen(ex->valuestring);
            if (len > GPA_CLAIM_MAX_CEL_BYTES)
                return fail(why, cap,
                            "%s.selectors[%zu].cel.expression: %zu bytes, more than %d (the "
                            "API's limit)",
                            path, i, len, GPA_CLAIM_MAX_CEL_BYTES);
        }
        a->selectors = sel;
        a->n_selectors = i;
    }
    const cJSON *capy = member(o, "capacity");
    if (capy) {
        const cJSON *req = member(capy, "requests");
        if (!is_obj(capy) || (req && !is_obj(req)))
            return fail(why, cap, "%s.capacity: must be {requests: {name: quantity}}", path);
        for (const cJSON *c = req ? req->child : NULL; c; c = c->next) {
            int64_t b;
            if (!quantity_bytes(c, &b))
                return fail(why, cap, "%s.capacity.requests[%.40s]: not a quantity", path,
                            c->string);
            a->n_capacity++;
            if (strcmp(c->string, "memory") == 0) {
                a->has_memory = true;
                a->memory_bytes = b;
            }
        }
    }
    const cJSON *tol = member(o, "tolerations");
    if (tol) {
        if (!is_arr(tol)) return fail(why, cap, "%s.tolerations: must be a list", path);
        size_t i = 0;
        for (const cJSON *t = tol->child; t; t = t->next, i++) {
            if (i >= GPA_CLAIM_MAX_TOLERATIONS)
                return fail(why, cap, "%s.tolerations: more than %d (the API's limit)", path,
                            GPA_CLAIM_MAX_TOLERATIONS);
            if (!is_obj(t))
                return fail(why, cap, "%s.tolerations[%zu]: must be an object", path, i);
            const cJSON *op = member(t, "operator"), *ef = member(t, "effect");
            if (op && (!is_str(op) ||
                       (strcmp(op->valuestring, "Exists") && strcmp(op->valuestring, "Equal"))))
                return fail(why, cap, "%s.tolerations[%zu].operator: must be Exists or Equal", path,
                            i);
            if (ef && (!is_str(ef) ||
                       (*ef->valuestring && strcmp(ef->valuestring, "NoSchedule") &&
                        strcmp(ef->valuestring, "NoExecute") && strcmp(ef->valuestring, "None"))))
                return fail(why, cap,
                            "%s.tolerations[%zu].effect: must be NoSchedule, NoExecute or None",
                            path, i);
            const cJSON *ts = member(t, "tolerationSeconds");
            int64_t s;
            if (ts && !json_int(ts, &s))
                return fail(why, cap,
                            "%s.tolerations[%zu].tolerationSeconds: must be a whole "
                            "number",
                            path, i);
        }
        a->n_tolerations = i;
    }
    return 0;
}

static gpa_claim_alt *new_alt(gpa_claim *c, int req, int sub)
{
    gpa_claim_alt *a = &c->alt[c->n_alts++];
    memset(a, 0, sizeof *a);
    a->req = req;
    a->sub = sub;
    return a;
}

static void alt_names(gpa_claim *c, gpa_claim_alt *a, const char *suffix_ptr,
                      const char *suffix_lbl)
{
    snprintf(a->ptr, sizeof a->ptr, "%s/devices/requests/%d%s", c->spec_ptr, a->req, suffix_ptr);
    snprintf(a->label, sizeof a->label, "requests[%d]%s", a->req, suffix_lbl);
}

static int read_request(gpa_claim *c, int i, const cJSON *r, const char *sp, char *why, size_t cap)
{
    char path[96];
    snprintf(path, sizeof path, "%s.devices.requests[%d]", sp, i);
    if (!is_obj(r)) return fail(why, cap, "%s: must be an object", path);
    gpa_claim_request *q = &c->req[i];
    const cJSON *name = member(r, "name");
    if (!is_str(name) || !*name->valuestring)
        return fail(why, cap, "%s.name: required, a string", path);
    q->name = name->valuestring;
    for (int j = 0; j < i; j++)
        if (strcmp(c->req[j].name, q->name) == 0)
            return fail(why, cap, "%s.name: \"%.40s\" used by requests[%d] too", path, q->name, j);
    q->first_alt = c->n_alts;
    const cJSON *ex = member(r, "exactly"), *fa = member(r, "firstAvailable");
    if (c->layout == GPA_CLAIM_LAYOUT_V1 && strict_keys(r, K_V1_REQUEST, path, why, cap))
        return fail(why + strlen(why), cap - strlen(why),
                    " (the v1 layout puts a request's fields under exactly)");
    if (ex && fa) return fail(why, cap, "%s: exactly and firstAvailable are exclusive", path);
    if (fa) {
        if (!is_arr(fa) || !fa->child)
            return fail(why, cap, "%s.firstAvailable: must be a non-empty list", path);
        if (c->layout == GPA_CLAIM_LAYOUT_V1BETA1 && member(r, "deviceClassName"))
            return fail(why, cap, "%s: deviceClassName and firstAvailable are exclusive", path);
        q->first_available = true;
        int j = 0;
        for (const cJSON *s = fa->child; s; s = s->next, j++) {
            if (j >= GPA_CLAIM_MAX_SUBREQUESTS)
                return fail(why, cap, "%s.firstAvailable: more than %d (the API's limit)", path,
                            GPA_CLAIM_MAX_SUBREQUESTS);
            char sp2[128], sfx[32], lbl[32];
            snprintf(sp2, sizeof sp2, "%s.firstAvailable[%d]", path, j);
            gpa_claim_alt *a = new_alt(c, i, j);
            if (read_alt(a, s, true, sp2, why, cap)) return -1;
            const cJSON *sn = member(s, "name");
            if (!is_str(sn) || !*sn->valuestring)
                return fail(why, cap, "%s.name: required, a string", sp2);
            a->name = sn->valuestring;
            snprintf(sfx, sizeof sfx, "/firstAvailable/%d", j);
            snprintf(lbl, sizeof lbl, ".firstAvailable[%d]", j);
            alt_names(c, a, sfx, lbl);
        }
    } else if (c->layout == GPA_CLAIM_LAYOUT_V1) {
        if (!ex) return fail(why, cap, "%s: needs exactly or firstAvailable", path);
        char sp2[128];
        snprintf(sp2, sizeof sp2, "%s.exactly", path);
        gpa_claim_alt *a = new_alt(c, i, -1);
        if (read_alt(a, ex, false, sp2, why, cap)) return -1;
        a->name = q->name;
        alt_names(c, a, "/exactly", "");
    } else {
        gpa_claim_alt *a = new_alt(c, i, -1);
        if (read_alt(a, r, false, path, why, cap)) return -1;
        a->name = q->name;
        alt_names(c, a, "", "");
    }
    q->n_alts = c->n_alts - q->first_alt;
    return 0;
}

static int read_config(gpa_claim *c, size_t i, const cJSON *cf, const char *sp, char *why,
                       size_t cap)
{
    char path[96];
    snprintf(path, sizeof path, "%s.devices.config[%zu]", sp, i);
    if (!is_obj(cf)) return fail(why, cap, "%s: must be an object", path);
    gpa_claim_config *g = &c->cfg[i];
    memset(g, 0, sizeof *g);
    const cJSON *rq = member(cf, "requests");
    if (rq) {
        if (!is_arr(rq)) return fail(why, cap, "%s.requests: must be a list", path);
        size_t k = 0;
        for (const cJSON *n = rq->child; n; n = n->next, k++) {
            if (k >= GPA_CLAIM_MAX_REQUESTS)
                return fail(why, cap, "%s.requests: more than %d names (the API's limit)", path,
                            GPA_CLAIM_MAX_REQUESTS);
            if (!is_str(n)) return fail(why, cap, "%s.requests[%zu]: must be a string", path, k);
            const char *nm = n->valuestring;
            /* a set in the API: the config planner's per-config bit masks count on it */
            for (const cJSON *d = rq->child; d != n; d = d->next)
                if (strcmp(d->valuestring, nm) == 0)
                    return fail(why, cap, "%s.requests[%zu]: \"%.60s\" listed twice", path, k, nm);
            size_t base = strcspn(nm, "/");
            bool found = false;
            for (size_t r = 0; r < c->n_requests && !found; r++) {
                const gpa_claim_request *q = &c->req[r];
                if (strlen(q->name) != base || memcmp(q->name, nm, base) != 0) continue;
                if (!nm[base]) {
                    found = true;
                    break;
                }
                for (size_t a = q->first_alt; a < q->first_alt + q->n_alts && !found; a++)
                    found = q->first_available && strcmp(c->alt[a].name, nm + base + 1) == 0;
            }
            if (!found)
                return fail(why, cap, "%s.requests[%zu]: \"%.60s\" names no request of the claim",
                            path, k, nm);
        }
        g->requests = rq;
    }
    const cJSON *op = member(cf, "opaque");
    if (!op) {
        g->kind = GPA_OPAQUE_OTHER;
        return 0;
    }
    const cJSON *drv = member(op, "driver");
    if (!is_obj(op) || !is_str(drv) || !*drv->valuestring)
        return fail(why, cap, "%s.opaque: must be {driver: string, parameters: object}", path);
    g->driver = drv->valuestring;
    const cJSON *params = member(op, "parameters");
    if (!params) return fail(why, cap, "%s.opaque.parameters: required", path);
    if (json_size(params, GPA_CLAIM_MAX_OPAQUE, 0) > GPA_CLAIM_MAX_OPAQUE)
        return fail(why, cap, "%s.opaque.parameters: more than %d bytes (the API's limit)", path,
                    GPA_CLAIM_MAX_OPAQUE);
    if (strcmp(g->driver, GPA_DRA_NVIDIA_DRIVER) == 0)
        parse_nvidia(g, params);
    else
        g->kind = GPA_OPAQUE_OTHER;
    return 0;
}

int gpa_claim_read(gpa_claim *c, const cJSON *obj, bool is_template, char *why, size_t cap)
{
    memset(c, 0, offsetof(gpa_claim, req));
    c->is_template = is_template;
    c->obj = obj;
    if (!is_obj(obj)) return fail(why, cap, "the object must be a JSON object");
    const cJSON *md = member(obj, "metadata");
    if (md && !is_obj(md)) return fail(why, cap, "metadata: must be an object");
    c->metadata = md;
    const cJSON *own_ann = member(md, "annotations");
    if (own_ann && !is_obj(own_ann)) return fail(why, cap, "metadata.annotations: must be a map");
    c->own_annotations = own_ann;
    const cJSON *ex = member(own_ann, GPA_DRA_ANN_EXTENDED);
    c->extended_resource_claim = is_str(ex) && strcmp(ex->valuestring, "true") == 0;
    const cJSON *av = member(obj, "apiVersion");
    c->layout = is_str(av) && strcmp(av->valuestring, "resource.k8s.io/v1beta1") == 0
                    ? GPA_CLAIM_LAYOUT_V1BETA1
                    : GPA_CLAIM_LAYOUT_V1;
    const cJSON *spec = member(obj, "spec");
    if (spec && !is_obj(spec)) return fail(why, cap, "spec: must be an object");
    const char *sp = "spec";
    c->spec_ptr = "/spec";
    if (is_template) {
        const cJSON *tmd = member(spec, "metadata");
        if (tmd && !is_obj(tmd)) return fail(why, cap, "spec.metadata: must be an object");
        c->labels = member(tmd, "labels");
        c->annotations = member(tmd, "annotations");
        if (c->labels && !is_obj(c->labels))
            return fail(why, cap, "spec.metadata.labels: must be a map");
        if (c->annotations && !is_obj(c->annotations))
            return fail(why, cap, "spec.metadata.annotations: must be a map");
        spec = member(spec, "spec");
        if (spec && !is_obj(spec)) return fail(why, cap, "spec.spec: must be an object");
        sp = "spec.spec";
        c->spec_ptr = "/spec/spec";
    } else {
        c->labels = member(md, "labels");
        if (c->labels && !is_obj(c->labels))
            return fail(why, cap, "metadata.labels: must be a map");
        c->annotations = own_ann;
    }
    const cJSON *dev = member(spec, "devices");
    if (dev && !is_obj(dev)) return fail(why, cap, "%s.devices: must be an object", sp);
    /* The view's arrays are filled up to their counts only; zeroed counts are enough. */
    c->n_requests = c->n_alts = c->n_configs = 0;
    const cJSON *reqs = member(dev, "requests");
    if (reqs && !is_arr(reqs)) return fail(why, cap, "%s.devices.requests: must be a list", sp);
    size_t n = count_items(reqs);
    if (n > GPA_CLAIM_MAX_REQUESTS)
        return fail(why, cap, "%s.devices.requests: %zu requests, more than %d (the API's limit)",
                    sp, n, GPA_CLAIM_MAX_REQUESTS);
    int i = 0;
    for (const cJSON *r = reqs ? reqs->child : NULL; r; r = r->next, i++) {
        memset(&c->req[i], 0, sizeof c->req[i]);
        if (read_request(c, i, r, sp, why, cap)) return -1;
        c->n_requests = (size_t)i + 1;
    }
    const cJSON *cons = member(dev, "constraints");
    if (cons && !is_arr(cons)) return fail(why, cap, "%s.devices.constraints: must be a list", sp);
    if (count_items(cons) > GPA_CLAIM_MAX_CONSTRAINTS)
        return fail(why, cap, "%s.devices.constraints: more than %d (the API's limit)", sp,
                    GPA_CLAIM_MAX_CONSTRAINTS);
    const cJSON *cfgs = member(dev, "config");
    if (cfgs && !is_arr(cfgs)) return fail(why, cap, "%s.devices.config: must be a list", sp);
    n = count_items(cfgs);
    if (n > GPA_CLAIM_MAX_CONFIGS)
        return fail(why, cap, "%s.devices.config: %zu entries, more than %d (the API's limit)", sp,
                    n, GPA_CLAIM_MAX_CONFIGS);
    size_t k = 0;
    for (const cJSON *cf = cfgs ? cfgs->child : NULL; cf; cf = cf->next, k++) {
        if (read_config(c, k, cf, sp, why, cap)) return -1;
        c->n_configs = k + 1;
    }
    return 0;
}

bool gpa_claim_config_applies(const gpa_claim *c, const gpa_claim_config *cfg,
                              const gpa_claim_alt *a)
{
    if (!cfg->requests || !cfg->requests->child) return true;
    const char *rname = c->req[a->req].name;
    size_t rl = strlen(rname);
    for (const cJSON *n = cfg->requests->child; n; n = n->next) {
        const char *s = n->valuestring;
        if (strncmp(s, rname, rl) != 0) continue;
        if (s[rl] == '\0') return true;
        if (s[rl] == '/' && a->sub >= 0 && strcmp(s + rl + 1, a->name) == 0) return true;
    }
    return false;
}

const char *gpa_claim_selector(const gpa_claim_alt *a, size_t i)
{
    size_t k = 0;
    for (const cJSON *s = a->selectors ? a->selectors->child : NULL; s; s = s->next, k++)
        if (k == i) {
            const cJSON *ex = member(member(s, "cel"), "expression");
            return is_str(ex) ? ex->valuestring : NULL;
        }
    return NULL;
}

const char *gpa_claim_alt_profile(const gpa_claim_alt *a, char *buf, size_t cap)
{
    const size_t pre = sizeof GPA_DRA_PROFILE_SEL_PRE - 1;
    for (size_t i = 0; i < a->n_selectors; i++) {
        const char *s = gpa_claim_selector(a, i);
        if (!s || strncmp(s, GPA_DRA_PROFILE_SEL_PRE, pre) != 0) continue;
        const char *p = s + pre, *q = strchr(p, '\'');
        if (!q || q[1] != '\0' || q == p || (size_t)(q - p) >= cap) continue;
        memcpy(buf, p, (size_t)(q - p));
        buf[q - p] = '\0';
        return buf;
    }
    return NULL;
}
