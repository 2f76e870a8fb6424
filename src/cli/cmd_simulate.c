/*
 * cmd_simulate.c - `gpu-admission simulate`: reads the policy, the inventory and the workload
 * files, hands every object to the simulator (src/sim: the real engine, then the packer) and
 * prints the answer. Only argument handling and file I/O live here.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "sim.h"

typedef struct options {
    const char *dir, *inv_path, *out, *report, *gangs;
    bool suggest, all;
    const char **files;
    size_t nfiles;
    const char **compare; /* --compare SPECs, in order */
    size_t ncompare;
} options;

static int add_compare(void *opts, const char *value)
{
    options *o = opts;
    if (!*value) {
        fprintf(stderr, "gpu-admission simulate: --compare needs FILE, mig=LAYOUT, suggested or "
                        "policies=DIR\n");
        return 1;
    }
    o->compare[o->ncompare++] = value;
    return 0;
}

static int positional(void *opts, const char *arg)
{
    options *o = opts;
    o->files[o->nfiles++] = arg;
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, dir), NULL,
     "  -p, --policies DIR     policy directory (as `check` loads it)\n"},
    {"--inventory", "-i", GPA_CLI_STR, offsetof(options, inv_path), NULL,
     "  -i, --inventory FILE   the nodes\n"},
    {"--output", "-o", GPA_CLI_STR, offsetof(options, out), NULL,
     "  -o, --output FMT       text (default) or json\n"},
    {"--report", NULL, GPA_CLI_STR, offsetof(options, report), NULL,
     "      --report FILE      also write a self-contained HTML page picturing every used\n"
     "                         GPU and the used-vs-baseline bar\n"},
    {"--suggest-mig", NULL, GPA_CLI_BOOL, offsetof(options, suggest), NULL,
     "      --suggest-mig      print a mig-parted config (the MIG layouts the packing\n"
     "                         chose) instead of the answer\n"},
    {"--compare", NULL, GPA_CLI_CALL, 0, add_compare,
     "      --compare SPEC     also pack the same admitted pods on a variant and print the\n"
     "                         runs side by side (repeatable): FILE another inventory,\n"
     "                         mig=LAYOUT every MIG group set to auto, none, all-balanced or\n"
     "                         all-<profile>, suggested the --suggest-mig layouts,\n"
     "                         policies=DIR the workloads admitted under another policy set\n"},
    {"--gangs", NULL, GPA_CLI_STR, offsetof(options, gangs), NULL,
     "      --gangs MODE       pods (default: a gang's pods placed one by one, as\n"
     "                         kube-scheduler alone places them) or whole (placed whole or\n"
     "                         not at all, as Kueue TAS and gang scheduling admit them)\n"},
    {"--all", NULL, GPA_CLI_BOOL, offsetof(options, all), NULL,
     "      --all              list every unplaced pod in the text answer (default: the\n"
     "                         first 20 after the summary by cause)\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "      --help             this text\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "simulate",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission simulate --policies DIR --inventory FILE [-o text|json]\n"
            "                              [--report FILE.html] [--suggest-mig] [--all]\n"
            "                              [--gangs pods|whole]\n"
            "                              [--compare FILE|mig=LAYOUT|suggested|policies=DIR]...\n"
            "                              WORKLOAD...\n"
            "\n"
            "Runs every pod of the WORKLOAD files (YAML or JSON: Pods, Lists, workloads such as\n"
            "Deployments and Jobs with their replicas) through the webhooks exactly as the API\n"
            "server would, packs the admitted pods onto the inventory's GPU nodes and prints how\n"
            "many GPUs they take against the whole-GPU baseline of the placed pods and against\n"
            "the same pods packed on whole GPUs only, the GPU allocation ratio, the GPU memory\n"
            "requested and allocated, the denied pods with the engine's message and the\n"
            "unplaced pods with the reason (no node matches, no room, tenant conflict, island\n"
            "too small) and what ran out or did not match (Insufficient cpu, ...).\n"
            "\n"
            "The inventory is a GPUInventory (docs/simulate.md) or `kubectl get nodes -o json`.\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "exit status: 0 answered (denied or unplaced pods included), 1 usage or input error\n",
    .unknown = "unknown flag",
    .error_rc = 1,
    .dashdash = GPA_CLI_DASHDASH_NONE,
    .positional = positional,
};

