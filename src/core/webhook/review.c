/*
 * review.c - the AdmissionReview codec: request bytes in, response bytes out. Used verbatim by
 * the server's POST /mutate and /validate and by `gpu-admission review`, so both always give
 * the same bytes for the same body.
 *
 * Reads the envelope (admission.k8s.io/v1 or v1beta1), decides whether the request is one the
 * engine judges (a Pod CREATE, or an UPDATE on the validating hook), runs the engine and
 * writes the response in the version asked. Anything that is not an answerable
 * AdmissionReview gets HTTP 400 with a Kubernetes Status body.
 *
 * Must never: do I/O, build a patch from a half-understood request (every field the decision
 * depends on is type-checked before the engine runs), or vary its output bytes for the same
 * input (fixed key order, no clocks, no pointers in the output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu_admission/review.h"
#include "format/json_write.h"
#include "format/json_read.h"
#include "webhook/review_claim.h"
#include "webhook/review_workload.h"
#include "webhook/review_namespace.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"

/* The first member of o named key, n bytes with its NUL (what
 * cJSON_GetObjectItemCaseSensitive returns), NULL when none. Keys are strings of the reader's
 * tree, so each is compared in one fixed-size memcmp the compiler inlines (see
 * GPA_JSON_STR_IS), not a strcmp call. */
static inline __attribute__((always_inline)) const cJSON *get_n(const cJSON *o, const char *key,
                                                                size_t n)
{
    if (!o) return NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && memcmp(c->string, key, n) == 0) return c;
    return NULL;
}
#define get(o, key) get_n((o), key, GPA_JSON_LIT_SIZE(key))

/* The log fields of out point into the request's parsed copy, which the result keeps until
 * gpa_review_result_clear (copying them cost four strlen, a malloc and four memcpy). Each is
 * NULL when unknown. */
static void set_log_fields(gpa_review_result *out, const char *uid, const char *op,
                           const char *name, const char *ns)
{
    if (!uid) return;
    out->uid = (char *)uid;
    out->operation = (char *)op;
    out->name = (char *)name;
    out->namespace_ = (char *)ns;
}

/* The first members of o named k1 and k2 (n1, n2 bytes with their NUL), in one pass. */
static inline __attribute__((always_inline)) void get2_n(const cJSON *o, const char *k1, size_t n1,
                                                         const char *k2, size_t n2,
                                                         const cJSON **v1, const cJSON **v2)
{
    *v1 = *v2 = NULL;
    for (const cJSON *c = o->child; c && !(*v1 && *v2); c = c->next) {
        if (!c->string) continue;
        if (!*v1 && memcmp(c->string, k1, n1) == 0)
            *v1 = c;
        else if (!*v2 && memcmp(c->string, k2, n2) == 0)
            *v2 = c;
    }
}
#define get2(o, k1, k2, v1, v2)                                                                    \
    get2_n((o), k1, GPA_JSON_LIT_SIZE(k1), k2, GPA_JSON_LIT_SIZE(k2), (v1), (v2))

/* cJSON's type tests are library calls; these are what they test, inline. */
static inline bool is_null(const cJSON *v)
{
    return v && (v->type & 0xFF) == cJSON_NULL;
}
static inline bool is_object(const cJSON *v)
{
    return v && (v->type & 0xFF) == cJSON_Object;
}
static inline bool is_string(const cJSON *v)
{
    return v && (v->type & 0xFF) == cJSON_String;
}

/* A string member (key: n bytes with its NUL), NULL when absent or JSON null; *bad set when
 * present with another type. */
static inline __attribute__((always_inline)) const char *
opt_string_n(const cJSON *o, const char *key, size_t n, bool *bad)
{
    const cJSON *v = get_n(o, key, n);
    if (!v || is_null(v)) return NULL;
    if (!is_string(v) || !v->valuestring) {
        *bad = true;
        return NULL;
    }
    return v->valuestring;
}
#define opt_string(o, key, bad) opt_string_n((o), key, GPA_JSON_LIT_SIZE(key), (bad))

