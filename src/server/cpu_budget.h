/*
 * cpu_budget.h - how many CPUs this process may really use, for the default of `serve
 * --threads`: the CPUs in its affinity mask (a static-CPU-manager cpuset), capped by the
 * tightest CFS quota of its cgroup or any ancestor (cgroup v2 cpu.max, cgroup v1
 * cpu.cfs_quota_us / cpu.cfs_period_us), a fractional quota rounded up. sysconf() alone
 * reports every CPU of the node, so a pod limited to 1 CPU on a 64-core node would start 64
 * workers that the quota then throttles.
 *
 * Must never: fail, crash or read outside the cgroup root because a cgroup file is missing,
 * unreadable or garbage (that file simply sets no limit; the answer is always a thread count
 * in 1..256), or write anything anywhere. The parsers are pure (text in, number out) so tests
 * need no real cgroup.
 */
#ifndef GPA_CPU_BUDGET_H
#define GPA_CPU_BUDGET_H

#include <stddef.h>

#include "gpu_admission/common.h"

#define GPA_CPU_BUDGET_MAX_THREADS 256

/* Where the default thread count came from. */
typedef enum {
    GPA_CPU_SOURCE_CPUS,     /* sysconf(_SC_NPROCESSORS_ONLN): the affinity mask was unreadable */
    GPA_CPU_SOURCE_AFFINITY, /* sched_getaffinity(), no tighter cgroup quota */
    GPA_CPU_SOURCE_CGROUP,   /* a CFS quota below the affinity count */
} gpa_cpu_source;

/* "cpus", "affinity", "cgroup". */
const char *gpa_cpu_source_name(gpa_cpu_source s);

/* Limits below are whole CPUs rounded up (quota 50000 / period 100000 -> 1, 150000/100000 -> 2);
 * 0 means "no limit". A trailing newline (as the kernel writes it) is accepted; anything else
 * that is not exactly the kernel's format is GPA_EPARSE (GPA_ERANGE for numbers beyond 64 bits),
 * and *cpus is then 0. */

/* cgroup v2 cpu.max: "max 100000" or "max" -> 0; "150000 100000" -> 2. A quota without its
 * period, a zero quota or period, signs and trailing junk are errors. */
int gpa_cpu_max_parse(unsigned long long *cpus, const char *text);

/* cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us: quota "-1" -> 0 (the period is then not
 * looked at, may be NULL); otherwise both must be positive numbers. */
int gpa_cfs_quota_parse(unsigned long long *cpus, const char *quota_text, const char *period_text);

/* The cgroup path (starting with '/') from a /proc/self/cgroup text: for v2 the "0::PATH"
 * line, for v1 the line whose comma-separated controller list contains exactly "cpu"
 * ("4:cpu,cpuacct:/kubepods/...", "1:cpu:/"). GPA_EPARSE when there is no such line or the
 * path does not start with '/', GPA_ERANGE when it does not fit in cap bytes. */
int gpa_cgroup_v2_path(char *out, size_t cap, const char *proc_cgroup);
int gpa_cgroup_v1_cpu_path(char *out, size_t cap, const char *proc_cgroup);

/* Reads the limits: v2 <root><path>/cpu.max, v1 <root>/cpu<path>/ and
 * <root>/cpu,cpuacct<path>/cpu.cfs_{quota,period}_us, for the process's cgroup and every
 * ancestor up to the mount root (a container that sees its own cgroup as the mount root finds
 * its limit there). Returns the tightest limit found, 0 if none. root NULL =
 * "/sys/fs/cgroup"; a path with a ".." component is ignored. */
unsigned long long gpa_cgroup_cpu_limit(const char *root, const char *proc_cgroup);

/* min(affinity CPUs, or online CPUs when affinity <= 0; cgroup limit unless 0), clamped to
 * 1..GPA_CPU_BUDGET_MAX_THREADS. source (may be NULL) says which number decided. */
unsigned gpa_cpu_budget_combine(gpa_cpu_source *source, long online, long affinity,
                                unsigned long long cgroup_cpus);

/* The whole answer for this process: sched_getaffinity (sysconf if that fails), the limits
 * of the cgroups named in proc_cgroup_file (NULL = "/proc/self/cgroup") under root (NULL =
 * "/sys/fs/cgroup"). */
unsigned gpa_cpu_budget(gpa_cpu_source *source, const char *root, const char *proc_cgroup_file);

#endif