static int read_objects(gpa_sim *s, const gpa_policy *p, const char *path)
{
    size_t len = 0;
    char *buf = gpa_cli_read_file(path, &len);
    if (!buf) {
        fprintf(stderr, "gpu-admission simulate: %s: %s\n", path, strerror(errno));
        return 1;
    }
    gpa_objects *objs = NULL;
    gpa_error err = {0};
    int rc = gpa_objects_read(&objs, buf, len, path, &err);
    free(buf);
    if (rc != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    for (size_t i = 0; i < gpa_objects_count(objs); i++) {
        char origin[1100];
        int line = gpa_objects_line(objs, i);
        snprintf(origin, sizeof origin, "%s:%d:1", path, line > 0 ? line : 1);
        if (gpa_sim_admit(s, p, gpa_objects_get(objs, i), origin, &err) != GPA_OK) {
            fprintf(stderr, "%s\n", err.message);
            gpa_objects_free(objs);
            return 1;
        }
    }
    gpa_objects_free(objs);
    return 0;
}

typedef gpa_sim_compared variant;

/* The runs side by side, one row per variant (the first is the run itself). */
static void compare_text(FILE *f, const variant *v, size_t n)
{
    fprintf(f, "\ncompare (the same admitted pods on each inventory):\n");
    fprintf(f, "  %-28s %7s %8s %9s %8s %6s %13s %9s\n", "variant", "placed", "unplaced",
            "GPUs used", "baseline", "saved", "unplaced GPUs", "ratio");
    for (size_t i = 0; i < n; i++) {
        const gpa_sim_totals *t = &v[i].t;
        double ratio = t->gpus_total ? 100.0 * t->gpu_share / (double)t->gpus_total : 0.0;
        fprintf(f, "  %-28s %7zu %8zu %9zu %8zu %6lld %13zu %8.1f%%\n", v[i].name, t->placed,
                t->unplaced, t->gpus_used, t->whole_gpu_baseline,
                (long long)t->whole_gpu_baseline - (long long)t->gpus_used, t->unplaced_gpus,
                ratio);
    }
}

static void compare_json(cJSON *r, const variant *v, size_t n)
{
    cJSON *a = cJSON_AddArrayToObject(r, "compare");
    for (size_t i = 0; a && i < n; i++) {
        const gpa_sim_totals *t = &v[i].t;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "variant", v[i].name);
        cJSON_AddNumberToObject(o, "placed", (double)t->placed);
        cJSON_AddNumberToObject(o, "unplaced", (double)t->unplaced);
        cJSON_AddNumberToObject(o, "gpusTotal", (double)t->gpus_total);
        cJSON_AddNumberToObject(o, "gpusUsed", (double)t->gpus_used);
        cJSON_AddNumberToObject(o, "wholeGpuBaseline", (double)t->whole_gpu_baseline);
        cJSON_AddNumberToObject(o, "saved", (double)t->whole_gpu_baseline - (double)t->gpus_used);
        cJSON_AddNumberToObject(o, "unplacedGpus", (double)t->unplaced_gpus);
        cJSON_AddNumberToObject(o, "allocatedShare", t->gpu_share);
        cJSON_AddItemToArray(a, o);
    }
}

/* Runs every --compare SPEC; 0, or 1 with the error printed. */
/* The workloads admitted again under the policy set in dir and packed on inv: a policy
 * variant cannot reuse the run's admitted pods. 0, or 1 with the error printed. */
static int run_policy_variant(gpa_sim_totals *out, const options *o, const char *dir,
                              const gpa_sim_inventory *inv)
{
    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "%s\ngpu-admission simulate: --compare policies=%s: policy set refused\n",
                err.message, dir);
        return 1;
    }
    gpa_sim *w = NULL;
    int ret = gpa_sim_new(&w, inv, &err) == GPA_OK ? 0 : 1;
    if (ret) fprintf(stderr, "gpu-admission simulate: %s\n", err.message);
    if (!ret) gpa_sim_set_gangs_whole(w, strcmp(o->gangs, "whole") == 0);
    for (size_t f = 0; f < o->nfiles && !ret; f++)
        ret = read_objects(w, p, o->files[f]);
    if (!ret && (gpa_sim_run(w, GPA_SIM_BFD, &err) != GPA_OK)) {
        fprintf(stderr, "gpu-admission simulate: --compare policies=%s: %s\n", dir, err.message);
        ret = 1;
    }
    if (!ret) gpa_sim_get_totals(out, w);
    gpa_sim_free(w);
    gpa_policy_unref(p);
    return ret;
}

static int run_compares(variant *v, const options *o, const gpa_sim *s,
                        const gpa_sim_inventory *inv)
{
    v[0].name = "this inventory";
    gpa_sim_get_totals(&v[0].t, s);
    for (size_t i = 0; i < o->ncompare; i++) {
        const char *spec = o->compare[i];
        gpa_error err = {0};
        gpa_sim_inventory *var = NULL, *file = NULL;
        int rc;
        if (strncmp(spec, "policies=", 9) == 0) {
            if (run_policy_variant(&v[i + 1].t, o, spec + 9, inv)) return 1;
            v[i + 1].name = spec;
            continue;
        }
        if (strncmp(spec, "mig=", 4) == 0) {
            rc = gpa_sim_inventory_variant_mig(&var, inv, spec + 4, &err);
        } else if (strcmp(spec, "suggested") == 0) {
            rc = gpa_sim_inventory_variant_suggested(&var, s, &err);
        } else {
            size_t len = 0;
            char *buf = gpa_cli_read_file(spec, &len);
            if (!buf) {
                fprintf(stderr, "gpu-admission simulate: --compare %s: %s\n", spec,
                        strerror(errno));
                return 1;
            }
            rc = gpa_sim_inventory_read(&file, buf, len, spec, &err);
            free(buf);
        }
        if (rc == GPA_OK) rc = gpa_sim_run_on(&v[i + 1].t, s, var ? var : file, &err);
        gpa_sim_inventory_variant_free(var);
        gpa_sim_inventory_free(file);
        if (rc != GPA_OK) {
            fprintf(stderr, "gpu-admission simulate: --compare %s: %s\n", spec, err.message);
            return 1;
        }
        v[i + 1].name = spec;
    }
    return 0;
}

