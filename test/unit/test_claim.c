/*
 * test_claim.c - the DRA claim reader (src/core/k8s/claim.c): both layouts, firstAvailable,
 * counts and allocation modes, selectors, capacity, tolerations, the API's limits, and the
 * strict reading of the NVIDIA driver's opaque configs, with one case per bad shape and the
 * exact message it gets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "k8s/claim.h"

static gpa_claim claim; /* ~60 KB: not on the stack */
static char why[256];

/* Reads a claim JSON text; returns gpa_claim_read's code, the tree kept in *keep. */
static int rd(const char *json, bool tmpl, cJSON **keep)
{
    cJSON *o = cJSON_Parse(json);
    if (!o) {
        fprintf(stderr, "test: bad JSON in test: %s\n", json);
        return -2;
    }
    why[0] = '\0';
    int rc = gpa_claim_read(&claim, o, tmpl, why, sizeof why);
    if (keep)
        *keep = o;
    else
        cJSON_Delete(o);
    return rc;
}

/* A v1 claim whose spec.devices is DEV. */
#define V1(dev)                                                                                    \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"spec\":{\"devices\":" dev \
    "}}"
#define V1B1(dev)                                                                                  \
    "{\"apiVersion\":\"resource.k8s.io/"                                                           \
    "v1beta1\",\"kind\":\"ResourceClaim\",\"spec\":{\"devices\":" dev "}}"

/* Reading fails with exactly this message. */
static void bad(const char *json, const char *msg)
{
    int rc = rd(json, false, NULL);
    CHECK_INT(rc, -1);
    if (strcmp(why, msg) != 0) {
        check_total++;
        check_failed++;
        fprintf(stderr, "message \"%s\"\n    expected \"%s\"\n", why, msg);
    }
}

/* The single config of a claim is INVALID with this message. */
static void bad_opaque(const char *params, const char *msg)
{
    char buf[2048];
    snprintf(
        buf, sizeof buf,
        V1("{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}],"
           "\"config\":[{\"opaque\":{\"driver\":\"gpu.nvidia.com\",\"parameters\":%s}}]}"),
        params);
    CHECK_INT(rd(buf, false, NULL), 0);
    CHECK_INT(claim.n_configs, 1);
    CHECK_INT(claim.cfg[0].kind, GPA_OPAQUE_INVALID);
    if (strcmp(claim.cfg[0].error, msg) != 0) {
        check_total++;
        check_failed++;
        fprintf(stderr, "opaque error \"%s\"\n    expected \"%s\"\n", claim.cfg[0].error, msg);
    }
}

static gpa_opaque_kind good_opaque(const char *params, gpa_dra_share *share)
{
    char buf[2048];
    snprintf(
        buf, sizeof buf,
        V1("{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}],"
           "\"config\":[{\"requests\":[\"g\"],\"opaque\":{\"driver\":\"gpu.nvidia.com\","
           "\"parameters\":%s}}]}"),
        params);
    CHECK_INT(rd(buf, false, NULL), 0);
    if (claim.cfg[0].kind == GPA_OPAQUE_INVALID)
        fprintf(stderr, "unexpected opaque error: %s\n", claim.cfg[0].error);
    *share = claim.cfg[0].sharing;
    return claim.cfg[0].kind;
}

static void kinds(void)
{
    CHECK_INT(gpa_claim_kind("resource.k8s.io", "ResourceClaim"), 1);
    CHECK_INT(gpa_claim_kind("resource.k8s.io/v1beta1", "ResourceClaimTemplate"), 2);
    CHECK_INT(gpa_claim_kind("resource.k8s.io", "DeviceClass"), 0);
    CHECK_INT(gpa_claim_kind("resource.k8s.iox", "ResourceClaim"), 0);
    CHECK_INT(gpa_claim_kind("", "ResourceClaim"), 0);
    cJSON *o = cJSON_Parse("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\"}");
    CHECK_INT(gpa_claim_kind_of(o), 1);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"ResourceClaim\"}");
    CHECK_INT(gpa_claim_kind_of(o), 0);
    cJSON_Delete(o);
}

