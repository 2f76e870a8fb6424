"""test_endpoints.py - every endpoint of a real `gpu-admission serve` over real TLS, the
byte-for-byte agreement with `gpu-admission review`, and hostile input: each bad request
asserts its status code AND that the server still answers a good review afterwards.

Must never: talk to anything but the server it started on 127.0.0.1, or pass without
having sent every case.
"""

import json
import warnings
import os
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

warnings.simplefilter("ignore", DeprecationWarning)
A = S.args()
BIN = A["bin"]
T = S.Checks("endpoints")
work = S.tmpdir("gpa-endpoints-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ca = os.path.join(certs, "ca.crt")
policies = S.copy_policies(A["src"], os.path.join(work, "policies"))

GOOD = S.review_bytes()


def still_answers(srv, ctx, what):
    try:
        st, _, data = S.post(srv.port, ctx, "/mutate", GOOD)
        ok = st == 200 and json.loads(data)["response"]["uid"] == S.review()["request"]["uid"]
    except Exception as e:
        ok = False
        print("  after %s: %r" % (what, e))
    T.check(ok and srv.alive(), "server still answers after: " + what)


def bad_case(srv, ctx, what, body, want, path="/mutate", headers=None, method="POST"):
    try:
        c = S.Conn(srv.port, ctx)
        st, hdrs, data = c.request(method, path, body, headers)
        c.close()
    except Exception as e:
        st, hdrs, data = None, {}, repr(e).encode()
    T.eq(st, want, what + " status")
    if st and st >= 400:
        T.eq(hdrs.get("content-type"), "application/json", what + " content-type")
        try:
            obj = json.loads(data)
            T.check(obj.get("kind") == "Status" and obj.get("code") == want,
                    what + " body is a Status with code %d: %r" % (want, data[:200]))
        except ValueError:
            T.check(False, what + " body is JSON: %r" % data[:200])
    still_answers(srv, ctx, what)
    return st, hdrs, data


def raw_case(srv, ctx, what, payload, want, tls=True, timeout=5):
    try:
        if tls:
            raw = S.raw_tls(srv.port, ctx, payload, timeout=timeout)
        else:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
            s.sendall(payload)
            raw = b""
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    raw += d
            except (socket.timeout, ConnectionError):
                pass
            s.close()
    except (ssl.SSLError, ConnectionError, socket.timeout) as e:
        raw = b""
        print("  %s: %r" % (what, e))
    T.eq(S.status_of(raw), want, what + " status")
    still_answers(srv, ctx, what)
    return raw


with S.Server(BIN, policies, certs, extra=["--idle-timeout", "3s"]) as srv:
    ctx = S.client_ctx(ca)

    # ---------------------------------------------------------------- endpoints
    st, body = srv.http_get("/healthz")
    T.eq((st, body), (200, "ok\n"), "metrics port /healthz")
    st, body = srv.http_get("/readyz")
    T.eq((st, body), (200, "ok\n"), "metrics port /readyz")
    st, body = srv.http_get("/nope")
    T.eq(st, 404, "metrics port unknown path")
    c = S.Conn(srv.port, ctx)
    T.eq(c.request("GET", "/healthz")[0], 200, "TLS port /healthz")
    T.eq(c.request("GET", "/readyz")[0], 200, "TLS port /readyz")
    c.close()

    # ---------------------------------------------------------------- round trip vs CLI
    rev_path = os.path.join(work, "review.json")
    with open(rev_path, "wb") as f:
        f.write(GOOD)
    for hook in ("mutate", "validate"):
        rc, cli_out, cli_err = S.run(BIN, ["review", hook, "--policies", policies, rev_path])
        st, hdrs, data = S.post(srv.port, ctx, "/" + hook, GOOD)
        T.eq(st, 200, hook + " status")
        T.eq(hdrs.get("content-type"), "application/json", hook + " content-type")
        T.check(rc in (0, 2), "review %s CLI ran: rc=%s %s" % (hook, rc, cli_err[-300:]))
        T.check(data == cli_out.rstrip(b"\n"),
                "%s response byte-equal to `review %s`:\n server %r\n cli    %r"
                % (hook, hook, data[:300], cli_out[:300]))
    resp = json.loads(S.post(srv.port, ctx, "/mutate", GOOD)[2])["response"]
    T.check(resp["allowed"] is True and "patch" in resp and resp["patchType"] == "JSONPatch",
            "mutate of a 4-GPU training pod returns a JSONPatch")

    # the review docs/operations.md tells users to curl gets a patch back
    doc_review = open(os.path.join(A["src"], "test", "integration", "reviews", "training-pod.json"),
                      "rb").read()
    st, _, data = S.post(srv.port, ctx, "/mutate", doc_review)
    T.check(st == 200 and "patch" in json.loads(data)["response"],
            "the documented curl example (reviews/training-pod.json) yields a patch")
    T.check("reviews/training-pod.json" in open(os.path.join(A["src"], "docs", "operations.md")).read(),
            "docs/operations.md uses reviews/training-pod.json")

    # query strings as the API server sends them
    st, _, data = S.post(srv.port, ctx, "/mutate?timeout=10s", GOOD)
    T.eq(st, 200, "query string ?timeout=10s accepted")

    # v1beta1 in, v1beta1 out
    st, _, data = S.post(srv.port, ctx, "/validate", S.review_bytes(api="admission.k8s.io/v1beta1"))
    T.eq(st, 200, "v1beta1 status")
    T.eq(json.loads(data).get("apiVersion"), "admission.k8s.io/v1beta1", "v1beta1 answered as v1beta1")

    # keep-alive: many requests over one connection, one handshake
    c = S.Conn(srv.port, ctx)
    n_ok = sum(1 for i in range(50) if c.request("POST", "/mutate", GOOD)[0] == 200)
    T.eq(n_ok, 50, "50 requests on one keep-alive connection")
    T.check(c.c is not None, "connection still open after 50 requests (keep-alive)")
    c.close()

    # charset parameter and case-insensitive media type
    bad_case(srv, ctx, "charset parameter", GOOD, 200,
             headers={"Content-Type": "application/json; charset=utf-8"})
    bad_case(srv, ctx, "upper-case media type", GOOD, 200,
             headers={"Content-Type": "Application/JSON"})

    # ---------------------------------------------------------------- bad input
    bad_case(srv, ctx, "truncated JSON", GOOD[: len(GOOD) // 2], 400)
    bad_case(srv, ctx, "empty body", b"", 400)
    bad_case(srv, ctx, "body is null", b"null", 400)
    bad_case(srv, ctx, "body is an array", b"[1,2,3]", 400)
    bad_case(srv, ctx, "body is a string", b'"AdmissionReview"', 400)
    r = S.review()
    r["request"] = "not an object"
    bad_case(srv, ctx, "request is a string", json.dumps(r).encode(), 400)
    r = S.review()
    r["request"]["uid"] = 12345
    bad_case(srv, ctx, "uid is a number", json.dumps(r).encode(), 400)
    r = S.review()
    del r["request"]["uid"]
    bad_case(srv, ctx, "no request.uid", json.dumps(r).encode(), 400)
    r = S.review()
    del r["request"]
    bad_case(srv, ctx, "no request at all", json.dumps(r).encode(), 400)
    bad_case(srv, ctx, "NUL byte inside the JSON", GOOD[:20] + b"\x00" + GOOD[20:], 400)
    bad_case(srv, ctx, "deeply nested arrays", b"[" * 100000 + b"]" * 100000, 400)
    bad_case(srv, ctx, "trailing garbage after the JSON", GOOD + b"}}garbage", 400)
    bad_case(srv, ctx, "text/plain content type", GOOD, 415, headers={"Content-Type": "text/plain"})
    bad_case(srv, ctx, "no content type", GOOD, 415, headers={"Content-Type": ""})
    bad_case(srv, ctx, "application/jsonx", GOOD, 415, headers={"Content-Type": "application/jsonx"})
    bad_case(srv, ctx, "unknown path", GOOD, 404, path="/mutate/extra")
    bad_case(srv, ctx, "unknown path /", None, 404, path="/", method="GET")
    st, hdrs, _ = bad_case(srv, ctx, "GET /mutate", None, 405, method="GET")
    T.eq(hdrs.get("allow"), "POST", "405 carries Allow: POST")
    bad_case(srv, ctx, "PUT /validate", GOOD, 405, path="/validate", method="PUT")
    bad_case(srv, ctx, "DELETE /mutate", None, 405, method="DELETE")

    # 8 MiB with Content-Length: refused on the headers alone, before any body byte is sent
    t0 = time.monotonic()
    raw = raw_case(srv, ctx, "8 MiB Content-Length (headers only)",
                   b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 8388608\r\n\r\n", 413)
    T.check(time.monotonic() - t0 < 2.5, "413 came without waiting for the body")
    # and a client that does send all 8 MiB: refused on Content-Length as well; the kernel may
    # reset the connection under the unread body before the client reads the 413
    before = S.metric(srv.metrics(), "gpu_admission_http_errors_total", {"code": "413"}) or 0
    big = b'{"x":"' + b"a" * (8 << 20) + b'"}'
    try:
        st = S.post(srv.port, ctx, "/mutate", big)[0]
    except (ConnectionError, ssl.SSLError, OSError):
        st = "reset"
    T.check(st in (413, "reset"), "8 MiB body sent in full: 413 or reset, got %r" % st)
    T.eq(S.metric(srv.metrics(), "gpu_admission_http_errors_total", {"code": "413"}), before + 1,
         "8 MiB body answered 413 by the server")
    still_answers(srv, ctx, "8 MiB body sent in full")

    # chunked: under the cap works; over the cap is cut off once the cap is passed
    chunked_hdr = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    body = b"".join(b"%x\r\n%s\r\n" % (len(GOOD[i:i + 100]), GOOD[i:i + 100])
                    for i in range(0, len(GOOD), 100)) + b"0\r\n\r\n"
    raw = raw_case(srv, ctx, "chunked body under the cap", chunked_hdr + body, 200)
    T.check(b'"uid":"11111111-2222-3333-4444-555555555555"' in raw, "chunked review answered")
    chunk = b"%x\r\n" % 65536 + b"a" * 65536 + b"\r\n"
    over = chunked_hdr + chunk * ((7 << 20) // 65536 + 2) + b"0\r\n\r\n"  # just over 7 MiB
    before = S.metric(srv.metrics(), "gpu_admission_http_errors_total", {"code": "413"}) or 0
    raw_case(srv, ctx, "chunked body just over the cap", over, 413, timeout=20)
    # a sender that never stops: the server must cut it off, not read 64 MiB
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    t = ctx.wrap_socket(s, server_hostname="localhost")
    sent = 0
    try:
        t.sendall(chunked_hdr)
        while sent < (64 << 20):
            t.sendall(chunk)
            sent += 65536
    except (ssl.SSLError, ConnectionError, socket.timeout, BrokenPipeError, OSError):
        pass
    t.close()
    T.check(sent < (24 << 20), "endless chunked body cut off after %d bytes (cap 7 MiB)" % sent)
    after = S.metric(srv.metrics(), "gpu_admission_http_errors_total", {"code": "413"}) or 0
    T.check(after >= before + 2, "413s counted in gpu_admission_http_errors_total (%s -> %s)" % (before, after))
    still_answers(srv, ctx, "endless chunked body")

    # protocol-level abuse
    raw_case(srv, ctx, "HTTP/1.0 request",
             b"POST /mutate HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
             % (len(GOOD), GOOD), 200)
    raw_case(srv, ctx, "bad Content-Length",
             b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: abc\r\n\r\n", 400)
    hdr = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    raw_case(srv, ctx, "Content-Length overflowing 64 bits",
             hdr + b"Content-Length: 99999999999999999999999\r\n\r\n{}", 413)
    raw_case(srv, ctx, "negative Content-Length", hdr + b"Content-Length: -5\r\n\r\n{}", 400)
    raw_case(srv, ctx, "Content-Length and chunked together (no smuggling)",
             hdr + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
    # two pipelined requests in one write: both answered, in order
    one = hdr + b"Content-Length: %d\r\n\r\n%s" % (len(GOOD), GOOD)
    raw = S.raw_tls(srv.port, ctx, one + one.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n", 1))
    T.eq(raw.count(b"HTTP/1.1 200 OK"), 2, "two pipelined requests answered")
    still_answers(srv, ctx, "pipelined requests")
    raw_case(srv, ctx, "request line garbage", b"\x01\x02 GARBAGE\r\n\r\n", 400)
    # headers up to the documented ~15 KiB are fine (a proxy adding tracing headers)
    bad_case(srv, ctx, "12 KiB of request headers", GOOD, 200, headers={"X-Big": "b" * 12288})
    # libmicrohttpd answers 431 once its 32 KiB header buffer is full and closes; the bytes
    # the client is still sending then make the kernel reset the connection, which can
    # overtake the 431 on a slow (sanitized) server. Either way: refused, server unharmed.
    try:
        raw = S.raw_tls(srv.port, ctx, b"POST /mutate HTTP/1.1\r\nHost: x\r\nX-Big: " +
                        b"b" * 100000 + b"\r\n\r\n")
        st = S.status_of(raw) or "reset"
    except (ssl.SSLError, ConnectionError):
        st = "reset"
    T.check(st in (431, "reset"), "huge header (100 KB): 431 or reset, got %r" % st)
    T.check(st != 200, "huge header never answered 200")
    still_answers(srv, ctx, "huge header")
    raw_case(srv, ctx, "plaintext HTTP to the TLS port",
             b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", None, tls=False)
    raw_case(srv, ctx, "TLS garbage bytes", os.urandom(4096), None, tls=False)
    raw_case(srv, ctx, "TLS record header then nothing", b"\x16\x03\x01\xff\xff", None, tls=False,
             timeout=6)
    # slowloris: a request that never finishes is closed by --idle-timeout (3s here)
    t0 = time.monotonic()
    raw = raw_case(srv, ctx, "slowloris partial request", b"POST /mutate HTTP/1.1\r\nHost: x\r\n",
                   None, timeout=15)
    dt = time.monotonic() - t0
    T.check(2.5 <= dt <= 8, "slowloris connection closed by the idle timeout after %.1fs" % dt)
    t0 = time.monotonic()
    raw_case(srv, ctx, "body shorter than Content-Length",
             b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 5000\r\n\r\n" + GOOD[:100], None, timeout=15)
    T.check(time.monotonic() - t0 <= 8, "short body closed by the idle timeout")
    # the TLS port rejects a client that only speaks TLS 1.0/1.1
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(ca)
    try:
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
        old.set_ciphers("ALL:@SECLEVEL=0")
        try:
            S.post(srv.port, old, "/mutate", GOOD)
            T.check(False, "TLS 1.1 client was accepted")
        except (ssl.SSLError, ConnectionError, OSError):
            T.check(True, "TLS 1.1 refused")
    except (ValueError, ssl.SSLError):
        pass  # this OpenSSL cannot even offer TLS 1.1: nothing to test
    still_answers(srv, ctx, "TLS 1.1 client")

    # idle connections to the ops port from one address (another pod) must not starve the
    # kubelet's probes, which come from another address with a new connection each time
    flood = []
    for _ in range(100):  # more than the whole listener would take without a per-address cap
        try:
            fs = socket.socket()
            fs.bind(("127.0.0.2", 0))
            fs.settimeout(2)
            fs.connect(("127.0.0.1", srv.metrics_port))
            flood.append(fs)
        except OSError:
            break
    T.check(len(flood) >= 10, "opened %d idle connections to the ops port" % len(flood))
    probe_ok = 0
    for _ in range(5):
        try:
            t0 = time.monotonic()
            st, _ = srv.http_get("/readyz", timeout=1)
            probe_ok += st == 200 and time.monotonic() - t0 < 1
        except OSError:
            pass
    T.eq(probe_ok, 5, "probes answered within 1 s during an idle flood of the ops port")
    for fs in flood:
        fs.close()

    # ---------------------------------------------------------------- metrics + logs
    m = srv.metrics()
    T.check((S.metric(m, "gpu_admission_requests_total",
                      {"webhook": "mutate", "operation": "CREATE", "result": "mutated"}) or 0) > 50,
            "gpu_admission_requests_total counts mutated requests")
    T.check((S.metric(m, "gpu_admission_requests_total",
                      {"webhook": "mutate", "operation": "unknown", "result": "error"}) or 0) >= 10,
            "gpu_admission_requests_total counts 400s as result=error")
    T.check((S.metric(m, "gpu_admission_rule_matches_total", {"rule": "training"}) or 0) > 50,
            "gpu_admission_rule_matches_total{rule=training}")
    for code in ("400", "404", "405", "415", "413"):
        T.check((S.metric(m, "gpu_admission_http_errors_total", {"code": code}) or 0) >= 1,
                "gpu_admission_http_errors_total{code=%s}" % code)
    T.check(S.metric(m, "gpu_admission_request_duration_seconds_bucket",
                     {"webhook": "mutate", "le": "0.0001"}) is not None,
            "duration histogram has the 100us bucket")
    # connections cut above finish their clean-up on the server's own schedule: poll
    deadline = time.monotonic() + 5
    while S.metric(srv.metrics(), "gpu_admission_inflight_requests") != 0.0 and time.monotonic() < deadline:
        time.sleep(0.05)
    T.eq(S.metric(srv.metrics(), "gpu_admission_inflight_requests"), 0.0, "in-flight gauge back to 0 at rest")
    T.check(S.metric(m, "gpu_admission_cert_expiry_timestamp_seconds") > time.time(),
            "cert expiry in the future")
    rev = srv.startup["policy_revision"]
    T.eq(S.metric(m, "gpu_admission_policy_revision_info", {"revision": rev}), 1.0, "revision info")

    srv.settle_logs()
    logs = srv.logs()  # raises if any line is not JSON
    mutated = [l for l in logs if l.get("decision") == "mutated"]
    T.check(len(mutated) > 50, "one log line per mutated request")
    if mutated:
        l = mutated[0]
        for k in ("ts", "level", "msg", "uid", "namespace", "name", "operation", "webhook",
                  "rule", "pool", "decision", "reason", "latency_ms"):
            T.check(k in l, "request log line has %s" % k)
        T.eq((l["namespace"], l["name"], l["rule"], l["pool"], l["webhook"]),
             ("ml-platform", "trainer-0", "training", "h100-train", "mutate"),
             "request log fields")
    # allowed (non-mutated) validate requests are not logged at info
    T.check(not any(l.get("decision") == "allowed" and l.get("level") == "info" for l in logs),
            "allowed requests are not logged at info level")

T.done()
