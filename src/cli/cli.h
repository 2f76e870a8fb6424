/*
 * cli.h - the subcommands of the gpu-admission binary. Each lives in its own cmd_*.c file,
 * parses its own flags and returns the process exit code:
 *   0 success, 1 usage or input error, 2 a pod was denied (mutate only; `review` exits 0
 *   whenever it produced an answer, allowed or denied, exactly as the server answers 200).
 */
#ifndef GPA_CLI_H
#define GPA_CLI_H

#include <stddef.h>

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

/* Value of a flag given as "--name VALUE", "--name=VALUE" or "-x VALUE" (argv[*i] is looked
 * at; *i advances past a separate value). 1 matched, 0 not this flag, -1 value missing (the
 * error is printed as "gpu-admission CMD: ..."). */
int gpa_cli_flag_value(const char **out, int argc, char **argv, int *i, const char *lng,
                       const char *shrt, const char *cmd);

#endif
