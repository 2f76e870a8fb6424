/*
 * main.c - the gpu-admission binary: dispatches to one subcommand per file.
 * Nothing here knows about policies or pods; it only routes argv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu_admission/common.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"serve", gpa_cmd_serve, "run the TLS admission webhook server"},
    {"check", gpa_cmd_check, "load a policy directory, print pools, rules and revision"},
    {"mutate", gpa_cmd_mutate, "dry-run the mutating webhook on a Pod (YAML or JSON)"},
    {"review", gpa_cmd_review, "answer an AdmissionReview exactly as the server would"},
    {"test", gpa_cmd_test, "run policy test suites (GPUPolicyTest files)"},
    {"diff", gpa_cmd_diff, "what a policy change does to existing objects"},
    {"audit", gpa_cmd_audit, "existing objects judged under a policy, as PolicyReports"},
    {"export", gpa_cmd_export, "the policy as objects the API server evaluates (map)"},
    {"certs", gpa_cmd_certs, "make a CA and a serving certificate for the webhook"},
    {"simulate", gpa_cmd_simulate, "pack workloads onto a GPU inventory: GPUs used vs whole GPUs"},
    {"version", gpa_cmd_version, "print the version"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gpu-admission <command> [flags]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'gpu-admission <command> --help' for a command's flags.\n");
}

int gpa_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpu-admission %s\n", gpa_version());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) return gpa_cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "gpu-admission: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 1;
}
