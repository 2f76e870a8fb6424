/*
 * test_isolation.c - POLICY.md "Isolation by default", the parts of issue 33 about paths to a
 * device beside a pod's resources and about schedulers:
 *  - spec.isolation.schedulers: loaded strictly (unknown keys, bad names, duplicates, at most
 *    once across files, each error at file:line:col), the revision kept by a set without it (or
 *    with an empty list) and changed by a listed name, order of names not meaning, describe
 *    and lint lines;
 *  - hostPath canonicalisation (k8s/host_path.c): every spelling of a protected path reaches
 *    it, neighbours with a shared prefix do not, ancestors do;
 *  - the toolkit's env names (k8s/toolkit_env.c): which values grant devices, $(VAR) and
 *    valueFrom as unknown, which envFrom prefixes can define a granting name.
 * Must never pass if a spelling trick reaches a protected path unseen, or if a set without the
 * new field changes revision.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/policy.h"
#include "k8s/host_path.h"
#include "k8s/toolkit_env.h"
#include "policy/policy_isolation.h"
#include "policy/policy_model.h"

#define HDR     "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n" /* lines 1-3 */
#define TS_POOL "  pools:\n  - name: ts\n    nodeSelector: {a: \"1\"}\n    sharing: time-slicing\n"

static int load_n(gpa_policy **p, const gpa_policy_source *s, size_t n, gpa_error *e)
{
    *p = NULL;
    memset(e, 0, sizeof *e);
    return gpa_policy_load_sources(p, s, n, e);
}

static gpa_policy *load1(const char *yaml, gpa_error *e)
{
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    gpa_policy *p;
    load_n(&p, &s, 1, e);
    return p;
}

/* the set refused with exactly this message */
static void refused(int line, const char *yaml, const char *want)
{
    gpa_error e;
    gpa_policy *p = load1(yaml, &e);
    check_total++;
    if (p || strcmp(e.message, want) != 0) {
        check_failed++;
        fprintf(stderr, "%s:%d: want refusal\n  %s\ngot %s\n  %s\n", __FILE__, line, want,
                p ? "a policy" : "", e.message);
    }
    gpa_policy_unref(p);
}
#define REFUSED(yaml, want) refused(__LINE__, yaml, want)

static char *revision(const char *yaml)
{
    gpa_error e;
    gpa_policy *p = load1(yaml, &e);
    if (!p) {
        fprintf(stderr, "does not load: %s\n", e.message);
        return strdup("(refused)");
    }
    char *r = strdup(gpa_policy_revision(p));
    gpa_policy_unref(p);
    return r;
}

