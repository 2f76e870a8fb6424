/*
 * test_oom_reach.c - the exact reachability analysis (reach.h) with every allocation failing
 * in turn (fault.h): gpa_reach_analyze and its text on the shipped policies/ and on the set
 * with every finding (test/unit/policies/reach), and the one-namespace analysis behind the
 * untrusted-shared advice (a denied pod through gpa_engine_validate), and the tenants'
 * findings (gpa_tenancy_analyze on test/unit/policies/tenancy). Each run must answer as
 * the clean run (same reached rules, same findings text, same denial message) or GPA_ENOMEM
 * with a message, and leave no block live (fault.c counts them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fault.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"

typedef struct reach_case {
    gpa_policy *p;
    /* what the run answered (static storage: a block kept from one run to the next would
     * count as a leak of the one and a double free of the other) */
    char text[16384];
    bool text_oom;
    size_t reached;
    gpa_error err;
    /* the clean run's */
    char clean_text[16384];
    size_t clean_reached;
    bool have_clean;
} reach_case;

static int run_reach(void *ctx)
{
    reach_case *c = ctx;
    c->err = (gpa_error){0};
    c->text[0] = '\0';
    c->text_oom = false;
    c->reached = 0;
    gpa_reach *r = NULL;
    int rc = gpa_reach_analyze(c->p, &r, &c->err);
    if (rc == GPA_OK) {
        for (size_t i = 0; i < r->n_rules; i++)
            c->reached += r->reached[i];
        char *w = gpa_reach_text(r, false), *info = gpa_reach_text(r, true);
        snprintf(c->text, sizeof c->text, "%s%s", w ? w : "", info ? info : "");
        /* NULL from a text writer is its out-of-memory answer, when the clean run had text */
        c->text_oom = !w || !info;
        free(w);
        free(info);
        gpa_reach_free(r);
    }
    return rc;
}

static const char *check_reach(void *ctx, int rc, int clean_rc, bool fired)
{
    (void)clean_rc;
    (void)fired;
    reach_case *c = ctx;
    if (!c->have_clean) {
        if (rc != GPA_OK) return "the clean analysis failed";
        c->have_clean = true;
        memcpy(c->clean_text, c->text, sizeof c->text);
        c->clean_reached = c->reached;
        return NULL;
    }
    if (rc == GPA_ENOMEM) return c->err.message[0] ? NULL : "GPA_ENOMEM without a message";
    if (rc != GPA_OK) return "neither the clean answer nor GPA_ENOMEM";
    if (c->reached != c->clean_reached) return "GPA_OK with other rules reached";
    if (!c->text_oom && strcmp(c->text, c->clean_text) != 0) return "GPA_OK with other findings";
    return NULL;
}

/* The tenants' findings (policy_reach_tenants.c): same text as the clean run, or GPA_ENOMEM
 * with a message. */
typedef struct tenancy_case {
    gpa_policy *p;
    char text[16384];
    bool text_oom;
    size_t n;
    gpa_error err;
    char clean_text[16384];
    size_t clean_n;
    bool have_clean;
} tenancy_case;

static int run_tenancy(void *ctx)
{
    tenancy_case *c = ctx;
    c->err = (gpa_error){0};
    c->text[0] = '\0';
    c->text_oom = false;
    c->n = 0;
    gpa_tenancy_report *r = NULL;
    int rc = gpa_tenancy_analyze(c->p, &r, &c->err);
    if (rc == GPA_OK) {
        c->n = r->n;
        char *t = gpa_tenancy_text(r);
        snprintf(c->text, sizeof c->text, "%s", t ? t : "");
        c->text_oom = !t;
        free(t);
        gpa_tenancy_report_free(r);
    }
    return rc;
}

static const char *check_tenancy(void *ctx, int rc, int clean_rc, bool fired)
{
    (void)clean_rc;
    (void)fired;
    tenancy_case *c = ctx;
    if (!c->have_clean) {
        if (rc != GPA_OK) return "the clean analysis failed";
        if (c->n != 2) return "the clean analysis did not find the overlap and the open name";
        c->have_clean = true;
        memcpy(c->clean_text, c->text, sizeof c->text);
        c->clean_n = c->n;
        return NULL;
    }
    if (rc == GPA_ENOMEM) return c->err.message[0] ? NULL : "GPA_ENOMEM without a message";
    if (rc != GPA_OK) return "neither the clean answer nor GPA_ENOMEM";
    if (c->n != c->clean_n) return "GPA_OK with other findings";
    if (!c->text_oom && strcmp(c->text, c->clean_text) != 0) return "GPA_OK with other text";
    return NULL;
}

