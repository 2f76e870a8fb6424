/*
 * review_workload.c - a workload on the validating webhook: each pod template becomes the pod
 * its controller would create (template metadata and spec, the object's namespace), which gets
 * exactly what a Pod CREATE gets: mutation, then validation of the mutated pod. A refused
 * template refuses the workload (enforcement deny) or becomes a warning (warn); an allowed GPU
 * template gets one line saying what its pods will get, so `kubectl apply` shows it.
 *
 * Never patches: mutating a template would double-apply on the pods and trigger rollouts;
 * the Pod webhooks stay the authority. The pod is built in place (stack nodes borrowing the
 * template's members), never copied, because a Deployment review is held to 1.3x the cost of
 * its pod's review (bench_engine).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_mutate_validate.h"
#include "engine/gang_size.h"
#include "engine/engine_nvlink.h"
#include "policy/policy_gang.h"
#include "util/node_arena.h"
#include "engine/pod.h"
#include "webhook/review_workload.h"

/* Warning lines kept short enough that the API server passes them on whole (it cuts long
 * ones once a response's warnings pass 4 KiB), and few enough that kubectl stays readable. */
#define WL_WARN_MAX_BYTES 240
#define WL_MAX_WARNINGS   16
#define WL_MAX_MESSAGES   3

typedef struct old_tpl {
    char *path;
    const cJSON *t;
} old_tpl;

/* The gang size a GPU template's pods will say they belong to (gpa_gang_read_pod on the pod its
 * operator creates), checked against the gang's GPU pods once every template is summed. */
typedef struct gang_said {
    char *path;
    int64_t size; /* 0: none the pod path can read */
    gpa_gang_src src;
    int64_t gpus; /* GPUs of one of its pods */
} gang_said;

typedef struct wl_ctx {
    const gpa_policy *p;
    const char *ns;
    gpa_error *err;
    /* UPDATE: the old object's templates by concrete path */
    old_tpl *old;
    size_t n_old, cap_old;
    /* results */
    char **warn; /* malloc'd lines */
    size_t n_warn, cap_warn, dropped_warn;
    char *refusals[WL_MAX_MESSAGES]; /* malloc'd "path: message", the first few */
    size_t n_refused, n_judged;
    const char *reason, *rule, *pool;
    bool gpu, oom;
    /* the gang of a training workload, summed over its templates placed in one pool with
     * topology levels (POLICY.md "Topology levels") */
    const gpa_wl_kind *k;
    const cJSON *obj;
    size_t n_unchanged;
    const gpa_pool *gang_pool;
    const char *gang_rule;
    char *gang_path; /* the first template of the gang, for the message */
    gpa_gang_sum gang;
    gang_said *said;
    size_t n_said, cap_said;
    char *imex_path; /* the first GPU template of the gang without its IMEX channel claim */
} wl_ctx;

/* A copy of s cut to max bytes on a UTF-8 boundary, "..." marking the cut. */
static char *cut_dup(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) return strdup(s);
    size_t k = max - 3;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    char *r = malloc(k + 4);
    if (!r) return NULL;
    memcpy(r, s, k);
    memcpy(r + k, "...", 4);
    return r;
}

static void add_warning(wl_ctx *c, const char *fmt_path, const char *text)
{
    if (c->n_warn >= WL_MAX_WARNINGS) {
        c->dropped_warn++;
        return;
    }
    size_t n = strlen(fmt_path) + strlen(text) + 3;
    char *line = malloc(n);
    if (!line) {
        c->oom = true;
        return;
    }
    snprintf(line, n, "%s: %s", fmt_path, text);
    char *cut = cut_dup(line, WL_WARN_MAX_BYTES);
    free(line);
    if (!cut) {
        c->oom = true;
        return;
    }
    if (c->n_warn == c->cap_warn) {
        size_t nc = c->cap_warn ? c->cap_warn * 2 : 4;
        char **nw = realloc(c->warn, nc * sizeof *nw);
        if (!nw) {
            free(cut);
            c->oom = true;
            return;
        }
        c->warn = nw;
        c->cap_warn = nc;
    }
    c->warn[c->n_warn++] = cut;
}

