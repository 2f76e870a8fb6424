/*
 * policy_dir.c - gpa_policy_load_dir: the policy files of one directory, read the way a
 * mounted ConfigMap needs (regular *.yaml / *.yml files directly inside, symlinks followed,
 * dot-entries such as ..data skipped, lexical order), each capped in size, then handed to
 * gpa_policy_load_sources. The only I/O in the core; never reads outside the directory's
 * own entries and never blocks on a FIFO or device that happens to carry a policy name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy_loader.h"

static bool policy_name(const char *name)
{
    size_t n = strlen(name);
    if (name[0] == '.')
        return false; /* dot-files and the ConfigMap ..data / ..2024_... machinery */
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(name + n - 4, ".yml") == 0);
}

/* Reads at most GPA_POLICY_MAX_FILE + 1 bytes: enough for the loader to say "too large". */
static int read_policy_file(const char *path, char **data, size_t *len, bool *skip, gpa_error *err)
{
    *skip = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return gpa_fail(err, GPA_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gpa_fail(err, GPA_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        *skip = true;
        return GPA_OK;
    }
    size_t cap = GPA_POLICY_MAX_FILE + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    while (n < cap) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return gpa_fail(err, GPA_EIO, "%s: cannot read: %s", path, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return GPA_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gpa_policy_load_dir(gpa_policy **out, const char *dir, gpa_error *err)
{
    if (!out || !dir)
        return gpa_fail(err, GPA_EINVAL, "gpa_policy_load_dir: no output or directory");
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return gpa_fail(err, GPA_EIO, "cannot open policy directory %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = GPA_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!policy_name(de->d_name)) continue;
        if (n == GPA_POLICY_MAX_FILES) {
            rc = gpa_fail(err, GPA_EPOLICY, "%s: more than %d policy files", dir,
                          GPA_POLICY_MAX_FILES);
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) {
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                break;
            }
            names = nn;
            cap = nc;
        }
        size_t dl = strlen(dir);
        bool slash = dl > 0 && dir[dl - 1] == '/';
        size_t need = dl + strlen(de->d_name) + 2;
        if (!(names[n] = malloc(need))) {
            rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
            break;
        }
        snprintf(names[n], need, "%s%s%s", dir, slash ? "" : "/", de->d_name);
        n++;
    }
    closedir(d);
    if (rc == GPA_OK && n) qsort(names, n, sizeof *names, cmp_str);
    gpa_policy_source *srcs = n ? calloc(n, sizeof *srcs) : NULL;
    size_t ns = 0;
    if (rc == GPA_OK && n && !srcs) rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && rc == GPA_OK; i++) {
        char *data = NULL;
        size_t len = 0;
        bool skip = false;
        rc = read_policy_file(names[i], &data, &len, &skip, err);
        if (rc == GPA_OK && !skip) srcs[ns++] = (gpa_policy_source){names[i], data, len};
    }
    if (rc == GPA_OK && ns == 0)
        rc = gpa_fail(err, GPA_EPOLICY, "%s: no *.yaml or *.yml policy files", dir);
    if (rc == GPA_OK) rc = gpa_policy_load_sources(out, srcs, ns, err);
    for (size_t i = 0; i < ns; i++)
        free((char *)srcs[i].data);
    free(srcs);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
