/*
 * mig.c - the built-in MIG catalog: GPU model -> MIG profiles it can be partitioned into.
 *
 * Source: NVIDIA Multi-Instance GPU User Guide, section "Supported MIG Profiles"
 * (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/), as transcribed into the table of
 * /work/shared/design/POLICY.md ("The built-in MIG catalog"). Keep THIS table the only copy:
 * the loader, the engine and `gpu-admission check` all read it through mig.h.
 * Aliases share a profile list: H100-80GB, A800-80GB and H800-80GB use the A100-80GB profiles,
 * GH200 and H20 the H100-96GB. Models NVIDIA added since POLICY.md's table (GB200, H20,
 * GH200-144GB, RTX PRO 6000/5000/4500 Blackwell, the A800/H800 twins) come from the same guide's
 * "Supported GPUs" and mig-parted's deployments/systemd/config-default.yaml.
 * name_bytes is the profile name's GB x 10^9 (POLICY.md: compare in bytes); real_bytes what a
 * public `nvidia-smi mig -lgip` listing shows (named per row, 0 when none was found); mem_bytes,
 * what `auto` sizes by, the smaller of the two. The mixed-strategy resource is
 * nvidia.com/mig-<profile> with '+' written '.'. Read-only data, no state.
 *
 * Geometry (the simulator's placement rules): a GPU has 8 memory slices and 7 compute slices
 * (A30: 4 and 4); each profile occupies `size` consecutive memory slices starting at one of its
 * allowed slices. Source: the same guide, "A100 Profile Placements" / "H100 MIG Profiles"
 * placement figures and the `nvidia-smi mig -lgipp` listing of "Creating GPU Instances"
 * (A100-40GB: 1g.5gb {0,1,2,3,4,5,6}:1, 1g.10gb {0,2,4,6}:2, 2g.10gb {0,2,4}:2,
 * 3g.20gb {0,4}:4, 4g.20gb {0}:4, 7g.40gb {0}:8; A30: 1g.6gb {0,1,2,3}:1, 2g.12gb {0,2}:2,
 * 4g.24gb {0}:4). Every 7-slice model shares the A100 shape under its own names: so 4g+3g
 * fits (0-3, 4-7) and 3g+3g+1g does not. The "+me" variants place like their plain profile.
 */
#include <string.h>

#include "gpu_admission/mig.h"

#define GB  1000000000LL
#define GIB 1073741824LL
/* start masks: bit s = may start at memory slice s */
#define S_1G     0x7fu /* {0..6} size 1 */
#define S_1G2    0x55u /* {0,2,4,6} size 2: the 1g profiles with twice the memory */
#define S_2G     0x15u /* {0,2,4} size 2 */
#define S_3G     0x11u /* {0,4} size 4 */
#define S_0      0x01u /* {0}: 4g (size 4) and 7g (size 8) */
#define S_A30_1G 0x0fu /* {0,1,2,3} size 1 */
#define S_A30_2G 0x05u /* {0,2} size 2 */
/* A profile whose real memory no public listing gives: it holds its name's GB. */
#define P(name, slices, gb, max, res, size, starts)                                                \
    {                                                                                              \
        name, slices, (gb)*GB, max, "nvidia.com/mig-" res, size, starts, (gb)*GB, 0, NULL          \
    }
/* A profile with the memory `nvidia-smi mig -lgip` lists, in hundredths of a GiB as printed
 * (16.00 -> 1600), floored to bytes. auto sizes by the smaller of the two: a slice whose real
 * memory is below its name must not be handed a pod that asked for the name's size. */
#define PR(name, slices, gb, max, res, size, starts, gib100, src)                                  \
    {                                                                                              \
        name, slices, (gb)*GB < (gib100)*GIB / 100 ? (gb)*GB : (gib100)*GIB / 100, max,            \
            "nvidia.com/mig-" res, size, starts, (gb)*GB, (gib100)*GIB / 100, src                  \
    }

