/*
 * cmd_mutate.c - `gpu-admission mutate --policies DIR [-n NS] [--patch] [--explain] [FILE|-]`:
 * dry-runs the mutating webhook on Pods written as YAML or JSON and prints what the server
 * would make of them (the mutated Pod in the input's format, or the JSON Patch). A workload
 * (Deployment, Job, PyTorchJob, ... workload.h) stands for the pods its templates make: each
 * template's pod is run the same way and labelled with the template's path.
 *
 * The printed Pod is the original with the engine's JSON Patch applied, i.e. exactly what the
 * API server would store after POST /mutate; the engine's own mutated copy is only used to
 * check that the patch reproduces it.
 *
 * Must never: print a Pod the webhook would deny, or print anything but Pods/patches on
 * stdout (notes, warnings, explanations and denials go to stderr).
 *
 * Exit codes: 0 every Pod allowed, 2 at least one Pod denied (the others are still printed),
 * 1 usage error, unreadable or unparsable input, no Pod in the input, invalid policy set.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/claim.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"
#include "gpu_admission/workload.h"
#include "gpu_admission/yamljson.h"

typedef struct options {
    const char *dir;
    const char *ns;
    const char *file;
    bool patch;
    bool explain;
} options;

static int positional(void *opts, const char *arg)
{
    options *o = opts;
    if (o->file) {
        fprintf(stderr, "gpu-admission mutate: unexpected argument '%s' (one FILE only)\n", arg);
        return GPA_CLI_USAGE;
    }
    o->file = arg;
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, dir), NULL,
     "  -p, --policies DIR       policy directory (*.yaml / *.yml files); required\n"},
    {"--namespace", "-n", GPA_CLI_STR, offsetof(options, ns), NULL,
     "  -n, --namespace NS       namespace to admit the Pods into (default: the Pod's\n"
     "                           metadata.namespace, else \"default\")\n"},
    {"--patch", NULL, GPA_CLI_BOOL, offsetof(options, patch), NULL,
     "      --patch              print the JSON Patch (one compact line per Pod) instead\n"
     "                           of the Pod\n"},
    {"--explain", NULL, GPA_CLI_BOOL, offsetof(options, explain), NULL,
     "      --explain            print the engine's reasoning to stderr\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help               show this help\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "mutate",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission mutate --policies DIR [-n NAMESPACE] [--patch] [--explain]\n"
            "                            [FILE|-]\n"
            "\n"
            "Runs the mutating webhook offline on every Pod in FILE (or stdin): YAML (any number\n"
            "of documents) or JSON (a Pod, an array, or a v1 List). Prints the Pods as the API\n"
            "server would store them after the webhook, in the input's format. A workload\n"
            "(Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, PyTorchJob, JobSet,\n"
            "RayCluster, LeaderWorkerSet, ... and the policy's workloads.kinds) stands for the\n"
            "pods its controller would create: each pod template is run as a Pod, labelled\n"
            "with its path (\"Deployment/web spec.template\"); --explain says per template\n"
            "what its pods would get or why they would be refused. Other documents are\n"
            "skipped with a note on stderr.\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "exit codes: 0 all Pods allowed, 2 a Pod (or a template's pods) was denied\n"
            "(reason on stderr), 1 bad flags, unreadable input, no Pod or pod template in the\n"
            "input or invalid policies.\n",
    .unknown = "unknown flag",
    .unknown_quoted = true,
    .error_rc = 1,
    .dashdash = GPA_CLI_DASHDASH_ENDS_FLAGS,
    .positional = positional,
};

/* ---- JSON output: 2-space pretty printing (cJSON_Print indents with tabs) ---- */

static bool pretty(FILE *f, const cJSON *v, int depth);

static void indent(FILE *f, int depth)
{
    for (int i = 0; i < depth; i++)
        fputs("  ", f);
}

static bool print_leaf(FILE *f, const cJSON *v)
{
    /* Leaves are written by the codec's writer: the server's escaping, numbers never
     * rounded. */
    size_t n = 0;
    char *s = gpa_review_json(v, &n);
    if (!s) return false;
    fwrite(s, 1, n, f);
    free(s);
    return true;
}