static void layouts(void)
{
    /* NVIDIA's gpu-test5 template, v1 layout */
    cJSON *keep = NULL;
    CHECK_INT(
        rd("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\","
           "\"metadata\":{\"name\":\"multiple-gpus\",\"namespace\":\"gpu-test5\"},"
           "\"spec\":{\"metadata\":{\"labels\":{\"team\":\"a\"}},\"spec\":{\"devices\":{"
           "\"requests\":[{\"name\":\"ts-gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}"
           "},"
           "{\"name\":\"mps-gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}"
           "],"
           "\"config\":[{\"requests\":[\"ts-gpu\"],\"opaque\":{\"driver\":\"gpu.nvidia.com\","
           "\"parameters\":{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"GpuConfig\","
           "\"sharing\":{\"strategy\":\"TimeSlicing\",\"timeSlicingConfig\":{\"interval\":\"Long\"}"
           "}}}},"
           "{\"requests\":[\"mps-gpu\"],\"opaque\":{\"driver\":\"gpu.nvidia.com\",\"parameters\":{"
           "\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"GpuConfig\",\"sharing\":{"
           "\"strategy\":\"MPS\",\"mpsConfig\":{\"defaultActiveThreadPercentage\":50,"
           "\"defaultPinnedDeviceMemoryLimit\":\"10Gi\"}}}}}]}}}}",
           true, &keep),
        0);
    CHECK(claim.is_template);
    CHECK_INT(claim.layout, GPA_CLAIM_LAYOUT_V1);
    CHECK_STR(claim.spec_ptr, "/spec/spec");
    CHECK(claim.labels && cJSON_GetObjectItem(claim.labels, "team"));
    CHECK_INT(claim.n_requests, 2);
    CHECK_INT(claim.n_alts, 2);
    CHECK_STR(claim.alt[0].device_class, "gpu.nvidia.com");
    CHECK_INT(claim.alt[0].count, 1);
    CHECK_INT(claim.alt[1].count, 2);
    CHECK_STR(claim.alt[1].ptr, "/spec/spec/devices/requests/1/exactly");
    CHECK_STR(claim.alt[1].label, "requests[1]");
    CHECK_INT(claim.n_configs, 2);
    CHECK_INT(claim.cfg[0].kind, GPA_OPAQUE_GPU);
    CHECK_INT(claim.cfg[0].sharing, GPA_DRA_SHARE_TIME_SLICING);
    CHECK_STR(claim.cfg[0].interval, "Long");
    CHECK_INT(claim.cfg[1].sharing, GPA_DRA_SHARE_MPS);
    CHECK(gpa_claim_config_applies(&claim, &claim.cfg[0], &claim.alt[0]));
    CHECK(!gpa_claim_config_applies(&claim, &claim.cfg[0], &claim.alt[1]));
    CHECK(gpa_claim_config_applies(&claim, &claim.cfg[1], &claim.alt[1]));
    cJSON_Delete(keep);

    /* v1beta1: the fields on the request itself (NVIDIA's v1beta1/gpu-test4) */
    CHECK_INT(
        rd(V1B1("{\"requests\":[{\"name\":\"mig-1g-5gb-0\",\"deviceClassName\":\"mig.nvidia.com\","
                "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com']."
                "profile == '1g.5gb'\"}}]}],"
                "\"constraints\":[{\"requests\":[],\"matchAttribute\":\"gpu.nvidia.com/"
                "parentUUID\"}]}"),
           false, &keep),
        0);
    CHECK_INT(claim.layout, GPA_CLAIM_LAYOUT_V1BETA1);
    CHECK_STR(claim.alt[0].ptr, "/spec/devices/requests/0");
    CHECK_STR(claim.alt[0].device_class, "mig.nvidia.com");
    CHECK_INT(claim.alt[0].n_selectors, 1);
    char prof[32];
    CHECK_STR(gpa_claim_alt_profile(&claim.alt[0], prof, sizeof prof), "1g.5gb");
    cJSON_Delete(keep);

    /* firstAvailable: every alternative read, config naming a subrequest */
    CHECK_INT(rd(V1("{\"requests\":[{\"name\":\"r\",\"firstAvailable\":["
                    "{\"name\":\"big\",\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2},"
                    "{\"name\":\"small\",\"deviceClassName\":\"mig.nvidia.com\",\"allocationMode\":"
                    "\"All\"}]}],"
                    "\"config\":[{\"requests\":[\"r/"
                    "small\"],\"opaque\":{\"driver\":\"example.com\",\"parameters\":{}}}]}"),
                 false, &keep),
              0);
    CHECK_INT(claim.n_alts, 2);
    CHECK(claim.req[0].first_available);
    CHECK_INT(claim.alt[0].count, 2);
    CHECK(claim.alt[1].mode_all);
    CHECK_INT(claim.alt[1].count, 0);
    CHECK_STR(claim.alt[1].ptr, "/spec/devices/requests/0/firstAvailable/1");
    CHECK_STR(claim.alt[1].label, "requests[0].firstAvailable[1]");
    CHECK_STR(claim.alt[1].name, "small");
    CHECK_INT(claim.cfg[0].kind, GPA_OPAQUE_OTHER);
    CHECK(!gpa_claim_config_applies(&claim, &claim.cfg[0], &claim.alt[0]));
    CHECK(gpa_claim_config_applies(&claim, &claim.cfg[0], &claim.alt[1]));
    cJSON_Delete(keep);

    /* capacity, tolerations, adminAccess, the scheduler's annotation */
    CHECK_INT(rd("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
                 "\"annotations\":{\"resource.kubernetes.io/extended-resource-claim\":\"true\"}},"
                 "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"adminAccess\":true,"
                 "\"capacity\":{\"requests\":{\"memory\":\"4Gi\",\"cores\":\"10\"}},"
                 "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
                 "\"tolerationSeconds\":5}]}}]}}}",
                 false, NULL),
              0);
    CHECK(claim.extended_resource_claim);
    CHECK(claim.alt[0].admin_access);
    CHECK(claim.alt[0].has_memory);
    CHECK_INT(claim.alt[0].memory_bytes, 4LL << 30);
    CHECK_INT(claim.alt[0].n_capacity, 2);
    CHECK_INT(claim.alt[0].n_tolerations, 1);

    /* an empty claim is a claim with no requests */
    CHECK_INT(rd(V1("{}"), false, NULL), 0);
    CHECK_INT(claim.n_requests, 0);
}

