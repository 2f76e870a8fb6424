/*
 * policyreport.c - an audit of existing objects as PolicyReport / ClusterPolicyReport
 * objects (policyreport.h), for `gpu-admission audit`.
 *
 * The judging is impact.c's, with the one set on both sides (judged once): an audit and a
 * `diff` of the same dump cannot disagree about an object. What is here is only the
 * wgpolicyk8s.io/v1alpha2 shape (test/fixtures/wg-policy-prototypes holds the CRDs it is
 * validated against). Must never: put a timestamp or anything else that changes from run to
 * run into a report (the golden report and `kubectl apply` of an unchanged audit stay
 * quiet), or drop an object the webhooks could not answer (it is an error result).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/impact.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policyreport.h"

#define POLICY_NAME "gpu-admission"
#define REPORT_NAME "gpu-admission"

enum { R_NONE = -1, R_PASS, R_WARN, R_FAIL, R_ERROR, R_N };
static const char *const status_name[R_N] = {"pass", "warn", "fail", "error"};

/* The results of one namespace (ns NULL: cluster-scoped objects). */
typedef struct scope {
    char *ns;
    cJSON *results;
    size_t n[R_N];
} scope;

struct gpa_audit {
    const gpa_policy *p;
    size_t max_results;
    scope *scopes; /* [0] is the cluster scope */
    size_t n_scopes, cap_scopes;
    size_t *tab; /* open addressing over scopes[1..] by namespace: index + 1, 0 empty */
    size_t tab_cap;
    cJSON *findings;
    size_t objects, judged, not_judged, no_rule;
    size_t n[R_N];
};

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int gpa_audit_new(gpa_audit **out, const gpa_policy *p, size_t max_results, gpa_error *err)
{
    *out = NULL;
    gpa_audit *a = calloc(1, sizeof *a);
    if (!a) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    a->p = p;
    a->max_results = max_results;
    a->scopes = calloc(8, sizeof *a->scopes);
    a->cap_scopes = 8;
    a->findings = cJSON_CreateArray();
    if (!a->scopes || !a->findings || !(a->scopes[0].results = cJSON_CreateArray())) {
        gpa_audit_free(a);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    a->n_scopes = 1;
    *out = a;
    return GPA_OK;
}

void gpa_audit_free(gpa_audit *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n_scopes; i++) {
        free(a->scopes[i].ns);
        cJSON_Delete(a->scopes[i].results);
    }
    free(a->scopes);
    free(a->tab);
    cJSON_Delete(a->findings);
    free(a);
}

/* Kubernetes has no way to tell from an object alone whether its kind is namespaced; a dump
 * (`kubectl get -A`) names the namespace of every namespaced object. So: no namespace and a
 * kind that is cluster-scoped (the API's own, and the "Cluster*" convention every operator
 * follows: ClusterTrainingRuntime, ClusterQueue) is cluster-scoped; no namespace otherwise is
 * "default", where kubectl would create it and where the webhooks judge it. */
static bool cluster_scoped(const cJSON *obj)
{
    static const char *const kinds[] = {
        "Namespace",   "Node",          "PersistentVolume", "StorageClass",   "PriorityClass",
        "DeviceClass", "ResourceSlice", "RuntimeClass",     "ResourceFlavor", NULL};
    if (str(get(obj, "metadata"), "namespace")) return false;
    const char *kind = str(obj, "kind");
    if (!kind) return false;
    if (strncmp(kind, "Cluster", 7) == 0 && kind[7] >= 'A' && kind[7] <= 'Z') return true;
    for (size_t i = 0; kinds[i]; i++)
        if (strcmp(kind, kinds[i]) == 0) return true;
    return false;
}

static size_t ns_hash(const char *s)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* A dump of 100,000 objects in 10,000 namespaces is not walked namespace by namespace per
 * object: the scopes are found through a hash table (kept at most half full). */
static bool tab_grow(gpa_audit *a)
{
    size_t cap = a->tab_cap ? a->tab_cap * 2 : 64;
    size_t *t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (size_t i = 1; i < a->n_scopes; i++) {
        size_t k = ns_hash(a->scopes[i].ns) & (cap - 1);
        while (t[k])
            k = (k + 1) & (cap - 1);
        t[k] = i + 1;
    }
    free(a->tab);
    a->tab = t;
    a->tab_cap = cap;
    return true;
}