static bool pretty(FILE *f, const cJSON *v, int depth)
{
    bool obj = cJSON_IsObject(v);
    if (!obj && !cJSON_IsArray(v)) return print_leaf(f, v);
    if (!v->child) {
        fputs(obj ? "{}" : "[]", f);
        return true;
    }
    fputs(obj ? "{\n" : "[\n", f);
    for (const cJSON *c = v->child; c; c = c->next) {
        indent(f, depth + 1);
        if (obj) {
            cJSON *k = cJSON_CreateString(c->string ? c->string : "");
            bool ok = k && print_leaf(f, k);
            cJSON_Delete(k);
            if (!ok) return false;
            fputs(": ", f);
        }
        if (!pretty(f, c, depth + 1)) return false;
        fputs(c->next ? ",\n" : "\n", f);
    }
    indent(f, depth);
    fputc(obj ? '}' : ']', f);
    return true;
}

/* ---- input ---- */

/* How the Pods are printed back: in the input's shape. */
typedef enum { IN_YAML, IN_JSON_OBJECT, IN_JSON_ARRAY, IN_JSON_LIST } input_shape;

/* The shape of an input the objects reader accepted; for a List, *envelope gets its root
 * (printed back around the admitted Pods). -1 when memory runs out. */
static int input_shape_of(input_shape *shape, cJSON **envelope, const char *buf, size_t len)
{
    *envelope = NULL;
    if (!gpa_looks_like_json(buf, len)) {
        *shape = IN_YAML;
        return 0;
    }
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
        i++;
    if (i < len && buf[i] == '[') {
        *shape = IN_JSON_ARRAY;
        return 0;
    }
    /* the objects reader flattened a List; only its root says which (parsed again: the
     * reader keeps the items, not the envelope) */
    cJSON *root = NULL;
    gpa_error err = {0};
    if (gpa_review_parse_json(&root, buf, len, &err) != GPA_OK) return -1;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
    size_t n = cJSON_IsString(kind) ? strlen(kind->valuestring) : 0;
    if (n >= 4 && strcmp(kind->valuestring + n - 4, "List") == 0 &&
        cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "items"))) {
        *shape = IN_JSON_LIST;
        *envelope = root;
        return 0;
    }
    cJSON_Delete(root);
    *shape = IN_JSON_OBJECT;
    return 0;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, a) : NULL;
    if (b) v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, b) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Runs one pod, or one DRA claim (ck not GPA_CLAIM_NONE) through the claim engine; returns 0
 * allowed (*out set to the object to print, or the patch), 2 denied, 1 error. template_pods:
 * how many pods a workload's template makes (-1 for a Pod or a claim). */
static int mutate_one(cJSON **out, const gpa_policy *p, const options *o, const cJSON *pod,
                      const char *label, long long template_pods, gpa_claim_kind_t ck)
{
    const char *ns = o->ns;
    if (!ns || !*ns) ns = str_at(pod, "metadata", "namespace");
    if (!ns || !*ns) ns = "default";
    gpa_request req = {.namespace_ = ns, .op = GPA_OP_CREATE, .object = pod, .explain = o->explain};
    gpa_decision d;
    memset(&d, 0, sizeof d);
    gpa_error err = {0};
    bool judged = true;
    int erc = ck != GPA_CLAIM_NONE ? gpa_engine_claim(&d, &judged, p, &req, ck, true, &err)
                                   : gpa_engine_mutate(&d, p, &req, &err);
    if (erc != GPA_OK) {
        fprintf(stderr, "gpu-admission mutate: %s: cannot evaluate: %s\n", label, err.message);
        gpa_decision_clear(&d);
        return 1;
    }
    if (!judged && o->explain)
        fprintf(
            stderr, "explain: %s: not judged: %s\n", label,
            !gpa_policy_judges_claims(p)
                ? "the policy has no spec.dra (or dra.enforcement off), so claims are not judged"
                : "a claim the scheduler made for an extended resource is never touched");
    for (size_t i = 0; i < d.n_explain; i++)
        fprintf(stderr, "explain: %s: %s\n", label, d.explain[i]);
    if (!d.allowed) {
        fprintf(stderr, "gpu-admission mutate: %s denied in namespace %s: %s\n", label, ns,
                d.message ? d.message : "denied by policy");
        gpa_decision_clear(&d);
        return 2;
    }
    if (o->explain && template_pods >= 0) {
        /* A template's one-line answer: what each of its pods gets. */
        if (!d.gpu_pod)
            fprintf(stderr, "explain: %s: %lld pod(s), no GPU: admitted unchanged\n", label,
                    template_pods);
        else if (d.pool)
            fprintf(stderr, "explain: %s: %lld pod(s), each placed in pool %s by rule %s\n", label,
                    template_pods, d.pool, d.rule ? d.rule : "-");
        else
            fprintf(stderr, "explain: %s: %lld pod(s) ask for GPUs, no rule places them: %s\n",
                    label, template_pods,
                    d.patch ? "kept off the shared pools' nodes" : "admitted unchanged");
    }
    /* Warnings only for an admitted pod: on a denial they would describe changes that never
     * happen. */
    for (size_t i = 0; i < d.n_warnings; i++)
        fprintf(stderr, "Warning: %s: %s\n", label, d.warnings[i]);
    if (d.message)
        fprintf(stderr, "gpu-admission mutate: %s: policy violation let through: %s\n", label,
                d.message);
    int rc = 0;
    cJSON *patch = d.patch ? cJSON_Duplicate(d.patch, 1) : cJSON_CreateArray();
    cJSON *result = cJSON_Duplicate(pod, 1);
    if (!patch || !result) {
        fprintf(stderr, "gpu-admission mutate: out of memory\n");
        rc = 1;
    } else if (gpa_patch_apply(result, patch, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission mutate: %s: internal error: the patch does not apply: %s\n",
                label, err.message);
        rc = 1;
    } else if (d.mutated && !cJSON_Compare(result, d.mutated, 1)) {
        fprintf(stderr,
                "gpu-admission mutate: %s: internal error: the patch does not reproduce the "
                "engine's mutated pod\n",
                label);
        rc = 1;
    }
    if (rc == 0) {
        if (o->patch) {
            *out = patch;
            patch = NULL;
        } else {
            *out = result;
            result = NULL;
        }
    }
    cJSON_Delete(patch);
    cJSON_Delete(result);
    gpa_decision_clear(&d);
    return rc;
}

