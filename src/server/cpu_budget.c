/*
 * cpu_budget.c - the CPUs this process may really use (affinity mask capped by the tightest
 * cgroup CFS quota of its cgroup and ancestors), for the default of `serve --threads`.
 *
 * Must never: treat a missing, unreadable or malformed cgroup file as anything but "no limit
 * from this file", block on a special file, read outside the cgroup root (".." in a path), or
 * return a thread count outside 1..256.
 */
#include "cpu_budget.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *gpa_cpu_source_name(gpa_cpu_source s)
{
    switch (s) {
    case GPA_CPU_SOURCE_CPUS:
        return "cpus";
    case GPA_CPU_SOURCE_AFFINITY:
        return "affinity";
    case GPA_CPU_SOURCE_CGROUP:
        return "cgroup";
    }
    return "cpus";
}

/* Digits only (no sign, no space: the kernel writes neither), at least one. */
static int parse_u64(uint64_t *v, const char **p)
{
    const char *s = *p;
    if (*s < '0' || *s > '9') return GPA_EPARSE;
    uint64_t acc = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (acc > (UINT64_MAX - d) / 10) return GPA_ERANGE;
        acc = acc * 10 + d;
    }
    *v = acc;
    *p = s;
    return GPA_OK;
}

/* The end of a kernel-written value: nothing, or one newline. */
static bool at_end(const char *s)
{
    return s[0] == '\0' || (s[0] == '\n' && s[1] == '\0');
}

/* ceil(quota / period) without the overflow of (quota + period - 1). */
static unsigned long long ceil_div(uint64_t quota, uint64_t period)
{
    return quota / period + (quota % period != 0);
}

int gpa_cpu_max_parse(unsigned long long *cpus, const char *text)
{
    *cpus = 0;
    if (!text) return GPA_EPARSE;
    const char *s = text;
    bool unlimited = strncmp(s, "max", 3) == 0;
    uint64_t quota = 0, period = 0;
    int rc;
    if (unlimited) {
        s += 3;
        if (at_end(s)) return GPA_OK; /* "max" alone: the period is irrelevant */
    } else if ((rc = parse_u64(&quota, &s)) != GPA_OK) {
        return rc;
    }
    if (*s++ != ' ') return GPA_EPARSE;
    if ((rc = parse_u64(&period, &s)) != GPA_OK) return rc;
    if (!at_end(s) || period == 0) return GPA_EPARSE;
    if (unlimited) return GPA_OK;
    if (quota == 0) return GPA_EPARSE; /* the kernel refuses it; never a real limit */
    *cpus = ceil_div(quota, period);
    return GPA_OK;
}

int gpa_cfs_quota_parse(unsigned long long *cpus, const char *quota_text, const char *period_text)
{
    *cpus = 0;
    if (!quota_text) return GPA_EPARSE;
    if (strncmp(quota_text, "-1", 2) == 0 && at_end(quota_text + 2)) return GPA_OK;
    uint64_t quota, period;
    const char *s = quota_text;
    int rc = parse_u64(&quota, &s);
    if (rc) return rc;
    if (!at_end(s) || quota == 0) return GPA_EPARSE;
    if (!period_text) return GPA_EPARSE;
    s = period_text;
    if ((rc = parse_u64(&period, &s)) != GPA_OK) return rc;
    if (!at_end(s) || period == 0) return GPA_EPARSE;
    *cpus = ceil_div(quota, period);
    return GPA_OK;
}

/* Does the comma-separated list [list, list+len) hold exactly `name`? */
static bool has_controller(const char *list, size_t len, const char *name)
{
    size_t nlen = strlen(name);
    const char *end = list + len;
    while (list < end) {
        const char *comma = memchr(list, ',', (size_t)(end - list));
        const char *tok_end = comma ? comma : end;
        if ((size_t)(tok_end - list) == nlen && memcmp(list, name, nlen) == 0) return true;
        list = comma ? comma + 1 : end;
    }
    return false;
}

/* Finds the first "ID:CONTROLLERS:PATH" line that v2 (ID 0, no controllers) or the v1 cpu
 * controller wants, and copies its PATH. */
static int find_path(char *out, size_t cap, const char *text, bool v2)
{
    if (cap) out[0] = '\0';
    if (!text) return GPA_EPARSE;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const char *next = nl ? nl + 1 : end;
        const char *p = line;
        bool zero = *p == '0';
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == line || p >= end || *p != ':') {
            line = next;
            continue;
        }
        zero = zero && p == line + 1;
        const char *ctl = ++p;
        const char *colon = memchr(ctl, ':', (size_t)(end - ctl));
        if (!colon) {
            line = next;
            continue;
        }
        size_t ctl_len = (size_t)(colon - ctl);
        bool match = v2 ? zero && ctl_len == 0 : !zero && has_controller(ctl, ctl_len, "cpu");
        if (!match) {
            line = next;
            continue;
        }
        const char *path = colon + 1;
        size_t len = (size_t)(end - path);
        if (len == 0 || path[0] != '/') return GPA_EPARSE;
        if (len >= cap) return GPA_ERANGE;
        memcpy(out, path, len);
        out[len] = '\0';
        return GPA_OK;
    }
    return GPA_EPARSE;
}

int gpa_cgroup_v2_path(char *out, size_t cap, const char *proc_cgroup)
{
    return find_path(out, cap, proc_cgroup, true);
}

int gpa_cgroup_v1_cpu_path(char *out, size_t cap, const char *proc_cgroup)
{
    return find_path(out, cap, proc_cgroup, false);
}

/* Reads a regular file into buf (NUL-terminated). -1 if it cannot be opened, is not a
 * regular file (a directory, a FIFO that would block) or does not fit: cgroup values are a
 * few bytes, so a bigger file is not one. */
