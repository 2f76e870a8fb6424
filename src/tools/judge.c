/*
 * judge.c - an object through both webhooks' codecs as the API server sends it (see judge.h).
 *
 * Why through gpa_review_handle and not the engine directly: `test` and `diff` must agree
 * with the server byte for byte, including what the codec skips (subresources, DELETE, kinds
 * it does not police) and what it refuses as a 400.
 *
 * Must never: keep anything between calls, or judge the validating step on anything but the
 * object the mutating step's patch produced.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/judge.h"
#include "json_ref.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/review.h"
#include "gpu_admission/workload.h"

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_review(const cJSON *o)
{
    const char *k = str(o, "kind");
    return k && strcmp(k, "AdmissionReview") == 0 && cJSON_IsObject(get(o, "request"));
}

static bool add_ref(cJSON *to, const char *key, const cJSON *item)
{
    return gpa_tools_add_ref(to, key, item);
}

/* request.kind / request.resource from the object's own apiVersion and kind, as the API
 * server fills them (resource = lowercased kind + "s", right for every kind judged here). */
static bool add_kind(cJSON *req, const cJSON *obj)
{
    const char *av = str(obj, "apiVersion"), *kind = str(obj, "kind");
    if (!kind) return true; /* the codec reads the object itself */
    char group[256] = "", version[128] = "v1";
    if (av) {
        const char *slash = strchr(av, '/');
        if (slash) {
            snprintf(group, sizeof group, "%.*s", (int)(slash - av), av);
            snprintf(version, sizeof version, "%s", slash + 1);
        } else {
            snprintf(version, sizeof version, "%s", av);
        }
    }
    char plural[300];
    size_t n = 0;
    for (const char *c = kind; *c && n + 2 < sizeof plural; c++)
        plural[n++] = (char)tolower((unsigned char)*c);
    plural[n++] = 's';
    plural[n] = '\0';
    cJSON *k = cJSON_AddObjectToObject(req, "kind");
    cJSON *r = cJSON_AddObjectToObject(req, "resource");
    return k && r && cJSON_AddStringToObject(k, "group", group) &&
           cJSON_AddStringToObject(k, "version", version) &&
           cJSON_AddStringToObject(k, "kind", kind) && cJSON_AddStringToObject(r, "group", group) &&
           cJSON_AddStringToObject(r, "version", version) &&
           cJSON_AddStringToObject(r, "resource", plural);
}

/* The review sent to one hook: the given review's request with object replaced, or one built
 * around a bare object. Children are references: nothing of the caller's is copied. */
static char *review_body(size_t *len, const gpa_judge_input *in, const cJSON *object)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *req = root ? cJSON_CreateObject() : NULL;
    bool ok = req != NULL;
    if (ok && !cJSON_AddItemToObject(root, "request", req)) {
        cJSON_Delete(req);
        ok = false;
    }
    if (ok && is_review(in->object)) {
        const char *av = str(in->object, "apiVersion");
        ok = cJSON_AddStringToObject(root, "apiVersion", av ? av : "admission.k8s.io/v1") &&
             cJSON_AddStringToObject(root, "kind", "AdmissionReview");
        for (const cJSON *c = get(in->object, "request")->child; ok && c; c = c->next)
            if (c->string && strcmp(c->string, "object") != 0) ok = add_ref(req, c->string, c);
        if (ok && object) ok = add_ref(req, "object", object);
    } else if (ok) {
        const char *ns = in->namespace_;
        const cJSON *md = get(object, "metadata");
        if (!ns || !*ns) ns = str(md, "namespace");
        if (!ns || !*ns) ns = "default";
        const char *name = str(md, "name");
        ok = cJSON_AddStringToObject(root, "apiVersion", "admission.k8s.io/v1") &&
             cJSON_AddStringToObject(root, "kind", "AdmissionReview") &&
             cJSON_AddStringToObject(req, "uid", "00000000-0000-4000-8000-gpu-admission") &&
             add_kind(req, object) && cJSON_AddStringToObject(req, "namespace", ns) &&
             cJSON_AddStringToObject(req, "operation", in->operation ? in->operation : "CREATE");
        if (ok && name) ok = cJSON_AddStringToObject(req, "name", name) != NULL;
        if (ok)
            ok = object ? add_ref(req, "object", object)
                        : cJSON_AddNullToObject(req, "object") != NULL;
        if (ok && in->old_object) ok = add_ref(req, "oldObject", in->old_object);
    }
    char *body = ok ? gpa_review_json(root, len) : NULL;
    cJSON_Delete(root);
    return body;
}

