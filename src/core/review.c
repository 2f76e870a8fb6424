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
#include "review_buf.h"
#include "review_json.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"

/* The first member of o named key (what cJSON_GetObjectItemCaseSensitive returns), NULL when
 * none. Checks the first byte before calling strcmp: most members differ there, and cJSON's
 * lookup calls strcmp for every member it passes. */
static const cJSON *get(const cJSON *o, const char *key)
{
    if (!o) return NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && c->string[0] == key[0] && strcmp(c->string, key) == 0) return c;
    return NULL;
}

/* The log fields of out in ONE allocation, uid first (gpa_review_result_clear frees only
 * uid): four mallocs and frees cost more than reading the envelope. Each is NULL when
 * unknown; the others are only ever known when uid is. */
static void set_log_fields(gpa_review_result *out, const char *uid, const char *op,
                           const char *name, const char *ns)
{
    if (!uid) return;
    const char *src[4] = {uid, op, name, ns};
    size_t len[4], total = 0;
    for (int i = 0; i < 4; i++) {
        len[i] = src[i] ? strlen(src[i]) + 1 : 0;
        total += len[i];
    }
    char *block = malloc(total);
    if (!block) return;
    char *dst[4];
    for (int i = 0; i < 4; i++) {
        dst[i] = src[i] ? memcpy(block, src[i], len[i]) : NULL;
        block += len[i];
    }
    out->uid = dst[0];
    out->operation = dst[1];
    out->name = dst[2];
    out->namespace_ = dst[3];
}

/* The first members of o named k1 and k2, in one pass. */
static void get2(const cJSON *o, const char *k1, const char *k2, const cJSON **v1, const cJSON **v2)
{
    *v1 = *v2 = NULL;
    for (const cJSON *c = o->child; c && !(*v1 && *v2); c = c->next) {
        if (!c->string) continue;
        if (!*v1 && c->string[0] == k1[0] && strcmp(c->string, k1) == 0)
            *v1 = c;
        else if (!*v2 && c->string[0] == k2[0] && strcmp(c->string, k2) == 0)
            *v2 = c;
    }
}

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

/* A string member, NULL when absent or JSON null; *bad set when present with another type. */
static const char *opt_string(const cJSON *o, const char *key, bool *bad)
{
    const cJSON *v = get(o, key);
    if (!v || is_null(v)) return NULL;
    if (!is_string(v) || !v->valuestring) {
        *bad = true;
        return NULL;
    }
    return v->valuestring;
}

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
    R_COUNT
};

/* Which of the R_* members key is (R_COUNT: none). A switch on the first byte: a request has
 * a dozen members and this runs once per member. */