static void add_refusal(wl_ctx *c, const char *path, const char *message, const char *reason,
                        const char *rule, const char *pool)
{
    if (c->n_refused == 0) {
        c->reason = reason;
        c->rule = rule;
        c->pool = pool;
    }
    size_t i = c->n_refused++;
    if (i >= WL_MAX_MESSAGES) return;
    const char *m = message && *message ? message : "denied by gpu-admission policy";
    size_t n = strlen(path) + strlen(m) + 3;
    char *line = malloc(n);
    if (!line) {
        c->oom = true;
        return;
    }
    snprintf(line, n, "%s: %s", path, m);
    c->refusals[i] = line;
}

/* The GPU resource mutation renamed, read from the patch: the name an "add" put under
 * .../resources/limits/ (*to) and the one a "remove" took out (*from). Names in the patch
 * paths are JSON Pointer escaped ("~1" for "/"), unescaped into the caller's buffers. */
static void find_rename(const gpa_policy *p, const cJSON *patch, char *from, char *to, size_t cap)
{
    *from = *to = '\0';
    for (const cJSON *op = patch ? patch->child : NULL; op; op = op->next) {
        const char *kind = gpa_json_str(op, "op"), *path = gpa_json_str(op, "path");
        const char *at = path ? strstr(path, "/resources/limits/") : NULL;
        if (!kind || !at) continue;
        char *dst = strcmp(kind, "add") == 0 ? to : strcmp(kind, "remove") == 0 ? from : NULL;
        if (!dst || *dst) continue;
        size_t n = 0;
        for (const char *c = at + strlen("/resources/limits/"); *c && *c != '/' && n + 1 < cap;
             c++) {
            if (c[0] == '~' && (c[1] == '1' || c[1] == '0')) {
                dst[n++] = c[1] == '1' ? '/' : '~';
                c++;
            } else {
                dst[n++] = *c;
            }
        }
        dst[n] = '\0';
        if (!gpa_is_gpu_resource(p, dst)) *dst = '\0';
    }
}

static void summarize(wl_ctx *c, const char *path, const gpa_decision *md)
{
    char text[WL_WARN_MAX_BYTES + 1];
    if (!md->pool && md->patch && md->patch->child) {
        /* isolation by default: only node affinity that keeps them off shared pools */
        snprintf(text, sizeof text, "GPU pods match no placing rule; kept off shared pools' nodes");
    } else if (!md->pool) {
        snprintf(text, sizeof text, "GPU pods match no placing rule; admitted unchanged");
    } else {
        char from[128], to[128];
        find_rename(c->p, md->patch, from, to, sizeof from);
        int n = snprintf(text, sizeof text, "pods get pool %s (rule %s)", md->pool,
                         md->rule ? md->rule : "-");
        /* A line cut short is still a line (add_warning cuts at the limit anyway). */
        if (*to && n > 0 && (size_t)n < sizeof text &&
            snprintf(text + n, sizeof text - (size_t)n, ", %s -> %s", *from ? from : "GPUs", to) <
                0)
            text[n] = '\0';
    }
    add_warning(c, path, text);
}

static const cJSON *member(const cJSON *o, const char *key)
{
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && strcmp(c->string, key) == 0) return c;
    return NULL;
}

/* A node that reads as src under another key, borrowing src's members (read-only). */
static void borrow(cJSON *n, const cJSON *src, const char *key)
{
    *n = *src;
    n->string = (char *)key;
    n->type |= cJSON_StringIsConst;
    n->next = n->prev = NULL;
}

/* The gang size the pods of the template at path will say (the engine's reader on the
 * template, then what its operator adds, first source in gpa_gang_src order winning), kept
 * for gang_judge. */
