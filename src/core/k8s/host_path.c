/*
 * host_path.c - the node paths through which a hostPath volume reaches devices beside a pod's
 * resources, as one data table, and the path canonicalisation that compares a volume's path with
 * them as the node would resolve it (docs/security.md, "Paths to a GPU beside resources").
 *
 * Must never let a spelling reach a protected path the canonical form misses: "//", ".",
 * "..", a trailing slash, a relative path (the kubelet resolves it from /), the /var/run
 * symlink. A lexical check cannot see symlinks a tenant plants on the node through another,
 * writable hostPath: docs/security.md says what covers that (Pod Security Admission).
 */
#include <stdbool.h>
#include <string.h>

#include "k8s/host_path.h"

#define RUNTIME "a container runtime's socket: it starts containers with any device"

static const gpa_host_path_entry table[] = {
    {"/dev", "the node's device nodes: every GPU, and /dev/null, which the NVIDIA toolkit's "
             "volume-mounts mode reads as a device request"},
    {"/proc", "the node's processes: /proc/1/root reaches every path of the node"},
    {"/sys", "the GPUs' PCI resources and driver bindings (/sys/bus/pci)"},
    {"/run/nvidia-container-devices", "the NVIDIA toolkit's device requests by volume mount"},
    {"/run/nvidia", "the GPU operator's driver root and the MPS control daemons' pipes"},
    {"/run/cdi", "CDI specs: they define which device nodes a device name injects"},
    {"/etc/cdi", "CDI specs: they define which device nodes a device name injects"},
    {"/etc/nvidia-container-runtime", "the NVIDIA toolkit's configuration"},
    {"/usr/local/nvidia", "the GPU operator's toolkit and its configuration"},
    {"/run/containerd", RUNTIME},
    {"/run/k3s", RUNTIME},
    {"/var/snap/microk8s/common/run", RUNTIME},
    {"/run/crio", RUNTIME},
    {"/run/docker.sock", RUNTIME},
    {"/run/docker", RUNTIME},
    {"/run/cri-dockerd.sock", RUNTIME},
    {"/run/dockershim.sock", RUNTIME},
    {"/run/podman", RUNTIME},
    {"/var/lib/kubelet/device-plugins",
     "the kubelet's device plugin sockets: a plugin hands device nodes to pods"},
    {"/var/lib/kubelet/plugins", "the kubelet's DRA and CSI driver sockets"},
    {"/var/lib/kubelet/plugins_registry", "the kubelet's plugin registration sockets"},
};

#define N_TABLE (sizeof table / sizeof table[0])

/* The node's own symlinks whose ".." lands elsewhere than the lexical parent: systemd
 * distributions make /var/run -> /run and /var/lock -> /run/lock. */
static size_t resolve_links(char *c, size_t len)
{
    if (len == 8 && memcmp(c, "/var/run", 8) == 0) {
        memcpy(c, "/run", 5);
        return 4;
    }
    if (len == 9 && memcmp(c, "/var/lock", 9) == 0) {
        memcpy(c, "/run/lock", 10);
        return 9;
    }
    return len;
}

/* path as the node resolves it, into c (at least strlen(path) + 2 bytes) */
static void canonical(char *c, const char *path)
{
    size_t len = 0;
    const char *s = path;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s) break;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (len > 0 && c[len - 1] != '/')
                len--;
            if (len > 0) len--; /* and its slash; ".." of / is / */
        } else if (!(n == 1 && s[0] == '.')) {
            c[len++] = '/';
            memcpy(c + len, s, n);
            len += n;
            len = resolve_links(c, len);
        }
        s = e;
    }
    if (len == 0) c[len++] = '/';
    c[len] = '\0';
}

void gpa_host_path_reach(const gpa_host_path_entry **out, char *canon, size_t cap, const char *path)
{
    *out = NULL;
    if (!path) path = "";
    if (cap < 2) return;
    if (strlen(path) + 2 > cap)
        strcpy(canon, "/"); /* longer than any path a node mounts: judged as the root */
    else
        canonical(canon, path);
    size_t cl = strlen(canon);
    for (unsigned i = 0; i < N_TABLE; i++) {
        const char *p = table[i].path;
        size_t pl = strlen(p);
        /* the path itself or below it */
        bool under =
            cl >= pl && memcmp(canon, p, pl) == 0 && (canon[pl] == '\0' || canon[pl] == '/');
        /* an ancestor: mounting it mounts the protected path too ("/" is everyone's) */
        bool above = cl < pl && (cl == 1 || (memcmp(p, canon, cl) == 0 && p[cl] == '/'));
        if (under || above) {
            *out = &table[i];
            return;
        }
    }
}

const gpa_host_path_entry *gpa_host_path_table(unsigned *n)
{
    *n = (unsigned)N_TABLE;
    return table;
}
