/*
 * policy_dra.c - the Dynamic Resource Allocation parts of a policy (POLICY.md "Dynamic
 * Resource Allocation"): spec.dra (at most once across files), a pool's dra block and a
 * tenant's dra permissions, read strictly with file:line:col errors like every other part of
 * the loader; and the light CEL syntax check `check` lints selectors with.
 *
 * Must never: accept a field it does not know, a class name the API would refuse, or more
 * selectors than a request may hold (the API server would then refuse every placed claim).
 */
#include <stdio.h>
#include <string.h>

#include "k8s/claim.h"
#include "k8s/k8s_names.h"
#include "policy/policy_dra.h"
#include "policy/warn_text.h"

static const char *class_check(const char *s)
{
    return gpa_k8s_dns_subdomain(s);
}

/* A Kubernetes user name as userInfo.username carries it: any non-empty string, but no
 * control characters (they could not come from an authenticator and would garble logs). */
static const char *user_check(const char *s)
{
    if (!*s) return "is empty";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f) return "contains a control character";
    return NULL;
}

/* An extendedResourceName a DeviceClass sets: domain/name, not the implicit name every class
 * already has (KEP-5004 makes that one from the class name). */
static const char *ext_name_check(const char *s)
{
    const char *why = gpa_k8s_qualified_name(s);
    if (why) return why;
    if (!strchr(s, '/')) return "is not an extended resource name (domain/name)";
    if (strncmp(s, GPA_DRA_EXT_PREFIX, sizeof GPA_DRA_EXT_PREFIX - 1) == 0)
        return "is the implicit name of a class (" GPA_DRA_EXT_PREFIX
               "<class>, always counted); list the name a class sets in extendedResourceName";
    return NULL;
}

void gpa_policy_load_dra(loader *L, const gpa_ynode *key, const gpa_ynode *n)
{
    static const char *const f[] = {"enforcement", "genericClasses", "schedulerUsers",
                                    "extendedResourceNames", NULL};
    static const char *const enf[] = {"deny", "warn", "off", NULL};
    if (L->dra.set) {
        gpa_yread_error(&L->r, key,
                        "dra is already defined at %s:%d:%d (at most one dra block across all "
                        "files)",
                        L->dra.pos.file, L->dra.pos.line, L->dra.pos.col);
        return;
    }
    L->dra.set = true;
    L->dra.pos = gpa_policy_pos(L, key);
    L->dra.enforcement = GPA_DRA_DENY;
    if (gpa_yread_is_null(n) || !gpa_yread_want_map(&L->r, n, "dra")) return;
    const gpa_ynode *v[4];
    gpa_yread_fields(&L->r, n, "dra", f, v);
    if (v[0] && !gpa_yread_is_null(v[0])) {
        int i = gpa_yread_enum(&L->r, v[0], "dra.enforcement", enf);
        if (i >= 0) L->dra.enforcement = (gpa_dra_enforcement)i;
    }
    if (v[1] && !gpa_yread_is_null(v[1]))
        gpa_policy_strlist(L, v[1], "dra.genericClasses", true, class_check, "device class",
                           &L->dra.generic_classes, NULL);
    if (v[2] && !gpa_yread_is_null(v[2]))
        gpa_policy_strlist(L, v[2], "dra.schedulerUsers", false, user_check, "user name",
                           &L->dra.scheduler_users, NULL);
    gpa_kvlist *x = &L->dra.extended_names;
    if (v[3] && !gpa_yread_is_null(v[3]) &&
        gpa_yread_strmap(&L->r, v[3], "dra.extendedResourceNames", GPA_POLICY_MAX_LIST, class_check,
                         "device class", ext_name_check, "extended resource name", &x->keys,
                         &x->values, &x->n))
        /* the scheduler maps a name to one class; two would leave which one to chance */
        for (size_t i = 0; i < x->n; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(x->values[i], x->values[j]) == 0)
                    gpa_yread_error(&L->r, v[3],
                                    "dra.extendedResourceNames: %.80s is the name of both %.80s "
                                    "and %.80s; a name belongs to one DeviceClass",
                                    x->values[i], x->keys[j], x->keys[i]);
}