static int one_hook(gpa_review_result *r, const gpa_policy *p, gpa_hook hook,
                    const gpa_judge_input *in, const cJSON *object, gpa_error *err)
{
    /* the caller clears r whatever happens: cleared before the first way out */
    memset(r, 0, sizeof *r);
    size_t len = 0;
    char *body = review_body(&len, in, object);
    if (!body) return gpa_fail(err, GPA_ENOMEM, "out of memory building the AdmissionReview");
    gpa_error herr;
    herr.code = 0;
    herr.message[0] = '\0';
    int rc = gpa_review_handle(r, p, hook, body, len, &herr);
    free(body);
    if (rc == GPA_ENOMEM) return gpa_fail(err, rc, "out of memory");
    if (rc != GPA_OK)
        return gpa_fail(err, GPA_EREQUEST, "the %s webhook answers 400: %s",
                        hook == GPA_HOOK_MUTATE ? "mutating" : "validating",
                        herr.message[0] ? herr.message : "bad request");
    return GPA_OK;
}

static bool add_warning(gpa_judgement *j, const char *w)
{
    for (size_t i = 0; i < j->n_warnings; i++)
        if (strcmp(j->warnings[i], w) == 0) return true;
    char **nw = realloc(j->warnings, (j->n_warnings + 1) * sizeof *nw);
    if (!nw) return false;
    j->warnings = nw;
    if (!(nw[j->n_warnings] = strdup(w))) return false;
    j->n_warnings++;
    return true;
}

/* Copies what the caller reads out of one hook's result (the result dies right after). */
static bool take(gpa_judgement *j, const gpa_review_result *r)
{
    if (strcmp(r->outcome, "skipped") == 0) return true;
    const gpa_decision *d = &r->decision;
    j->judged = true;
    if (!d->allowed) j->allowed = false;
    if (!j->rule && d->rule && !(j->rule = strdup(d->rule))) return false;
    if (!j->pool && d->pool && !(j->pool = strdup(d->pool))) return false;
    if (!j->reason && d->reason && !(j->reason = strdup(d->reason))) return false;
    if (!j->message && d->message && !(j->message = strdup(d->message))) return false;
    for (size_t i = 0; i < d->n_warnings; i++)
        if (d->warnings[i] && !add_warning(j, d->warnings[i])) return false;
    return true;
}