static void bad_shapes(void)
{
    bad("[]", "the object must be a JSON object");
    bad("{\"metadata\":[]}", "metadata: must be an object");
    bad("{\"spec\":1}", "spec: must be an object");
    bad(V1("[]"), "spec.devices: must be an object");
    bad(V1("{\"requests\":{}}"), "spec.devices.requests: must be a list");
    bad(V1("{\"requests\":[1]}"), "spec.devices.requests[0]: must be an object");
    bad(V1("{\"requests\":[{\"exactly\":{}}]}"),
        "spec.devices.requests[0].name: required, a string");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\"}},"
           "{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\"}}]}"),
        "spec.devices.requests[1].name: \"a\" used by requests[0] too");
    bad(V1("{\"requests\":[{\"name\":\"a\"}]}"),
        "spec.devices.requests[0]: needs exactly or firstAvailable");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"deviceClassName\":\"gpu.nvidia.com\"}]}"),
        "spec.devices.requests[0]: unknown field \"deviceClassName\" (the v1 layout puts a "
        "request's fields under exactly)");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\"},"
           "\"firstAvailable\":[]}]}"),
        "spec.devices.requests[0]: exactly and firstAvailable are exclusive");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"firstAvailable\":[]}]}"),
        "spec.devices.requests[0].firstAvailable: must be a non-empty list");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{}}]}"),
        "spec.devices.requests[0].exactly.deviceClassName: required");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":3}}]}"),
        "spec.devices.requests[0].exactly.deviceClassName: must be a string");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"count\":0}}]}"),
        "spec.devices.requests[0].exactly.count: must be a whole number >= 1, got 0");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"count\":-3}}]"
           "}"),
        "spec.devices.requests[0].exactly.count: must be a whole number >= 1, got -3");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"count\":1.5}}]"
           "}"),
        "spec.devices.requests[0].exactly.count: must be a whole number");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"count\":\"2\"}}"
           "]}"),
        "spec.devices.requests[0].exactly.count: must be a whole number");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\","
           "\"allocationMode\":\"All\",\"count\":2}}]}"),
        "spec.devices.requests[0].exactly.count: must not be set with allocationMode All");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\","
           "\"allocationMode\":\"Some\"}}]}"),
        "spec.devices.requests[0].exactly.allocationMode: must be ExactCount or All, got \"Some\"");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"adminAccess\":"
           "\"yes\"}}]}"),
        "spec.devices.requests[0].exactly.adminAccess: must be true or false");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"firstAvailable\":[{\"name\":\"s\",\"deviceClassName\":"
           "\"x\",\"adminAccess\":true}]}]}"),
        "spec.devices.requests[0].firstAvailable[0].adminAccess: not a field of a subrequest");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"firstAvailable\":[{\"deviceClassName\":\"x\"}]}]}"),
        "spec.devices.requests[0].firstAvailable[0].name: required, a string");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"selectors\":{}}"
           "}]}"),
        "spec.devices.requests[0].exactly.selectors: must be a list");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"selectors\":[{"
           "\"cel\":\"x\"}]}}]}"),
        "spec.devices.requests[0].exactly.selectors[0]: must be {cel: {expression: string}}");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"capacity\":{"
           "\"requests\":{\"memory\":\"lots\"}}}}]}"),
        "spec.devices.requests[0].exactly.capacity.requests[memory]: not a quantity");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"capacity\":[]}}"
           "]}"),
        "spec.devices.requests[0].exactly.capacity: must be {requests: {name: quantity}}");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"tolerations\":["
           "{\"operator\":\"Maybe\"}]}}]}"),
        "spec.devices.requests[0].exactly.tolerations[0].operator: must be Exists or Equal");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"tolerations\":["
           "{\"effect\":\"Evict\"}]}}]}"),
        "spec.devices.requests[0].exactly.tolerations[0].effect: must be NoSchedule, NoExecute or "
        "None");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"x\",\"tolerations\":["
           "{\"tolerationSeconds\":\"5\"}]}}]}"),
        "spec.devices.requests[0].exactly.tolerations[0].tolerationSeconds: must be a whole "
        "number");
    bad(V1("{\"config\":{}}"), "spec.devices.config: must be a list");
    bad(V1("{\"config\":[{\"requests\":[\"nope\"]}]}"),
        "spec.devices.config[0].requests[0]: \"nope\" names no request of the claim");
    bad(V1("{\"config\":[{\"opaque\":{\"parameters\":{}}}]}"),
        "spec.devices.config[0].opaque: must be {driver: string, parameters: object}");
    bad(V1("{\"config\":[{\"opaque\":{\"driver\":\"gpu.nvidia.com\"}}]}"),
        "spec.devices.config[0].opaque.parameters: required");
    bad(V1B1("{\"requests\":[{\"name\":\"a\",\"deviceClassName\":\"x\",\"firstAvailable\":[{"
             "\"name\":\"s\",\"deviceClassName\":\"x\"}]}]}"),
        "spec.devices.requests[0]: deviceClassName and firstAvailable are exclusive");
    /* a template's own shape */
    CHECK_INT(rd("{\"spec\":{\"metadata\":{\"labels\":[]}}}", true, NULL), -1);
    CHECK_STR(why, "spec.metadata.labels: must be a map");
    CHECK_INT(rd("{\"spec\":{\"spec\":[]}}", true, NULL), -1);
    CHECK_STR(why, "spec.spec: must be an object");
}