/* The public `nvidia-smi mig -lgip` listings the real memory comes from. */
static const char L_H200[] = "nvidia-smi mig -lgip on an H200, NVIDIA/mig-parted issue #120";
static const char L_H100NVL[] =
    "nvidia-smi mig -lgip on an H100 NVL, NVIDIA/gpu-operator pull request #903";
static const char L_H100NVL_3G[] =
    "nvidia-smi mig -lgip on an H100 NVL as quoted in NVIDIA/mig-parted "
    "pull request #101 (10.75 + 10.75 + 21.62 + 46.38 GiB)";
static const char L_GH200_144[] =
    "nvidia-smi mig -lgip on a GH200 144G HBM3e, NVIDIA/mig-parted pull request #139";
static const char L_B200[] =
    "nvidia-smi mig -lgip on a B200, NVIDIA/mig-parted pull request #187 (pull request #166, "
    "an earlier driver, listed 22.00 GiB for 1g.23gb: the smaller figure is kept)";
static const char L_GB200[] =
    "nvidia-smi mig -lgip on a production GB200, NVIDIA/mig-parted issue #227";
static const char L_RTX6000[] = "nvidia-smi mig -lgip on an RTX PRO 6000 Blackwell Server "
                                "Edition, bigstack-oss/cubecos issue #312";

static const gpa_mig_profile a100_40[] = {
    P("1g.5gb", 1, 5, 7, "1g.5gb", 1, S_1G),     P("1g.5gb+me", 1, 5, 1, "1g.5gb.me", 1, S_1G),
    P("1g.10gb", 1, 10, 4, "1g.10gb", 2, S_1G2), P("2g.10gb", 2, 10, 3, "2g.10gb", 2, S_2G),
    P("3g.20gb", 3, 20, 2, "3g.20gb", 4, S_3G),  P("4g.20gb", 4, 20, 1, "4g.20gb", 4, S_0),
    P("7g.40gb", 7, 40, 1, "7g.40gb", 8, S_0),
};
static const gpa_mig_profile a100_80[] = {
    P("1g.10gb", 1, 10, 7, "1g.10gb", 1, S_1G),  P("1g.10gb+me", 1, 10, 1, "1g.10gb.me", 1, S_1G),
    P("1g.20gb", 1, 20, 4, "1g.20gb", 2, S_1G2), P("2g.20gb", 2, 20, 3, "2g.20gb", 2, S_2G),
    P("3g.40gb", 3, 40, 2, "3g.40gb", 4, S_3G),  P("4g.40gb", 4, 40, 1, "4g.40gb", 4, S_0),
    P("7g.80gb", 7, 80, 1, "7g.80gb", 8, S_0),
};
static const gpa_mig_profile a30_24[] = {
    P("1g.6gb", 1, 6, 4, "1g.6gb", 1, S_A30_1G),
    P("1g.6gb+me", 1, 6, 1, "1g.6gb.me", 1, S_A30_1G),
    P("2g.12gb", 2, 12, 2, "2g.12gb", 2, S_A30_2G),
    P("2g.12gb+me", 2, 12, 1, "2g.12gb.me", 2, S_A30_2G),
    P("4g.24gb", 4, 24, 1, "4g.24gb", 4, S_0),
};
static const gpa_mig_profile h100_94[] = {
    PR("1g.12gb", 1, 12, 7, "1g.12gb", 1, S_1G, 1075, L_H100NVL),
    PR("1g.12gb+me", 1, 12, 1, "1g.12gb.me", 1, S_1G, 1075, L_H100NVL),
    PR("1g.24gb", 1, 24, 4, "1g.24gb", 2, S_1G2, 2162, L_H100NVL),
    PR("2g.24gb", 2, 24, 3, "2g.24gb", 2, S_2G, 2162, L_H100NVL),
    PR("3g.47gb", 3, 47, 2, "3g.47gb", 4, S_3G, 4638, L_H100NVL_3G),
    P("4g.47gb", 4, 47, 1, "4g.47gb", 4, S_0),
    P("7g.94gb", 7, 94, 1, "7g.94gb", 8, S_0),
};
/* 1g.12gb+me is not in POLICY.md's row but mig-parted's all-1g.12gb.me names GH200 (added,
 * never renamed: the contract's other rows are unchanged). */
