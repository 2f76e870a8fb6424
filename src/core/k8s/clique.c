/*
 * clique.c - the nvidia.com/gpu.clique value GPU feature discovery writes (clique.h): its
 * grammar, and values of that form for simulated nodes.
 *
 * GFD joins the fabric's cluster UUID (uuid.String(): canonical, lower case) and the clique id
 * (fmt "%d" of a uint32) with '.' (NVIDIA/k8s-device-plugin internal/lm/imex.go,
 * internal/resource/nvml-device.go GetFabricIDs, commit 1b826acc).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpu_admission/clique.h"

static bool hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

const char *gpa_clique_invalid(const char *v)
{
    static const int groups[] = {8, 4, 4, 4, 12};
    const char *c = v;
    for (int g = 0; g < 5; g++) {
        for (int i = 0; i < groups[g]; i++, c++)
            if (!hex(*c))
                return *c >= 'A' && *c <= 'F' ? "the cluster UUID is written in lower case"
                                              : "it does not start with a cluster UUID "
                                                "(8-4-4-4-12 hex digits)";
        if (g < 4 && *c++ != '-')
            return "it does not start with a cluster UUID (8-4-4-4-12 hex digits)";
    }
    if (*c++ != '.') return "the cluster UUID is not followed by '.' and the clique id";
    if (!*c) return "the clique id after '.' is empty";
    uint64_t id = 0;
    for (const char *d = c; *d; d++) {
        if (*d < '0' || *d > '9') return "the clique id after '.' is not a decimal number";
        id = id * 10 + (uint64_t)(*d - '0');
        if (id > UINT32_MAX) return "the clique id is larger than 4294967295";
    }
    if (c[0] == '0' && c[1]) return "the clique id has a leading zero, which GFD never prints";
    return NULL;
}

void gpa_clique_format(char *buf, size_t cap, const char *seed, unsigned long id)
{
    uint64_t h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
    for (const unsigned char *s = (const unsigned char *)seed; *s; s++) {
        h[0] = (h[0] ^ *s) * 0x100000001b3ULL;
        h[1] = (h[1] ^ *s) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
    }
    /* version 4, variant 10xx: the shape of the UUIDs the fabric manager reports */
    h[0] = (h[0] & ~0xf000ULL) | 0x4000ULL;
    h[1] = (h[1] & ~(0xc000ULL << 48)) | (0x8000ULL << 48);
    snprintf(buf, cap, "%08llx-%04llx-%04llx-%04llx-%012llx.%lu", (unsigned long long)(h[0] >> 32),
             (unsigned long long)((h[0] >> 16) & 0xffff), (unsigned long long)(h[0] & 0xffff),
             (unsigned long long)(h[1] >> 48), (unsigned long long)(h[1] & 0xffffffffffffULL), id);
}