/* The API's limits, each one past its bound. */
static void limits(void)
{
    char *buf = malloc(64 * 1024);
    size_t at = 0;
    at += (size_t)sprintf(buf + at, "{\"spec\":{\"devices\":{\"requests\":[");
    for (int i = 0; i < 33; i++)
        at += (size_t)sprintf(buf + at,
                              "%s{\"name\":\"r%d\",\"exactly\":{\"deviceClassName\":\"x\"}}",
                              i ? "," : "", i);
    sprintf(buf + at, "]}}}");
    bad(buf, "spec.devices.requests: 33 requests, more than 32 (the API's limit)");

    at = (size_t)sprintf(buf, "{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":"
                              "{\"deviceClassName\":\"x\",\"selectors\":[");
    for (int i = 0; i < 33; i++)
        at += (size_t)sprintf(buf + at, "%s{\"cel\":{\"expression\":\"true\"}}", i ? "," : "");
    sprintf(buf + at, "]}}]}}}");
    bad(buf, "spec.devices.requests[0].exactly.selectors: more than 32 (the API's limit)");

    at = (size_t)sprintf(buf,
                         "{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":"
                         "{\"deviceClassName\":\"x\",\"selectors\":[{\"cel\":{\"expression\":\"");
    memset(buf + at, 'a', 10 * 1024 + 1);
    at += 10 * 1024 + 1;
    sprintf(buf + at, "\"}}]}}]}}}");
    bad(buf, "spec.devices.requests[0].exactly.selectors[0].cel.expression: 10241 bytes, more "
             "than 10240 (the API's limit)");

    at = (size_t)sprintf(
        buf, "{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"firstAvailable\":[");
    for (int i = 0; i < 9; i++)
        at += (size_t)sprintf(buf + at, "%s{\"name\":\"s%d\",\"deviceClassName\":\"x\"}",
                              i ? "," : "", i);
    sprintf(buf + at, "]}]}}}");
    bad(buf, "spec.devices.requests[0].firstAvailable: more than 8 (the API's limit)");

    at = (size_t)sprintf(buf, "{\"spec\":{\"devices\":{\"config\":[");
    for (int i = 0; i < 33; i++)
        at += (size_t)sprintf(buf + at, "%s{}", i ? "," : "");
    sprintf(buf + at, "]}}}");
    bad(buf, "spec.devices.config: 33 entries, more than 32 (the API's limit)");

    at = (size_t)sprintf(buf, "{\"spec\":{\"devices\":{\"constraints\":[");
    for (int i = 0; i < 33; i++)
        at += (size_t)sprintf(buf + at, "%s{}", i ? "," : "");
    sprintf(buf + at, "]}}}");
    bad(buf, "spec.devices.constraints: more than 32 (the API's limit)");

    at = (size_t)sprintf(buf, "{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":"
                              "{\"deviceClassName\":\"x\",\"tolerations\":[");
    for (int i = 0; i < 17; i++)
        at += (size_t)sprintf(buf + at, "%s{}", i ? "," : "");
    sprintf(buf + at, "]}}]}}}");
    bad(buf, "spec.devices.requests[0].exactly.tolerations: more than 16 (the API's limit)");

    at = (size_t)sprintf(buf, "{\"spec\":{\"devices\":{\"config\":[{\"opaque\":{\"driver\":"
                              "\"example.com\",\"parameters\":{\"blob\":\"");
    memset(buf + at, 'b', 10 * 1024);
    at += 10 * 1024;
    sprintf(buf + at, "\"}}}]}}}");
    bad(buf, "spec.devices.config[0].opaque.parameters: more than 10240 bytes (the API's limit)");
    free(buf);
}

