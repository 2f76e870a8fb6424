/*
 * cmd_review.c - `gpu-admission review {mutate|validate} --policies DIR [-n NS] [FILE|-]`:
 * answers one AdmissionReview exactly as the server's POST /mutate or /validate would; or, for
 * Kubernetes objects (a Pod, a Deployment, a PyTorchJob, ...; YAML with any number of
 * documents, JSON, Lists), answers the AdmissionReview the API server would send for creating
 * each one, one response per line.
 *
 * stdout gets exactly the response body gpa_review_handle produced, followed by one "\n"
 * (always, tty or not), so `head -c -1` of this output equals the server's HTTP body byte for
 * byte. Must never: print anything else on stdout, or answer differently from the server.
 *
 * Exit codes: 0 a response was produced (allowed or denied: read `response.allowed`), 1 the
 * body is not an answerable AdmissionReview (the 400 Status body is still printed), usage
 * errors, unreadable input or an invalid policy set.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"
#include "gpu_admission/yamljson.h"

typedef struct options {
    const char *dir, *hook_name, *file, *ns;
} options;

static int positional(void *opts, const char *arg)
{
    options *o = opts;
    if (!o->hook_name) {
        o->hook_name = arg;
    } else if (!o->file) {
        o->file = arg;
    } else {
        fprintf(stderr, "gpu-admission review: unexpected argument '%s'\n", arg);
        return GPA_CLI_USAGE;
    }
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, dir), NULL,
     "  -p, --policies DIR   policy directory (*.yaml / *.yml files); required\n"},
    {"--namespace", "-n", GPA_CLI_STR, offsetof(options, ns), NULL,
     "  -n, --namespace NS   namespace of the objects (default: each object's\n"
     "                       metadata.namespace, else \"default\")\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help           show this help\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "review",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission review {mutate|validate} --policies DIR [-n NAMESPACE]\n"
            "                            [FILE|-]\n"
            "\n"
            "Reads one AdmissionReview (admission.k8s.io/v1 or v1beta1, JSON) from FILE or\n"
            "stdin and prints the response the webhook server would send for POST /mutate or\n"
            "POST /validate: exactly the HTTP body, then one newline.\n"
            "Given Kubernetes objects instead (YAML, any number of documents, or JSON: a Pod,\n"
            "a Deployment, Job, PyTorchJob, ...), answers for each the AdmissionReview the API\n"
            "server would send to create it (operation CREATE, request.kind from its\n"
            "apiVersion and kind): one response per line, in input order.\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "exit codes: 0 response produced (allowed or denied), 1 bad request (the 400\n"
            "Status body is printed), bad flags, unreadable input or invalid policies.\n",
    .unknown = "unknown flag",
    .unknown_quoted = true,
    .error_rc = 1,
    .dashdash = GPA_CLI_DASHDASH_ENDS_FLAGS,
    .positional = positional,
};

/* Prints the answer to one review body; 0, or 1 for a 400/500 (reported on stderr). */
static int answer(const gpa_policy *p, gpa_hook hook, const char *body, size_t len,
                  const char *label)
{
    gpa_review_result res;
    gpa_error err = {0};
    int rc = gpa_review_handle(&res, p, hook, body, len, &err);
    if (res.body) {
        fwrite(res.body, 1, res.body_len, stdout);
        fputc('\n', stdout);
    }
    int code = 0;
    if (rc != GPA_OK) {
        fprintf(stderr, "gpu-admission review: %s%s%s: %s\n", label ? label : "", label ? ": " : "",
                res.http_status == 400 ? "bad request (HTTP 400)" : "internal error (HTTP 500)",
                err.message);
        code = 1;
    }
    gpa_review_result_clear(&res);
    return code;
}

/* Is the input one AdmissionReview (then it is answered byte for byte as the server would)?
 * Anything that does not look like a JSON object naming kind AdmissionReview is read as
 * objects. A cheap look: the codec reports any JSON error itself. */
static bool is_review(const char *buf, size_t len)
{
    if (!gpa_looks_like_json(buf, len)) return false;
    cJSON *root = NULL;
    gpa_error err = {0};
    if (gpa_review_parse_json(&root, buf, len, &err) != GPA_OK) return true;
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "kind");
    bool review = !cJSON_IsObject(root) || !cJSON_IsString(k) ||
                  strcmp(k->valuestring, "AdmissionReview") == 0;
    cJSON_Delete(root);
    return review;
}

/* The AdmissionReview the API server sends for creating obj: CREATE, request.kind from the
 * object's apiVersion and kind, the namespace (flag, else the object's, else "default"). */