static void gang_said_add(wl_ctx *c, const char *path, const gpa_pod *v, int64_t gpus)
{
    gpa_gang_read r;
    if (gpa_gang_read_pod(&r, v, gpa_wl_operator_env_read(c->k)) != GPA_OK) {
        c->oom = true;
        return;
    }
    int64_t on;
    gpa_gang_src osrc = gpa_wl_operator_gang_size(c->k, c->obj, &on);
    if (osrc != GPA_GANG_SRC_NONE && (r.src == GPA_GANG_SRC_NONE || osrc < r.src)) {
        r.size = on;
        r.src = osrc;
    }
    if (r.bad) return; /* the template is refused for it (gang-size) */
    if (c->n_said == c->cap_said) {
        size_t nc = c->cap_said ? c->cap_said * 2 : 4;
        gang_said *ns = realloc(c->said, nc * sizeof *ns);
        if (!ns) {
            c->oom = true;
            return;
        }
        c->said = ns;
        c->cap_said = nc;
    }
    char *pc = strdup(path);
    if (!pc) {
        c->oom = true;
        return;
    }
    c->said[c->n_said++] = (gang_said){pc, r.src ? r.size : 0, r.src, gpus};
}

/* Counts the template's pods into the workload's gang: every template of a gang kind goes to
 * the one sum (gpa_gang_sum_add), which leaves CPU-only ones out; GPU ones count when their
 * pool places gangs by level. */
static void gang_add(wl_ctx *c, const char *path, const cJSON *pod, long long replicas,
                     const gpa_decision *md)
{
    long long share = gpa_wl_gang_share(c->k, c->obj, path, replicas);
    if (share <= 0) return;
    gpa_pod v;
    gpa_pod_init(&v, pod);
    int64_t gpus = md->gpu_pod ? gpa_pod_gpu_count(&v, c->p, NULL) : 0;
    const gpa_pool *pool = NULL;
    for (size_t i = 0; gpus > 0 && md->pool && i < c->p->n_pools && !pool; i++)
        if (strcmp(c->p->pools[i].name, md->pool) == 0) pool = &c->p->pools[i];
    if (gpus > 0) {
        if (!pool || !pool->has_topology || !gpa_gang_levels(&pool->topology)) return;
        if (c->gang_pool && c->gang_pool != pool) return; /* one gang per pool: the first's */
        if (!c->gang_pool) {
            c->gang_pool = pool;
            c->gang_rule = md->rule;
            if (!(c->gang_path = strdup(path))) c->oom = true;
        }
        gang_said_add(c, path, &v, gpus);
        if (!c->imex_path && !gpa_imex_pod_has_channel(c->p, &pool->topology, pod) &&
            !(c->imex_path = strdup(path)))
            c->oom = true;
    }
    gpa_gang_sum_add(&c->gang, share, gpus);
}

/* A GPU template whose gang-size annotation disagrees with the spec's GPU pods is refused,
 * naming both numbers: its pods would get the pod affinity of another gang (POLICY.md
 * "Topology levels", amended December 2026). Returns the first template whose pods will not
 * get the gang's domain from what they say themselves (no size, or an operator's count that
 * includes CPU-only replicas and gives another domain), *their_dom the domain they get then
 * (NULL: refused as too wide); NULL when every one does. */