void gpa_policy_load_pool_dra(loader *L, gpa_pool *p, const gpa_ynode *n, bool allow_written_true)
{
    static const char *const f[] = {"deviceClass", "selectors", "multiAllocatable", "enabled",
                                    NULL};
    if (gpa_yread_is_null(n) || !gpa_yread_want_map(&L->r, n, "pool dra")) return;
    const gpa_ynode *v[4];
    gpa_yread_fields(&L->r, n, "pool dra", f, v);
    bool enabled = true;
    if (v[3] && !gpa_yread_is_null(v[3])) gpa_yread_bool(&L->r, v[3], "dra.enabled", &enabled);
    if (!enabled) {
        /* the pool says it serves no DRA: nothing else has a meaning, and `check` stops asking
         * for a deviceClass (the pre-install hook runs --strict) */
        p->dra.none = true;
        p->dra.pos = gpa_policy_pos(L, n);
        for (int i = 0; i < 3; i++)
            if (v[i] && !gpa_yread_is_null(v[i]))
                gpa_yread_error(&L->r, v[i],
                                "pool %s: dra.%s: the pool says it serves no DRA (dra.enabled: "
                                "false); remove one or the other",
                                p->name ? p->name : "", f[i]);
        return;
    }
    p->dra.set = true;
    p->dra.pos = gpa_policy_pos(L, n);
    p->dra.allow_untrusted = allow_written_true;
    const char *why;
    if (!v[0] || gpa_yread_is_null(v[0]))
        gpa_yread_error(&L->r, n,
                        "pool %s: dra.deviceClass is required (the DeviceClass whose devices are "
                        "the pool's, e.g. mig.nvidia.com)",
                        p->name ? p->name : "");
    else if (gpa_yread_str(&L->r, v[0], "dra.deviceClass", &p->dra.device_class) &&
             (why = gpa_k8s_dns_subdomain(p->dra.device_class)) != NULL)
        gpa_yread_error(&L->r, v[0], "dra.deviceClass \"%.80s\" %s", p->dra.device_class, why);
    if (v[1] && !gpa_yread_is_null(v[1])) {
        gpa_srcpos *pos = NULL;
        gpa_policy_strlist(L, v[1], "dra.selectors", true, NULL, "CEL selector", &p->dra.selectors,
                           &pos);
        /* room for the claim's own selector and the MIG profile's within the API's 32 */
        if (p->dra.selectors.n > GPA_CLAIM_MAX_SELECTORS - 2)
            gpa_yread_error(&L->r, v[1],
                            "dra.selectors: %zu selectors, more than %d (a request holds at most "
                            "%d, and placement adds the MIG profile's)",
                            p->dra.selectors.n, GPA_CLAIM_MAX_SELECTORS - 2,
                            GPA_CLAIM_MAX_SELECTORS);
        for (size_t i = 0; i < p->dra.selectors.n && pos; i++) {
            size_t len = strlen(p->dra.selectors.items[i]);
            if (len == 0)
                gpa_policy_error_pos(L, pos[i], "dra.selectors[%zu]: empty CEL expression", i);
            else if (len > GPA_CLAIM_MAX_CEL_BYTES)
                gpa_policy_error_pos(L, pos[i],
                                     "dra.selectors[%zu]: %zu bytes, more than %d (the API's "
                                     "limit for a CEL expression)",
                                     i, len, GPA_CLAIM_MAX_CEL_BYTES);
        }
    }
    if (v[2] && !gpa_yread_is_null(v[2]))
        gpa_yread_bool(&L->r, v[2], "dra.multiAllocatable", &p->dra.multi_allocatable);
}

void gpa_policy_load_tenant_dra(loader *L, gpa_tenant *t, const gpa_ynode *n)
{
    static const char *const f[] = {"adminAccess", "allocationModeAll", NULL};
    if (gpa_yread_is_null(n) || !gpa_yread_want_map(&L->r, n, "tenant dra")) return;
    const gpa_ynode *v[2];
    gpa_yread_fields(&L->r, n, "tenant dra", f, v);
    if (v[0] && !gpa_yread_is_null(v[0]))
        gpa_yread_bool(&L->r, v[0], "dra.adminAccess", &t->dra_admin_access);
    if (v[1] && !gpa_yread_is_null(v[1]))
        gpa_yread_bool(&L->r, v[1], "dra.allocationModeAll", &t->dra_allocation_mode_all);
}

void gpa_policy_finish_dra(loader *L, gpa_policy *p)
{
    p->dra = L->dra;
}

const char *gpa_cel_light_check(const char *s, size_t *at)
{
    /* the brackets open, innermost last; quotes are CEL's ' " and their triple forms */
    char stack[64];
    size_t depth = 0;
    for (size_t i = 0; s[i]; i++) {
        char ch = s[i];
        if (ch == '\'' || ch == '"') {
            bool triple = s[i + 1] == ch && s[i + 2] == ch;
            size_t j = i + (triple ? 3 : 1);
            for (;; j++) {
                if (!s[j]) {
                    *at = i;
                    return "unterminated string";
                }
                if (s[j] == '\\' && s[j + 1]) {
                    j++;
                    continue;
                }
                if (s[j] == ch && (!triple || (s[j + 1] == ch && s[j + 2] == ch))) break;
                if (!triple && s[j] == '\n') {
                    *at = i;
                    return "unterminated string";
                }
            }
            i = j + (triple ? 2 : 0);
            continue;
        }
        if (ch == '(' || ch == '[' || ch == '{') {
            if (depth == sizeof stack) {
                *at = i;
                return "brackets nested too deep";
            }
            stack[depth++] = ch;
        } else if (ch == ')' || ch == ']' || ch == '}') {
            char want = ch == ')' ? '(' : ch == ']' ? '[' : '{';
            if (depth == 0 || stack[depth - 1] != want) {
                *at = i;
                return depth == 0 ? "closing bracket without an opening one"
                                  : "closing bracket does not match the opening one";
            }
            depth--;
        }
    }
    if (depth > 0) {
        *at = strlen(s);
        return "unclosed bracket";
    }
    return NULL;
}

