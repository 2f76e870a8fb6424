"""test_config.py - `serve` flags and GPU_ADMISSION_* environment twins: defaults, flag wins
over environment, size/duration suffixes, every bad value and every startup failure exits 1
with a message naming the problem, and `serve --help` lists exactly the flags
docs/operations.md documents.

Must never: leave a started server behind (every one is killed).
"""

import os
import re
import socket
import sys

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
    ctx = S.client_ctx(os.path.join(certs, "ca.crt"))
    T.eq(S.post(srv.port, ctx, "/validate", S.review_bytes())[0], 200, "serves from env config")
    T.check(srv.wait_log(lambda o: o.get("level") == "debug" and o.get("decision") == "allowed",
                         timeout=5) is not None,
            "GPU_ADMISSION_LOG_LEVEL=debug logs allowed requests")
    big = b'{"pad":"' + b"x" * 70000 + b'"}'
    st = S.post_refused(srv.port, ctx, "/validate", big)
    T.check(st in (413, "reset"), "64Ki cap: 413 (or reset under the unread body): %r" % st)
    T.eq(S.metric(srv.metrics(), "gpa_http_errors_total", {"code": "413"}), 1.0,
         "64Ki cap enforced (413 counted)")
srv = S.Server(BIN, policies, None, env=env)
srv.cmd = [BIN, "serve", "--max-body=7Mi", "--threads", "1"]
with srv:
    T.eq(srv.startup.get("max_body"), 7 << 20, "flag --max-body=7Mi wins over the environment")
    T.eq(srv.startup.get("threads"), 1, "flag --threads wins")
with S.Server(BIN, policies, certs, env=clean_env()) as srv:
    T.eq(srv.startup.get("max_body"), 7 << 20, "default --max-body is 7Mi")
    T.eq(srv.startup.get("threads"), os.cpu_count(), "default --threads is the CPU count")
    T.check(srv.startup.get("listen_port") > 0 and srv.startup.get("metrics_port") > 0,
            "ephemeral ports reported")

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