#define NV "\"apiVersion\":\"resource.nvidia.com/v1beta1\""

static void opaque(void)
{
    gpa_dra_share sh;
    CHECK_INT(good_opaque("{" NV ",\"kind\":\"GpuConfig\"}", &sh), GPA_OPAQUE_GPU);
    CHECK_INT(sh, GPA_DRA_SHARE_NONE);
    CHECK_INT(good_opaque("{" NV
                          ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\","
                          "\"timeSlicingConfig\":{\"interval\":\"Short\"}}}",
                          &sh),
              GPA_OPAQUE_GPU);
    CHECK_INT(sh, GPA_DRA_SHARE_TIME_SLICING);
    CHECK_INT(good_opaque("{" NV ",\"kind\":\"MigDeviceConfig\",\"sharing\":{\"strategy\":\"MPS\","
                          "\"mpsConfig\":{\"defaultPerDevicePinnedMemoryLimit\":{\"0\":\"1Gi\"}}}}",
                          &sh),
              GPA_OPAQUE_MIG);
    CHECK_INT(sh, GPA_DRA_SHARE_MPS);
    CHECK_INT(good_opaque("{" NV ",\"kind\":\"VfioDeviceConfig\",\"iommu\":{\"backendPolicy\":"
                          "\"LegacyOnly\",\"enableAPIDevice\":true}}",
                          &sh),
              GPA_OPAQUE_VFIO);

    bad_opaque("[]", "parameters: must be an object");
    bad_opaque("{\"kind\":\"GpuConfig\"}",
               "parameters.apiVersion: must be \"resource.nvidia.com/v1beta1\"");
    bad_opaque("{\"apiVersion\":\"resource.nvidia.com/v1\",\"kind\":\"GpuConfig\"}",
               "parameters.apiVersion: must be \"resource.nvidia.com/v1beta1\", got "
               "\"resource.nvidia.com/v1\"");
    bad_opaque("{" NV ",\"kind\":\"GPUConfig\"}",
               "parameters.kind: \"GPUConfig\" is not a kind of the gpu.nvidia.com driver "
               "(GpuConfig, MigDeviceConfig or VfioDeviceConfig)");
    bad_opaque("{" NV "}", "parameters.kind: \"\" is not a kind of the gpu.nvidia.com driver "
                           "(GpuConfig, MigDeviceConfig or VfioDeviceConfig)");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"metadata\":{}}",
               "parameters: unknown field \"metadata\"");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\"},\"sharing\":{"
               "\"strategy\":\"MPS\"}}",
               "parameters: duplicate field \"sharing\"");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":[]}",
               "parameters.sharing: must be an object");
    bad_opaque(
        "{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{}}",
        "parameters.sharing.strategy: unknown GPU sharing strategy \"\" (TimeSlicing or MPS)");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"timeslicing\"}}",
               "parameters.sharing.strategy: unknown GPU sharing strategy \"timeslicing\" "
               "(TimeSlicing or MPS)");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":7}}",
               "parameters.sharing.strategy: must be a string");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"replicas\":2}}",
               "parameters.sharing: unknown field \"replicas\"");
    bad_opaque(
        "{" NV
        ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\",\"mpsConfig\":{}}}",
        "parameters.sharing: cannot use mpsConfig with the TimeSlicing strategy");
    bad_opaque(
        "{" NV
        ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"timeSlicingConfig\":{}}}",
        "parameters.sharing: cannot use timeSlicingConfig with the MPS strategy");
    bad_opaque("{" NV ",\"kind\":\"MigDeviceConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\","
               "\"timeSlicingConfig\":{}}}",
               "parameters.sharing: unknown field \"timeSlicingConfig\"");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\","
               "\"timeSlicingConfig\":{\"interval\":\"Forever\"}}}",
               "parameters.sharing.timeSlicingConfig.interval: unknown time-slice interval "
               "\"Forever\" (Default, Short, Medium or Long)");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\","
               "\"timeSlicingConfig\":{\"interval\":3}}}",
               "parameters.sharing.timeSlicingConfig.interval: must be a string");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\","
               "\"timeSlicingConfig\":{\"slice\":\"Long\"}}}",
               "parameters.sharing.timeSlicingConfig: unknown field \"slice\"");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"TimeSlicing\","
               "\"timeSlicingConfig\":[]}}",
               "parameters.sharing.timeSlicingConfig: must be an object");
    bad_opaque("{" NV
               ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":[]}}",
               "parameters.sharing.mpsConfig: must be an object");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
               "\"defaultActiveThreadPercentage\":101}}}",
               "parameters.sharing.mpsConfig.defaultActiveThreadPercentage: must be between 0 and "
               "100, got 101");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
               "\"defaultActiveThreadPercentage\":-1}}}",
               "parameters.sharing.mpsConfig.defaultActiveThreadPercentage: must be between 0 and "
               "100, got -1");
    bad_opaque(
        "{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
        "\"defaultActiveThreadPercentage\":\"50\"}}}",
        "parameters.sharing.mpsConfig.defaultActiveThreadPercentage: must be a whole number");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
               "\"defaultPinnedDeviceMemoryLimit\":\"10GiB\"}}}",
               "parameters.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: not a quantity");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
               "\"defaultPinnedDeviceMemoryLimit\":\"100Ki\"}}}",
               "parameters.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: below 1Mi");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
               "\"defaultPerDevicePinnedMemoryLimit\":[]}}}",
               "parameters.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: must be a map");
    bad_opaque("{" NV ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
               "\"defaultPerDevicePinnedMemoryLimit\":{\"0\":\"x\"}}}}",
               "parameters.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[0]: not a quantity "
               "of at least 1Mi");
    bad_opaque(
        "{" NV
        ",\"kind\":\"GpuConfig\",\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{\"threads\":1}}}",
        "parameters.sharing.mpsConfig: unknown field \"threads\"");
    bad_opaque("{" NV ",\"kind\":\"VfioDeviceConfig\",\"iommu\":{\"backendPolicy\":\"Fast\"}}",
               "parameters.iommu.backendPolicy: unknown IOMMU backend policy \"Fast\" (LegacyOnly "
               "or PreferIommuFD)");
    bad_opaque("{" NV ",\"kind\":\"VfioDeviceConfig\",\"iommu\":{\"backendPolicy\":\"LegacyOnly\","
               "\"enableAPIDevice\":\"yes\"}}",
               "parameters.iommu.enableAPIDevice: must be true or false");
    bad_opaque("{" NV ",\"kind\":\"VfioDeviceConfig\",\"iommu\":[]}",
               "parameters.iommu: must be an object");
    bad_opaque("{" NV ",\"kind\":\"VfioDeviceConfig\",\"sharing\":{}}",
               "parameters: unknown field \"sharing\"");
}