static int request_member(const char *key)
{
    switch (key[0]) {
    case 'u':
        return strcmp(key, "uid") == 0 ? R_UID : R_COUNT;
    case 'k':
        return strcmp(key, "kind") == 0 ? R_KIND : R_COUNT;
    case 'r':
        return strcmp(key, "resource") == 0 ? R_RESOURCE : R_COUNT;
    case 's':
        return strcmp(key, "subResource") == 0 ? R_SUBRESOURCE : R_COUNT;
    case 'n':
        if (strcmp(key, "namespace") == 0) return R_NAMESPACE;
        return strcmp(key, "name") == 0 ? R_NAME : R_COUNT;
    case 'o':
        if (key[1] == 'p') return strcmp(key, "operation") == 0 ? R_OPERATION : R_COUNT;
        if (key[1] == 'b') return strcmp(key, "object") == 0 ? R_OBJECT : R_COUNT;
        return strcmp(key, "oldObject") == 0 ? R_OLD : R_COUNT;
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

/* The 400 answer: a metav1.Status, which is what the API server logs for a failed call. */
static int bad_request(gpa_review_result *out, gpa_error *err, const char *msg)
{
    gpa_rbuf b;
    gpa_rbuf_init(&b, 160 + strlen(msg));
    gpa_rbuf_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                      "\"status\":\"Failure\",\"message\":");
    gpa_rbuf_json_str(&b, msg);
    gpa_rbuf_puts(&b, ",\"reason\":\"BadRequest\",\"code\":400}");
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
    bool judge;     /* false: answer "allowed", untouched */
    bool ephemeral; /* UPDATE of pods/ephemeralcontainers (validating hook only) */
    char why[256];  /* room for a message naming the offending value */
    /* For the log fields of the result (set_log_fields), as soon as each is known. */
    const char *log_uid, *log_op, *log_name, *log_ns;
} envelope;

static int op_from_string(gpa_operation *op, const char *s)
{
    static const struct {
        const char *name;
        gpa_operation op;
    } ops[] = {{"CREATE", GPA_OP_CREATE},
               {"UPDATE", GPA_OP_UPDATE},
               {"DELETE", GPA_OP_DELETE},
               {"CONNECT", GPA_OP_CONNECT}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(s, ops[i].name) == 0) {
            *op = ops[i].op;
            return 0;
        }
    return -1;
}

/* Is this request about the core/v1 Pod resource itself (not another kind)? Returns 1 yes,
 * 2 the pods/ephemeralcontainers subresource (`kubectl debug` adds containers to a running
 * pod through it, so the validating webhook must see it), 0 no (any other subresource or
 * kind), -1 malformed (message in *why). */
static int is_pod(const cJSON *const *m, const cJSON *object, const char **why)
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
        if (!k || strcmp(k, "Pod") != 0 || (g && *g)) return 0;
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
        if ((r && strcmp(r, "pods") != 0) || (g && *g)) return 0;
    }
    const char *sub = str_of(m[R_SUBRESOURCE], &bad);
    if (bad) {
        *why = "request.subResource must be a string";
        return -1;
    }
    if (sub && *sub) return strcmp(sub, "ephemeralcontainers") == 0 ? 2 : 0;
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
        if ((ok && strcmp(ok, "Pod") != 0) || (av && strcmp(av, "v1") != 0)) return 0;
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
    memset(env, 0, sizeof *env);
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
    if (strcmp(av, API_V1) == 0)
        env->api_version = API_V1;
    else if (strcmp(av, API_V1BETA1) == 0)
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
    if (strcmp(kind, "AdmissionReview") != 0) {
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

    int pod = is_pod(m, obj, why);
    if (pod < 0) return -1;
    gpa_operation op;
    if (op_from_string(&op, ops) != 0) {
        /* Not an operation of admission.k8s.io; nothing we police. */
        env->judge = false;
        return 0;
    }
    env->op = op;
    if (!pod || !obj) return 0;
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

static void put_key(gpa_rbuf *b, const char *key)
{
    gpa_rbuf_json_str(b, key);
    gpa_rbuf_put(b, ":", 1);
}

/* Writes the 200 answer. Key order is fixed: the bytes are compared across server and CLI. */
static int write_response(gpa_review_result *out, const envelope *env, gpa_error *err)
{
    const gpa_decision *d = &out->decision;
    /* The patch is printed into a scratch buffer, then base64'd into the response. */
    gpa_rbuf pj = {0};
    const char *patch = NULL;
    size_t patch_len = 0;
    if (env->judge && d->allowed && d->patch && d->patch->child) {
        gpa_rbuf_init(&pj, 2048);
        gpa_rbuf_json_value(&pj, d->patch);
        if (pj.oom) {
            gpa_rbuf_free(&pj);
            return gpa_fail(err, GPA_ENOMEM, "out of memory printing the patch");
        }
        patch = pj.data;
        patch_len = pj.len;
    }
    /* Sized for everything written below, so the buffer never grows. */
    size_t need = 256 + (patch_len + 2) / 3 * 4 + (d->message ? strlen(d->message) : 0);
    if (env->judge) {
        for (size_t i = 0; i < d->n_warnings; i++)
            need += (d->warnings[i] ? strlen(d->warnings[i]) : 0) + 8;
        for (size_t i = 0; i < d->n_audit; i++)
            need += (d->audit_keys[i] ? strlen(d->audit_keys[i]) : 0) +
                    (d->audit_values[i] ? strlen(d->audit_values[i]) : 0) + 8;
    }
    gpa_rbuf b;
    gpa_rbuf_init(&b, need);
    gpa_rbuf_puts(&b, "{\"apiVersion\":");
    gpa_rbuf_json_str(&b, env->api_version);
    gpa_rbuf_puts(&b, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    gpa_rbuf_json_str(&b, env->uid);
    bool allowed = !env->judge || d->allowed;
    gpa_rbuf_puts(&b, allowed ? ",\"allowed\":true" : ",\"allowed\":false");
    if (patch) {
        gpa_rbuf_puts(&b, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        gpa_rbuf_base64(&b, (const unsigned char *)patch, patch_len);
        gpa_rbuf_put(&b, "\"", 1);
    }
    if (env->judge && d->n_warnings > 0) {
        gpa_rbuf_puts(&b, ",\"warnings\":[");
        for (size_t i = 0; i < d->n_warnings; i++) {
            if (i) gpa_rbuf_put(&b, ",", 1);
            gpa_rbuf_json_str(&b, d->warnings[i] ? d->warnings[i] : "");
        }
        gpa_rbuf_put(&b, "]", 1);
    }
    if (env->judge && d->n_audit > 0) {
        gpa_rbuf_puts(&b, ",\"auditAnnotations\":{");
        size_t written = 0;
        for (size_t i = 0; i < d->n_audit; i++) {
            if (!d->audit_keys[i]) continue;
            /* A JSON object with a repeated key means different things to different readers:
             * keep the first value only. */
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = d->audit_keys[j] && strcmp(d->audit_keys[j], d->audit_keys[i]) == 0;
            if (seen) continue;
            if (written++) gpa_rbuf_put(&b, ",", 1);
            put_key(&b, d->audit_keys[i]);
            gpa_rbuf_json_str(&b, d->audit_values[i] ? d->audit_values[i] : "");
        }
        gpa_rbuf_put(&b, "}", 1);
    }
    if (!allowed) {
        gpa_rbuf_puts(&b, ",\"status\":{\"code\":403,\"reason\":\"Forbidden\",\"message\":");
        gpa_rbuf_json_str(&b, d->message && *d->message ? d->message
                                                        : "denied by gpu-admission policy");
        gpa_rbuf_put(&b, "}", 1);
    }
    gpa_rbuf_puts(&b, "}}");
    gpa_rbuf_free(&pj);
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
    const cJSON *root = gpa_jdoc_root(doc);

    envelope env;
    const char *why = NULL;
    int erc = read_envelope(&env, root, hook, &why);
    set_log_fields(out, env.log_uid, env.log_op, env.log_name, env.log_ns);
    if (erc != 0) {
        int rc = bad_request(out, err, why);
        gpa_jdoc_free(doc);
        return rc;
    }

    int rc = GPA_OK;
    if (env.judge) {
        if (!p) {
            gpa_jdoc_free(doc);
            return bad_request(out, err, "no policy loaded");
        }
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
            gpa_jdoc_free(doc);
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
            rc = bad_request(out, err, msg);
            gpa_jdoc_free(doc);
            return rc;
        }
    }
    rc = write_response(out, &env, err);
    if (rc != GPA_OK) {
        /* Out of memory: there is no body to send; the caller answers 500. */
        out->http_status = 500;
        out->outcome = "error";
    }
    gpa_jdoc_free(doc);
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
    free(r->uid); /* and the other log fields: one block (set_log_fields) */
    gpa_decision_clear(&r->decision);
    memset(r, 0, sizeof *r);
}