/* Each pod template of a workload through mutate_one, its result appended to outs. Returns 0,
 * 2 when some template's pods would be denied, 1 on an error. */
static int mutate_workload(cJSON *outs, int *n_pods, const gpa_policy *p, const options *o,
                           const cJSON *doc, size_t doc_number, const char *label)
{
    gpa_workload_templates *t = NULL;
    gpa_error err = {0};
    if (gpa_workload_templates_read(&t, p, doc, o->ns, &err) != GPA_OK) {
        /* The validating webhook refuses such a workload with this message too. */
        fprintf(stderr, "gpu-admission mutate: %s denied: %s\n", label, err.message);
        return err.code == GPA_ENOMEM ? 1 : 2;
    }
    size_t n = gpa_workload_templates_count(t);
    if (n == 0)
        fprintf(stderr,
                "gpu-admission mutate: %s: no pod template at its template paths, "
                "nothing to judge\n",
                label);
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        const gpa_workload_template *x = gpa_workload_templates_get(t, i);
        char tl[900];
        gpa_cli_describe(tl, sizeof tl, doc, doc_number, GPA_CLI_LABEL_SLASH, x->path, NULL);
        (*n_pods)++;
        cJSON *res = NULL;
        int rc = mutate_one(&res, p, o, x->pod, tl, x->replicas, GPA_CLAIM_NONE);
        if (rc == 1) {
            worst = 1;
            break;
        }
        if (rc == 2) {
            worst = 2;
            continue;
        }
        cJSON_AddItemToArray(outs, res);
    }
    gpa_workload_templates_free(t);
    return worst;
}