/* NVIDIA's own DeviceClasses of GPUs (NVIDIA/k8s-dra-driver-gpu: whole GPUs, MIG devices,
 * GPUs for VFIO passthrough): their extended resources are GPUs whatever the policy names.
 * gpu.nvidia.com is a whole GPU of no pool in particular, as nvidia.com/gpu (the driver's chart
 * gives it extendedResourceName: nvidia.com/gpu). */
static const char *const nvidia_classes[] = {"gpu.nvidia.com", "mig.nvidia.com",
                                             "vfio.gpu.nvidia.com"};
_Static_assert(sizeof nvidia_classes / sizeof *nvidia_classes == GPA_DRA_BUILTIN_CLASSES,
               "GPA_DRA_BUILTIN_CLASSES counts nvidia_classes");

static void ext_add(gpa_policy *p, size_t cap, const char *name, const char *cls)
{
    for (size_t i = 0; i < p->n_dra_ext; i++)
        if (strcmp(p->dra_ext[i].name, name) == 0) return;
    for (size_t i = 0; i < p->gpu_resources.n; i++)
        if (strcmp(p->gpu_resources.items[i], name) == 0) return; /* keeps its meaning */
    if (p->n_dra_ext >= cap) return;
    gpa_dra_ext *x = &p->dra_ext[p->n_dra_ext++];
    x->name = name;
    x->device_class = cls;
    x->generic = gpa_dra_is_generic(p, cls) || strcmp(cls, nvidia_classes[0]) == 0;
    x->pool = gpa_dra_pool_of_class(p, cls);
}

/* The implicit name of class cls (deviceclass.resource.kubernetes.io/<cls>) into the table. */
static int add_class(gpa_policy *p, gpa_arena *a, size_t cap, const char *cls)
{
    size_t len = sizeof GPA_DRA_EXT_PREFIX - 1 + strlen(cls);
    char *name = gpa_arena_alloc(a, len + 1);
    if (!name) return GPA_ENOMEM;
    snprintf(name, len + 1, "%s%s", GPA_DRA_EXT_PREFIX, cls);
    ext_add(p, cap, name, cls);
    return GPA_OK;
}

int gpa_policy_dra_ext_build(gpa_policy *p, gpa_arena *a)
{
    const gpa_kvlist *named = &p->dra.extended_names;
    size_t cap = GPA_DRA_BUILTIN_CLASSES + p->dra.generic_classes.n + p->n_pools + 2 * named->n;
    p->dra_ext = gpa_arena_array(a, cap, sizeof *p->dra_ext);
    if (!p->dra_ext) return GPA_ENOMEM;
    int rc = GPA_OK;
    for (size_t i = 0; rc == GPA_OK && i < GPA_DRA_BUILTIN_CLASSES; i++)
        rc = add_class(p, a, cap, nvidia_classes[i]);
    for (size_t i = 0; rc == GPA_OK && i < p->dra.generic_classes.n; i++)
        rc = add_class(p, a, cap, p->dra.generic_classes.items[i]);
    for (size_t i = 0; rc == GPA_OK && i < p->n_pools; i++)
        if (p->pools[i].dra.set) rc = add_class(p, a, cap, p->pools[i].dra.device_class);
    /* a class named with its extendedResourceName is a GPU class under both names */
    for (size_t i = 0; rc == GPA_OK && i < named->n; i++)
        rc = add_class(p, a, cap, named->keys[i]);
    for (size_t i = 0; rc == GPA_OK && i < named->n; i++)
        ext_add(p, cap, named->values[i], named->keys[i]);
    return rc;
}

bool gpa_policy_dra_generic(const gpa_policy *p, const char *name)
{
    const gpa_dra_ext *x = p && name ? gpa_dra_ext_of(p, name) : NULL;
    return x && x->generic;
}

const gpa_dra_ext *gpa_dra_ext_of(const gpa_policy *p, const char *name)
{
    for (size_t i = 0; i < p->n_dra_ext; i++)
        if (p->dra_ext[i].name[0] == name[0] && strcmp(p->dra_ext[i].name, name) == 0)
            return &p->dra_ext[i];
    return NULL;
}