static int write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "gpu-admission simulate: %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t n = strlen(data);
    int bad = fwrite(data, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "gpu-admission simulate: %s: write failed\n", path);
    return bad;
}

int gpa_cmd_simulate(int argc, char **argv)
{
    options o = {.out = "text",
                 .gangs = "pods",
                 .files = calloc((size_t)argc + 1, sizeof *o.files),
                 .compare = calloc((size_t)argc + 1, sizeof *o.compare)};
    variant *cmp = calloc((size_t)argc + 2, sizeof *cmp);
    if (!o.files || !o.compare || !cmp) {
        free(o.files);
        free(o.compare);
        free(cmp);
        return 1;
    }
    const char **files = o.files;
    int ret = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (ret != GPA_CLI_CONTINUE) goto done;
    ret = 1;
    const char *dir = o.dir, *inv_path = o.inv_path, *out = o.out, *report = o.report;
    bool suggest = o.suggest;
    size_t nfiles = o.nfiles;
    if (!dir || !inv_path || !nfiles) {
        fprintf(stderr, "gpu-admission simulate: %s\n",
                !dir        ? "--policies DIR is required"
                : !inv_path ? "--inventory FILE is required"
                            : "no WORKLOAD file given");
        gpa_cli_usage(&cli_spec, stderr);
        goto done;
    }
    if (strcmp(out, "text") != 0 && strcmp(out, "json") != 0) {
        fprintf(stderr, "gpu-admission simulate: -o must be text or json, not %s\n", out);
        goto done;
    }
    if (strcmp(o.gangs, "pods") != 0 && strcmp(o.gangs, "whole") != 0) {
        fprintf(stderr, "gpu-admission simulate: --gangs must be pods or whole, not %s\n", o.gangs);
        goto done;
    }
    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "%s\ngpu-admission simulate: %s: policy set refused\n", err.message, dir);
        goto done;
    }
    size_t len = 0;
    char *buf = gpa_cli_read_file(inv_path, &len);
    gpa_sim_inventory *inv = NULL;
    gpa_sim *s = NULL;
    if (!buf) {
        fprintf(stderr, "gpu-admission simulate: %s: %s\n", inv_path, strerror(errno));
    } else if (gpa_sim_inventory_read(&inv, buf, len, inv_path, &err) != GPA_OK ||
               gpa_sim_new(&s, inv, &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
    } else {
        ret = 0;
        gpa_sim_set_gangs_whole(s, strcmp(o.gangs, "whole") == 0);
        for (size_t f = 0; f < nfiles && !ret; f++)
            ret = read_objects(s, p, files[f]);
        /* the whole-GPU comparison is part of every answer (text, JSON, report) */
        if (!ret && (gpa_sim_run(s, GPA_SIM_BFD, &err) != GPA_OK ||
                     gpa_sim_compare_whole(s, &err) != GPA_OK)) {
            fprintf(stderr, "gpu-admission simulate: %s\n", err.message);
            ret = 1;
        }
    }
    free(buf);
    if (!ret && o.ncompare) ret = run_compares(cmp, &o, s, inv);
    if (!ret && report) {
        char *html = o.ncompare ? gpa_sim_report_html_compared(s, cmp, o.ncompare + 1)
                                : gpa_sim_report_html(s);
        ret = html ? write_file(report, html) : 1;
        free(html);
    }
    if (!ret) {
        char *text = NULL;
        if (suggest) {
            text = gpa_sim_suggest_mig(s);
        } else if (strcmp(out, "json") == 0) {
            cJSON *j = gpa_sim_result_json(s);
            if (j && o.ncompare) compare_json(j, cmp, o.ncompare + 1);
            text = j ? cJSON_Print(j) : NULL;
            cJSON_Delete(j);
        } else {
            text = gpa_sim_result_text_n(s, o.all ? SIZE_MAX : GPA_SIM_TEXT_LIST);
        }
        if (!text) {
            fprintf(stderr, "gpu-admission simulate: out of memory\n");
            ret = 1;
        } else {
            fputs(text, stdout);
            if (strcmp(out, "json") == 0 && !suggest) fputc('\n', stdout);
            if (strcmp(out, "text") == 0 && !suggest && o.ncompare)
                compare_text(stdout, cmp, o.ncompare + 1);
            free(text);
            ret = fflush(stdout) == 0 ? 0 : 1;
        }
    }
    gpa_sim_free(s);
    gpa_sim_inventory_free(inv);
    gpa_policy_unref(p);
done:
    free(files);
    free(o.compare);
    free(cmp);
    return ret;
}