static ssize_t read_small(char *buf, size_t cap, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    size_t len = 0;
    for (;;) {
        if (len == cap - 1) { /* full: is there more? */
            char extra;
            ssize_t n = read(fd, &extra, 1);
            if (n < 0 && errno == EINTR) continue;
            close(fd);
            if (n != 0) return -1;
            break;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0) {
            close(fd);
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

/* "/a//b/./c/" -> "/a/b/c" ("" for the root). false when a ".." would climb out of the root
 * or the result does not fit. */
static bool normalize(char *out, size_t cap, const char *path)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0) break;
        if (n == 2 && p[0] == '.' && p[1] == '.') return false;
        if (!(n == 1 && p[0] == '.')) {
            if (len + 1 + n >= cap) return false;
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
            out[len] = '\0';
        }
        p += n;
    }
    return true;
}

static unsigned long long tighter(unsigned long long have, unsigned long long found)
{
    if (found == 0) return have;
    return have == 0 || found < have ? found : have;
}

/* Limit set in one directory (0 = none). */
static unsigned long long dir_limit(const char *dir, bool v2)
{
    char file[PATH_MAX], a[64], b[64];
    unsigned long long cpus = 0;
    if (v2) {
        if (snprintf(file, sizeof file, "%s/cpu.max", dir) >= (int)sizeof file) return 0;
        if (read_small(a, sizeof a, file) < 0) return 0;
        if (gpa_cpu_max_parse(&cpus, a) != GPA_OK) return 0;
        return cpus;
    }
    if (snprintf(file, sizeof file, "%s/cpu.cfs_quota_us", dir) >= (int)sizeof file) return 0;
    if (read_small(a, sizeof a, file) < 0) return 0;
    if (snprintf(file, sizeof file, "%s/cpu.cfs_period_us", dir) >= (int)sizeof file) return 0;
    bool have_period = read_small(b, sizeof b, file) >= 0;
    if (gpa_cfs_quota_parse(&cpus, a, have_period ? b : NULL) != GPA_OK) return 0;
    return cpus;
}

/* The tightest limit in base+path and each ancestor up to base itself. */
static unsigned long long walk(const char *base, const char *path, bool v2)
{
    char norm[PATH_MAX], dir[PATH_MAX];
    if (!normalize(norm, sizeof norm, path)) return 0;
    unsigned long long best = 0;
    for (;;) {
        if (snprintf(dir, sizeof dir, "%s%s", base, norm) < (int)sizeof dir)
            best = tighter(best, dir_limit(dir, v2));
        if (!norm[0]) break;
        *strrchr(norm, '/') = '\0';
    }
    return best;
}

unsigned long long gpa_cgroup_cpu_limit(const char *root, const char *proc_cgroup)
{
    if (!root) root = "/sys/fs/cgroup";
    char path[PATH_MAX], base[PATH_MAX];
    unsigned long long best = 0;
    if (gpa_cgroup_v2_path(path, sizeof path, proc_cgroup) == GPA_OK &&
        snprintf(base, sizeof base, "%s", root) < (int)sizeof base)
        best = tighter(best, walk(base, path, true));
    if (gpa_cgroup_v1_cpu_path(path, sizeof path, proc_cgroup) == GPA_OK) {
        /* Either name can be the mount (the other often a symlink to it): reading the same
         * files twice changes nothing. */
        static const char *const subs[] = {"cpu", "cpu,cpuacct"};
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (snprintf(base, sizeof base, "%s/%s", root, subs[i]) < (int)sizeof base)
                best = tighter(best, walk(base, path, false));
    }
    return best;
}

unsigned gpa_cpu_budget_combine(gpa_cpu_source *source, long online, long affinity,
                                unsigned long long cgroup_cpus)
{
    gpa_cpu_source src = affinity > 0 ? GPA_CPU_SOURCE_AFFINITY : GPA_CPU_SOURCE_CPUS;
    unsigned long long n = affinity > 0 ? (unsigned long long)affinity
                           : online > 0 ? (unsigned long long)online
                                        : 1;
    if (cgroup_cpus > 0 && cgroup_cpus < n) {
        n = cgroup_cpus;
        src = GPA_CPU_SOURCE_CGROUP;
    }
    if (n > GPA_CPU_BUDGET_MAX_THREADS) n = GPA_CPU_BUDGET_MAX_THREADS;
    if (source) *source = src;
    return (unsigned)n;
}

/* CPUs in the affinity mask; 0 if it cannot be read. The mask can be larger than the default
 * cpu_set_t (1024 CPUs), so grow until the kernel stops saying EINVAL. */
static long affinity_count(void)
{
    for (int ncpus = 1024; ncpus <= (1 << 16); ncpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(ncpus);
        if (!set) return 0;
        size_t size = CPU_ALLOC_SIZE(ncpus);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            long n = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return n;
        }
        int e = errno;
        CPU_FREE(set);
        if (e != EINVAL) return 0;
    }
    return 0;
}

unsigned gpa_cpu_budget(gpa_cpu_source *source, const char *root, const char *proc_cgroup_file)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long affinity = affinity_count();
    unsigned long long limit = 0;
    size_t cap = 64 * 1024;
    char *text = malloc(cap);
    if (text) {
        /* Too big to be /proc/self/cgroup: then it is not one, no limit from it. */
        if (read_small(text, cap, proc_cgroup_file ? proc_cgroup_file : "/proc/self/cgroup") >= 0)
            limit = gpa_cgroup_cpu_limit(root, text);
        free(text);
    }
    return gpa_cpu_budget_combine(source, online, affinity, limit);
}