static const gang_said *gang_check_said(wl_ctx *c, const char *dom, const char **their_dom)
{
    const gpa_topology *t = &c->gang_pool->topology;
    const gang_said *lacking = NULL;
    char text[WL_WARN_MAX_BYTES + 1];
    for (size_t i = 0; i < c->n_said; i++) {
        const gang_said *s = &c->said[i];
        if (s->size == c->gang.pods) continue;
        if (s->src == GPA_GANG_SRC_OURS) {
            snprintf(text, sizeof text,
                     "annotation " GPA_ANN_GANG_SIZE " says %" PRId64 " pods, but the %s's gang "
                     "has %" PRId64 " GPU pods (%" PRId64 " GPUs, one %s): write \"%" PRId64 "\"",
                     s->size, c->k->kind, c->gang.pods, c->gang.gpus, dom, c->gang.pods);
            add_refusal(c, s->path, text, "gang-size", c->gang_rule, c->gang_pool->name);
            continue;
        }
        if (lacking) continue;
        /* the pod path's own arithmetic on what the pods say (the widest domain when they
         * say nothing); the same domain as the gang's is harmless */
        gpa_gang_sum theirs = {0};
        gpa_gang_sum_add(&theirs, s->size, s->gpus);
        int64_t tg;
        const char *td = theirs.overflow ? NULL : gpa_gang_domain(t, theirs.gpus, &tg);
        if (s->src != GPA_GANG_SRC_NONE && td && strcmp(td, dom) == 0) continue;
        lacking = s;
        *their_dom = td;
    }
    return lacking;
}

/* A gang wider than one node of a pool whose island spans nodes, with a GPU template that
 * lacks the ComputeDomain's channel claim (docs/policy.md "Multi-node NVLink"): the pods'
 * own check cannot see the gang when the operator puts no size on them, the spec does. */
static void imex_judge(wl_ctx *c)
{
    const gpa_topology *t = &c->gang_pool->topology;
    if (t->imex_warn) {
        char text[WL_WARN_MAX_BYTES + 1];
        snprintf(text, sizeof text,
                 "gang of %" PRId64 " GPUs spans nodes of pool %s: add the IMEX channel claim "
                 "(template %s)",
                 c->gang.overflow ? INT64_MAX : c->gang.gpus, c->gang_pool->name, t->imex_template);
        add_warning(c, c->imex_path, text);
        return;
    }
    char msg[512];
    snprintf(msg, sizeof msg,
             "gang of %" PRId64 " GPUs (%lld pods of the %s) spans more than one %d-GPU node of "
             "pool %s, whose NVLink island reaches other nodes only through an IMEX channel: list "
             "the ComputeDomain's channel (resourceClaimTemplateName %s%s) in spec.resourceClaims "
             "and in resources.claims of every GPU container",
             c->gang.overflow ? INT64_MAX : c->gang.gpus, (long long)c->gang.pods, c->k->kind,
             t->gpus_per_node, c->gang_pool->name, strchr(t->imex_template, '*') ? "matching " : "",
             t->imex_template);
    add_refusal(c, c->imex_path, msg, "imex-channel", c->gang_rule, c->gang_pool->name);
}

/* The workload's gang against its pool's domains: refused when no domain holds it or a
 * template's gang-size disagrees with it, else one line naming the level (and the annotation
 * to write when its pods will not say the right size themselves). */