static scope *scope_of(gpa_audit *a, const char *ns)
{
    if (!ns) return &a->scopes[0];
    if (2 * a->n_scopes >= a->tab_cap && !tab_grow(a)) return NULL;
    size_t k = ns_hash(ns) & (a->tab_cap - 1);
    for (; a->tab[k]; k = (k + 1) & (a->tab_cap - 1))
        if (strcmp(a->scopes[a->tab[k] - 1].ns, ns) == 0) return &a->scopes[a->tab[k] - 1];
    if (a->n_scopes == a->cap_scopes) {
        scope *ns_ = realloc(a->scopes, 2 * a->cap_scopes * sizeof *ns_);
        if (!ns_) return NULL;
        a->scopes = ns_;
        a->cap_scopes *= 2;
    }
    scope *s = &a->scopes[a->n_scopes];
    *s = (scope){.ns = strdup(ns), .results = cJSON_CreateArray()};
    if (!s->ns || !s->results) {
        free(s->ns);
        cJSON_Delete(s->results);
        return NULL;
    }
    a->tab[k] = ++a->n_scopes;
    return s;
}

/* The result one judged unit (the Pod, a claim, or one pod template) gets, and its message
 * into msg. */
static int unit_status(const cJSON *e, char *msg, size_t cap)
{
    const cJSON *n = get(e, "new");
    const char *rule = str(n, "rule"), *pool = str(n, "pool"), *m = str(n, "message");
    bool as_is = str(e, "judgedAs") && strcmp(str(e, "judgedAs"), "as-is") == 0;
    if (!cJSON_IsTrue(get(n, "allowed"))) {
        /* a pod whose original request cannot be rebuilt says nothing certain about what
         * its request got: as diff does, it is not reported as a refusal */
        if (as_is) {
            snprintf(msg, cap,
                     "as stored (its original request could not be rebuilt), the "
                     "policy would refuse it: %s",
                     m ? m : "denied by policy");
            return R_WARN;
        }
        snprintf(msg, cap, "%s", m ? m : "denied by policy");
        return R_FAIL;
    }
    /* a violation enforcement warn/audit let through; the webhook's warnings otherwise are
     * notes on what placement wrote into the pod, not findings */
    if (m) {
        snprintf(msg, cap, "%s", m);
        return R_WARN;
    }
    if (!rule) return R_NONE;
    if (pool)
        snprintf(msg, cap, "admitted by rule %s into pool %s", rule, pool);
    else
        snprintf(msg, cap, "admitted by rule %s", rule);
    return R_PASS;
}

/* cJSON_Add* that remember a failed allocation in *ok: a report is whole or is not made (a
 * result without its resource or message would be applied as if it were complete). */
static void put_s(bool *ok, cJSON *o, const char *k, const char *v)
{
    if (!o || !cJSON_AddStringToObject(o, k, v)) *ok = false;
}

static void put_n(bool *ok, cJSON *o, const char *k, double v)
{
    if (!o || !cJSON_AddNumberToObject(o, k, v)) *ok = false;
}

static cJSON *put_obj(bool *ok, cJSON *o, const char *k, bool array)
{
    cJSON *v = !o ? NULL : array ? cJSON_AddArrayToObject(o, k) : cJSON_AddObjectToObject(o, k);
    if (!v) *ok = false;
    return v;
}

/* Adds v (owned) to array or object o; frees it when that fails. */
static void put_item(bool *ok, cJSON *o, const char *k, cJSON *v)
{
    bool added = o && v && (k ? cJSON_AddItemToObject(o, k, v) : cJSON_AddItemToArray(o, v));
    if (!added) {
        cJSON_Delete(v);
        *ok = false;
    }
}

/* cJSON 1.7.15's replace does not check its copy of the key: when that allocation fails the
 * member is replaced by one without a name. So the name is checked too (the object is then
 * thrown away by the caller, as after any failure). */
static void set_str(bool *ok, cJSON *o, const char *k, const char *v)
{
    cJSON *n = cJSON_CreateString(v);
    if (!n || !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n)) {
        cJSON_Delete(n);
        *ok = false;
    } else if (!n->string) {
        *ok = false;
    }
}

