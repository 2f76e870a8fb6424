/*
 * test_mig.c - the built-in MIG catalog matches POLICY.md's table plus the models NVIDIA added
 * since: rows per model, aliases, sizes in bytes (the name's and the listed real memory), the
 * mixed-strategy resource naming ('+' -> '.') and the exact gpu.product mapping.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/mig.h"

/* Layout from profile names; NULL entry when a name is unknown (the layout then fails). */
static bool layout(const char *model, int *starts, const char *const *names, size_t n)
{
    const gpa_mig_model *m = gpa_mig_model_find(model);
    const gpa_mig_profile *inst[16];
    for (size_t i = 0; i < n; i++) {
        inst[i] = gpa_mig_profile_find(m, names[i]);
        if (!inst[i]) {
            fprintf(stderr, "test: %s has no profile %s\n", model, names[i]);
            return false;
        }
    }
    return gpa_mig_layout_valid(starts, m, inst, n);
}
#define L(model, ...)                                                                              \
    layout(model, NULL, (const char *const[]){__VA_ARGS__},                                        \
           sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void geometry(void)
{
    /* mig-parted config-default.yaml, all-balanced, per device filter of the catalog's models */
    CHECK(L("A100-40GB", "1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"));
    CHECK(L("A100-80GB", "1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"));
    CHECK(L("H100-80GB", "1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"));
    CHECK(L("A30-24GB", "1g.6gb", "1g.6gb", "2g.12gb"));
    CHECK(L("H100-94GB", "1g.12gb", "1g.12gb", "2g.24gb", "3g.47gb"));
    CHECK(L("H100-96GB", "1g.12gb", "1g.12gb", "2g.24gb", "3g.48gb"));
    CHECK(L("GH200", "1g.12gb", "1g.12gb", "2g.24gb", "3g.48gb"));
    CHECK(L("H200-141GB", "1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"));
    CHECK(L("B200", "1g.23gb", "1g.23gb", "2g.45gb", "3g.90gb"));
    CHECK(L("GB200", "1g.23gb", "1g.23gb", "2g.47gb", "3g.93gb"));
    CHECK(L("GH200-144GB", "1g.18gb", "1g.18gb", "2g.36gb", "3g.72gb"));
    CHECK(L("H20", "1g.12gb", "1g.12gb", "2g.24gb", "3g.48gb"));
    CHECK(L("RTX-PRO-6000", "1g.24gb", "1g.24gb", "2g.48gb"));
    /* RTX PRO 6000: 4 slices; one set of media engines between +me and +me.all */
    CHECK(L("RTX-PRO-6000", "1g.24gb+gfx", "1g.24gb-me", "2g.48gb+me.all"));
    CHECK(!L("RTX-PRO-6000", "1g.24gb+me", "2g.48gb+me.all"));
    CHECK(!L("RTX-PRO-6000", "4g.96gb", "1g.24gb"));
    /* the 2-slice cards: two 1g or one 2g; one set of media engines */
    CHECK(L("RTX-PRO-5000", "1g.24gb", "1g.24gb+gfx"));
    CHECK(!L("RTX-PRO-5000", "1g.24gb+me", "1g.24gb+me.all"));
    CHECK(!L("RTX-PRO-5000", "2g.48gb", "1g.24gb"));
    CHECK(L("RTX-PRO-4500", "1g.16gb-me", "1g.16gb+me.all"));
    CHECK(gpa_mig_profile_find(gpa_mig_model_find("RTX-PRO-4500"), "1g.16gb+me") == NULL);
    /* gpa_mig_balanced derives exactly those */
    for (size_t i = 0; gpa_mig_model_name_at(i); i++) {
        const gpa_mig_model *m = gpa_mig_model_find(gpa_mig_model_name_at(i));
        const gpa_mig_profile *b[8];
        size_t n = gpa_mig_balanced(b, 8, m);
        CHECK_INT(n, m->compute_slices == 2 ? 0 : m->compute_slices == 4 ? 3 : 4);
        if (!n) continue; /* mig-parted has no all-balanced for the 2-slice cards */
        CHECK(gpa_mig_layout_valid(NULL, m, b, n));
        CHECK_INT(b[0]->slices, 1);
        CHECK_INT(b[0]->mem_slots, 1);
        CHECK_INT(b[2]->slices, 2);
    }
    /* every all-<profile> config (max_instances of one profile) fits; one more does not */
    for (size_t i = 0; gpa_mig_model_name_at(i); i++) {
        const gpa_mig_model *m = gpa_mig_model_find(gpa_mig_model_name_at(i));
        for (size_t k = 0; k < m->n_profiles; k++) {
            const gpa_mig_profile *p = &m->profiles[k], *inst[9];
            for (int j = 0; j < 9; j++)
                inst[j] = p;
            CHECK(gpa_mig_layout_valid(NULL, m, inst, (size_t)p->max_instances));
            CHECK(!gpa_mig_layout_valid(NULL, m, inst, (size_t)p->max_instances + 1));
        }
    }
    /* the examples */
    int st[8];
    CHECK(layout("A100-40GB", st, (const char *const[]){"4g.20gb", "3g.20gb"}, 2));
    CHECK_INT(st[0], 0);
    CHECK_INT(st[1], 4);
    CHECK(!L("A100-40GB", "3g.20gb", "3g.20gb", "1g.5gb"));
    CHECK(L("A100-40GB", "3g.20gb", "3g.20gb"));
    CHECK(!L("A100-80GB", "7g.80gb", "1g.10gb"));
    CHECK(L("A100-80GB", "2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"));
    CHECK(L("A100-80GB", "4g.40gb", "2g.20gb", "1g.20gb"));
    /* only 3g at slice 4 leaves 0-3 for 2g + 1g + 1g: a first-fit search placing 3g at 0 would
     * wrongly refuse this */
    CHECK(layout("A100-80GB", st, (const char *const[]){"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"},
                 4));
    CHECK_INT(st[0], 4);
    CHECK(L("A100-80GB", "1g.20gb", "1g.20gb", "1g.20gb", "1g.10gb", "1g.10gb"));
    /* 3g must sit at 4 so two 2g fit at 0 and 2 */
    CHECK(layout("A100-80GB", st, (const char *const[]){"3g.40gb", "2g.20gb", "2g.20gb"}, 3));
    CHECK_INT(st[0], 4);
    CHECK(!L("A100-80GB", "4g.40gb", "4g.40gb"));
    CHECK(!L("A100-80GB", "1g.10gb+me", "1g.10gb+me"));
    CHECK(!L("A100-80GB", "4g.40gb", "3g.40gb", "1g.10gb"));
    CHECK(L("A30-24GB", "2g.12gb", "1g.6gb", "1g.6gb"));
    CHECK(!L("A30-24GB", "4g.24gb", "1g.6gb"));
    CHECK(!L("A30-24GB", "1g.6gb+me", "2g.12gb+me")); /* one set of media engines */
    CHECK(!L("A30-24GB", "2g.12gb", "2g.12gb", "1g.6gb"));
    /* wrong model's profile, NULL model */
    const gpa_mig_profile *foreign = gpa_mig_profile_find(gpa_mig_model_find("A30-24GB"), "1g.6gb");
    CHECK(!gpa_mig_layout_valid(NULL, gpa_mig_model_find("A100-80GB"), &foreign, 1));
    CHECK(!gpa_mig_layout_valid(NULL, NULL, &foreign, 1));
    CHECK(gpa_mig_layout_valid(NULL, gpa_mig_model_find("A100-80GB"), NULL, 0));
}

/* The listed memory (nvidia-smi mig -lgip, GiB with two decimals) and what auto sizes by. */
static void real_memory(void)
{
    const gpa_mig_model *h200 = gpa_mig_model_find("H200-141GB");
    const gpa_mig_profile *p = gpa_mig_profile_find(h200, "1g.18gb");
    CHECK_INT(p->real_bytes, 16LL * 1073741824LL); /* 16.00 GiB = 17.18 GB, below its name */
    CHECK_INT(p->mem_bytes, 17179869184LL);
    p = gpa_mig_profile_find(h200, "7g.141gb");
    CHECK_INT(p->real_bytes, 13975LL * 1073741824LL / 100); /* 139.75 GiB, above: the name rules */
    CHECK_INT(p->mem_bytes, 141000000000LL);
    p = gpa_mig_profile_find(gpa_mig_model_find("H100-94GB"), "1g.12gb");
    CHECK_INT(p->mem_bytes, 1075LL * 1073741824LL / 100); /* 10.75 GiB */
    p = gpa_mig_profile_find(gpa_mig_model_find("GB200"), "1g.47gb");
    CHECK_INT(p->mem_bytes, 47000000000LL); /* 45.50 GiB = 48.86 GB, above */
    CHECK(strstr(p->real_src, "mig-parted issue #227") != NULL);
    p = gpa_mig_profile_find(gpa_mig_model_find("A100-40GB"), "1g.5gb");
    CHECK_INT(p->real_bytes, 0); /* no listing: the name's bytes */
    CHECK_INT(p->mem_bytes, 5000000000LL);
    /* the profiles whose listed memory is below the name, as docs/policy.md lists them */
    const char *below = "";
    static char buf[1024];
    size_t off = 0;
    for (size_t i = 0; gpa_mig_model_name_at(i); i++) {
        const gpa_mig_model *m = gpa_mig_model_find(gpa_mig_model_name_at(i));
        bool seen = false; /* an alias lists its twin's profiles once */
        for (size_t j = 0; j < i; j++)
            seen |= gpa_mig_model_find(gpa_mig_model_name_at(j))->profiles == m->profiles;
        if (seen) continue;
        for (size_t k = 0; k < m->n_profiles; k++)
            if (m->profiles[k].mem_bytes < m->profiles[k].name_bytes)
                off += (size_t)snprintf(buf + off, sizeof buf - off, "%s %s;", m->name,
                                        m->profiles[k].name);
    }
    below = buf;
    CHECK_STR(below, "H100-94GB 1g.12gb;H100-94GB 1g.12gb+me;H100-94GB 1g.24gb;H100-94GB "
                     "2g.24gb;H200-141GB 1g.18gb;H200-141GB 1g.18gb+me;H200-141GB 1g.35gb;"
                     "H200-141GB 2g.35gb;B200 1g.23gb;B200 1g.23gb+me;");
}

/* gpu.product labels name a model exactly: never by substring. */
static void products(void)
{
    static const struct {
        const char *label, *model; /* model NULL: not a MIG catalog card */
    } cases[] = {
        {"NVIDIA-GB200", "GB200"},
        {"NVIDIA-B200", "B200"},
        {"NVIDIA-GH200-144G-HBM3e", "GH200-144GB"},
        {"NVIDIA-GH200-480GB", "GH200"},
        {"NVIDIA-H20", "H20"},
        {"NVIDIA-H200", "H200-141GB"},
        {"NVIDIA-H200-NVL", "H200-141GB"},
        {"NVIDIA-H100-NVL", "H100-94GB"},
        {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},
        {"NVIDIA-A100-SXM4-40GB", "A100-40GB"},
        {"NVIDIA-A100-80GB-PCIe", "A100-80GB"},
        {"NVIDIA-A800-SXM4-80GB", "A800-80GB"},
        {"NVIDIA-A30", "A30-24GB"},
        {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX-PRO-6000"},
        {"NVIDIA-RTX-PRO-5000-Blackwell", "RTX-PRO-5000"},
        {"NVIDIA-RTX-PRO-4500-Blackwell", "RTX-PRO-4500"},
        {"NVIDIA-A100-40GB", "A100-40GB"}, /* a GPUInventory node's own label */
        {"NVIDIA-GH200-144GB", "GH200-144GB"},
        {"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"}, /* single strategy */
        {"NVIDIA-A800-80GB-PCIe-MIG-2g.20gb-SHARED", "A800-80GB"},
        {"NVIDIA-H100-80GB-HBM3-SHARED", "H100-80GB"},
        {"NVIDIA-GB200-NVL72", NULL},
        {"NVIDIA-B2000", NULL},
        {"NVIDIA-H2", NULL},
        {"NVIDIA-H200X", NULL},
        {"NVIDIA-A100", NULL},
        {"A100-40GB", NULL},
        {"Tesla-T4", NULL},
        {"NVIDIA-L40S", NULL},
        {"-SHARED", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gpa_mig_model *m = gpa_mig_model_for_product(cases[i].label);
        if (!cases[i].model) {
            if (m) fprintf(stderr, "test: %s read as %s\n", cases[i].label, m->name);
            CHECK(m == NULL);
        } else {
            CHECK(m != NULL);
            if (m) CHECK_STR(m->name, cases[i].model);
        }
    }
    CHECK(gpa_mig_model_for_product(NULL) == NULL);
}

int main(void)
{
    static const struct {
        const char *model;
        size_t n;
        const char *first, *last;
    } want[] = {
        {"A100-40GB", 7, "1g.5gb", "7g.40gb"},
        {"A100-80GB", 7, "1g.10gb", "7g.80gb"},
        {"H100-80GB", 7, "1g.10gb", "7g.80gb"},
        {"A30-24GB", 5, "1g.6gb", "4g.24gb"},
        {"H100-94GB", 7, "1g.12gb", "7g.94gb"},
        {"H100-96GB", 7, "1g.12gb", "7g.96gb"},
        {"GH200", 7, "1g.12gb", "7g.96gb"},
        {"H200-141GB", 7, "1g.18gb", "7g.141gb"},
        {"B200", 7, "1g.23gb", "7g.180gb"},
        {"GB200", 7, "1g.23gb", "7g.186gb"},
        {"H20", 7, "1g.12gb", "7g.96gb"},
        {"GH200-144GB", 7, "1g.18gb", "7g.144gb"},
        {"RTX-PRO-6000", 11, "1g.24gb", "4g.96gb+gfx"},
        {"RTX-PRO-5000", 7, "1g.24gb", "2g.48gb+gfx"},
        {"RTX-PRO-4500", 6, "1g.16gb", "2g.32gb+gfx"},
        {"A800-40GB", 7, "1g.5gb", "7g.40gb"},
        {"A800-80GB", 7, "1g.10gb", "7g.80gb"},
        {"H800-80GB", 7, "1g.10gb", "7g.80gb"},
        {"H800-94GB", 7, "1g.12gb", "7g.94gb"},
    };
    size_t nmodels = 0;
    while (gpa_mig_model_name_at(nmodels))
        nmodels++;
    CHECK_INT(nmodels, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const gpa_mig_model *m = gpa_mig_model_find(want[i].model);
        CHECK(m != NULL);
        if (!m) continue;
        CHECK_STR(m->name, want[i].model);
        CHECK_STR(gpa_mig_model_name_at(i), want[i].model);
        CHECK_INT(m->n_profiles, want[i].n);
        CHECK_STR(m->profiles[0].name, want[i].first);
        CHECK_STR(m->profiles[m->n_profiles - 1].name, want[i].last);
        for (size_t k = 0; k < m->n_profiles; k++) {
            const gpa_mig_profile *p = &m->profiles[k];
            /* every derived field agrees with the name */
            int slices = 0, gb = 0;
            char rest[16] = "";
            CHECK(sscanf(p->name, "%dg.%dgb%15s", &slices, &gb, rest) >= 2);
            CHECK_INT(p->slices, slices);
            CHECK_INT(p->name_bytes, (int64_t)gb * 1000000000LL);
            /* auto sizes by the smaller of the name and the listed memory */
            CHECK_INT(p->mem_bytes, p->real_bytes && p->real_bytes < p->name_bytes ? p->real_bytes
                                                                                   : p->name_bytes);
            CHECK((p->real_bytes != 0) == (p->real_src != NULL));
            CHECK(rest[0] == '\0' || strcmp(rest, "+me") == 0 || strcmp(rest, "+gfx") == 0 ||
                  strcmp(rest, "+me.all") == 0 || strcmp(rest, "-me") == 0);
            char res[64];
            snprintf(res, sizeof res, "nvidia.com/mig-%s", p->name);
            for (char *c = res; *c; c++)
                if (*c == '+') *c = '.';
            CHECK_STR(p->resource, res);
            CHECK(p->max_instances >= 1 && p->max_instances <= 7);
            CHECK(gpa_mig_profile_find(m, p->name) == p);
        }
    }
    const gpa_mig_model *a80 = gpa_mig_model_find("A100-80GB");
    const gpa_mig_model *h80 = gpa_mig_model_find("H100-80GB");
    CHECK(a80 && h80 && a80->profiles == h80->profiles);
    const gpa_mig_model *h96 = gpa_mig_model_find("H100-96GB");
    const gpa_mig_model *gh = gpa_mig_model_find("GH200");
    CHECK(h96 && gh && h96->profiles == gh->profiles);
    /* added to POLICY.md's row: mig-parted's all-1g.12gb.me names GH200 */
    CHECK(gpa_mig_profile_find(h96, "1g.12gb+me") != NULL);
    CHECK(gpa_mig_model_find("H20")->profiles == h96->profiles);
    CHECK(gpa_mig_model_find("A800-80GB")->profiles == a80->profiles);
    CHECK(gpa_mig_model_find("H800-94GB")->profiles == gpa_mig_model_find("H100-94GB")->profiles);
    CHECK(gpa_mig_model_find("GB200")->profiles != gpa_mig_model_find("B200")->profiles);

    const gpa_mig_profile *me = gpa_mig_profile_find(a80, "1g.10gb+me");
    CHECK(me != NULL);
    if (me) {
        CHECK_STR(me->resource, "nvidia.com/mig-1g.10gb.me");
        CHECK_INT(me->max_instances, 1);
        CHECK_INT(me->mem_bytes, 10000000000LL);
    }
    const gpa_mig_profile *p7 = gpa_mig_profile_find(gpa_mig_model_find("B200"), "7g.180gb");
    CHECK(p7 && p7->slices == 7 && p7->mem_bytes == 180000000000LL);
    const gpa_mig_profile *a30 = gpa_mig_profile_find(gpa_mig_model_find("A30-24GB"), "2g.12gb+me");
    CHECK(a30 && a30->max_instances == 1 &&
          strcmp(a30->resource, "nvidia.com/mig-2g.12gb.me") == 0);
    CHECK_INT(gpa_mig_profile_find(a80, "1g.10gb")->max_instances, 7);
    CHECK_INT(gpa_mig_profile_find(a80, "1g.20gb")->max_instances, 4);
    CHECK_INT(gpa_mig_profile_find(a80, "3g.40gb")->max_instances, 2);

    CHECK(gpa_mig_model_find("A100") == NULL);
    CHECK(gpa_mig_model_find("a100-80gb") == NULL);
    CHECK(gpa_mig_model_find(NULL) == NULL);
    CHECK(gpa_mig_profile_find(a80, "1g.5gb") == NULL);
    CHECK(gpa_mig_profile_find(NULL, "1g.10gb") == NULL);
    CHECK(gpa_mig_model_name_at(nmodels) == NULL);
    real_memory();
    products();
    geometry();
    return check_done();
}