/* The string value of v: NULL when absent or JSON null; *bad set for another type. */
static const char *str_of(const cJSON *v, bool *bad)
{
    if (!v || is_null(v)) return NULL;
    if (!is_string(v) || !v->valuestring) {
        *bad = true;
        return NULL;
    }
    return v->valuestring;
}

/* Members of request the codec reads. */
enum {
    R_UID,
    R_KIND,
    R_RESOURCE,
    R_SUBRESOURCE,
    R_NAMESPACE,
    R_OPERATION,
    R_OBJECT,
    R_OLD,
    R_NAME,
    R_USERINFO,
    R_COUNT
};

/* Which of the R_* members key is (R_COUNT: none). A switch on the first byte: a request has
 * a dozen members and this runs once per member. */
static int request_member(const char *key)
{
    switch (key[0]) {
    case 'u':
        if (GPA_JSON_STR_IS(key, "uid")) return R_UID;
        return GPA_JSON_STR_IS(key, "userInfo") ? R_USERINFO : R_COUNT;
    case 'k':
        return GPA_JSON_STR_IS(key, "kind") ? R_KIND : R_COUNT;
    case 'r':
        return GPA_JSON_STR_IS(key, "resource") ? R_RESOURCE : R_COUNT;
    case 's':
        return GPA_JSON_STR_IS(key, "subResource") ? R_SUBRESOURCE : R_COUNT;
    case 'n':
        if (GPA_JSON_STR_IS(key, "namespace")) return R_NAMESPACE;
        return GPA_JSON_STR_IS(key, "name") ? R_NAME : R_COUNT;
    case 'o':
        if (key[1] == 'p') return GPA_JSON_STR_IS(key, "operation") ? R_OPERATION : R_COUNT;
        if (key[1] == 'b') return GPA_JSON_STR_IS(key, "object") ? R_OBJECT : R_COUNT;
        return GPA_JSON_STR_IS(key, "oldObject") ? R_OLD : R_COUNT;
    default:
        return R_COUNT;
    }
}

/* One pass over request's members: m[i] = the FIRST member of kind i (what
 * cJSON_GetObjectItemCaseSensitive would return), instead of one scan per lookup. */
static void index_request(const cJSON *req, const cJSON **m)
{
    for (int i = 0; i < R_COUNT; i++)
        m[i] = NULL;
    for (const cJSON *c = req->child; c; c = c->next) {
        if (!c->string) continue;
        int i = request_member(c->string);
        if (i < R_COUNT && !m[i]) m[i] = c;
    }
}

/* A string literal appended without strlen. */
#define PUT_LIT(b, lit) gpa_rbuf_put((b), "" lit, sizeof(lit) - 1)