static const gpa_mig_profile h100_96[] = {
    P("1g.12gb", 1, 12, 7, "1g.12gb", 1, S_1G),  P("1g.12gb+me", 1, 12, 1, "1g.12gb.me", 1, S_1G),
    P("1g.24gb", 1, 24, 4, "1g.24gb", 2, S_1G2), P("2g.24gb", 2, 24, 3, "2g.24gb", 2, S_2G),
    P("3g.48gb", 3, 48, 2, "3g.48gb", 4, S_3G),  P("4g.48gb", 4, 48, 1, "4g.48gb", 4, S_0),
    P("7g.96gb", 7, 96, 1, "7g.96gb", 8, S_0),
};
static const gpa_mig_profile h200_141[] = {
    PR("1g.18gb", 1, 18, 7, "1g.18gb", 1, S_1G, 1600, L_H200),
    PR("1g.18gb+me", 1, 18, 1, "1g.18gb.me", 1, S_1G, 1600, L_H200),
    PR("1g.35gb", 1, 35, 4, "1g.35gb", 2, S_1G2, 3225, L_H200),
    PR("2g.35gb", 2, 35, 3, "2g.35gb", 2, S_2G, 3225, L_H200),
    PR("3g.71gb", 3, 71, 2, "3g.71gb", 4, S_3G, 6950, L_H200),
    PR("4g.71gb", 4, 71, 1, "4g.71gb", 4, S_0, 6950, L_H200),
    PR("7g.141gb", 7, 141, 1, "7g.141gb", 8, S_0, 13975, L_H200),
};
static const gpa_mig_profile gh200_144[] = {
    PR("1g.18gb", 1, 18, 7, "1g.18gb", 1, S_1G, 1750, L_GH200_144),
    PR("1g.18gb+me", 1, 18, 1, "1g.18gb.me", 1, S_1G, 1750, L_GH200_144),
    PR("1g.36gb", 1, 36, 4, "1g.36gb", 2, S_1G2, 3525, L_GH200_144),
    PR("2g.36gb", 2, 36, 3, "2g.36gb", 2, S_2G, 3525, L_GH200_144),
    P("3g.72gb", 3, 72, 2, "3g.72gb", 4, S_3G),
    P("4g.72gb", 4, 72, 1, "4g.72gb", 4, S_0),
    P("7g.144gb", 7, 144, 1, "7g.144gb", 8, S_0),
};
static const gpa_mig_profile b200[] = {
    PR("1g.23gb", 1, 23, 7, "1g.23gb", 1, S_1G, 2050, L_B200),
    PR("1g.23gb+me", 1, 23, 1, "1g.23gb.me", 1, S_1G, 2050, L_B200),
    PR("1g.45gb", 1, 45, 4, "1g.45gb", 2, S_1G2, 4425, L_B200),
    PR("2g.45gb", 2, 45, 3, "2g.45gb", 2, S_2G, 4425, L_B200),
    P("3g.90gb", 3, 90, 2, "3g.90gb", 4, S_3G),
    P("4g.90gb", 4, 90, 1, "4g.90gb", 4, S_0),
    P("7g.180gb", 7, 180, 1, "7g.180gb", 8, S_0),
};
static const gpa_mig_profile gb200[] = {
    PR("1g.23gb", 1, 23, 7, "1g.23gb", 1, S_1G, 2200, L_GB200),
    PR("1g.23gb+me", 1, 23, 1, "1g.23gb.me", 1, S_1G, 2200, L_GB200),
    PR("1g.47gb", 1, 47, 4, "1g.47gb", 2, S_1G2, 4550, L_GB200),
    PR("2g.47gb", 2, 47, 3, "2g.47gb", 2, S_2G, 4550, L_GB200),
    P("3g.93gb", 3, 93, 2, "3g.93gb", 4, S_3G),
    P("4g.93gb", 4, 93, 1, "4g.93gb", 4, S_0),
    P("7g.186gb", 7, 186, 1, "7g.186gb", 8, S_0),
};
/* RTX PRO 6000 Blackwell: 4 memory and 4 compute slices (the user guide's "Supported GPUs":
 * at most 4 instances), placed like the A30 (4x 1g, 2x 2g and 1x 4g tile 4 slices one way
 * only). +gfx adds graphics, +me.all takes every media engine (so, like +me, one per GPU), -me
 * none. Plain 1g.24gb first: all-balanced takes the first smallest 1g. */