static void test_loader(void)
{
    gpa_error e;
    gpa_policy *p =
        load1(HDR TS_POOL "  isolation:\n    schedulers: [my-scheduler, volcano]\n", &e);
    CHECK(p != NULL);
    if (p) {
        CHECK(p->isolation.set);
        CHECK_INT(p->isolation.schedulers.n, 2);
        CHECK(gpa_isolation_scheduler_ok(p, NULL));
        CHECK(gpa_isolation_scheduler_ok(p, ""));
        CHECK(gpa_isolation_scheduler_ok(p, "default-scheduler"));
        CHECK(gpa_isolation_scheduler_ok(p, "my-scheduler"));
        CHECK(gpa_isolation_scheduler_ok(p, "volcano"));
        CHECK(!gpa_isolation_scheduler_ok(p, "my-scheduler2"));
        CHECK(!gpa_isolation_scheduler_ok(p, "My-Scheduler"));
        char *d = gpa_policy_describe(p);
        CHECK_CONTAINS(d, "isolation:   pods on shared pools may use schedulers "
                          "default-scheduler, my-scheduler, volcano  (p.yaml:8)\n");
        free(d);
        char *w = gpa_policy_warnings(p);
        CHECK(!w || !strstr(w, "isolation"));
        free(w);
    }
    gpa_policy_unref(p);

    /* without the block only the default scheduler; describe says nothing */
    p = load1(HDR TS_POOL, &e);
    CHECK(p != NULL);
    if (p) {
        CHECK(!p->isolation.set);
        CHECK(gpa_isolation_scheduler_ok(p, "default-scheduler"));
        CHECK(!gpa_isolation_scheduler_ok(p, "my-scheduler"));
        char *d = gpa_policy_describe(p);
        CHECK(d && !strstr(d, "isolation:"));
        free(d);
    }
    gpa_policy_unref(p);

    /* empty block, null list, empty list: allowed, nothing listed */
    const char *empties[] = {HDR "  isolation: {}\n", HDR "  isolation:\n",
                             HDR "  isolation: {schedulers: []}\n",
                             HDR "  isolation: {schedulers: null}\n"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        p = load1(empties[i], &e);
        CHECK(p != NULL);
        if (p) CHECK_INT(p->isolation.schedulers.n, 0);
        gpa_policy_unref(p);
    }

    REFUSED(HDR "  isolation: {schedulers: [a], colour: red}\n",
            "p.yaml:4:32: isolation: unknown key \"colour\" (allowed: schedulers)");
    REFUSED(HDR "  isolation: {schedulers: [My_Scheduler]}\n",
            "p.yaml:4:28: scheduler name \"My_Scheduler\" may contain only lowercase letters, "
            "digits, '-' and '.'");
    REFUSED(HDR "  isolation: {schedulers: [a, b, a]}\n",
            "p.yaml:4:34: scheduler name \"a\" is listed twice");
    REFUSED(HDR "  isolation: {schedulers: volcano}\n",
            "p.yaml:4:27: isolation.schedulers: expected a list, got a string");
    REFUSED(HDR "  isolation: [volcano]\n",
            "p.yaml:4:14: isolation: expected a mapping, got a list");
    REFUSED(HDR "  isolation: {}\n  isolation: {}\n",
            "p.yaml:5:3: duplicate key \"isolation\" (first at 4:3)");

    /* at most once across files: the second file's key, pointing at the first */
    const char *a = HDR TS_POOL "  isolation: {schedulers: [volcano]}\n";
    const char *b = HDR "  isolation:\n    schedulers: [kai]\n";
    gpa_policy_source s[] = {{"dir/b.yaml", b, strlen(b)}, {"dir/a.yaml", a, strlen(a)}};
    CHECK_INT(load_n(&p, s, 2, &e), GPA_EPOLICY);
    CHECK(p == NULL);
    CHECK_STR(e.message, "dir/b.yaml:4:3: isolation is already defined at dir/a.yaml:8:3 (at "
                         "most one isolation block across all files)");
}

static void test_revision(void)
{
    char *none = revision(HDR TS_POOL);
    char *empty = revision(HDR TS_POOL "  isolation: {}\n");
    char *empty_list = revision(HDR TS_POOL "  isolation: {schedulers: []}\n");
    char *one = revision(HDR TS_POOL "  isolation: {schedulers: [volcano]}\n");
    char *two = revision(HDR TS_POOL "  isolation: {schedulers: [volcano, kai]}\n");
    char *two_rev =
        revision(HDR TS_POOL "  isolation:\n    schedulers:\n    - kai\n    - volcano\n");
    char *other = revision(HDR TS_POOL "  isolation: {schedulers: [kai]}\n");
    CHECK_STR(empty, none); /* the block alone means nothing new */
    CHECK_STR(empty_list, none);
    CHECK(strcmp(one, none) != 0); /* a listed scheduler changes what is admitted */
    CHECK(strcmp(two, one) != 0);
    CHECK_STR(two_rev, two); /* a set of names: order is not meaning */
    CHECK(strcmp(other, one) != 0);
    free(none), free(empty), free(empty_list), free(one), free(two), free(two_rev), free(other);

    /* the shipped set (no isolation block) keeps the revision docs/policy.md printed before
     * the field existed */
    gpa_policy *p = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_policy_load_dir(&p, GPA_SOURCE_DIR "/policies", &e), GPA_OK);
    FILE *f = fopen(GPA_SOURCE_DIR "/docs/policy.md", "r");
    char line[256], want[80] = "";
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "revision: ", 10) == 0 && strlen(line) >= 74) {
            memcpy(want, line + 10, 64);
            want[64] = '\0';
        }
    if (f) fclose(f);
    CHECK_STR(p ? gpa_policy_revision(p) : NULL, want);
    gpa_policy_unref(p);
}