/* Per-device MPS limits keyed by something the driver does not read as an index (issue 30:
 * such a config cannot move to another device type), and a config's request names as the
 * API's set of at most 32. */
static void config_names(void)
{
    static const char *const idx[] = {"0", "12", "+1", "-0"};
    static const char *const uuid[] = {"GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c",
                                       "MIG-0b6e2a43-5b1c-5d2f-9c7e-2f1f3c0c9a11", "1a", "", "-"};
    char buf[4096];
    gpa_dra_share sh;
    for (size_t i = 0; i < sizeof idx / sizeof *idx + sizeof uuid / sizeof *uuid; i++) {
        bool is_idx = i < sizeof idx / sizeof *idx;
        const char *k = is_idx ? idx[i] : uuid[i - sizeof idx / sizeof *idx];
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"GpuConfig\","
                 "\"sharing\":{\"strategy\":\"MPS\",\"mpsConfig\":{"
                 "\"defaultPerDevicePinnedMemoryLimit\":{\"0\":\"1Gi\",\"%s\":\"2Gi\"}}}}",
                 k);
        CHECK_INT(good_opaque(buf, &sh), GPA_OPAQUE_GPU);
        CHECK_INT(sh, GPA_DRA_SHARE_MPS);
        if (claim.cfg[0].mps_uuid_keys == is_idx) {
            check_total++;
            check_failed++;
            fprintf(stderr, "key \"%s\": mps_uuid_keys %d\n", k, claim.cfg[0].mps_uuid_keys);
        }
    }
    CHECK_INT(good_opaque("{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":"
                          "\"MigDeviceConfig\",\"sharing\":{\"strategy\":\"MPS\"}}",
                          &sh),
              GPA_OPAQUE_MIG);
    CHECK(!claim.cfg[0].mps_uuid_keys);

    /* 32 distinct names read; a 33rd, or one twice, is refused with the limit named */
    char names[1024] = "", reqs[2048] = "";
    size_t at = 0, rt = 0;
    for (int i = 0; i < 32; i++) {
        at += (size_t)snprintf(names + at, sizeof names - at, "%s\"r%d\"", i ? "," : "", i);
        rt += (size_t)snprintf(reqs + rt, sizeof reqs - rt,
                               "%s{\"name\":\"r%d\",\"exactly\":{\"deviceClassName\":\"g\"}}",
                               i ? "," : "", i);
    }
    snprintf(buf, sizeof buf, V1("{\"requests\":[%s],\"config\":[{\"requests\":[%s]}]}"), reqs,
             names);
    CHECK_INT(rd(buf, false, NULL), 0);
    snprintf(buf, sizeof buf, V1("{\"requests\":[%s],\"config\":[{\"requests\":[%s,\"r0\"]}]}"),
             reqs, names);
    bad(buf, "spec.devices.config[0].requests: more than 32 names (the API's limit)");
    bad(V1("{\"requests\":[{\"name\":\"a\",\"firstAvailable\":[{\"name\":\"x\","
           "\"deviceClassName\":\"g\"}]}],\"config\":[{\"requests\":[\"a/x\",\"a\",\"a/x\"]}]}"),
        "spec.devices.config[0].requests[2]: \"a/x\" listed twice");
}

int main(void)
{
    kinds();
    config_names();
    layouts();
    bad_shapes();
    limits();
    opaque();
    return check_done();
}