static void gang_judge(wl_ctx *c)
{
    if (!c->gang_pool || c->n_unchanged || c->n_refused || c->gang.pods <= 0) return;
    const gpa_topology *t = &c->gang_pool->topology;
    int64_t dg, gg = c->gang.overflow ? INT64_MAX : c->gang.gpus;
    long long np = (long long)c->gang.pods;
    const char *dom = gpa_gang_domain(t, gg, &dg);
    char text[WL_WARN_MAX_BYTES + 1];
    if (!dom) {
        const char *wl = t->n_levels ? t->levels[t->n_levels - 1].label : t->island_label;
        snprintf(text, sizeof text,
                 "gang of %" PRId64 " GPUs (%lld pods of the %s) is wider than pool %s's widest "
                 "domain, %s (%" PRId64 " GPUs); run a smaller gang or ask for a pool with a "
                 "wider level",
                 gg, np, c->k->kind, c->gang_pool->name, wl, dg);
        add_refusal(c, c->gang_path, text, "gang-too-wide", c->gang_rule, c->gang_pool->name);
        return;
    }
    if (c->imex_path && gg > t->gpus_per_node) {
        imex_judge(c);
        if (!t->imex_warn) return;
    }
    const char *their = NULL;
    const gang_said *lacking = gang_check_said(c, dom, &their);
    if (c->n_refused) return;
    if (!lacking)
        snprintf(text, sizeof text,
                 "gang of %" PRId64 " GPUs (%lld pods): pod affinity on %s (%" PRId64 " GPUs)", gg,
                 np, dom, dg);
    else if (lacking->src == GPA_GANG_SRC_NONE)
        snprintf(text, sizeof text,
                 "gang of %" PRId64 " GPUs (%lld pods) fits one %s (%" PRId64
                 " GPUs), but its pods "
                 "carry no gang size: annotate the templates " GPA_ANN_GANG_SIZE ": \"%lld\"",
                 gg, np, dom, dg, np);
    else /* the value first: a long line is cut at its end */
        snprintf(text, sizeof text,
                 "gang of %" PRId64
                 " GPUs (%lld pods): annotate the GPU templates " GPA_ANN_GANG_SIZE
                 ": \"%lld\" (%s says %" PRId64 ": its pods get %s, not %s)",
                 gg, np, np, gpa_gang_src_name(lacking->src), lacking->size,
                 their ? their : "no domain (too wide)", dom);
    add_warning(c, lacking ? lacking->path : c->gang_path, text);
}

static int judge_template(void *vctx, const char *path, const cJSON *tmpl, long long replicas)
{
    wl_ctx *c = vctx;
    for (size_t i = 0; i < c->n_old; i++)
        if (strcmp(c->old[i].path, path) == 0) {
            if (cJSON_Compare(c->old[i].t, tmpl, true)) {
                c->n_unchanged++;
                return GPA_OK; /* unchanged */
            }
            break;
        }
    c->n_judged++;
    /* {"metadata": <template metadata>, "spec": <template spec>} on the stack */
    cJSON pod = {.type = cJSON_Object}, md, sp;
    const cJSON *tm = member(tmpl, "metadata"), *ts = member(tmpl, "spec");
    cJSON *last = NULL;
    if (tm && (tm->type & 0xFF) == cJSON_Object) {
        borrow(&md, tm, "metadata");
        pod.child = last = &md;
    }
    if (ts && (ts->type & 0xFF) == cJSON_Object) {
        borrow(&sp, ts, "spec");
        if (last) {
            last->next = &sp;
            sp.prev = last;
        } else {
            pod.child = &sp;
        }
        last = &sp;
    }
    if (pod.child) pod.child->prev = last;

    gpa_request rq = {.namespace_ = c->ns, .op = GPA_OP_CREATE, .object = &pod, .patch_only = true};
    gpa_decision mdec = {0}, vdec = {0};
    gpa_error eerr;
    eerr.code = 0;
    eerr.message[0] = '\0';
    int rc = gpa_engine_mutate_validate(&mdec, &vdec, c->p, &rq, &eerr);
    if (rc != GPA_OK) {
        gpa_decision_clear(&mdec);
        gpa_decision_clear(&vdec);
        if (rc == GPA_ENOMEM) return rc;
        /* A template the engine cannot read is refused, naming it: the pods would be too. */
        add_refusal(c, path, eerr.message[0] ? eerr.message : "cannot evaluate the pod template",
                    "workload-template", NULL, NULL);
        return GPA_OK;
    }
    gang_add(c, path, &pod, replicas, &mdec);
    const gpa_decision *bad = !mdec.allowed ? &mdec : !vdec.allowed ? &vdec : NULL;
    if (bad) {
        add_refusal(c, path, bad->message, bad->reason, bad->rule, bad->pool);
    } else {
        const char *let = vdec.message ? vdec.message : mdec.message;
        if (let && c->p->enforcement == GPA_ENFORCE_WARN) add_warning(c, path, let);
        if (mdec.gpu_pod) {
            if (!c->gpu && c->n_refused == 0) {
                c->rule = mdec.rule;
                c->pool = mdec.pool;
            }
            c->gpu = true;
            summarize(c, path, &mdec);
        }
    }
    if (mdec.gpu_pod) c->gpu = true;
    gpa_decision_clear(&mdec);
    gpa_decision_clear(&vdec);
    return c->oom ? GPA_ENOMEM : GPA_OK;
}