static const gpa_mig_profile rtx_pro_6000[] = {
    PR("1g.24gb", 1, 24, 4, "1g.24gb", 1, S_A30_1G, 2312, L_RTX6000),
    PR("1g.24gb+me", 1, 24, 1, "1g.24gb.me", 1, S_A30_1G, 2312, L_RTX6000),
    PR("1g.24gb+gfx", 1, 24, 4, "1g.24gb.gfx", 1, S_A30_1G, 2312, L_RTX6000),
    PR("1g.24gb+me.all", 1, 24, 1, "1g.24gb.me.all", 1, S_A30_1G, 2312, L_RTX6000),
    PR("1g.24gb-me", 1, 24, 4, "1g.24gb-me", 1, S_A30_1G, 2312, L_RTX6000),
    PR("2g.48gb", 2, 48, 2, "2g.48gb", 2, S_A30_2G, 4650, L_RTX6000),
    PR("2g.48gb+gfx", 2, 48, 2, "2g.48gb.gfx", 2, S_A30_2G, 4650, L_RTX6000),
    PR("2g.48gb+me.all", 2, 48, 1, "2g.48gb.me.all", 2, S_A30_2G, 4650, L_RTX6000),
    PR("2g.48gb-me", 2, 48, 2, "2g.48gb-me", 2, S_A30_2G, 4650, L_RTX6000),
    P("4g.96gb", 4, 96, 1, "4g.96gb", 4, S_0),
    P("4g.96gb+gfx", 4, 96, 1, "4g.96gb.gfx", 4, S_0),
};

/* RTX PRO 5000 Blackwell 48GB and RTX PRO 4500 Blackwell 32GB: 2 memory and 2 compute slices
 * (the user guide's "Supported MIG Profiles" tables: two 1g instances or one 2g). The 4500 has
 * no plain +me profile, only +me.all. */
#define S_2S_1G 0x03u /* {0,1} size 1 */
static const gpa_mig_profile rtx_pro_5000[] = {
    P("1g.24gb", 1, 24, 2, "1g.24gb", 1, S_2S_1G),
    P("1g.24gb+me", 1, 24, 1, "1g.24gb.me", 1, S_2S_1G),
    P("1g.24gb+gfx", 1, 24, 2, "1g.24gb.gfx", 1, S_2S_1G),
    P("1g.24gb+me.all", 1, 24, 1, "1g.24gb.me.all", 1, S_2S_1G),
    P("1g.24gb-me", 1, 24, 2, "1g.24gb-me", 1, S_2S_1G),
    P("2g.48gb", 2, 48, 1, "2g.48gb", 2, S_0),
    P("2g.48gb+gfx", 2, 48, 1, "2g.48gb.gfx", 2, S_0),
};
static const gpa_mig_profile rtx_pro_4500[] = {
    P("1g.16gb", 1, 16, 2, "1g.16gb", 1, S_2S_1G),
    P("1g.16gb+gfx", 1, 16, 2, "1g.16gb.gfx", 1, S_2S_1G),
    P("1g.16gb+me.all", 1, 16, 1, "1g.16gb.me.all", 1, S_2S_1G),
    P("1g.16gb-me", 1, 16, 2, "1g.16gb-me", 1, S_2S_1G),
    P("2g.32gb", 2, 32, 1, "2g.32gb", 2, S_0),
    P("2g.32gb+gfx", 2, 32, 1, "2g.32gb.gfx", 2, S_0),
};