bool gpa_dra_reachable(const gpa_policy *p, const char *name)
{
    if (strcmp(name, GPA_W_RES_GPU) == 0 || gpa_dra_ext_of(p, name)) return true;
    /* nvidia.com/mig-* listed there keeps its meaning, so is not in dra_ext, yet DRA serves it */
    for (size_t i = 0; i < p->dra.extended_names.n; i++)
        if (strcmp(p->dra.extended_names.values[i], name) == 0) return true;
    return false;
}

/* Policy lookups the claim engine makes (policy layer: they read only the model). */
bool gpa_dra_scheduler_user(const gpa_policy *p, const char *user)
{
    if (!user) return false;
    if (p->dra.scheduler_users.n == 0) return strcmp(user, GPA_DRA_DEFAULT_SCHEDULER) == 0;
    for (size_t i = 0; i < p->dra.scheduler_users.n; i++)
        if (strcmp(p->dra.scheduler_users.items[i], user) == 0) return true;
    return false;
}

bool gpa_dra_is_generic(const gpa_policy *p, const char *cls)
{
    for (size_t i = 0; cls && i < p->dra.generic_classes.n; i++)
        if (strcmp(p->dra.generic_classes.items[i], cls) == 0) return true;
    return false;
}

const gpa_pool *gpa_dra_pool_of_class(const gpa_policy *p, const char *cls)
{
    for (size_t i = 0; cls && i < p->n_pools; i++)
        if (p->pools[i].dra.set && strcmp(p->pools[i].dra.device_class, cls) == 0)
            return &p->pools[i];
    return NULL;
}

/* check's DRA advice (gpa_policy_warnings): what loads but cannot work as written. */
void gpa_policy_dra_warnings(gpa_sb *o, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *a = &p->pools[i];
        if (!a->dra.set) continue;
        const gpa_srcpos *at = &a->dra.pos;
        for (size_t s = 0; s < a->dra.selectors.n; s++) {
            size_t off = 0;
            const char *why = gpa_cel_light_check(a->dra.selectors.items[s], &off);
            if (why)
                gpa_sb_printf(o,
                              "%s:%d:%d: warning: pool %s dra.selectors[%zu] is not valid CEL: "
                              "%s at byte %zu; the API server refuses every claim it is added "
                              "to\n",
                              at->file, at->line, at->col, a->name, s, why, off);
        }
        /* Two pools of one DeviceClass are told apart only by their selectors: a pool with
         * none takes the other pool's devices as well. */
        for (size_t j = 0; j < p->n_pools; j++) {
            const gpa_pool *b = &p->pools[j];
            if (j == i || !b->dra.set || strcmp(a->dra.device_class, b->dra.device_class) != 0)
                continue;
            if (a->dra.selectors.n == 0) {
                gpa_sb_printf(o,
                              "%s:%d:%d: warning: pool %s dra.deviceClass %s is also pool %s's, "
                              "and pool %s has no dra.selectors: claims placed in %s can be "
                              "given %s's devices; add a selector (e.g. on productName)\n",
                              at->file, at->line, at->col, a->name, a->dra.device_class, b->name,
                              a->name, a->name, b->name);
                break;
            }
        }
    }
    /* the chart sends pods to the webhook by resource prefix: nvidia.com/ and the DRA prefix
     * always, any other only when its values list it */
    const gpa_kvlist *named = &p->dra.extended_names;
    for (size_t i = 0; i < named->n; i++)
        if (strncmp(named->values[i], "nvidia.com/", 11) != 0)
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: dra.extendedResourceNames %s (class %s) is outside "
                          "nvidia.com/: pods asking it reach the webhook only if the chart's "
                          "webhook.matchConditions.resourcePrefixes lists its prefix\n",
                          p->dra.pos.file, p->dra.pos.line, p->dra.pos.col, named->values[i],
                          named->keys[i]);
    if (!p->dra.set || p->dra.enforcement == GPA_DRA_OFF) return;
    for (size_t r = 0; r < p->n_rules; r++) {
        const gpa_rule *x = &p->rules[r];
        /* a pool that says it serves no DRA means it: its claims are denied on purpose */
        if (x->deny_message || !x->pool || x->pool->dra.set || x->pool->dra.none) continue;
        gpa_sb_printf(o,
                      "%s:%d:%d: warning: rule %s places GPU claims in pool %s, which has no "
                      "dra block: every GPU claim it matches is denied (give the pool a "
                      "dra.deviceClass, or say it serves no DRA: dra: {enabled: false})\n",
                      x->pos.file, x->pos.line, x->pos.col, x->name, x->pool->name);
    }
}