/* The 400 answer: a metav1.Status, which is what the API server logs for a failed call. */
static int bad_request(gpa_review_result *out, gpa_error *err, const char *msg)
{
    gpa_rbuf b;
    gpa_rbuf_init(&b, 160 + strlen(msg));
    PUT_LIT(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                "\"status\":\"Failure\",\"message\":");
    gpa_rbuf_json_str(&b, msg);
    PUT_LIT(&b, ",\"reason\":\"BadRequest\",\"code\":400}");
    out->http_status = 400;
    out->outcome = "error";
    out->body = gpa_rbuf_take(&b, &out->body_len);
    if (!out->body) {
        out->http_status = 500;
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    return gpa_fail(err, GPA_EREQUEST, "%s", msg);
}

/* The kinds of request the codec understands well enough to answer. */
typedef struct envelope {
    const char *api_version;
    const char *uid;
    const cJSON *request;
    const cJSON *object;
    const cJSON *old_object;
    const char *namespace_;
    gpa_operation op;
    bool judge;             /* false: answer "allowed", untouched */
    bool ephemeral;         /* UPDATE of pods/ephemeralcontainers (validating hook only) */
    gpa_claim_kind_t claim; /* a DRA claim (either hook, CREATE/UPDATE, no subresource) */
    bool workload;          /* maybe a workload kind (validating hook, no subresource, an object):
                               the policy decides (gpa_wl_find on kind_group/kind_name) */
    const char *kind_group, *kind_name; /* request.kind's, else the object's; NULL unknown */
    size_t kind_group_len; /* kind_group may be an apiVersion ("apps/v1"): its group's bytes */
    char why[256];         /* room for a message naming the offending value */
    /* For the log fields of the result (set_log_fields), as soon as each is known. */
    const char *log_uid, *log_op, *log_name, *log_ns;
    const cJSON *user_info; /* request.userInfo when an object: who asked, for the log */
} envelope;

/* request.userInfo's username and groups for the log line, pointing into the request like the
 * other log fields; a member of the wrong type is left out (NULL), never a reason to refuse:
 * the codec does not judge who asked, the API server authenticated them. */
static void set_user_fields(gpa_review_result *out, const cJSON *ui)
{
    if (!ui) return;
    bool bad = false;
    const char *user = opt_string(ui, "username", &bad);
    out->user = bad ? NULL : (char *)user;
    const cJSON *g = get_n(ui, "groups", GPA_JSON_LIT_SIZE("groups"));
    out->user_groups = g && cJSON_IsArray(g) ? g : NULL;
}

size_t gpa_review_result_groups(const gpa_review_result *r, const char **out, size_t max)
{
    size_t n = 0;
    const cJSON *g = r ? r->user_groups : NULL;
    for (const cJSON *c = g ? ((const cJSON *)g)->child : NULL; c; c = c->next) {
        if (!cJSON_IsString(c) || !c->valuestring) continue;
        if (n < max) out[n] = c->valuestring;
        n++;
    }
    return n;
}

static int op_from_string(gpa_operation *op, const char *s)
{
    if (GPA_JSON_STR_IS(s, "CREATE"))
        *op = GPA_OP_CREATE;
    else if (GPA_JSON_STR_IS(s, "UPDATE"))
        *op = GPA_OP_UPDATE;
    else if (GPA_JSON_STR_IS(s, "DELETE"))
        *op = GPA_OP_DELETE;
    else if (GPA_JSON_STR_IS(s, "CONNECT"))
        *op = GPA_OP_CONNECT;
    else
        return -1;
    return 0;
}

/* Is this request about the core/v1 Pod resource itself (not another kind)? Returns 1 yes,
 * 2 the pods/ephemeralcontainers subresource (`kubectl debug` adds containers to a running
 * pod through it, so the validating webhook must see it), 0 no (any other subresource or
 * kind), -1 malformed (message in *why). */
static int is_pod(envelope *env, const cJSON *const *m, const cJSON *object, const char **why)
{
    bool bad = false;
    const cJSON *kind = m[R_KIND];
    if (kind && !is_null(kind)) {
        if (!is_object(kind)) {
            *why = "request.kind must be an object {group, version, kind}";
            return -1;
        }
        const cJSON *kv, *gv;
        get2(kind, "kind", "group", &kv, &gv);
        const char *k = str_of(kv, &bad);
        const char *g = str_of(gv, &bad);
        if (bad) {
            *why = "request.kind.kind and request.kind.group must be strings";
            return -1;
        }
        env->kind_name = k;
        env->kind_group = g ? g : "";
        if (!k || !GPA_JSON_STR_IS(k, "Pod") || (g && *g)) return 0;
    }
    const cJSON *res = m[R_RESOURCE];
    if (res && !is_null(res)) {
        if (!is_object(res)) {
            *why = "request.resource must be an object {group, version, resource}";
            return -1;
        }
        const cJSON *rv, *gv;
        get2(res, "resource", "group", &rv, &gv);
        const char *r = str_of(rv, &bad);
        const char *g = str_of(gv, &bad);
        if (bad) {
            *why = "request.resource.resource and request.resource.group must be strings";
            return -1;
        }
        if ((r && !GPA_JSON_STR_IS(r, "pods")) || (g && *g)) return 0;
    }
    const char *sub = str_of(m[R_SUBRESOURCE], &bad);
    if (bad) {
        *why = "request.subResource must be a string";
        return -1;
    }
    if (sub && *sub) return GPA_JSON_STR_IS(sub, "ephemeralcontainers") ? 2 : 0;
    /* The object states its own kind; a request that names none must at least not carry an
     * object of another kind (hand-written reviews, gator samples). */
    if (object && is_object(object)) {
        const cJSON *kv, *av_;
        get2(object, "kind", "apiVersion", &kv, &av_);
        const char *ok = str_of(kv, &bad);
        const char *av = str_of(av_, &bad);
        if (bad) {
            *why = "request.object.kind and request.object.apiVersion must be strings";
            return -1;
        }
        if ((ok && !GPA_JSON_STR_IS(ok, "Pod")) || (av && !GPA_JSON_STR_IS(av, "v1"))) return 0;
    }
    return 1;
}

/* A pod object the engine may read: an object whose metadata and spec (when present) are
 * objects. Deeper shapes are the engine's pod view's business. */
static const char *pod_shape_error(const cJSON *pod, const char *what)
{
    if (!is_object(pod)) return what;
    const cJSON *md, *spec;
    get2(pod, "metadata", "spec", &md, &spec);
    if (md && !is_null(md) && !is_object(md)) return "pod metadata must be an object";
    if (spec && !is_null(spec) && !is_object(spec)) return "pod spec must be an object";
    return NULL;
}

/* Validates the envelope and fills env; on a malformed request returns -1 with *why set.
 * The log fields (env->log_*) are recorded as soon as they are known, even on the error path. */
static int read_envelope(envelope *env, const cJSON *root, gpa_hook hook, const char **why)
{
    bool bad = false;
    /* Every field but why (written only with the message it holds): zeroing its 256 bytes on
     * every request cost more than reading the envelope. */
    env->api_version = env->uid = env->namespace_ = NULL;
    env->request = env->object = env->old_object = NULL;
    env->op = (gpa_operation)0;
    env->judge = env->ephemeral = env->workload = false;
    env->claim = GPA_CLAIM_NONE;
    env->kind_group = env->kind_name = NULL;
    env->log_uid = env->log_op = env->log_name = env->log_ns = NULL;
    env->user_info = NULL;
    if (!is_object(root)) {
        *why = "AdmissionReview must be a JSON object";
        return -1;
    }
    const cJSON *top[3] = {get(root, "apiVersion"), get(root, "kind"), get(root, "request")};
    const char *av = str_of(top[0], &bad);
    if (bad || !av) {
        *why = "apiVersion must be \"" API_V1 "\" or \"" API_V1BETA1 "\"";
        return -1;
    }
    if (GPA_JSON_STR_IS(av, API_V1))
        env->api_version = API_V1;
    else if (GPA_JSON_STR_IS(av, API_V1BETA1))
        env->api_version = API_V1BETA1;
    else {
        snprintf(env->why, sizeof env->why,
                 "unsupported apiVersion \"%.80s\": expected \"" API_V1 "\" or \"" API_V1BETA1 "\"",
                 av);
        *why = env->why;
        return -1;
    }
    const char *kind = str_of(top[1], &bad);
    if (bad || !kind) {
        *why = "kind must be \"AdmissionReview\"";
        return -1;
    }
    if (!GPA_JSON_STR_IS(kind, "AdmissionReview")) {
        snprintf(env->why, sizeof env->why, "kind is \"%.80s\", expected \"AdmissionReview\"",
                 kind);
        *why = env->why;
        return -1;
    }
    const cJSON *req = top[2];
    if (!is_object(req)) {
        *why = "AdmissionReview has no request object";
        return -1;
    }
    env->request = req;
    const cJSON *m[R_COUNT];
    index_request(req, m);
    /* before anything can fail: a malformed request is logged with who sent it too */
    if (m[R_USERINFO] && is_object(m[R_USERINFO])) env->user_info = m[R_USERINFO];
    const char *uid = str_of(m[R_UID], &bad);
    if (bad || !uid || !*uid) {
        *why = "request.uid must be a non-empty string";
        return -1;
    }
    env->uid = uid;
    env->log_uid = uid;

    const char *ops = str_of(m[R_OPERATION], &bad);
    if (bad || !ops) {
        *why = "request.operation must be a string (CREATE, UPDATE, DELETE or CONNECT)";
        return -1;
    }
    env->log_op = ops;

    const char *ns = str_of(m[R_NAMESPACE], &bad);
    if (bad) {
        *why = "request.namespace must be a string";
        return -1;
    }

    const cJSON *obj = m[R_OBJECT];
    if (obj && is_null(obj)) obj = NULL;
    if (obj && !is_object(obj)) {
        *why = "request.object must be an object or null";
        return -1;
    }
    const cJSON *old = m[R_OLD];
    if (old && is_null(old)) old = NULL;
    if (old && !is_object(old)) {
        *why = "request.oldObject must be an object or null";
        return -1;
    }
    env->object = obj;
    env->old_object = old;

    /* Name and namespace for logs: the request's, else the object's own. */
    const cJSON *md = obj ? get(obj, "metadata") : NULL;
    if (is_object(md)) {
        bool ignore = false;
        const char *name = str_of(m[R_NAME], &ignore);
        if (!name || !*name) name = opt_string(md, "name", &ignore);
        if (!name || !*name) name = opt_string(md, "generateName", &ignore);
        env->log_name = name && *name ? name : NULL;
        if (!ns || !*ns) ns = opt_string(md, "namespace", &ignore);
    } else {
        bool ignore = false;
        const char *name = str_of(m[R_NAME], &ignore);
        env->log_name = name && *name ? name : NULL;
    }
    /* The API server always names the namespace of a pod; a hand-written review without one
     * is read the way kubectl would create it. */
    env->namespace_ = ns && *ns ? ns : "default";
    env->log_ns = env->namespace_;

    int pod = is_pod(env, m, obj, why);
    if (pod < 0) return -1;
    gpa_operation op;
    if (op_from_string(&op, ops) != 0) {
        /* Not an operation of admission.k8s.io; nothing we police. */
        env->judge = false;
        return 0;
    }
    env->op = op;
    if (!pod) {
        /* DRA claims, on both hooks; their status subresource is the scheduler's write */
        if ((op == GPA_OP_CREATE || op == GPA_OP_UPDATE) && obj) {
            gpa_claim_kind_t ck = gpa_review_claim_kind(env->kind_group, env->kind_name, obj);
            if (ck) {
                const char *sub = str_of(m[R_SUBRESOURCE], &bad);
                if (bad) {
                    *why = "request.subResource must be a string";
                    return -1;
                }
                if (!sub || !*sub) env->claim = ck;
                return 0;
            }
        }
        if (hook != GPA_HOOK_VALIDATE || (op != GPA_OP_CREATE && op != GPA_OP_UPDATE) || !obj)
            return 0;
        /* A workload's status, scale and other subresources carry no template to judge. */
        const char *sub = str_of(m[R_SUBRESOURCE], &bad);
        if (bad) {
            *why = "request.subResource must be a string";
            return -1;
        }
        if (sub && *sub) return 0;
        if (!env->kind_name) {
            /* a hand-written review without request.kind: the object states its own */
            const cJSON *kv, *avv;
            get2(obj, "kind", "apiVersion", &kv, &avv);
            bool ignore = false;
            const char *ok = str_of(kv, &ignore), *oav = str_of(avv, &ignore);
            if (ignore || !ok || !oav) return 0;
            const char *slash = strchr(oav, '/');
            env->kind_name = ok;
            env->kind_group = slash ? oav : "";
            env->kind_group_len = slash ? (size_t)(slash - oav) : 0;
        } else {
            env->kind_group_len = strlen(env->kind_group);
        }
        env->workload = true;
        return 0;
    }
    if (!obj) return 0;
    if (pod == 2) {
        /* The mutating webhook never touches a running pod; the validating one judges what
         * the update adds: containers. */
        if (op != GPA_OP_UPDATE || hook != GPA_HOOK_VALIDATE) return 0;
        env->ephemeral = true;
    }
    if (op == GPA_OP_CREATE || (op == GPA_OP_UPDATE && hook == GPA_HOOK_VALIDATE)) {
        const char *shape = pod_shape_error(obj, "request.object must be an object");
        if (!shape && op == GPA_OP_UPDATE && old)
            shape = pod_shape_error(old, "request.oldObject must be an object");
        if (shape) {
            *why = shape;
            return -1;
        }
        env->judge = true;
    }
    return 0;
}

/* Writes the 200 answer. Key order is fixed: the bytes are compared across server and CLI.
 * in_len (the request's size) sizes the buffer: the patch is a fraction of the pod it
 * changes, and the buffer grows in the rare case the guess is short. */
static int write_response(gpa_review_result *out, const envelope *env, size_t in_len,
                          gpa_error *err)
{
    const gpa_decision *d = &out->decision;
    bool patch = env->judge && d->allowed && d->patch && d->patch->child;
    size_t guess = in_len < 65536 ? in_len : 65536;
    gpa_rbuf b;
    gpa_rbuf_init(&b, env->judge ? 1024 + (patch ? guess : 0) : 512);
    /* api_version is one of the two constants (read_envelope), told apart by the byte past
     * "admission.k8s.io/v1": the envelope's head is one literal either way. */
    if (env->api_version[sizeof API_V1 - 1] == '\0')
        PUT_LIT(&b, "{\"apiVersion\":\"" API_V1
                    "\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    else
        PUT_LIT(&b, "{\"apiVersion\":\"" API_V1BETA1
                    "\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    gpa_rbuf_json_str(&b, env->uid);
    bool allowed = !env->judge || d->allowed;
    if (allowed)
        PUT_LIT(&b, ",\"allowed\":true");
    else
        PUT_LIT(&b, ",\"allowed\":false");
    if (patch) {
        PUT_LIT(&b, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        /* The patch is printed where its base64 goes, then encoded in place. */
        size_t at = b.len;
        gpa_rbuf_json_value(&b, d->patch);
        if (b.oom) {
            gpa_rbuf_free(&b);
            return gpa_fail(err, GPA_ENOMEM, "out of memory printing the patch");
        }
        gpa_rbuf_base64_tail(&b, at);
        PUT_LIT(&b, "\"");
    }
    if (env->judge && d->n_warnings > 0) {
        PUT_LIT(&b, ",\"warnings\":[");
        for (size_t i = 0; i < d->n_warnings; i++)
            gpa_rbuf_json_str_sep(&b, d->warnings[i] ? d->warnings[i] : "", i > 0, false);
        PUT_LIT(&b, "]");
    }
    if (env->judge && d->n_audit > 0) {
        PUT_LIT(&b, ",\"auditAnnotations\":{");
        size_t written = 0;
        for (size_t i = 0; i < d->n_audit; i++) {
            if (!d->audit_keys[i]) continue;
            /* A JSON object with a repeated key means different things to different readers:
             * keep the first value only. */
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = d->audit_keys[j] && strcmp(d->audit_keys[j], d->audit_keys[i]) == 0;
            if (seen) continue;
            gpa_rbuf_json_str_sep(&b, d->audit_keys[i], written++ > 0, true);
            gpa_rbuf_json_str(&b, d->audit_values[i] ? d->audit_values[i] : "");
        }
        PUT_LIT(&b, "}");
    }
    if (!allowed) {
        PUT_LIT(&b, ",\"status\":{\"code\":403,\"reason\":\"Forbidden\",\"message\":");
        gpa_rbuf_json_str(&b, d->message && *d->message ? d->message
                                                        : "denied by gpu-admission policy");
        PUT_LIT(&b, "}");
    }
    PUT_LIT(&b, "}}");
    out->body = gpa_rbuf_take(&b, &out->body_len);
    if (!out->body) return gpa_fail(err, GPA_ENOMEM, "out of memory writing the response");
    out->http_status = 200;
    if (!env->judge)
        out->outcome = "skipped";
    else if (!d->allowed)
        out->outcome = "denied";
    else if (d->message)
        out->outcome = "warned";
    else if (patch)
        out->outcome = "mutated";
    else
        out->outcome = "allowed";
    return GPA_OK;
}

int gpa_review_handle(gpa_review_result *out, const gpa_policy *p, gpa_hook hook, const char *body,
                      size_t len, gpa_error *err)
{
    return gpa_review_handle_guarded(out, p, NULL, hook, body, len, err);
}

int gpa_review_handle_guarded(gpa_review_result *out, const gpa_policy *p, const gpa_ns_guard *g,
                              gpa_hook hook, const char *body, size_t len, gpa_error *err)
{
    memset(out, 0, sizeof *out);
    if (!body || len == 0)
        return bad_request(out, err, "empty request body: expected an AdmissionReview");
    gpa_jdoc *doc = NULL;
    const char *jwhy = NULL;
    size_t off = 0;
    int prc = gpa_jdoc_parse(&doc, body, len, &jwhy, &off);
    if (prc == -2) {
        out->http_status = 500;
        out->outcome = "error";
        return gpa_fail(err, GPA_ENOMEM, "out of memory reading the request");
    }
    if (prc != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "request body is not valid JSON: %s at byte %zu",
                 jwhy ? jwhy : "syntax error", off);
        return bad_request(out, err, msg);
    }
    /* Kept until gpa_review_result_clear: the log fields point into it. */
    out->request_doc = doc;
    const cJSON *root = gpa_jdoc_root(doc);

    envelope env;
    const char *why = NULL;
    int erc = read_envelope(&env, root, hook, &why);
    set_log_fields(out, env.log_uid, env.log_op, env.log_name, env.log_ns);
    set_user_fields(out, env.user_info);
    if (erc != 0) return bad_request(out, err, why);

    int rc = GPA_OK;
    out->kind = (char *)(env.kind_name ? env.kind_name : env.judge ? "Pod" : NULL);
    gpa_wl_kind wk;
    if (env.claim) {
        if (!p) return bad_request(out, err, "no policy loaded");
        bool judged = false;
        char cwhy[sizeof env.why + 64];
        /* who made the claim: the scheduler's extended-resource claims are left alone */
        const char *user = out->user;
        rc = gpa_review_claim(&out->decision, &judged, p, hook, env.claim, env.op, env.object,
                              env.old_object, env.namespace_, user, cwhy, sizeof cwhy);
        if (rc == GPA_EREQUEST) return bad_request(out, err, cwhy);
        if (rc != GPA_OK) {
            out->http_status = 500;
            out->outcome = "error";
            return gpa_fail(err, GPA_ENOMEM, "out of memory judging the claim");
        }
        env.judge = judged;
    } else if (env.workload &&
               gpa_review_is_namespace(env.kind_group, env.kind_group_len, env.kind_name)) {
        /* The ignore-label lock (review_namespace.c); needs no policy. */
        bool judged = false;
        const char *nwhy = NULL;
        bool ignore = false;
        const cJSON *ui = get_n(env.request, "userInfo", GPA_JSON_LIT_SIZE("userInfo"));
        const char *user = is_object(ui) ? opt_string(ui, "username", &ignore) : NULL;
        const cJSON *groups = is_object(ui) ? get(ui, "groups") : NULL;
        rc = gpa_review_namespace(&out->decision, &judged, g, env.object, env.op, user, groups,
                                  &nwhy);
        if (rc == GPA_EREQUEST) return bad_request(out, err, nwhy);
        if (rc != GPA_OK) {
            out->http_status = 500;
            out->outcome = "error";
            return gpa_fail(err, GPA_ENOMEM, "out of memory judging the namespace");
        }
        env.judge = judged;
    } else if (env.workload &&
               gpa_wl_find(&wk, p, env.kind_group, env.kind_group_len, env.kind_name)) {
        if (!p) return bad_request(out, err, "no policy loaded");
        bool judged = false;
        rc = gpa_review_workload(&out->decision, &judged, p, &wk, env.op, env.object,
                                 env.op == GPA_OP_UPDATE ? env.old_object : NULL, env.namespace_,
                                 err);
        if (rc != GPA_OK) {
            out->http_status = 500;
            out->outcome = "error";
            return rc;
        }
        env.judge = judged;
    } else if (env.judge) {
        if (!p) return bad_request(out, err, "no policy loaded");
        gpa_request req = {
            .namespace_ = env.namespace_,
            .op = env.op,
            .object = env.object,
            .old_object = env.old_object,
            .explain = false,
            .patch_only = true, /* the response needs the patch, not the mutated pod */
            .ephemeral_update = env.ephemeral,
        };
        /* Not `= {0}`: zeroing the 4 KB message cost more than the codec's own work. */
        gpa_error eerr;
        eerr.code = 0;
        eerr.message[0] = '\0';
        if (hook == GPA_HOOK_MUTATE)
            rc = gpa_engine_mutate(&out->decision, p, &req, &eerr);
        else
            rc = gpa_engine_validate(&out->decision, p, &req, &eerr);
        if (rc == GPA_ENOMEM) {
            out->http_status = 500;
            out->outcome = "error";
            return gpa_fail(err, GPA_ENOMEM, "out of memory in the engine");
        }
        if (rc != GPA_OK) {
            char msg[sizeof eerr.message + 64];
            snprintf(msg, sizeof msg, "cannot evaluate the pod: %s",
                     eerr.message[0] ? eerr.message : "engine error");
            gpa_decision_clear(&out->decision);
            memset(&out->decision, 0, sizeof out->decision);
            return bad_request(out, err, msg);
        }
    }
    rc = write_response(out, &env, len, err);
    if (rc != GPA_OK) {
        /* Out of memory: there is no body to send; the caller answers 500. */
        out->http_status = 500;
        out->outcome = "error";
    }
    return rc;
}

char *gpa_review_json(const cJSON *v, size_t *len_out)
{
    if (!v) return NULL;
    gpa_rbuf b;
    gpa_rbuf_init(&b, 256);
    gpa_rbuf_json_value(&b, v);
    return gpa_rbuf_take(&b, len_out);
}

int gpa_review_parse_json(cJSON **out, const char *buf, size_t len, gpa_error *err)
{
    *out = NULL;
    gpa_jdoc *doc = NULL;
    const char *why = NULL;
    size_t off = 0;
    int rc = gpa_jdoc_parse(&doc, buf, len, &why, &off);
    if (rc == -2) return gpa_fail(err, GPA_ENOMEM, "out of memory reading JSON");
    if (rc != 0)
        return gpa_fail(err, GPA_EPARSE, "invalid JSON: %s at byte %zu", why ? why : "syntax error",
                        off);
    /* A deep copy: the arena tree is read-only and dies with the document. */
    *out = cJSON_Duplicate(gpa_jdoc_root(doc), 1);
    gpa_jdoc_free(doc);
    return *out ? GPA_OK : gpa_fail(err, GPA_ENOMEM, "out of memory copying JSON");
}

void gpa_review_result_clear(gpa_review_result *r)
{
    if (!r) return;
    free(r->body);
    gpa_decision_clear(&r->decision);
    gpa_jdoc_free(r->request_doc); /* and with it the log fields (set_log_fields) */
    memset(r, 0, sizeof *r);
}
