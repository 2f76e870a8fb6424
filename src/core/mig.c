/*
 * mig.c - the built-in MIG catalog: GPU model -> MIG profiles it can be partitioned into.
 *
 * Source: NVIDIA Multi-Instance GPU User Guide, section "Supported MIG Profiles"
 * (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/), as transcribed into the table of
 * /work/shared/design/POLICY.md ("The built-in MIG catalog"). Keep THIS table the only copy:
 * the loader, the engine and `gpu-admission check` all read it through mig.h.
 * Aliases share a profile list: H100-80GB uses the A100-80GB profiles, GH200 the H100-96GB.
 * mem_bytes is the profile name's GB x 10^9 (POLICY.md: compare in bytes); the mixed-strategy
 * resource is nvidia.com/mig-<profile> with '+' written '.'. Read-only data, no state.
 */
#include <string.h>

#include "gpu_admission/mig.h"

#define GB 1000000000LL
#define P(name, slices, gb, max, res)                                                              \
    {                                                                                              \
        name, slices, (gb)*GB, max, "nvidia.com/mig-" res                                          \
    }

static const gpa_mig_profile a100_40[] = {
    P("1g.5gb", 1, 5, 7, "1g.5gb"),    P("1g.5gb+me", 1, 5, 1, "1g.5gb.me"),
    P("1g.10gb", 1, 10, 4, "1g.10gb"), P("2g.10gb", 2, 10, 3, "2g.10gb"),
    P("3g.20gb", 3, 20, 2, "3g.20gb"), P("4g.20gb", 4, 20, 1, "4g.20gb"),
    P("7g.40gb", 7, 40, 1, "7g.40gb"),
};
static const gpa_mig_profile a100_80[] = {
    P("1g.10gb", 1, 10, 7, "1g.10gb"), P("1g.10gb+me", 1, 10, 1, "1g.10gb.me"),
    P("1g.20gb", 1, 20, 4, "1g.20gb"), P("2g.20gb", 2, 20, 3, "2g.20gb"),
    P("3g.40gb", 3, 40, 2, "3g.40gb"), P("4g.40gb", 4, 40, 1, "4g.40gb"),
    P("7g.80gb", 7, 80, 1, "7g.80gb"),
};
static const gpa_mig_profile a30_24[] = {
    P("1g.6gb", 1, 6, 4, "1g.6gb"),    P("1g.6gb+me", 1, 6, 1, "1g.6gb.me"),
    P("2g.12gb", 2, 12, 2, "2g.12gb"), P("2g.12gb+me", 2, 12, 1, "2g.12gb.me"),
    P("4g.24gb", 4, 24, 1, "4g.24gb"),
};
static const gpa_mig_profile h100_94[] = {
    P("1g.12gb", 1, 12, 7, "1g.12gb"), P("1g.12gb+me", 1, 12, 1, "1g.12gb.me"),
    P("1g.24gb", 1, 24, 4, "1g.24gb"), P("2g.24gb", 2, 24, 3, "2g.24gb"),
    P("3g.47gb", 3, 47, 2, "3g.47gb"), P("4g.47gb", 4, 47, 1, "4g.47gb"),
    P("7g.94gb", 7, 94, 1, "7g.94gb"),
};
static const gpa_mig_profile h100_96[] = {
    P("1g.12gb", 1, 12, 7, "1g.12gb"), P("1g.24gb", 1, 24, 4, "1g.24gb"),
    P("2g.24gb", 2, 24, 3, "2g.24gb"), P("3g.48gb", 3, 48, 2, "3g.48gb"),
    P("4g.48gb", 4, 48, 1, "4g.48gb"), P("7g.96gb", 7, 96, 1, "7g.96gb"),
};
static const gpa_mig_profile h200_141[] = {
    P("1g.18gb", 1, 18, 7, "1g.18gb"),    P("1g.18gb+me", 1, 18, 1, "1g.18gb.me"),
    P("1g.35gb", 1, 35, 4, "1g.35gb"),    P("2g.35gb", 2, 35, 3, "2g.35gb"),
    P("3g.71gb", 3, 71, 2, "3g.71gb"),    P("4g.71gb", 4, 71, 1, "4g.71gb"),
    P("7g.141gb", 7, 141, 1, "7g.141gb"),
};
static const gpa_mig_profile b200[] = {
    P("1g.23gb", 1, 23, 7, "1g.23gb"),    P("1g.23gb+me", 1, 23, 1, "1g.23gb.me"),
    P("1g.45gb", 1, 45, 4, "1g.45gb"),    P("2g.45gb", 2, 45, 3, "2g.45gb"),
    P("3g.90gb", 3, 90, 2, "3g.90gb"),    P("4g.90gb", 4, 90, 1, "4g.90gb"),
    P("7g.180gb", 7, 180, 1, "7g.180gb"),
};

#define M(name, arr)                                                                               \
    {                                                                                              \
        name, sizeof arr / sizeof arr[0], arr                                                      \
    }
static const gpa_mig_model catalog[] = {
    M("A100-40GB", a100_40), M("A100-80GB", a100_80),   M("H100-80GB", a100_80),
    M("A30-24GB", a30_24),   M("H100-94GB", h100_94),   M("H100-96GB", h100_96),
    M("GH200", h100_96),     M("H200-141GB", h200_141), M("B200", b200),
};

const gpa_mig_model *gpa_mig_model_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof catalog / sizeof catalog[0]; i++)
        if (strcmp(catalog[i].name, name) == 0) return &catalog[i];
    return NULL;
}

const gpa_mig_profile *gpa_mig_profile_find(const gpa_mig_model *m, const char *profile)
{
    if (!m || !profile) return NULL;
    for (size_t i = 0; i < m->n_profiles; i++)
        if (strcmp(m->profiles[i].name, profile) == 0) return &m->profiles[i];
    return NULL;
}

const char *gpa_mig_model_name_at(size_t i)
{
    return i < sizeof catalog / sizeof catalog[0] ? catalog[i].name : NULL;
}