/* The nvidia.com/gpu.product values GPU Feature Discovery publishes for each model: the NVML
 * device name with spaces written '-' (public node labels and NVIDIA's own docs and mocks). A
 * model's own "NVIDIA-<model>" (what GPUInventory nodes carry) is matched besides. */
static const char *const pr_a100_40[] = {"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB", NULL};
static const char *const pr_a100_80[] = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe", NULL};
static const char *const pr_a800_80[] = {"NVIDIA-A800-SXM4-80GB", "NVIDIA-A800-80GB-PCIe", NULL};
static const char *const pr_h100_80[] = {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", NULL};
static const char *const pr_a30[] = {"NVIDIA-A30", NULL};
static const char *const pr_h100_94[] = {"NVIDIA-H100-NVL", NULL};
static const char *const pr_gh200[] = {"NVIDIA-GH200-480GB", NULL};
static const char *const pr_h200[] = {"NVIDIA-H200", "NVIDIA-H200-NVL", NULL};
static const char *const pr_b200[] = {"NVIDIA-B200", NULL};
static const char *const pr_gb200[] = {"NVIDIA-GB200", NULL};
static const char *const pr_h20[] = {"NVIDIA-H20", NULL};
static const char *const pr_gh200_144[] = {"NVIDIA-GH200-144G-HBM3e", NULL};
static const char *const pr_rtx6000[] = {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
                                         "NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition",
                                         "NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edition",
                                         NULL};
static const char *const pr_rtx5000[] = {"NVIDIA-RTX-PRO-5000-Blackwell", NULL};
static const char *const pr_rtx4500[] = {"NVIDIA-RTX-PRO-4500-Blackwell", NULL};

#define M(name, arr, mem, compute, products)                                                       \
    {                                                                                              \
        name, sizeof arr / sizeof arr[0], arr, mem, compute, products                              \
    }
/* POLICY.md's rows first, in its order; then the models NVIDIA lists for MIG since (the user
 * guide's "Supported GPUs", mig-parted's config-default.yaml device filters): A800 and H800
 * share their A100/H100 twin's profiles as mig-parted's device filters do, H20 the H100-96GB's
 * (mig-parted groups device 0x2329 with it). */
static const gpa_mig_model catalog[] = {
    M("A100-40GB", a100_40, 8, 7, pr_a100_40),
    M("A100-80GB", a100_80, 8, 7, pr_a100_80),
    M("H100-80GB", a100_80, 8, 7, pr_h100_80),
    M("A30-24GB", a30_24, 4, 4, pr_a30),
    M("H100-94GB", h100_94, 8, 7, pr_h100_94),
    M("H100-96GB", h100_96, 8, 7, NULL),
    M("GH200", h100_96, 8, 7, pr_gh200),
    M("H200-141GB", h200_141, 8, 7, pr_h200),
    M("B200", b200, 8, 7, pr_b200),
    M("GB200", gb200, 8, 7, pr_gb200),
    M("H20", h100_96, 8, 7, pr_h20),
    M("GH200-144GB", gh200_144, 8, 7, pr_gh200_144),
    M("RTX-PRO-6000", rtx_pro_6000, 4, 4, pr_rtx6000),
    M("RTX-PRO-5000", rtx_pro_5000, 2, 2, pr_rtx5000),
    M("RTX-PRO-4500", rtx_pro_4500, 2, 2, pr_rtx4500),
    M("A800-40GB", a100_40, 8, 7, NULL),
    M("A800-80GB", a100_80, 8, 7, pr_a800_80),
    M("H800-80GB", a100_80, 8, 7, NULL),
    M("H800-94GB", h100_94, 8, 7, NULL),
};

static const gpa_mig_model *by_product(const char *label, size_t len)
{
    for (size_t i = 0; i < sizeof catalog / sizeof catalog[0]; i++) {
        const gpa_mig_model *m = &catalog[i];
        size_t nl = strlen(m->name);
        if (len == 7 + nl && memcmp(label, "NVIDIA-", 7) == 0 &&
            memcmp(label + 7, m->name, nl) == 0)
            return m;
        for (const char *const *p = m->products; p && *p; p++)
            if (strlen(*p) == len && memcmp(*p, label, len) == 0) return m;
    }
    return NULL;
}

const gpa_mig_model *gpa_mig_model_for_product(const char *label)
{
    if (!label) return NULL;
    size_t len = strlen(label);
    /* GFD appends "-SHARED" under time-slicing/MPS and "-MIG-<profile>" under the single
     * strategy ("NVIDIA-A800-80GB-PCIe-MIG-2g.20gb-SHARED"): the card is what precedes them. */
    if (len > 7 && strcmp(label + len - 7, "-SHARED") == 0) len -= 7;
    for (size_t i = 0; i + 5 <= len; i++)
        if (memcmp(label + i, "-MIG-", 5) == 0) {
            len = i;
            break;
        }
    return by_product(label, len);
}

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

static bool is_me(const gpa_mig_profile *p)
{
    return strstr(p->name, "+me") != NULL;
}

/* Depth-first over instances in order (largest first), trying each allowed start. */
static bool place_from(int *start, const gpa_mig_profile *const *inst, const size_t *order,
                       size_t k, size_t n, unsigned used)
{
    if (k == n) return true;
    const gpa_mig_profile *p = inst[order[k]];
    unsigned span = (1u << p->mem_slots) - 1u;
    for (int s = 0; s < 8; s++) {
        if (!(p->start_mask & (1u << s))) continue;
        unsigned bits = span << s;
        if (bits & used) continue;
        start[order[k]] = s;
        if (place_from(start, inst, order, k + 1, n, used | bits)) return true;
    }
    return false;
}

bool gpa_mig_layout_valid(int *starts_out, const gpa_mig_model *m,
                          const gpa_mig_profile *const *inst, size_t n)
{
    if (!m || (n && !inst) || n > GPA_MIG_MAX_INSTANCES) return false;
    int compute = 0, mem = 0, me = 0;
    int count[16] = {0};
    for (size_t i = 0; i < n; i++) {
        const gpa_mig_profile *p = inst[i];
        if (!p || p < m->profiles || p >= m->profiles + m->n_profiles) return false;
        compute += p->slices;
        mem += p->mem_slots;
        me += is_me(p);
        if (++count[p - m->profiles] > p->max_instances) return false;
    }
    if (compute > m->compute_slices || mem > m->mem_slots || me > 1) return false;
    /* Largest first: big instances have the fewest starts, so failures show up early. */
    size_t order[GPA_MIG_MAX_INSTANCES];
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && inst[order[j - 1]]->mem_slots < inst[i]->mem_slots) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int start[GPA_MIG_MAX_INSTANCES];
    if (!place_from(start, inst, order, 0, n, 0)) return false;
    if (starts_out)
        for (size_t i = 0; i < n; i++)
            starts_out[i] = start[i];
    return true;
}

size_t gpa_mig_balanced(const gpa_mig_profile **out, size_t cap, const gpa_mig_model *m)
{
    /* mig-parted defines no all-balanced for the 2-slice cards (RTX PRO 5000/4500) */
    if (!m || m->compute_slices < 4) return 0;
    const gpa_mig_profile *one = NULL, *two = NULL, *three = NULL;
    for (size_t i = 0; i < m->n_profiles; i++) {
        const gpa_mig_profile *p = &m->profiles[i];
        if (is_me(p)) continue;
        if (p->slices == 1 && (!one || p->mem_bytes < one->mem_bytes)) one = p;
        if (p->slices == 2 && !two) two = p;
        if (p->slices == 3 && !three) three = p;
    }
    const gpa_mig_profile *want[4] = {one, one, two, three};
    size_t k = 0;
    for (size_t i = 0; i < 4; i++)
        if (want[i] && k < cap) out[k++] = want[i];
    return k;
}