static int collect_old(void *vctx, const char *path, const cJSON *tmpl, long long replicas)
{
    wl_ctx *c = vctx;
    (void)replicas;
    if (c->n_old == c->cap_old) {
        size_t nc = c->cap_old ? c->cap_old * 2 : 4;
        old_tpl *no = realloc(c->old, nc * sizeof *no);
        if (!no) return GPA_ENOMEM;
        c->old = no;
        c->cap_old = nc;
    }
    char *pc = strdup(path);
    if (!pc) return GPA_ENOMEM;
    c->old[c->n_old++] = (old_tpl){pc, tmpl};
    return GPA_OK;
}

static void ctx_free(wl_ctx *c)
{
    free(c->gang_path);
    for (size_t i = 0; i < c->n_said; i++)
        free(c->said[i].path);
    free(c->said);
    free(c->imex_path);
    for (size_t i = 0; i < c->n_old; i++)
        free(c->old[i].path);
    free(c->old);
    for (size_t i = 0; i < c->n_warn; i++)
        free(c->warn[i]);
    free(c->warn);
    for (size_t i = 0; i < c->n_refused && i < WL_MAX_MESSAGES; i++)
        free(c->refusals[i]);
}

/* Moves the results into the decision: message malloc'd, warnings into a node arena (what
 * gpa_decision_clear frees). */
static int fill_decision(gpa_decision *out, wl_ctx *c, bool deny)
{
    /* The message: the first refusals joined, then how many more there were. */
    if (c->n_refused) {
        size_t len = 64;
        for (size_t i = 0; i < c->n_refused && i < WL_MAX_MESSAGES; i++)
            len += strlen(c->refusals[i]) + 2;
        char *m = malloc(len);
        if (!m) return GPA_ENOMEM;
        size_t at = 0;
        for (size_t i = 0; i < c->n_refused && i < WL_MAX_MESSAGES; i++)
            at += (size_t)snprintf(m + at, len - at, "%s%s", i ? "; " : "", c->refusals[i]);
        if (c->n_refused > WL_MAX_MESSAGES)
            snprintf(m + at, len - at, " (and %zu more templates refused)",
                     c->n_refused - WL_MAX_MESSAGES);
        out->message = m;
    }
    out->allowed = !(deny && c->n_refused);
    out->reason = c->reason;
    out->rule = c->rule;
    out->pool = c->pool;
    out->gpu_pod = c->gpu;
    size_t n_lines = c->n_warn + (c->dropped_warn ? 1 : 0);
    if (!n_lines) return GPA_OK;
    gpa_narena *a = gpa_narena_new();
    if (!a) return GPA_ENOMEM;
    out->priv_arena = a;
    out->warnings = gpa_narena_alloc(a, n_lines * sizeof(char *));
    if (!out->warnings) return GPA_ENOMEM;
    for (size_t i = 0; i < c->n_warn; i++)
        if (!(out->warnings[i] = gpa_narena_strdup(a, c->warn[i]))) return GPA_ENOMEM;
    if (c->dropped_warn) {
        char more[64];
        snprintf(more, sizeof more, "... and %zu more template lines", c->dropped_warn);
        if (!(out->warnings[c->n_warn] = gpa_narena_strdup(a, more))) return GPA_ENOMEM;
    }
    out->n_warnings = n_lines;
    return GPA_OK;
}

