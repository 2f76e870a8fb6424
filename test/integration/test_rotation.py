"""test_rotation.py - certificate rotation without restart, under load.

A load generator keeps POSTing over keep-alive connections while the serving pair is
rotated the way the kubelet updates a Secret volume (..data symlink swap): zero failed
requests, a NEW client sees the new certificate; then a broken pair (certificate and key
that do not match, then garbage) is published: still zero failures, the previous
certificate is still served, and gpu_admission_cert_reloads_total{result="failure"} counts it.

Must never: pass without having seen the new fingerprint on a fresh handshake.
"""

import os
import shutil
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("rotation")
work = S.tmpdir("gpa-rotation-")

# Pair A, then pair B signed by the same CA (certs reuses ca.crt/ca.key in its --out dir).
dir_a = S.make_certs(BIN, os.path.join(work, "a"))
dir_b = os.path.join(work, "b")
shutil.copytree(dir_a, dir_b)
S.make_certs(BIN, dir_b)
dir_rsa = os.path.join(work, "rsa")  # an RSA-2048 serving key (cert-manager's default)
shutil.copytree(dir_a, dir_rsa)
S.make_certs(BIN, dir_rsa, ["--key-type", "rsa"])
fp_a = S.fingerprint_of_pem(os.path.join(dir_a, "tls.crt"))
fp_b = S.fingerprint_of_pem(os.path.join(dir_b, "tls.crt"))
T.check(fp_a != fp_b, "two different serving certificates")
ca = os.path.join(dir_a, "ca.crt")


def pair(d, cert_from=None):
    return {"tls.crt": open(os.path.join(cert_from or d, "tls.crt"), "rb").read(),
            "tls.key": open(os.path.join(d, "tls.key"), "rb").read()}


secret = S.AtomicDir(os.path.join(work, "secret"))
secret.publish(pair(dir_a))
policies = S.copy_policies(A["src"], os.path.join(work, "policies"))


def fresh_fingerprint(srv, ctx):
    c = S.Conn(srv.port, ctx)
    c.connect()
    fp = c.fingerprint
    c.close()
    return fp


def wait_fingerprint(srv, ctx, want, timeout=10):
    deadline = time.monotonic() + timeout
    fp = None
    while time.monotonic() < deadline:
        fp = fresh_fingerprint(srv, ctx)
        if fp == want:
            return fp
        time.sleep(0.05)
    return fp


with S.Server(BIN, policies, secret.path) as srv:
    ctx = S.client_ctx(ca)
    T.eq(fresh_fingerprint(srv, ctx), fp_a, "serves pair A at start")
    load = S.Load(srv.port, ctx, S.review_bytes(), threads=4).start()
    time.sleep(1.0)
    n0 = load.count()
    T.check(n0 > 20, "load generator is running (%d ok)" % n0)

    # ---- good rotation
    secret.publish(pair(dir_b))
    T.eq(wait_fingerprint(srv, ctx, fp_b), fp_b, "a new client sees pair B after rotation")
    line = srv.wait_log(lambda o: o.get("msg") == "serving certificate rotated")
    T.check(line is not None and line.get("fingerprint") == fp_b,
            "rotation logged with the new fingerprint: %r" % line)
    m = srv.metrics()
    T.eq(S.metric(m, "gpu_admission_cert_reloads_total", {"result": "success"}), 1.0, "success counted")
    time.sleep(0.5)

    # ---- broken rotation: B's certificate with A's key
    before = S.metric(srv.metrics(), "gpu_admission_cert_reloads_total", {"result": "failure"})
    secret.publish(pair(dir_a, cert_from=dir_b))
    line = srv.wait_log(lambda o: o.get("msg") == "certificate reload failed; previous certificate kept")
    T.check(line is not None, "broken pair logged as failed")
    T.eq(fresh_fingerprint(srv, ctx), fp_b, "pair B still served after a mismatched pair")
    m = srv.metrics()
    T.eq(S.metric(m, "gpu_admission_cert_reloads_total", {"result": "failure"}), before + 1,
         "mismatched pair counted as a failure")
    T.check(srv.http_get("/readyz")[0] == 200, "still ready after a broken rotation")

    # ---- garbage PEM
    srv.settle_logs()
    n_fail = len([o for o in srv.logs() if o.get("msg", "").startswith("certificate reload failed")])
    secret.publish({"tls.crt": b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
                    "tls.key": b"garbage"})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(
            [o for o in srv.logs() if o.get("msg", "").startswith("certificate reload failed")]) <= n_fail:
        time.sleep(0.05)
    T.eq(fresh_fingerprint(srv, ctx), fp_b, "pair B still served after a garbage pair")
    T.eq(S.metric(srv.metrics(), "gpu_admission_cert_reloads_total", {"result": "failure"}), before + 2,
         "garbage pair counted as a failure")

    # ---- to an RSA pair (another key type) and TLS 1.2 still negotiates with it
    fp_rsa = S.fingerprint_of_pem(os.path.join(dir_rsa, "tls.crt"))
    secret.publish(pair(dir_rsa))
    T.eq(wait_fingerprint(srv, ctx, fp_rsa), fp_rsa, "rotation to an RSA serving key")
    ctx12 = S.client_ctx(ca)
    ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
    st, _, _ = S.post(srv.port, ctx12, "/mutate", S.review_bytes())
    T.eq(st, 200, "TLS 1.2 client with the RSA pair (ECDHE-RSA)")

    # ---- and back to a good pair (A): recovers
    secret.publish(pair(dir_a))
    T.eq(wait_fingerprint(srv, ctx, fp_a), fp_a, "rotating back to pair A works after failures")
    time.sleep(0.5)
    load.stop()
    T.check(load.count() > n0 + 50, "load kept flowing through the rotations (%d ok)" % load.count())
    T.eq(load.failures[:5], [], "zero failed requests during rotations")
    T.check(srv.alive(), "server alive")
    srv.settle_logs()
    not_after = [o for o in srv.logs() if o.get("msg") == "serving certificate rotated"][-1]["not_after"]
    T.eq(S.metric(srv.metrics(), "gpu_admission_cert_expiry_timestamp_seconds"), float(not_after),
         "expiry metric follows the served certificate")

T.done()