int gpa_cmd_mutate(int argc, char **argv)
{
    options o = {0};
    int prc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (prc != GPA_CLI_CONTINUE) return prc;
    if (!o.dir) {
        fprintf(stderr, "gpu-admission mutate: --policies DIR is required\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 1;
    }
    if (o.ns && !*o.ns) {
        fprintf(stderr, "gpu-admission mutate: --namespace must not be empty\n");
        return 1;
    }
    if (!o.file) o.file = "-";
    const char *name = gpa_cli_input_name(o.file);

    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, o.dir, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission mutate: policy set in %s is invalid:\n%s\n", o.dir,
                err.message);
        return 1;
    }
    size_t len = 0;
    char *buf = gpa_cli_read_input(&len, "mutate", o.file);
    if (!buf) {
        gpa_policy_unref(p);
        return 1;
    }
    /* The objects reader: mutate refuses and flattens exactly what review, test and diff do. */
    gpa_objects *objs = NULL;
    cJSON *envelope = NULL;
    input_shape shape = IN_YAML;
    int rrc = gpa_objects_read(&objs, buf, len, name, &err);
    if (rrc != GPA_OK)
        fprintf(stderr, "gpu-admission mutate: %s\n", err.message);
    else if ((rrc = input_shape_of(&shape, &envelope, buf, len)) != 0)
        fprintf(stderr, "gpu-admission mutate: out of memory\n");
    free(buf);
    if (rrc != GPA_OK) {
        gpa_objects_free(objs);
        gpa_policy_unref(p);
        return 1;
    }
    bool json = shape != IN_YAML;
    cJSON *outs = cJSON_CreateArray();
    int n_pods = 0, worst = 0;
    size_t doc_number = 0;
    for (size_t i = 0; i < gpa_objects_count(objs) && outs; i++) {
        const cJSON *doc = gpa_objects_get(objs, i);
        /* "document N": the element of a JSON array or List; for YAML the N-th non-empty
         * document (the items of a YAML List share their document's number) */
        if (json || i == 0 || gpa_objects_doc(objs, i) != gpa_objects_doc(objs, i - 1))
            doc_number++;
        char label[300];
        gpa_cli_describe(label, sizeof label, doc, doc_number, GPA_CLI_LABEL_SLASH, NULL, NULL);
        const char *kind = str_at(doc, "kind", NULL);
        const char *av = str_at(doc, "apiVersion", NULL);
        if (kind && av && gpa_workload_kind_known(p, av, kind)) {
            int wrc = mutate_workload(outs, &n_pods, p, &o, doc, doc_number, label);
            if (wrc == 1) {
                worst = 1;
                break;
            }
            if (wrc == 2) worst = 2;
            continue;
        }
        gpa_claim_kind_t ck = gpa_claim_object_kind(doc);
        if (ck == GPA_CLAIM_NONE &&
            (!kind || strcmp(kind, "Pod") != 0 || (av && strcmp(av, "v1") != 0))) {
            fprintf(stderr,
                    "gpu-admission mutate: %s: not a v1 Pod, a workload or a DRA claim, "
                    "skipped\n",
                    label);
            continue;
        }
        n_pods++;
        cJSON *res = NULL;
        int rc = mutate_one(&res, p, &o, doc, label, -1, ck);
        if (rc == 1) {
            worst = 1;
            break;
        }
        if (rc == 2) {
            worst = 2;
            continue;
        }
        cJSON_AddItemToArray(outs, res);
    }
    if (!outs) {
        fprintf(stderr, "gpu-admission mutate: out of memory\n");
        worst = 1;
    } else if (worst != 1 && n_pods == 0) {
        fprintf(stderr,
                "gpu-admission mutate: %s: no Pod, pod template or DRA claim in the input\n", name);
        worst = 1;
    }
    if (worst != 1) {
        bool ok = true;
        if (o.patch) {
            /* The exact bytes the server base64-encodes into response.patch. */
            for (const cJSON *c = outs->child; c && ok; c = c->next) {
                size_t n = 0;
                char *s = gpa_review_json(c, &n);
                ok = s != NULL;
                if (s) {
                    fwrite(s, 1, n, stdout);
                    fputc('\n', stdout);
                }
                free(s);
            }
        } else if (shape == IN_YAML) {
            for (const cJSON *c = outs->child; c && ok; c = c->next) {
                char *y = gpa_json_to_yaml(c);
                ok = y != NULL;
                if (y) printf("%s%s", c != outs->child ? "---\n" : "", y);
                free(y);
            }
        } else if (shape == IN_JSON_OBJECT) {
            if (outs->child) {
                ok = pretty(stdout, outs->child, 0);
                fputc('\n', stdout);
            }
        } else if (shape == IN_JSON_ARRAY) {
            ok = pretty(stdout, outs, 0);
            fputc('\n', stdout);
        } else {
            /* Keep the List envelope, items replaced by the admitted Pods. */
            cJSON *list = cJSON_Duplicate(envelope, 0);
            for (const cJSON *c = envelope->child; list && c; c = c->next)
                if (strcmp(c->string ? c->string : "", "items") != 0)
                    cJSON_AddItemToObject(list, c->string, cJSON_Duplicate(c, 1));
            ok = list && cJSON_AddItemReferenceToObject(list, "items", outs) &&
                 pretty(stdout, list, 0);
            fputc('\n', stdout);
            cJSON_Delete(list);
        }
        if (!ok) {
            fprintf(stderr, "gpu-admission mutate: out of memory printing the result\n");
            worst = 1;
        }
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gpu-admission mutate: cannot write stdout: %s\n", strerror(errno));
        worst = 1;
    }
    cJSON_Delete(outs);
    cJSON_Delete(envelope);
    gpa_objects_free(objs);
    gpa_policy_unref(p);
    return worst;
}
