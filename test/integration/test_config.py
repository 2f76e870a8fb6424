"""test_config.py - `serve` flags and GPU_ADMISSION_* environment twins: defaults, flag wins
over environment, size/duration suffixes, every bad value and every startup failure exits 1
with a message naming the problem, the default --threads follows the CPUs the process may
use (affinity under taskset; a real cgroup v1 CFS quota, the server's own cgroup and an
ancestor's, when /sys/fs/cgroup/cpu is writable), and `serve --help` lists exactly the flags
docs/operations.md documents.

Must never: leave a started server behind (every one is killed), or leave the cgroups it
creates behind (moved out of and removed, even when a check fails).
"""

import os
import re
import shlex
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("config")
work = S.tmpdir("gpa-config-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
policies = S.copy_policies(A["src"], os.path.join(work, "policies"))
BASE = ["serve", "--policies", policies, "--cert-dir", certs, "--listen", "127.0.0.1:0",
        "--metrics-listen", "127.0.0.1:0"]


def clean_env(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_ADMISSION_")}
    env.update(kw)
    return env


def fails(argv, what, needle, env=None):
    rc, out, err = S.run(BIN, argv, env=env or clean_env(), timeout=20)
    T.eq(rc, 1, what + ": exit code")
    T.check(needle.encode() in err, "%s: stderr mentions %r: %r" % (what, needle, err[-300:]))


def own_cpu_quota():
    """The tightest CFS quota of this process's cgroups and their ancestors, in whole CPUs
    rounded up (None = none); read here, apart from the server's C code."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    best = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, ctls, path = parts
        v2 = hid == "0" and ctls == ""
        if not v2 and "cpu" not in ctls.split(","):
            continue
        bases = ["/sys/fs/cgroup"] if v2 else ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"]
        comps = [c for c in path.split("/") if c]
        for i in range(len(comps), -1, -1):
            for b in bases:
                d = os.path.join(b, *comps[:i])
                try:
                    if v2:
                        q, p = open(os.path.join(d, "cpu.max")).read().split()
                        if q == "max":
                            continue
                        q, p = int(q), int(p)
                    else:
                        q = int(open(os.path.join(d, "cpu.cfs_quota_us")).read())
                        p = int(open(os.path.join(d, "cpu.cfs_period_us")).read())
                except (OSError, ValueError):
                    continue
                if q > 0 and p > 0:
                    n = -(-q // p)
                    best = n if best is None else min(best, n)
    return best


def expected_threads():
    n = len(os.sched_getaffinity(0))
    q = own_cpu_quota()
    if q is not None:
        n = min(n, q)
    return max(1, min(256, n))


# ---- usage errors (before anything starts)
fails(BASE + ["--bogus"], "unknown flag", "--bogus")
fails(BASE + ["--max-body", "7Mx"], "bad size suffix", "--max-body")
fails(BASE + ["--max-body", "12"], "size below the minimum", "--max-body")
fails(BASE + ["--max-body", "-1"], "negative size", "--max-body")
fails(BASE + ["--shutdown-grace", "5sec"], "bad duration", "--shutdown-grace")
fails(BASE + ["--threads", "0"], "zero threads", "--threads")
fails(BASE + ["--threads", "2x"], "threads not a number", "--threads")
fails(BASE + ["--log-level", "verbose"], "unknown log level", "--log-level")
fails(BASE + ["--listen"], "flag without value", "--listen")
fails(["serve", "--cert-dir", certs], "no --policies", "--policies")
fails(["serve", "--policies", policies], "no certificate", "--cert-dir")
fails(BASE, "bad value in the environment", "GPU_ADMISSION_MAX_BODY",
      env=clean_env(GPU_ADMISSION_MAX_BODY="lots"))
fails(BASE + ["stray"], "positional argument", "stray")

# ---- startup failures
fails(["serve", "--policies", os.path.join(work, "nope"), "--cert-dir", certs, "--listen",
       "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"], "missing policy dir", "policy")
bad_pol = os.path.join(work, "badpol")
os.makedirs(bad_pol)
with open(os.path.join(bad_pol, "x.yaml"), "w") as f:
    f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: x}\n"
            "spec:\n  rules:\n    - name: r\n      place: {pool: missing}\n")
fails(["serve", "--policies", bad_pol, "--cert-dir", certs, "--listen", "127.0.0.1:0",
       "--metrics-listen", "127.0.0.1:0"], "invalid policy set (fail fast)", "policy set invalid")
fails(["serve", "--policies", policies, "--cert-dir", os.path.join(work, "nocerts"), "--listen",
       "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"], "missing certificate",
      "serving certificate unusable")
other = S.make_certs(BIN, os.path.join(work, "other"), ["--new-ca"])
fails(["serve", "--policies", policies, "--tls-cert", os.path.join(certs, "tls.crt"),
       "--tls-key", os.path.join(other, "tls.key"), "--listen", "127.0.0.1:0",
       "--metrics-listen", "127.0.0.1:0"], "key does not match certificate",
      "serving certificate unusable")
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
busy_port = busy.getsockname()[1]
fails(BASE + ["--listen", "127.0.0.1:%d" % busy_port], "address in use", "cannot open the webhook listener")
fails(BASE + ["--metrics-listen", "127.0.0.1:%d" % busy_port], "metrics address in use",
      "cannot open the metrics listener")
busy.close()
fails(BASE + ["--listen", "nonsense"], "listen without port", "listen")
fails(BASE + ["--listen", "127.0.0.1:99999"], "port out of range", "listen")

# ---- environment twins, flags win, suffixes
env = clean_env(GPU_ADMISSION_POLICIES=policies, GPU_ADMISSION_CERT_DIR=certs,
                GPU_ADMISSION_LISTEN="127.0.0.1:0", GPU_ADMISSION_METRICS_LISTEN="127.0.0.1:0",
                GPU_ADMISSION_MAX_BODY="64Ki", GPU_ADMISSION_THREADS="3",
                GPU_ADMISSION_LOG_LEVEL="debug")
srv = S.Server(BIN, policies, None, env=env)
srv.cmd = [BIN, "serve"]  # everything from the environment
with srv:
    T.eq(srv.startup.get("max_body"), 65536, "GPU_ADMISSION_MAX_BODY=64Ki")
    T.eq(srv.startup.get("threads"), 3, "GPU_ADMISSION_THREADS")
    T.eq(srv.startup.get("threads_source"), "flag", "GPU_ADMISSION_THREADS: threads_source")
    ctx = S.client_ctx(os.path.join(certs, "ca.crt"))
    # a pod without GPUs: the 4-GPU default is refused on /validate without its mutation
    # (shared-pool-unplaced), and only allowed requests are logged at debug
    T.eq(S.post(srv.port, ctx, "/validate", S.review_bytes(gpus=0))[0], 200,
         "serves from env config")
    T.check(srv.wait_log(lambda o: o.get("level") == "debug" and o.get("decision") == "allowed",
                         timeout=5) is not None,
            "GPU_ADMISSION_LOG_LEVEL=debug logs allowed requests")
    big = b'{"pad":"' + b"x" * 70000 + b'"}'
    st = S.post_refused(srv.port, ctx, "/validate", big)
    T.check(st in (413, "reset"), "64Ki cap: 413 (or reset under the unread body): %r" % st)
    T.eq(S.metric(srv.metrics(), "gpu_admission_http_errors_total", {"code": "413"}), 1.0,
         "64Ki cap enforced (413 counted)")
srv = S.Server(BIN, policies, None, env=env)
srv.cmd = [BIN, "serve", "--max-body=7Mi", "--threads", "1"]
with srv:
    T.eq(srv.startup.get("max_body"), 7 << 20, "flag --max-body=7Mi wins over the environment")
    T.eq(srv.startup.get("threads"), 1, "flag --threads wins")
with S.Server(BIN, policies, certs, env=clean_env()) as srv:
    T.eq(srv.startup.get("max_body"), 7 << 20, "default --max-body is 7Mi")
    T.eq(srv.startup.get("threads"), expected_threads(),
         "default --threads is the CPUs this process may use")
    T.check(srv.startup.get("listen_port") > 0 and srv.startup.get("metrics_port") > 0,
            "ephemeral ports reported")

# ---- the default --threads follows the CPUs the process may use
AFFINITY = sorted(os.sched_getaffinity(0))
srv = S.Server(BIN, policies, certs, env=clean_env())
srv.cmd = ["taskset", "-c", str(AFFINITY[0])] + srv.cmd  # a static-CPU-manager pod
with srv:
    T.eq(srv.startup.get("threads"), 1, "default --threads under taskset -c %d" % AFFINITY[0])
    if (os.cpu_count() or 1) > 1:
        T.eq(srv.startup.get("threads_source"), "affinity", "threads_source under taskset")
srv = S.Server(BIN, policies, certs, env=clean_env(), extra=["--threads", "3"])
srv.cmd = ["taskset", "-c", str(AFFINITY[0])] + srv.cmd
with srv:
    T.eq(srv.startup.get("threads"), 3, "--threads wins over the affinity default")
    T.eq(srv.startup.get("threads_source"), "flag", "--threads: threads_source")

CG_V1 = "/sys/fs/cgroup/cpu"


def cg_write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def in_cgroup(cg, *extra):
    """A server that moves itself into cgroup `cg` before exec, so it starts under its quota."""
    srv = S.Server(BIN, policies, certs, env=clean_env(), extra=extra)
    srv.cmd = ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % shlex.quote(cg),
               "sh"] + srv.cmd
    return srv


def check_in(srv, cg, what):
    """The server really runs in cg (else a pass would prove nothing)."""
    rel = cg[len(CG_V1):]
    text = open("/proc/%d/cgroup" % srv.proc.pid).read()
    T.check(any(l.split(":", 2)[2] == rel for l in text.splitlines()
                if "cpu" in l.split(":", 2)[1].split(",")),
            "%s: server runs in %s: %r" % (what, rel, text))


def remove_cgroups(dirs):
    """Moves anything left out of the test cgroups (deepest first), then removes them."""
    for d in dirs:
        if not os.path.isdir(d):
            continue
        try:
            for pid in open(os.path.join(d, "cgroup.procs")).read().split():
                try:
                    cg_write(os.path.join(CG_V1, "cgroup.procs"), pid)
                except OSError:
                    pass  # it exited meanwhile
        except OSError:
            pass
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except OSError:
                time.sleep(0.1)
        T.check(not os.path.exists(d), "test cgroup %s removed" % d)


cg = os.path.join(CG_V1, "gpa-test-%d" % os.getpid())
inner = os.path.join(cg, "inner")
made = False
try:
    os.mkdir(cg)
    made = True
except OSError as e:
    print("SKIP: default --threads under a cgroup CPU quota: cannot create %s (%s); this "
          "check needs root and a writable cgroup v1 cpu controller" % (cg, e), flush=True)
if made:
    try:
        cg_write(os.path.join(cg, "cpu.cfs_period_us"), 100000)
        cg_write(os.path.join(cg, "cpu.cfs_quota_us"), 50000)
        with in_cgroup(cg) as srv:
            check_in(srv, cg, "quota 0.5 CPU")
            T.eq(srv.startup.get("threads"), 1, "default --threads under a 0.5 CPU quota")
            if (os.cpu_count() or 1) > 1:
                T.eq(srv.startup.get("threads_source"), "cgroup", "threads_source under a quota")
        with in_cgroup(cg, "--threads", "4") as srv:
            T.eq(srv.startup.get("threads"), 4, "--threads wins over the cgroup default")
        if len(AFFINITY) >= 2:
            cg_write(os.path.join(cg, "cpu.cfs_quota_us"), 150000)
            with in_cgroup(cg) as srv:
                check_in(srv, cg, "quota 1.5 CPU")
                T.eq(srv.startup.get("threads"), 2, "default --threads under a 1.5 CPU quota")
        else:
            print("SKIP: 1.5 CPU quota check needs 2 CPUs, this process may use %d"
                  % len(AFFINITY), flush=True)
        # The parent's quota binds a child cgroup that has none of its own.
        cg_write(os.path.join(cg, "cpu.cfs_quota_us"), 50000)
        os.mkdir(inner)
        cg_write(os.path.join(inner, "cpu.cfs_quota_us"), -1)
        with in_cgroup(inner) as srv:
            check_in(srv, inner, "child of a 0.5 CPU cgroup")
            T.eq(srv.startup.get("threads"), 1, "default --threads under a parent's 0.5 CPU quota")
    finally:
        remove_cgroups([inner, cg])

# ---- --help lists the flags; the docs document every one of them
rc, out, err = S.run(BIN, ["serve", "--help"])
T.eq(rc, 0, "--help exits 0")
flags = sorted(set(re.findall(r"--[a-z][a-z-]+", out.decode())) - {"--help"})
T.check(len(flags) >= 14, "help lists the flags: %r" % flags)
ops = open(os.path.join(A["src"], "docs", "operations.md")).read()
for f in flags:
    T.check(f in ops, "docs/operations.md documents " + f)
    env_name = "GPU_ADMISSION_" + f[2:].upper().replace("-", "_")
    T.check(env_name in ops, "docs/operations.md documents " + env_name)

T.done()