int gpa_judge(gpa_judgement *out, const gpa_policy *p, const gpa_judge_input *in, gpa_error *err)
{
    memset(out, 0, sizeof *out);
    out->allowed = true;
    if (!in || !in->object) return gpa_fail(err, GPA_EINVAL, "no object to judge");
    const cJSON *object = in->object;
    if (is_review(object)) {
        object = get(get(object, "request"), "object");
        if (cJSON_IsNull(object)) object = NULL;
    }
    cJSON *mutated = NULL; /* owned when the patch changed something */
    int rc = GPA_OK;
    bool oom = false;
    if (in->hooks != GPA_JUDGE_VALIDATE) {
        gpa_review_result r;
        rc = one_hook(&r, p, GPA_HOOK_MUTATE, in, object, err);
        if (rc == GPA_OK) {
            oom = !take(out, &r);
            const cJSON *patch = r.decision.patch;
            bool judged = strcmp(r.outcome, "skipped") != 0;
            if (!oom && judged && r.decision.allowed && patch && patch->child && object) {
                out->mutated = true;
                mutated = cJSON_Duplicate(object, 1);
                gpa_error perr;
                int prc = mutated ? gpa_patch_apply(mutated, patch, &perr) : GPA_ENOMEM;
                if (prc == GPA_ENOMEM) /* an answer of its own, not a patch that is wrong */
                    oom = true;
                else if (prc != GPA_OK)
                    rc = gpa_fail(err, GPA_EINVAL, "the webhook's patch does not apply: %s",
                                  perr.message);
            }
        }
        gpa_review_result_clear(&r);
    }
    const cJSON *final = mutated ? mutated : object;
    if (rc == GPA_OK && !oom && in->hooks != GPA_JUDGE_MUTATE && out->allowed) {
        gpa_review_result r;
        rc = one_hook(&r, p, GPA_HOOK_VALIDATE, in, final, err);
        if (rc == GPA_OK) oom = !take(out, &r);
        gpa_review_result_clear(&r);
    }
    if (rc == GPA_OK && !oom) {
        /* the patched copy is kept anyway (it costs nothing more); an unchanged object is
         * copied only for a caller that wants to own it */
        out->object = mutated;
        mutated = NULL;
        if (!out->object && in->want_object && final && !(out->object = cJSON_Duplicate(final, 1)))
            oom = true;
        out->result = out->object ? out->object : final;
    }
    cJSON_Delete(mutated);
    if (rc == GPA_OK && oom) rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (rc != GPA_OK) gpa_judgement_clear(out);
    return rc;
}

void gpa_judgement_clear(gpa_judgement *j)
{
    if (!j) return;
    free(j->rule);
    free(j->pool);
    free(j->reason);
    free(j->message);
    for (size_t i = 0; i < j->n_warnings; i++)
        free(j->warnings[i]);
    free(j->warnings);
    cJSON_Delete(j->object);
    memset(j, 0, sizeof *j);
}

static bool add_limits(cJSON *out, const cJSON *spec, const char *prefix)
{
    static const char *lists[] = {"initContainers", "containers", "ephemeralContainers"};
    for (size_t l = 0; l < 3; l++) {
        const cJSON *arr = get(spec, lists[l]);
        if (!cJSON_IsArray(arr)) continue;
        for (const cJSON *c = arr->child; c; c = c->next) {
            const char *name = str(c, "name");
            if (!name) continue;
            char key[512];
            snprintf(key, sizeof key, "%s%s%s", prefix ? prefix : "", prefix ? "/" : "", name);
            if (get(out, key)) continue;
            const cJSON *lim = get(get(c, "resources"), "limits");
            cJSON *copy = cJSON_IsObject(lim) ? cJSON_Duplicate(lim, 1) : cJSON_CreateObject();
            if (!copy || !cJSON_AddItemToObject(out, key, copy)) {
                cJSON_Delete(copy);
                return false;
            }
        }
    }
    return true;
}

cJSON *gpa_judge_container_limits(const gpa_policy *p, const cJSON *object)
{
    cJSON *out = cJSON_CreateObject();
    if (!out) return NULL;
    const char *kind = str(object, "kind");
    bool ok = true;
    if (kind && strcmp(kind, "Pod") != 0 &&
        gpa_workload_kind_known(p, str(object, "apiVersion"), kind)) {
        /* Workload templates: "<template path>/<container>", the same container name often
         * appearing in several templates (PyTorchJob Master and Worker). */
        gpa_workload_templates *t = NULL;
        gpa_error terr = {0};
        int trc = gpa_workload_templates_read(&t, p, object, NULL, &terr);
        if (trc == GPA_ENOMEM) ok = false;
        if (trc == GPA_OK) {
            for (size_t i = 0; ok && i < gpa_workload_templates_count(t); i++) {
                const gpa_workload_template *wt = gpa_workload_templates_get(t, i);
                ok = add_limits(out, get(wt->pod, "spec"), wt->path);
            }
        }
        gpa_workload_templates_free(t);
    } else {
        ok = add_limits(out, get(object, "spec"), NULL);
    }
    if (!ok) {
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}