static cJSON *resource_ref(const cJSON *obj, const char *ns)
{
    bool ok = true;
    cJSON *r = cJSON_CreateObject();
    const cJSON *md = get(obj, "metadata");
    const char *av = str(obj, "apiVersion"), *kind = str(obj, "kind"), *name = str(md, "name");
    const char *uid = str(md, "uid");
    if (av) put_s(&ok, r, "apiVersion", av);
    if (kind) put_s(&ok, r, "kind", kind);
    if (name) put_s(&ok, r, "name", name);
    if (ns) put_s(&ok, r, "namespace", ns);
    if (uid) put_s(&ok, r, "uid", uid);
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* Appends v to the comma-separated property k of props unless it is there already; false
 * when memory runs out. */
static bool prop_add(cJSON *props, const char *k, const char *v)
{
    if (!v || !*v) return true;
    cJSON *cur = cJSON_GetObjectItemCaseSensitive(props, k);
    bool ok = true;
    if (!cur) {
        put_s(&ok, props, k, v);
        return ok;
    }
    size_t lv = strlen(v);
    for (const char *s = cur->valuestring; s && *s;) {
        const char *e = strchr(s, ',');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == lv && memcmp(s, v, l) == 0) return true;
        s = e ? e + 1 : s + l;
    }
    size_t lc = strlen(cur->valuestring);
    char *joined = malloc(lc + lv + 2);
    if (!joined) return false;
    memcpy(joined, cur->valuestring, lc);
    joined[lc] = ',';
    memcpy(joined + lc + 1, v, lv + 1);
    set_str(&ok, props, k, joined);
    free(joined);
    return ok;
}