static void test_lint(void)
{
    gpa_error e;
    /* no shared pool: the list changes nothing */
    gpa_policy *p = load1(HDR "  pools: [{name: x}]\n  isolation: {schedulers: [volcano]}\n", &e);
    CHECK(p != NULL);
    char *w = p ? gpa_policy_warnings(p) : NULL;
    CHECK_CONTAINS(w, "p.yaml:5:3: warning: isolation.schedulers changes nothing: no pool is "
                      "time-slicing or mps\n");
    free(w);
    gpa_policy_unref(p);
    /* the default scheduler listed: always allowed */
    p = load1(HDR TS_POOL "  isolation:\n    schedulers: [volcano, default-scheduler]\n", &e);
    w = p ? gpa_policy_warnings(p) : NULL;
    CHECK_CONTAINS(w, "p.yaml:9:27: warning: isolation.schedulers lists default-scheduler, which "
                      "is always allowed\n");
    CHECK(!strstr(w ? w : "", "changes nothing"));
    free(w);
    gpa_policy_unref(p);
}

/* canonical form and the protected path reached ("-" when none) */
static void reach(int line, const char *path, const char *canon_want, const char *hit_want)
{
    char canon[64];
    const gpa_host_path_entry *hit;
    gpa_host_path_reach(&hit, canon, sizeof canon, path);
    const char *got = hit ? hit->path : "-";
    check_total++;
    if (strcmp(canon, canon_want) != 0 || strcmp(got, hit_want) != 0) {
        check_failed++;
        fprintf(stderr, "%s:%d: %s -> %s reaching %s, want %s reaching %s\n", __FILE__, line,
                path ? path : "(null)", canon, got, canon_want, hit_want);
    }
}
#define REACH(p, c, h) reach(__LINE__, p, c, h)

static void test_host_paths(void)
{
    REACH("/dev/nvidia0", "/dev/nvidia0", "/dev");
    REACH("/dev", "/dev", "/dev");
    REACH("/dev/", "/dev", "/dev");
    REACH("//dev//nvidia0//", "/dev/nvidia0", "/dev");
    REACH("/./dev/./null", "/dev/null", "/dev");
    REACH("/tmp/../dev/null", "/dev/null", "/dev");
    REACH("/../../dev", "/dev", "/dev");          /* .. of / is / */
    REACH("dev/nvidia0", "/dev/nvidia0", "/dev"); /* relative: from / */
    REACH("", "/", "/dev");                       /* nothing: the root */
    REACH(NULL, "/", "/dev");
    REACH("/", "/", "/dev");
    REACH("///", "/", "/dev");
    REACH("/var/run/../dev", "/dev", "/dev"); /* /var/run -> /run, its .. is / */
    REACH("/var/lock/../nvidia", "/run/nvidia", "/run/nvidia");
    REACH("/var/run/nvidia-container-devices/all", "/run/nvidia-container-devices/all",
          "/run/nvidia-container-devices");
    REACH("/run/nvidia/mps", "/run/nvidia/mps", "/run/nvidia");
    REACH("/var/run/containerd/containerd.sock", "/run/containerd/containerd.sock",
          "/run/containerd");
    REACH("/run/k3s/containerd/containerd.sock", "/run/k3s/containerd/containerd.sock", "/run/k3s");
    REACH("/var/run/crio/crio.sock", "/run/crio/crio.sock", "/run/crio");
    REACH("/var/run/docker.sock", "/run/docker.sock", "/run/docker.sock");
    REACH("/var/run/cri-dockerd.sock", "/run/cri-dockerd.sock", "/run/cri-dockerd.sock");
    REACH("/var/run", "/run", "/run/nvidia-container-devices"); /* an ancestor */
    REACH("/run/", "/run", "/run/nvidia-container-devices");
    REACH("/var", "/var", "/var/snap/microk8s/common/run");
    REACH("/var/lib/kubelet", "/var/lib/kubelet", "/var/lib/kubelet/device-plugins");
    REACH("/var/lib/kubelet/device-plugins/kubelet.sock",
          "/var/lib/kubelet/device-plugins/kubelet.sock", "/var/lib/kubelet/device-plugins");
    REACH("/proc", "/proc", "/proc");
    REACH("/sys/bus/pci", "/sys/bus/pci", "/sys");
    REACH("/etc/cdi/nvidia.yaml", "/etc/cdi/nvidia.yaml", "/etc/cdi");
    /* neighbours sharing a prefix reach nothing */
    REACH("/devices", "/devices", "-");
    REACH("/run/nvidia-persistenced", "/run/nvidia-persistenced", "-");
    REACH("/run/dockerd.pid", "/run/dockerd.pid", "-");
    REACH("/var/run/secrets", "/run/secrets", "-");
    REACH("/var/lib/kubelet/pods", "/var/lib/kubelet/pods", "-");
    REACH("/data/datasets/", "/data/datasets", "-");
    REACH("/var/log", "/var/log", "-");
    REACH("/tmp/dev", "/tmp/dev", "-");
    REACH("/var/runner/../dev", "/var/dev", "-"); /* not the symlink: a real /var/runner */
    /* longer than any mountable path: judged as the root */
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    REACH(longp, "/", "/dev");
    unsigned n;
    const gpa_host_path_entry *t = gpa_host_path_table(&n);
    CHECK(n >= 15);
    for (unsigned i = 0; i < n; i++) {
        CHECK(t[i].path[0] == '/' && strncmp(t[i].path, "/var/run", 8) != 0); /* canonical */
        CHECK(t[i].what && *t[i].what);
    }
}