typedef struct deny_case {
    gpa_policy *p;
    cJSON *pod;
    char message[4096];
    char clean_message[4096];
    bool have_clean;
} deny_case;

static int run_deny(void *ctx)
{
    deny_case *c = ctx;
    gpa_request req = {.namespace_ = "labs-nlp", .op = GPA_OP_CREATE, .object = c->pod};
    gpa_decision d;
    gpa_error e = {0};
    int rc = gpa_engine_validate(&d, c->p, &req, &e);
    c->message[0] = '\0';
    if (rc == GPA_OK) {
        snprintf(c->message, sizeof c->message, "%s", d.message ? d.message : "(none)");
        gpa_decision_clear(&d);
    }
    return rc;
}

static const char *check_deny(void *ctx, int rc, int clean_rc, bool fired)
{
    (void)clean_rc;
    (void)fired;
    deny_case *c = ctx;
    if (!c->have_clean) {
        if (rc != GPA_OK) return "the clean validation failed";
        if (!strstr(c->message, "rule labs-mig places such pods")) return "no MIG advice";
        memcpy(c->clean_message, c->message, sizeof c->message);
        c->have_clean = true;
        return NULL;
    }
    if (rc == GPA_ENOMEM) return NULL;
    if (rc != GPA_OK) return "neither the clean answer nor GPA_ENOMEM";
    if (strcmp(c->message, c->clean_message) != 0) return "GPA_OK with another denial message";
    return NULL;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1))) {
            *len = fread(b, 1, (size_t)n, f);
            b[*len] = '\0';
        }
    }
    fclose(f);
    return b;
}

int main(void)
{
    fault_init();
    int failed = 0;
    const char *dirs[] = {GPA_SOURCE_DIR "/policies", GPA_SOURCE_DIR "/test/unit/policies/reach"};
    const char *names[] = {"reach/analyze policies/", "reach/analyze test/unit/policies/reach"};
    for (int i = 0; i < 2; i++) {
        static reach_case c;
        memset(&c, 0, sizeof c);
        gpa_error e = {0};
        if (gpa_policy_load_dir(&c.p, dirs[i], &e) != GPA_OK) {
            printf("FAIL cannot load %s: %s\n", dirs[i], e.message);
            return 1;
        }
        fault_case fc = {names[i], run_reach, check_reach, &c};
        failed += fault_run_case(&fc);
        gpa_policy_unref(c.p);
    }
    {
        static tenancy_case t;
        gpa_error e = {0};
        if (gpa_policy_load_dir(&t.p, GPA_SOURCE_DIR "/test/unit/policies/tenancy", &e) != GPA_OK) {
            printf("FAIL cannot load test/unit/policies/tenancy: %s\n", e.message);
            return 1;
        }
        fault_case fc = {"tenancy/analyze test/unit/policies/tenancy", run_tenancy, check_tenancy,
                         &t};
        failed += fault_run_case(&fc);
        gpa_policy_unref(t.p);
    }
    /* the advice: golden case 200's policy and pod */
    const char *files[] = {"cluster/00-tenancy.yaml", "cluster/01-settings.yaml",
                           "cluster/10-pools.yaml", "reach/20-rules.yaml"};
    gpa_policy_source src[4];
    static char path[4096];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/test/golden/policies/%s", GPA_SOURCE_DIR, files[i]);
        src[i].path = files[i];
        src[i].data = slurp(path, &src[i].len);
        if (!src[i].data) {
            printf("FAIL cannot read %s\n", path);
            return 1;
        }
    }
    static deny_case d;
    gpa_error e = {0};
    if (gpa_policy_load_sources(&d.p, src, 4, &e) != GPA_OK) {
        printf("FAIL cannot load the advice policy: %s\n", e.message);
        return 1;
    }
    d.pod = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nb\","
                        "\"labels\":{\"gpu-admission.io/trust\":\"untrusted\","
                        "\"gpu-admission.io/pool\":\"t4-shared\",\"gpu-admission.io/tenant\":"
                        "\"labs\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\","
                        "\"resources\":{\"limits\":{\"nvidia.com/gpu.shared\":\"1\"}}}]}}");
    fault_case fc = {"reach/advice untrusted-shared", run_deny, check_deny, &d};
    failed += fault_run_case(&fc);
    cJSON_Delete(d.pod);
    gpa_policy_unref(d.p);
    for (int i = 0; i < 4; i++)
        free((char *)src[i].data);
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