int gpa_review_workload(gpa_decision *out, bool *judged, const gpa_policy *p, const gpa_wl_kind *k,
                        gpa_operation op, const cJSON *obj, const cJSON *old, const char *ns,
                        gpa_error *err)
{
    memset(out, 0, sizeof *out);
    *judged = false;
    out->allowed = true;
    if (!p || p->wl_enforcement == GPA_WL_OFF || !obj) return GPA_OK;
    if (op != GPA_OP_CREATE && op != GPA_OP_UPDATE) return GPA_OK;
    wl_ctx c = {.p = p, .ns = ns, .err = err, .k = k, .obj = obj};
    int rc = GPA_OK;
    if (op == GPA_OP_UPDATE && old) {
        gpa_error ignore;
        /* An old object of the wrong shape has no templates to keep: every template is new. */
        rc = gpa_wl_walk(k, old, collect_old, &c, &ignore);
        if (rc == GPA_ENOMEM) goto oom;
        rc = GPA_OK;
    }
    gpa_error werr;
    werr.code = 0;
    werr.message[0] = '\0';
    rc = gpa_wl_walk(k, obj, judge_template, &c, &werr);
    if (rc == GPA_ENOMEM || c.oom) goto oom;
    if (rc != GPA_OK) {
        /* The object's shape is wrong at a template path: refused like a bad template, the
         * message naming the path, since no pod of it can be judged. */
        c.n_judged++;
        const char *m = werr.message;
        const char *colon = strstr(m, ": ");
        if (colon) {
            char path[GPA_WL_PATH_CAP];
            size_t n =
                (size_t)(colon - m) < sizeof path - 1 ? (size_t)(colon - m) : sizeof path - 1;
            memcpy(path, m, n);
            path[n] = '\0';
            add_refusal(&c, path, colon + 2, "workload-template", NULL, NULL);
        } else {
            add_refusal(&c, "object", m, "workload-template", NULL, NULL);
        }
        if (c.oom) goto oom;
    }
    gang_judge(&c);
    if (c.oom) goto oom;
    if (c.n_judged == 0) {
        ctx_free(&c);
        return GPA_OK;
    }
    *judged = true;
    bool deny = p->wl_enforcement == GPA_WL_DENY;
    if (!deny && c.n_refused) {
        /* warn: each refusal becomes a warning line, ahead of the allowed templates' lines */
        size_t nr = c.n_refused < WL_MAX_MESSAGES ? c.n_refused : WL_MAX_MESSAGES;
        /* the refusals take the first lines of the WL_MAX_WARNINGS; the allowed templates'
         * lines past that, and the refusals not kept, go into the "... and N more" count */
        size_t keep = nr + c.n_warn > WL_MAX_WARNINGS ? WL_MAX_WARNINGS - nr : c.n_warn;
        for (size_t i = keep; i < c.n_warn; i++)
            free(c.warn[i]);
        c.dropped_warn += (c.n_warn - keep) + (c.n_refused - nr);
        c.n_warn = keep;
        char **nw = realloc(c.warn, (c.n_warn + nr) * sizeof *nw);
        if (!nw) goto oom;
        c.warn = nw;
        c.cap_warn = c.n_warn + nr;
        memmove(c.warn + nr, c.warn, c.n_warn * sizeof *c.warn);
        for (size_t i = 0; i < nr; i++)
            c.warn[i] = NULL;
        c.n_warn += nr;
        for (size_t i = 0; i < nr; i++)
            if (!(c.warn[i] = cut_dup(c.refusals[i], WL_WARN_MAX_BYTES))) goto oom;
    }
    rc = fill_decision(out, &c, deny);
    ctx_free(&c);
    if (rc != GPA_OK) {
        gpa_decision_clear(out);
        return gpa_fail(err, GPA_ENOMEM, "out of memory judging the workload");
    }
    return GPA_OK;
oom:
    ctx_free(&c);
    gpa_decision_clear(out);
    return gpa_fail(err, GPA_ENOMEM, "out of memory judging the workload");
}