static bool grants(const char *name, const char *value, bool from)
{
    const gpa_toolkit_env *t = gpa_toolkit_env_find(name);
    if (!t) {
        fprintf(stderr, "%s is not in the table\n", name);
        check_failed++;
        return false;
    }
    return gpa_toolkit_env_grants(t, value, from);
}

static void test_toolkit_env(void)
{
    /* names: exact, case-sensitive */
    CHECK(gpa_toolkit_env_find("NVIDIA_VISIBLE_DEVICES") != NULL);
    CHECK(gpa_toolkit_env_find("nvidia_visible_devices") == NULL);
    CHECK(gpa_toolkit_env_find("NVIDIA_VISIBLE_DEVICES_") == NULL);
    CHECK(gpa_toolkit_env_find("NVIDIA_DRIVER_CAPABILITIES") == NULL); /* harmless */
    CHECK(gpa_toolkit_env_find("NVIDIA_REQUIRE_ARCH") == NULL);        /* a constraint */
    CHECK(gpa_toolkit_env_find("NVIDIA_DISABLE_REQUIRE") == NULL);
    CHECK(gpa_toolkit_env_find("CUDA_VISIBLE_DEVICES") == NULL); /* CUDA's, not the toolkit's */
    CHECK(gpa_toolkit_env_find("NCCL_DEBUG") == NULL);
    CHECK(gpa_toolkit_env_find("") == NULL);
    CHECK(gpa_toolkit_env_find(NULL) == NULL);
    const char *every[] = {"NVIDIA_VISIBLE_DEVICES",
                           "NVIDIA_MIG_CONFIG_DEVICES",
                           "NVIDIA_MIG_MONITOR_DEVICES",
                           "NVIDIA_IMEX_CHANNELS",
                           "DOCKER_RESOURCE_GPU",
                           "CUDA_VERSION",
                           "NVIDIA_REQUIRE_CUDA",
                           "NVIDIA_REQUIRE_JETPACK",
                           "NVIDIA_GDS",
                           "NVIDIA_MOFED",
                           "NVIDIA_GDRCOPY",
                           "NVIDIA_NVSWITCH"};
    unsigned n;
    gpa_toolkit_env_table(&n);
    CHECK_INT(n, sizeof every / sizeof *every);
    for (size_t i = 0; i < sizeof every / sizeof *every; i++) {
        const gpa_toolkit_env *t = gpa_toolkit_env_find(every[i]);
        CHECK(t != NULL);
        if (!t) continue;
        /* every name: a reference or a $(VAR) expansion is unknown, hence granting */
        CHECK(gpa_toolkit_env_grants(t, NULL, true));
        CHECK(gpa_toolkit_env_grants(t, "$(X)", false));
        CHECK(gpa_toolkit_env_grants(t, "a$(X)b", false));
    }
    /* device lists: only void and none hide everything */
    CHECK(grants("NVIDIA_VISIBLE_DEVICES", "all", false));
    CHECK(grants("NVIDIA_VISIBLE_DEVICES", "0,1", false));
    CHECK(grants("NVIDIA_VISIBLE_DEVICES", "", false));
    CHECK(grants("NVIDIA_VISIBLE_DEVICES", NULL, false));
    CHECK(grants("NVIDIA_VISIBLE_DEVICES", "void,0", false));
    CHECK(!grants("NVIDIA_VISIBLE_DEVICES", "void", false));
    CHECK(!grants("NVIDIA_VISIBLE_DEVICES", "none", false));
    CHECK(grants("NVIDIA_IMEX_CHANNELS", "0", false));
    CHECK(!grants("NVIDIA_IMEX_CHANNELS", "void", false));
    CHECK(grants("DOCKER_RESOURCE_GPU", "GPU-1", false));
    /* any value */
    CHECK(grants("NVIDIA_MIG_CONFIG_DEVICES", "void", false));
    CHECK(grants("NVIDIA_MIG_MONITOR_DEVICES", "", false));
    CHECK(grants("CUDA_VERSION", "12.4.0", false));
    CHECK(grants("NVIDIA_REQUIRE_JETPACK", "csv-mounts=all", false));
    /* gated modes: enabled only */
    CHECK(grants("NVIDIA_GDS", "enabled", false));
    CHECK(!grants("NVIDIA_GDS", "disabled", false));
    CHECK(!grants("NVIDIA_MOFED", "", false));
    CHECK(grants("NVIDIA_MOFED", "enabled", false));
    CHECK(grants("NVIDIA_GDRCOPY", "enabled", false));
    CHECK(grants("NVIDIA_NVSWITCH", "enabled", false));
    CHECK(!grants("NVIDIA_NVSWITCH", "Enabled", false));
    /* NVIDIA_REQUIRE_CUDA: empty (or absent value) makes a legacy image */
    CHECK(grants("NVIDIA_REQUIRE_CUDA", "", false));
    CHECK(grants("NVIDIA_REQUIRE_CUDA", NULL, false));
    CHECK(!grants("NVIDIA_REQUIRE_CUDA", "cuda>=12.0", false));

    /* envFrom prefixes */
    CHECK_STR(gpa_toolkit_env_prefix_reaches(NULL), "NVIDIA_VISIBLE_DEVICES");
    CHECK_STR(gpa_toolkit_env_prefix_reaches(""), "NVIDIA_VISIBLE_DEVICES");
    CHECK_STR(gpa_toolkit_env_prefix_reaches("N"), "NVIDIA_VISIBLE_DEVICES");
    CHECK_STR(gpa_toolkit_env_prefix_reaches("NVIDIA_"), "NVIDIA_VISIBLE_DEVICES");
    CHECK_STR(gpa_toolkit_env_prefix_reaches("NVIDIA_G"), "NVIDIA_GDS");
    CHECK_STR(gpa_toolkit_env_prefix_reaches("CUDA_"), "CUDA_VERSION");
    CHECK_STR(gpa_toolkit_env_prefix_reaches("DOCKER_"), "DOCKER_RESOURCE_GPU");
    CHECK_STR(gpa_toolkit_env_prefix_reaches("NVIDIA_GDS"), "NVIDIA_GDS");
    CHECK(gpa_toolkit_env_prefix_reaches("APP_") == NULL);
    CHECK(gpa_toolkit_env_prefix_reaches("NVIDIA_DRIVER_") == NULL);
    CHECK(gpa_toolkit_env_prefix_reaches("NVIDIA_GDSX") == NULL);
    CHECK(gpa_toolkit_env_prefix_reaches("n") == NULL);
}

int main(void)
{
    test_loader();
    test_revision();
    test_lint();
    test_host_paths();
    test_toolkit_env();
    return check_done();
}
