/*
 * input.c - how every subcommand reads its input: a file or "-" for stdin, whole, with the
 * same error lines ("gpu-admission CMD: cannot read NAME: why") so a user meets one wording.
 * Never exits or touches stdout: the caller decides the exit code.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

char *gpa_cli_read_file(const char *path, size_t *len_out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
        if (cap - len - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int failed = buf && ferror(f);
    if (f != stdin) fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    if (buf) {
        buf[len] = '\0';
        *len_out = len;
    }
    return buf;
}

const char *gpa_cli_input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "stdin" : path;
}

char *gpa_cli_read_input(size_t *len_out, const char *cmd, const char *path)
{
    char *buf = gpa_cli_read_file(path, len_out);
    if (!buf)
        fprintf(stderr, "gpu-admission %s: cannot read %s: %s\n", cmd, gpa_cli_input_name(path),
                strerror(errno));
    return buf;
}

int gpa_cli_read_objects(gpa_objects **out, const char *cmd, const char *path)
{
    *out = NULL;
    size_t len = 0;
    char *buf = gpa_cli_read_input(&len, cmd, path);
    if (!buf) return -1;
    gpa_error err = {0};
    int rc = gpa_objects_read(out, buf, len, gpa_cli_input_name(path), &err);
    /* the reader keeps what it needs: a 60 MB dump need not stay twice in memory */
    free(buf);
    if (rc != GPA_OK) {
        fprintf(stderr, "gpu-admission %s: %s\n", cmd, err.message);
        return -1;
    }
    return 0;
}

/* The policy directory as the suite will name it: relative to the suite file's directory
 * when both resolve, so the recorded suite still works after the repository moves. */
char *gpa_cli_policies_relative(const char *suite_file, const char *dir)
{
    char sdir[PATH_MAX], pdir[PATH_MAX], tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", suite_file);
    char *slash = strrchr(tmp, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(tmp, sizeof tmp, ".");
    if (!realpath(tmp, sdir) || !realpath(dir, pdir)) return strdup(dir);
    size_t common = 0;
    for (size_t i = 0; sdir[i] && sdir[i] == pdir[i]; i++)
        if (sdir[i] == '/' || (sdir[i + 1] == '\0' && (pdir[i + 1] == '/' || !pdir[i + 1])))
            common = sdir[i] == '/' ? i : i + 1;
    if (strcmp(sdir, pdir) == 0) return strdup(".");
    char out[PATH_MAX * 2] = "";
    size_t n = 0;
    for (const char *c = sdir + common; *c; c++)
        if (*c == '/') n += (size_t)snprintf(out + n, sizeof out - n, "../");
    const char *rest = pdir + common;
    if (*rest == '/') rest++;
    snprintf(out + n, sizeof out - n, "%s", rest);
    return strdup(out);
}