static cJSON *new_result(const gpa_audit *a, const cJSON *obj, const char *ns, const char *rule)
{
    bool ok = true;
    cJSON *r = cJSON_CreateObject();
    put_s(&ok, r, "policy", POLICY_NAME);
    if (rule) put_s(&ok, r, "rule", rule);
    put_s(&ok, r, "result", "pass");
    put_s(&ok, r, "message", "");
    put_s(&ok, r, "source", "gpu-admission");
    put_s(&ok, r, "category", "GPU admission");
    cJSON *props = put_obj(&ok, r, "properties", false);
    put_s(&ok, props, "policyRevision", gpa_policy_revision(a->p));
    cJSON *res = put_obj(&ok, r, "resources", true);
    put_item(&ok, res, NULL, resource_ref(obj, ns));
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* A finding of the summary: every result but pass. */
static bool finding(gpa_audit *a, const char *status, const cJSON *obj, const char *origin,
                    const char *rule, const char *message)
{
    bool ok = true;
    char label[400];
    gpa_objects_describe(label, sizeof label, obj);
    cJSON *f = cJSON_CreateObject();
    put_s(&ok, f, "result", status);
    put_s(&ok, f, "object", label);
    if (origin) put_s(&ok, f, "origin", origin);
    if (rule) put_s(&ok, f, "rule", rule);
    put_s(&ok, f, "message", message);
    if (!ok) {
        cJSON_Delete(f);
        return false;
    }
    put_item(&ok, a->findings, NULL, f);
    return ok;
}

static int record(gpa_audit *a, scope *s, cJSON *r, int status, const cJSON *obj,
                  const char *origin, gpa_error *err)
{
    bool ok = true;
    set_str(&ok, r, "result", status_name[status]);
    if (ok && status != R_PASS)
        ok = finding(a, status_name[status], obj, origin, str(r, "rule"), str(r, "message"));
    if (!ok) {
        cJSON_Delete(r);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    put_item(&ok, s->results, NULL, r);
    if (!ok) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->n[status]++;
    a->n[status]++;
    return GPA_OK;
}

/* A namespace name the API server accepts (DNS-1123 label): a PolicyReport can live there. */
static bool ns_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-') return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* An object in a namespace no report can live in (not from a cluster: the API server refuses
 * such a namespace): an error in the summary, in no report. */
static int bad_namespace(gpa_audit *a, const cJSON *obj, const char *ns, const char *origin,
                         gpa_error *err)
{
    char msg[600];
    snprintf(msg, sizeof msg,
             "namespace \"%.200s\" is not a DNS-1123 label: no PolicyReport can hold it", ns);
    if (!finding(a, "error", obj, origin, NULL, msg))
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    a->n[R_ERROR]++;
    a->judged++;
    return GPA_OK;
}

int gpa_audit_object(gpa_audit *a, const cJSON *obj, const char *origin, gpa_error *err)
{
    a->objects++;
    const char *ns = str(get(obj, "metadata"), "namespace");
    bool cluster = cluster_scoped(obj);
    if (!ns && !cluster) ns = "default";
    cJSON *entries = NULL;
    gpa_error jerr = {0};
    int rc = gpa_impact_object(&entries, NULL, a->p, a->p, obj, &jerr);
    if (rc == GPA_ENOMEM) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (rc == GPA_OK && !entries->child) {
        a->not_judged++;
        cJSON_Delete(entries);
        return GPA_OK;
    }
    if (ns && !ns_name_ok(ns)) {
        cJSON_Delete(entries);
        return bad_namespace(a, obj, ns, origin, err);
    }
    scope *s = scope_of(a, cluster ? NULL : ns);
    if (!s) {
        cJSON_Delete(entries);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    if (rc != GPA_OK) {
        /* the server's 400: the object as stored could not be sent through the webhooks */
        a->judged++;
        cJSON *r = new_result(a, obj, cluster ? NULL : ns, NULL);
        bool ok = r != NULL;
        if (ok) set_str(&ok, r, "message", jerr.message);
        if (!ok) {
            cJSON_Delete(r);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        return record(a, s, r, R_ERROR, obj, origin, err);
    }
    a->judged++;
    /* one result per rule reached: a workload's templates under the same rule are one */
    bool several = entries->child->next != NULL, any = false;
    for (cJSON *e = entries->child; e && rc == GPA_OK; e = e->next) {
        if (cJSON_IsTrue(get(e, "done"))) continue;
        const char *rule = str(get(e, "new"), "rule");
        cJSON *r = NULL;
        int worst = R_NONE;
        char *msgs = NULL;
        size_t msgs_len = 0;
        for (cJSON *x = e; x; x = x->next) {
            const char *xr = str(get(x, "new"), "rule");
            if ((rule == NULL) != (xr == NULL) || (rule && strcmp(rule, xr) != 0)) continue;
            if (!cJSON_AddBoolToObject(x, "done", true)) {
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                break;
            }
            char msg[2048];
            msg[0] = '\0';
            int st = unit_status(x, msg, sizeof msg);
            if (st == R_NONE) continue;
            if (!r && !(r = new_result(a, obj, cluster ? NULL : ns, rule))) {
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                break;
            }
            const cJSON *n = get(x, "new");
            cJSON *props = cJSON_GetObjectItemCaseSensitive(r, "properties");
            if (!prop_add(props, "pool", str(n, "pool")) ||
                !prop_add(props, "reason", str(n, "reason")) ||
                !prop_add(props, "judgedAs", str(x, "judgedAs")) ||
                !prop_add(props, "template", str(x, "template"))) {
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                break;
            }
            /* the message of the worst unit; templates that share it are named together */
            if (st > worst) {
                worst = st;
                free(msgs);
                msgs = NULL;
                msgs_len = 0;
            }
            if (st == worst) {
                const char *t = several ? str(x, "template") : NULL;
                size_t add = strlen(msg) + (t ? strlen(t) + 2 : 0) + 3;
                char *grown = realloc(msgs, msgs_len + add);
                if (!grown) {
                    rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                    break;
                }
                msgs = grown;
                msgs_len += (size_t)snprintf(msgs + msgs_len, add, "%s%s%s%s", msgs_len ? "; " : "",
                                             t ? t : "", t ? ": " : "", msg);
            }
        }
        if (rc == GPA_OK && r) {
            bool ok = true;
            set_str(&ok, r, "message", msgs ? msgs : "");
            if (ok) {
                rc = record(a, s, r, worst, obj, origin, err);
            } else {
                cJSON_Delete(r);
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
            }
            any = true;
        } else {
            cJSON_Delete(r);
        }
        free(msgs);
    }
    if (!any) a->no_rule++;
    cJSON_Delete(entries);
    return rc;
}

static void add_counts(bool *ok, cJSON *o, const size_t *n, bool skip)
{
    for (int i = 0; i < R_N; i++)
        put_n(ok, o, status_name[i], (double)n[i]);
    if (skip) put_n(ok, o, "skip", 0);
}

static int by_ns(const void *x, const void *y)
{
    const scope *a = *(const scope *const *)x, *b = *(const scope *const *)y;
    return strcmp(a->ns, b->ns);
}

/* One report object holding count results of s from `from` on. NULL when memory runs out. */
static cJSON *report(const gpa_audit *a, const scope *s, size_t chunk, const cJSON *from,
                     size_t count)
{
    bool ok = true;
    cJSON *r = cJSON_CreateObject();
    put_s(&ok, r, "apiVersion", "wgpolicyk8s.io/v1alpha2");
    put_s(&ok, r, "kind", s->ns ? "PolicyReport" : "ClusterPolicyReport");
    cJSON *md = put_obj(&ok, r, "metadata", false);
    char name[64];
    if (chunk == 0)
        snprintf(name, sizeof name, "%s", REPORT_NAME);
    else
        snprintf(name, sizeof name, "%s-%zu", REPORT_NAME, chunk + 1);
    put_s(&ok, md, "name", name);
    if (s->ns) put_s(&ok, md, "namespace", s->ns);
    cJSON *lab = put_obj(&ok, md, "labels", false);
    put_s(&ok, lab, "app.kubernetes.io/managed-by", "gpu-admission");
    cJSON *ann = put_obj(&ok, md, "annotations", false);
    put_s(&ok, ann, "gpu-admission.io/policy-revision", gpa_policy_revision(a->p));
    size_t n[R_N] = {0};
    cJSON *res = cJSON_CreateArray();
    if (!res) ok = false;
    const cJSON *x = from;
    for (size_t i = 0; ok && x && i < count; i++, x = x->next) {
        for (int k = 0; k < R_N; k++)
            n[k] += strcmp(str(x, "result"), status_name[k]) == 0;
        put_item(&ok, res, NULL, cJSON_Duplicate(x, 1));
    }
    cJSON *sum = put_obj(&ok, r, "summary", false);
    add_counts(&ok, sum, n, true);
    put_item(&ok, r, "results", res);
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

static bool add_reports(cJSON *out, const gpa_audit *a, const scope *s)
{
    size_t total = (size_t)cJSON_GetArraySize(s->results);
    size_t per = a->max_results ? a->max_results : total ? total : 1;
    const cJSON *x = s->results->child;
    size_t chunk = 0;
    do {
        cJSON *r = report(a, s, chunk++, x, per);
        if (!r || !cJSON_AddItemToArray(out, r)) {
            cJSON_Delete(r);
            return false;
        }
        for (size_t i = 0; x && i < per; i++)
            x = x->next;
    } while (x);
    return true;
}

cJSON *gpa_audit_reports(const gpa_audit *a)
{
    cJSON *out = cJSON_CreateArray();
    const scope **sorted = calloc(a->n_scopes, sizeof *sorted);
    bool ok = out && sorted;
    size_t n = 0;
    for (size_t i = 1; ok && i < a->n_scopes; i++)
        if (a->scopes[i].results->child) sorted[n++] = &a->scopes[i];
    if (ok) qsort(sorted, n, sizeof *sorted, by_ns);
    for (size_t i = 0; ok && i < n; i++)
        ok = add_reports(out, a, sorted[i]);
    if (ok) ok = add_reports(out, a, &a->scopes[0]);
    free(sorted);
    if (!ok) {
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}

cJSON *gpa_audit_summary(const gpa_audit *a)
{
    bool ok = true;
    cJSON *s = cJSON_CreateObject();
    put_s(&ok, s, "policyRevision", gpa_policy_revision(a->p));
    put_n(&ok, s, "objects", (double)a->objects);
    put_n(&ok, s, "judged", (double)a->judged);
    put_n(&ok, s, "notJudged", (double)a->not_judged);
    put_n(&ok, s, "noRule", (double)a->no_rule);
    add_counts(&ok, put_obj(&ok, s, "results", false), a->n, false);
    cJSON *nss = put_obj(&ok, s, "namespaces", true);
    const scope **sorted = calloc(a->n_scopes, sizeof *sorted);
    if (!sorted) ok = false;
    size_t n = 0;
    for (size_t i = 1; sorted && i < a->n_scopes; i++)
        if (a->scopes[i].results->child) sorted[n++] = &a->scopes[i];
    if (sorted) qsort(sorted, n, sizeof *sorted, by_ns);
    for (size_t i = 0; ok && i <= n; i++) {
        const scope *sc = i < n ? sorted[i] : &a->scopes[0];
        if (!sc->results->child) continue;
        cJSON *e = cJSON_CreateObject();
        if (sc->ns)
            put_s(&ok, e, "namespace", sc->ns);
        else if (!e || !cJSON_AddNullToObject(e, "namespace"))
            ok = false;
        add_counts(&ok, e, sc->n, false);
        put_item(&ok, nss, NULL, e);
    }
    free(sorted);
    put_item(&ok, s, "findings", cJSON_Duplicate(a->findings, 1));
    if (!ok) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}
