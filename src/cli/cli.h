/*
 * cli.h - the subcommands of the gpu-admission binary. Each lives in its own cmd_*.c file,
 * describes its flags as a gpa_cli_flag table (parsed by flags.c) and returns the exit code:
 *   0 success, 1 usage or input error, 2 a pod was denied (mutate only; `review` exits 0
 *   whenever it produced an answer, allowed or denied, exactly as the server answers 200).
 */
#ifndef GPA_CLI_H
#define GPA_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gpu_admission/objects.h"

int gpa_cmd_check(int argc, char **argv);
int gpa_cmd_mutate(int argc, char **argv);
int gpa_cmd_review(int argc, char **argv);
int gpa_cmd_serve(int argc, char **argv);
int gpa_cmd_certs(int argc, char **argv);
int gpa_cmd_simulate(int argc, char **argv);
int gpa_cmd_version(int argc, char **argv);
int gpa_cmd_test(int argc, char **argv);
int gpa_cmd_diff(int argc, char **argv);
int gpa_cmd_audit(int argc, char **argv);
int gpa_cmd_export(int argc, char **argv);
int gpa_cmd_export_map(int argc, char **argv);

/* Reads a whole file ("-" = stdin) into a NUL-terminated buffer; NULL on error (errno set).
 * Shared by the subcommands so every one reads input the same way. */
char *gpa_cli_read_file(const char *path, size_t *len_out);
/* "stdin" for "-", else path: the name input is reported under. */
const char *gpa_cli_input_name(const char *path);
/* gpa_cli_read_file that prints "gpu-admission CMD: cannot read NAME: why" on failure. */
char *gpa_cli_read_input(size_t *len_out, const char *cmd, const char *path);
/* Reads path and parses it as Kubernetes objects (gpa_objects_read, origins named after
 * gpa_cli_input_name); 0, or -1 with the error printed as "gpu-admission CMD: ...". */
int gpa_cli_read_objects(gpa_objects **out, const char *cmd, const char *path);
/* The policy directory as a suite file at suite_file names it: relative to the suite's
 * directory when both resolve (a suite keeps working after the repository moves), else dir
 * as given. Caller frees; NULL when memory runs out. */
char *gpa_cli_policies_relative(const char *suite_file, const char *dir);

/* ---- flags (flags.c): one table row per flag, curl's aliases[] style ---- */

typedef enum {
    GPA_CLI_HELP, /* prints the usage on stdout; the command exits 0 */
    GPA_CLI_BOOL, /* sets the bool at off; never takes "=value" */
    GPA_CLI_STR,  /* stores the value (const char *) at off */
    GPA_CLI_CALL, /* hands the value to call */
} gpa_cli_kind;

typedef struct gpa_cli_flag {
    const char *lng;  /* "--policies" */
    const char *shrt; /* "-p", or NULL */
    gpa_cli_kind kind;
    size_t off; /* GPA_CLI_BOOL / GPA_CLI_STR: offsetof the field in the options struct */
    /* GPA_CLI_CALL: 0, or the exit code after printing why the value is refused */
    int (*call)(void *opts, const char *value);
    const char *help; /* this flag's lines of the --help text, verbatim */
} gpa_cli_flag;

typedef enum {
    GPA_CLI_DASHDASH_NONE,       /* "--" is an unknown flag */
    GPA_CLI_DASHDASH_ENDS_FLAGS, /* "--": everything after it is positional */
    GPA_CLI_DASHDASH_LAST_ONE,   /* "-- X" allowed only as the last two, before any positional */
} gpa_cli_dashdash;

typedef struct gpa_cli_spec {
    const char *cmd; /* "mutate": errors read "gpu-admission mutate: ..." */
    const gpa_cli_flag *flags;
    size_t n_flags;
    const char *head, *tail; /* the usage text around the flags' help lines */
    /* "unknown flag" or "unknown argument", then the argument (in quotes when
     * unknown_quoted), then the usage on stderr */
    const char *unknown;
    bool unknown_quoted;
    int error_rc; /* exit code of a usage error */
    gpa_cli_dashdash dashdash;
    /* each positional argument: 0, or the exit code after printing why (GPA_CLI_USAGE: the
     * usage follows on stderr, exit error_rc); NULL = none accepted (reported with
     * unknown) */
    int (*positional)(void *opts, const char *arg);
} gpa_cli_spec;

/* Walks argv[1..] against spec, filling opts. GPA_CLI_CONTINUE when the command should run,
 * else the exit code to return (0 after --help). Flags may come anywhere; a value is
 * "--long VALUE", "--long=VALUE" or "-s VALUE"; "VALUE needs a value" when argv ends. */
#define GPA_CLI_CONTINUE (-1)
#define GPA_CLI_USAGE    (-2)
int gpa_cli_parse(const gpa_cli_spec *spec, void *opts, int argc, char **argv);
/* head + every flag's help + tail. */
void gpa_cli_usage(const gpa_cli_spec *spec, FILE *f);

/* ---- objects in messages (describe.c) ---- */

typedef enum {
    GPA_CLI_LABEL_OBJECT, /* gpa_objects_describe: "Pod ns/name", "Deployment web" */
    GPA_CLI_LABEL_SLASH,  /* mutate: "Pod/name", "Kind (document N)", "document N" */
} gpa_cli_label_style;

/* The label obj is named by in messages (doc_number: its 1-based document or element, for
 * GPA_CLI_LABEL_SLASH), then " TEMPLATE_PATH" for one pod template of a workload, then
 * " (ORIGIN)"; either NULL to leave it out. Always NUL-terminated. */
void gpa_cli_describe(char *buf, size_t cap, const cJSON *obj, size_t doc_number,
                      gpa_cli_label_style style, const char *template_path, const char *origin);

/* ---- diff's grouping (diff_group.c) ---- */

/* owner[i]: the index of the top owner in objs of objs[i] (through the controller
 * ownerReferences, a missing ReplicaSet or Job found by name: a Pod's Deployment, a
 * ReplicaSet's Deployment, a Job's CronJob), -1 when objs holds none. A Pod never owns. */
void gpa_cli_diff_owners(long *owner, const cJSON *const *objs, size_t n);

#endif
