/*
 * test_review_namespace.c - the lock on the namespace label gpu-admission.io/ignore
 * (review.c dispatching Namespace reviews to review_namespace.c): the exempt list parser
 * (`serve --ignore-label-namespaces`), a Namespace CREATE/UPDATE carrying the label refused
 * outside the list and allowed inside it, the label's removal always allowed, the mutating
 * hook and subresources left alone, no list meaning no namespace exempt, malformed objects
 * answered 400, and Pod reviews answered byte for byte as without the guard.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/namespace_guard.h"

typedef struct answer {
    int http;
    const char *outcome;
    char *body;
    const char *reason;
} answer;

/* The review of namespace name with labels (JSON object text, or NULL) as op; old_labels
 * non-NULL adds an oldObject. */
static char *ns_review(const char *op, const char *name, const char *labels, const char *old_labels,
                       const char *sub)
{
    char *b = malloc(4096);
    char obj[1024], old[1024] = "";
    snprintf(obj, sizeof obj,
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"%s%s}}",
             name, labels ? ",\"labels\":" : "", labels ? labels : "");
    if (old_labels)
        snprintf(old, sizeof old,
                 ",\"oldObject\":{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                 "{\"name\":\"%s\",\"labels\":%s}}",
                 name, old_labels);
    snprintf(b, 4096,
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Namespace\"},"
             "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"namespaces\"},"
             "%s%s%s\"name\":\"%s\",\"operation\":\"%s\",\"object\":%s%s}}",
             sub ? "\"subResource\":\"" : "", sub ? sub : "", sub ? "\"," : "", name, op, obj, old);
    return b;
}

static answer ask(const gpa_ns_guard *g, gpa_hook hook, const char *body)
{
    gpa_review_result r;
    gpa_error err = {0};
    gpa_review_handle_guarded(&r, NULL, g, hook, body, strlen(body), &err);
    answer a = {r.http_status, r.outcome, r.body ? strndup(r.body, r.body_len) : NULL,
                r.decision.reason};
    gpa_review_result_clear(&r);
    return a;
}

static void test_parse(void)
{
    gpa_ns_guard g;
    gpa_error err = {0};
    CHECK_INT(gpa_ns_guard_parse(&g, "", &err), GPA_OK);
    CHECK_INT(g.n, 0);
    CHECK(!gpa_ns_guard_allows(&g, ""));
    gpa_ns_guard_free(&g);
    CHECK_INT(gpa_ns_guard_parse(&g, NULL, &err), GPA_OK);
    CHECK_INT(g.n, 0);
    CHECK_INT(gpa_ns_guard_parse(&g, "ops-recovery, team-a ,x9", &err), GPA_OK);
    CHECK_INT(g.n, 3);
    CHECK(gpa_ns_guard_allows(&g, "ops-recovery"));
    CHECK(gpa_ns_guard_allows(&g, "team-a"));
    CHECK(gpa_ns_guard_allows(&g, "x9"));
    CHECK(!gpa_ns_guard_allows(&g, "team"));    /* whole names only */
    CHECK(!gpa_ns_guard_allows(&g, "team-a2")); /* no prefixes */
    CHECK(!gpa_ns_guard_allows(&g, NULL));
    CHECK(!gpa_ns_guard_allows(NULL, "team-a"));
    gpa_ns_guard_free(&g);

    static const char *const bad[] = {
        "a,,b",   "a,",
        ",a",     "Team-A",
        "team_a", "-a",
        "a-",     "research-*",
        "a.b",    "a234567890123456789012345678901234567890123456789012345678901234"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        CHECK_INT(gpa_ns_guard_parse(&g, bad[i], &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "--ignore-label-namespaces");
        CHECK_INT(g.n, 0);
        CHECK(g.names == NULL);
    }
    gpa_ns_guard_parse(&g, "ok,Bad_Name", &err);
    CHECK_CONTAINS(err.message, "'Bad_Name' is not a namespace name");
    /* 63 characters is the limit, not past it */
    CHECK_INT(gpa_ns_guard_parse(
                  &g, "a23456789012345678901234567890123456789012345678901234567890123", &err),
              GPA_OK);
    CHECK_INT(g.n, 1);
    gpa_ns_guard_free(&g);
}

static void test_reviews(void)
{
    gpa_ns_guard g;
    gpa_error err = {0};
    CHECK_INT(gpa_ns_guard_parse(&g, "ops-recovery", &err), GPA_OK);
    const char *lab = "{\"gpu-admission.io/ignore\":\"true\",\"team\":\"a\"}";

    /* refused outside the list, with the name, the label and where the list comes from */
    char *b = ns_review("CREATE", "team-a", lab, NULL, NULL);
    answer a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_INT(a.http, 200);
    CHECK_STR(a.outcome, "denied");
    CHECK_STR(a.reason, "ignore-label-not-exempt");
    CHECK_CONTAINS(a.body, "\"allowed\":false");
    CHECK_CONTAINS(a.body, "\"code\":403");
    CHECK_CONTAINS(a.body, "namespace \\\"team-a\\\" may not carry the label "
                           "gpu-admission.io/ignore");
    CHECK_CONTAINS(a.body, "webhook.ignoreLabel.namespaces");
    CHECK_CONTAINS(a.body, "\"uid\":\"u-1\"");
    free(a.body);
    /* no list at all (gpa_review_handle, or a server started without the flag): refused too */
    {
        gpa_review_result r;
        gpa_review_handle(&r, NULL, GPA_HOOK_VALIDATE, b, strlen(b), NULL);
        CHECK_STR(r.outcome, "denied");
        gpa_review_result_clear(&r);
        gpa_ns_guard none = {0};
        a = ask(&none, GPA_HOOK_VALIDATE, b);
        CHECK_STR(a.outcome, "denied");
        free(a.body);
    }
    /* any value of the label counts, not only "true" */
    free(b);
    b = ns_review("CREATE", "team-a", "{\"gpu-admission.io/ignore\":\"false\"}", NULL, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "denied");
    free(a.body);
    /* the mutating hook never judges namespaces */
    a = ask(&g, GPA_HOOK_MUTATE, b);
    CHECK_STR(a.outcome, "skipped");
    CHECK_CONTAINS(a.body, "\"allowed\":true");
    free(a.body);
    free(b);

    /* inside the list: allowed, and judged (outcome allowed, not skipped) */
    b = ns_review("CREATE", "ops-recovery", lab, NULL, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "allowed");
    CHECK_CONTAINS(a.body, "\"allowed\":true");
    free(a.body);
    free(b);

    /* no label: nothing to judge */
    b = ns_review("CREATE", "team-a", "{\"team\":\"a\"}", NULL, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "skipped");
    free(a.body);
    free(b);
    b = ns_review("CREATE", "team-a", NULL, NULL, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "skipped");
    free(a.body);
    free(b);

    /* UPDATE: removing the label (labelled under an older release) is always allowed ... */
    b = ns_review("UPDATE", "team-a", "{\"team\":\"a\"}", lab, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "skipped");
    CHECK_CONTAINS(a.body, "\"allowed\":true");
    free(a.body);
    free(b);
    /* ... keeping it on another change is not */
    b = ns_review("UPDATE", "team-a", lab, lab, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "denied");
    free(a.body);
    free(b);
    /* subresources (status, finalize) and DELETE carry no labels to judge */
    b = ns_review("UPDATE", "team-a", lab, lab, "finalize");
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "skipped");
    free(a.body);
    free(b);
    b = ns_review("DELETE", "team-a", lab, NULL, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_STR(a.outcome, "skipped");
    free(a.body);
    free(b);

    /* a hand-written review without request.kind: the object's own kind counts */
    const char *hand =
        "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":"
        "{\"uid\":\"h\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\",\"kind\":"
        "\"Namespace\",\"metadata\":{\"name\":\"self-service\",\"labels\":"
        "{\"gpu-admission.io/ignore\":\"true\"}}}}}";
    a = ask(&g, GPA_HOOK_VALIDATE, hand);
    CHECK_STR(a.outcome, "denied");
    CHECK_CONTAINS(a.body, "\"apiVersion\":\"admission.k8s.io/v1beta1\"");
    free(a.body);

    /* malformed: 400 with the reason, never a guess */
    static const struct {
        const char *labels, *want;
    } bad[] = {{"[\"gpu-admission.io/ignore\"]", "metadata.labels must be an object"},
               {"{\"gpu-admission.io/ignore\":true}", "must be a string"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = ns_review("CREATE", "team-a", bad[i].labels, NULL, NULL);
        a = ask(&g, GPA_HOOK_VALIDATE, b);
        CHECK_INT(a.http, 400);
        CHECK_CONTAINS(a.body, bad[i].want);
        free(a.body);
        free(b);
    }
    b = ns_review("CREATE", "", lab, NULL, NULL);
    a = ask(&g, GPA_HOOK_VALIDATE, b);
    CHECK_INT(a.http, 400);
    CHECK_CONTAINS(a.body, "metadata.name must be a non-empty string");
    free(a.body);
    free(b);
    gpa_ns_guard_free(&g);
}

/* The guard changes nothing for pods: the same bytes as gpa_review_handle. */
static void test_pods_unchanged(void)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_policy_load_dir(&p, GPA_SOURCE_DIR "/policies", &err), GPA_OK);
    if (!p) return;
    gpa_ns_guard g;
    CHECK_INT(gpa_ns_guard_parse(&g, "notebooks,inference-a", &err), GPA_OK);
    const char *pod =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"p\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"namespace\":\"notebooks\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\","
        "\"kind\":\"Pod\",\"metadata\":{\"name\":\"nb\",\"labels\":{\"gpu-admission.io/ignore\":"
        "\"true\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
        "\"nvidia.com/gpu\":\"1\"}}}]}}}}";
    for (int h = 0; h < 2; h++) {
        gpa_hook hook = h ? GPA_HOOK_VALIDATE : GPA_HOOK_MUTATE;
        gpa_review_result a, b;
        gpa_review_handle(&a, p, hook, pod, strlen(pod), NULL);
        gpa_review_handle_guarded(&b, p, &g, hook, pod, strlen(pod), NULL);
        CHECK_INT(a.http_status, 200);
        CHECK(a.body_len == b.body_len && memcmp(a.body, b.body, a.body_len) == 0);
        CHECK_STR(a.outcome, b.outcome);
        if (!h) CHECK_STR(a.outcome, "mutated"); /* the notebooks rule, label or not */
        gpa_review_result_clear(&a);
        gpa_review_result_clear(&b);
    }
    gpa_ns_guard_free(&g);
    gpa_policy_unref(p);
}

/* A Namespace CREATE of name by user (in groups, a JSON array text or NULL), labels optional. */
static char *create_by(const char *name, const char *user, const char *groups, const char *labels)
{
    char *b = malloc(4096);
    snprintf(b, 4096,
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u-2\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Namespace\"},"
             "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"namespaces\"},"
             "\"name\":\"%s\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"%s\"%s%s},"
             "\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
             "\"%s\"%s%s}}}}",
             name, user, groups ? ",\"groups\":" : "", groups ? groups : "", name,
             labels ? ",\"labels\":" : "", labels ? labels : "");
    return b;
}

/* Issue 33: a namespace the webhooks leave out by name (the GPU operator's) cannot be made by a
 * tenant: its CREATE is refused to all but the listed users and groups. */
static void test_excluded(void)
{
    gpa_ns_guard g;
    gpa_error err = {0};
    CHECK_INT(gpa_ns_guard_parse(&g, "", &err), GPA_OK);
    CHECK_INT(gpa_ns_guard_parse_excluded(&g, "gpu-operator, nvidia-gpu-operator",
                                          "group:system:masters, user:argocd", &err),
              GPA_OK);
    CHECK_INT(g.n_excluded, 2);
    CHECK_INT(g.n_creators, 2);
    struct {
        const char *name, *user, *groups, *labels;
        bool allowed;
        const char *outcome;
    } cases[] = {
        /* the squatter: a tenant with the right to create namespaces */
        {"gpu-operator", "alice", "[\"system:authenticated\",\"tenants\"]", NULL, false, "denied"},
        {"gpu-operator", "alice", NULL, NULL, false, "denied"},
        {"nvidia-gpu-operator", "system:serviceaccount:capsule:capsule", "[]", NULL, false,
         "denied"},
        /* a user named like a group, a group named like the user: no */
        {"gpu-operator", "system:masters", "[\"argocd\"]", NULL, false, "denied"},
        /* the administrators the values name */
        {"gpu-operator", "kubernetes-admin", "[\"system:masters\",\"system:authenticated\"]", NULL,
         true, "allowed"},
        {"gpu-operator", "argocd", "[]", NULL, true, "allowed"},
        /* any other name is none of this guard's business */
        {"gpu-operator-x", "alice", "[]", NULL, true, "skipped"},
        {"team-a", "alice", "[]", NULL, true, "skipped"},
        /* the creator still may not put the ignore label on it (not in that list) */
        {"gpu-operator", "argocd", "[]", "{\"gpu-admission.io/ignore\":\"true\"}", false, "denied"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *b = create_by(cases[i].name, cases[i].user, cases[i].groups, cases[i].labels);
        answer a = ask(&g, GPA_HOOK_VALIDATE, b);
        CHECK_INT(a.http, 200);
        CHECK_STR(a.outcome, cases[i].outcome);
        CHECK(a.body &&
              strstr(a.body, cases[i].allowed ? "\"allowed\":true" : "\"allowed\":false"));
        if (!cases[i].allowed && !cases[i].labels) {
            CHECK(a.body && strstr(a.body, "left out of the GPU admission webhooks by name"));
            CHECK_STR(a.reason, "excluded-namespace-create");
        }
        free(a.body);
        free(b);
    }
    /* UPDATE of an existing excluded namespace (the operator's own label changes): allowed */
    char *u = ns_review("UPDATE", "gpu-operator", "{\"a\":\"b\"}", "{}", NULL);
    answer a = ask(&g, GPA_HOOK_VALIDATE, u);
    CHECK(a.body && strstr(a.body, "\"allowed\":true"));
    free(a.body);
    free(u);
    /* the mutating hook never judges namespaces */
    char *b = create_by("gpu-operator", "alice", NULL, NULL);
    a = ask(&g, GPA_HOOK_MUTATE, b);
    CHECK(a.body && strstr(a.body, "\"allowed\":true"));
    free(a.body);
    free(b);
    gpa_ns_guard_free(&g);
    /* bad lists are refused, naming the entry, and leave the lists empty */
    CHECK_INT(gpa_ns_guard_parse(&g, "", &err), GPA_OK);
    CHECK_INT(gpa_ns_guard_parse_excluded(&g, "GPU_Operator", "", &err), GPA_EINVAL);
    CHECK(strstr(err.message, "'GPU_Operator' is not a namespace name") != NULL);
    CHECK_INT(gpa_ns_guard_parse_excluded(&g, "gpu-operator", "admin", &err), GPA_EINVAL);
    CHECK(strstr(err.message, "'admin' is not user:NAME or group:NAME") != NULL);
    CHECK_INT(gpa_ns_guard_parse_excluded(&g, "gpu-operator", "group:", &err), GPA_EINVAL);
    CHECK_INT(g.n_excluded + g.n_creators, 0);
    gpa_ns_guard_free(&g);
}

int main(void)
{
    test_excluded();
    test_parse();
    test_reviews();
    test_pods_unchanged();
    return check_done();
}