static char *review_for(const cJSON *obj, const char *ns_flag, size_t i, size_t *len)
{
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *mns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    const char *ns = ns_flag ? ns_flag : cJSON_IsString(mns) ? mns->valuestring : "default";
    const char *avs = cJSON_IsString(av) ? av->valuestring : "";
    const char *slash = strchr(avs, '/');
    char group[256] = "";
    if (slash) snprintf(group, sizeof group, "%.*s", (int)(slash - avs), avs);
    char uid[64];
    snprintf(uid, sizeof uid, "gpu-admission-review-%zu", i + 1);
    cJSON *r = cJSON_CreateObject();
    cJSON *req = cJSON_AddObjectToObject(r, "request");
    cJSON *k = cJSON_AddObjectToObject(req, "kind");
    cJSON_AddStringToObject(r, "apiVersion", "admission.k8s.io/v1");
    cJSON_AddStringToObject(r, "kind", "AdmissionReview");
    cJSON_AddStringToObject(req, "uid", uid);
    cJSON_AddStringToObject(k, "group", group);
    cJSON_AddStringToObject(k, "version", slash ? slash + 1 : avs);
    cJSON_AddStringToObject(k, "kind", cJSON_IsString(kind) ? kind->valuestring : "");
    cJSON_AddStringToObject(req, "namespace", ns);
    cJSON_AddStringToObject(req, "operation", "CREATE");
    cJSON_AddItemToObject(req, "object", cJSON_Duplicate(obj, 1));
    char *s = gpa_review_json(r, len);
    cJSON_Delete(r);
    return s;
}

static int answer_objects(const gpa_policy *p, gpa_hook hook, const char *buf, size_t len,
                          const char *name, const char *ns)
{
    gpa_objects *objs = NULL;
    gpa_error err = {0};
    if (gpa_objects_read(&objs, buf, len, name, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission review: %s\n", err.message);
        return 1;
    }
    size_t n = gpa_objects_count(objs);
    if (n == 0) {
        fprintf(stderr, "gpu-admission review: %s: no object in the input\n", name);
        gpa_objects_free(objs);
        return 1;
    }
    int code = 0;
    for (size_t i = 0; i < n; i++) {
        const cJSON *obj = gpa_objects_get(objs, i);
        char where[600];
        gpa_cli_describe(where, sizeof where, obj, 0, GPA_CLI_LABEL_OBJECT, NULL,
                         gpa_objects_origin(objs, i));
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
        size_t blen = 0;
        char *body = NULL;
        if (cJSON_IsString(k) && strcmp(k->valuestring, "AdmissionReview") == 0)
            body = gpa_review_json(obj, &blen);
        else
            body = review_for(obj, ns, i, &blen);
        if (!body) {
            fprintf(stderr, "gpu-admission review: out of memory\n");
            code = 1;
            break;
        }
        if (answer(p, hook, body, blen, where) != 0) code = 1;
        free(body);
    }
    gpa_objects_free(objs);
    return code;
}

int gpa_cmd_review(int argc, char **argv)
{
    options o = {0};
    int prc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (prc != GPA_CLI_CONTINUE) return prc;
    const char *dir = o.dir, *hook_name = o.hook_name, *file = o.file, *ns = o.ns;
    gpa_hook hook;
    if (hook_name && strcmp(hook_name, "mutate") == 0)
        hook = GPA_HOOK_MUTATE;
    else if (hook_name && strcmp(hook_name, "validate") == 0)
        hook = GPA_HOOK_VALIDATE;
    else {
        fprintf(stderr, "gpu-admission review: first argument must be 'mutate' or 'validate'%s%s\n",
                hook_name ? ", not " : "", hook_name ? hook_name : "");
        gpa_cli_usage(&cli_spec, stderr);
        return 1;
    }
    if (!dir) {
        fprintf(stderr, "gpu-admission review: --policies DIR is required\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 1;
    }
    if (!file) file = "-";

    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission review: policy set in %s is invalid:\n%s\n", dir,
                err.message);
        return 1;
    }
    size_t len = 0;
    char *body = gpa_cli_read_input(&len, "review", file);
    if (!body) {
        gpa_policy_unref(p);
        return 1;
    }
    int code = is_review(body, len)
                   ? answer(p, hook, body, len, NULL)
                   : answer_objects(p, hook, body, len, gpa_cli_input_name(file), ns);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gpu-admission review: cannot write stdout: %s\n", strerror(errno));
        code = 1;
    }
    free(body);
    gpa_policy_unref(p);
    return code;
}
