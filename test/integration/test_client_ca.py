"""test_client_ca.py - --client-ca: only clients presenting a certificate signed by that CA
get answers from /mutate and /validate (403 otherwise); the probes stay open.

Client certificates are made with the openssl CLI, not with the code under test.

Must never: count a refused handshake as a pass for the "accepted" case.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("client_ca")
work = S.tmpdir("gpa-clientca-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ca = os.path.join(certs, "ca.crt")
policies = S.copy_policies(A["src"], os.path.join(work, "policies"))


def openssl(*a):
    subprocess.run(["openssl"] + list(a), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60)


def client_pair(name):
    d = os.path.join(work, name)
    os.makedirs(d)
    p = lambda f: os.path.join(d, f)  # noqa: E731
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", p("ca.key"), "-out", p("ca.crt"), "-days", "2", "-subj", "/CN=" + name,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", p("client.key"), "-out", p("client.csr"), "-subj", "/CN=kube-apiserver")
    with open(p("ext.cnf"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", p("client.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
            "-CAcreateserial", "-out", p("client.crt"), "-days", "2", "-extfile", p("ext.cnf"))
    return p("ca.crt"), p("client.crt"), p("client.key")


trusted_ca, good_crt, good_key = client_pair("apiserver-ca")
_, rogue_crt, rogue_key = client_pair("rogue-ca")
GOOD = S.review_bytes()


def attempt(ctx, path="/mutate"):
    try:
        st, _, data = S.post(srv.port, ctx, path, GOOD)
        return st, data
    except Exception as e:  # a refused handshake
        return "handshake failed: %r" % e, b""


with S.Server(BIN, policies, certs, extra=["--client-ca", trusted_ca]) as srv:
    T.eq(srv.startup.get("client_ca"), True, "startup log says client certificates required")
    st, data = attempt(S.client_ctx(ca))
    T.eq(st, 403, "no client certificate -> 403")
    T.check(b'"code":403' in data, "403 body is a Status")
    st, data = attempt(S.client_ctx(ca, rogue_crt, rogue_key))
    T.eq(st, 403, "client certificate from another CA -> 403")
    st, data = attempt(S.client_ctx(ca, good_crt, good_key))
    T.eq(st, 200, "client certificate signed by --client-ca -> 200")
    T.check(st == 200 and json.loads(data)["response"]["allowed"] is True, "answered")
    st, data = attempt(S.client_ctx(ca, good_crt, good_key), "/validate")
    T.eq(st, 200, "/validate with the trusted client certificate")
    # keep-alive with a verified certificate: the verdict is cached per connection
    c = S.Conn(srv.port, S.client_ctx(ca, good_crt, good_key))
    T.eq([c.request("POST", "/mutate", GOOD)[0] for _ in range(5)], [200] * 5,
         "five requests on one verified connection")
    c.close()
    # probes are for the kubelet, which has no client certificate
    c = S.Conn(srv.port, S.client_ctx(ca))
    T.eq(c.request("GET", "/healthz")[0], 200, "/healthz needs no client certificate")
    c.close()
    T.check((S.metric(srv.metrics(), "gpu_admission_http_errors_total", {"code": "403"}) or 0) >= 2,
            "403s counted")

# an unreadable --client-ca file is a startup error
rc, out, err = S.run(BIN, ["serve", "--policies", policies, "--cert-dir", certs, "--listen",
                           "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--client-ca",
                           os.path.join(work, "missing.crt")], timeout=20)
T.eq(rc, 1, "missing --client-ca file: exit 1")
T.check(b"client-ca" in err, "error names --client-ca")

T.done()
