"""test_shutdown.py - graceful shutdown under load.

SIGTERM while a load generator POSTs over keep-alive connections: /readyz turns 503 at once,
requests keep being answered for --shutdown-grace, then the listener closes, requests in
flight finish and the process exits 0. Zero requests that reached an established
connection may fail (refused NEW connections after the listener closed are expected).
Also: SIGINT behaves the same, and a second SIGTERM cuts the grace period short.

Must never: leave the server running if it does not exit (it is killed and the test fails).
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("shutdown")
work = S.tmpdir("gpa-shutdown-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ca = os.path.join(certs, "ca.crt")
policies = S.copy_policies(A["src"], os.path.join(work, "policies"))
GRACE = 2.0

with S.Server(BIN, policies, certs, extra=["--shutdown-grace", "2s"]) as srv:
    ctx = S.client_ctx(ca)
    load = S.Load(srv.port, ctx, S.review_bytes(), threads=6).start()
    time.sleep(1.0)
    T.eq(srv.http_get("/readyz")[0], 200, "ready before SIGTERM")
    t0 = time.monotonic()
    srv.signal(signal.SIGTERM)
    # readiness flips at once
    st = None
    while time.monotonic() - t0 < 1.0:
        st = srv.http_get("/readyz")[0]
        if st == 503:
            break
        time.sleep(0.01)
    T.eq(st, 503, "/readyz 503 right after SIGTERM")
    T.check(time.monotonic() - t0 < 1.0, "readiness flipped within 1s (at once; slack for a loaded CI)")
    c = S.Conn(srv.port, ctx)
    T.eq(c.request("GET", "/readyz")[0], 503, "TLS port /readyz 503 while draining")
    c.close()
    # requests keep being answered during the grace period
    n1 = load.count()
    time.sleep(GRACE / 2)
    n2 = load.count()
    T.check(n2 > n1 + 10, "requests answered during the grace period (%d -> %d)" % (n1, n2))
    st, hdrs, _ = S.post(srv.port, ctx, "/mutate", S.review_bytes())
    T.eq(st, 200, "a new connection is still served during the grace period")
    T.eq(hdrs.get("connection", "").lower(), "close", "draining responses say Connection: close")
    rc = srv.wait_exit(timeout=GRACE + 10)
    elapsed = time.monotonic() - t0
    load.stop()
    T.eq(rc, 0, "exit code 0 after SIGTERM")
    T.check(GRACE - 0.1 <= elapsed <= GRACE + 6, "exited %.2fs after SIGTERM (grace %.1fs)"
            % (elapsed, GRACE))
    T.eq(load.failures[:5], [], "zero failed in-flight requests")
    T.check(load.count() > 100, "load ran (%d ok, %d refused connects after close)"
            % (load.count(), load.connect_errors))
    msgs = [o.get("msg") for o in srv.logs()]
    for m in ("shutdown requested; draining", "listener closed; finishing open connections",
              "shutdown complete"):
        T.check(m in msgs, "logged: " + m)

# SIGINT, then a second signal ends the grace period early
with S.Server(BIN, policies, certs, extra=["--shutdown-grace", "30s"]) as srv:
    ctx = S.client_ctx(ca)
    T.eq(S.post(srv.port, ctx, "/validate", S.review_bytes())[0], 200, "second server serves")
    t0 = time.monotonic()
    srv.signal(signal.SIGINT)
    time.sleep(0.5)
    T.check(srv.alive(), "still running during a 30s grace")
    T.eq(srv.http_get("/readyz")[0], 503, "SIGINT also drains")
    srv.signal(signal.SIGTERM)
    rc = srv.wait_exit(timeout=10)
    T.eq(rc, 0, "second signal: clean exit")
    T.check(time.monotonic() - t0 < 5, "second signal cut the grace short")

# an idle keep-alive connection (opened before SIGTERM, never used again) must not hold the
# process: the drain after the listener closes is bounded (max(grace, 1s))
with S.Server(BIN, policies, certs, extra=["--shutdown-grace", "1s"]) as srv:
    ctx = S.client_ctx(ca)
    idle = S.Conn(srv.port, ctx)
    T.eq(idle.request("POST", "/mutate", S.review_bytes())[0], 200, "idle client served once")
    t0 = time.monotonic()
    srv.signal(signal.SIGTERM)
    rc = srv.wait_exit(timeout=15)
    dt = time.monotonic() - t0
    T.eq(rc, 0, "exit 0 with an idle keep-alive connection open")
    T.check(1.5 <= dt <= 5, "idle connection held shutdown for %.2fs (grace 1s + drain <= 1s)" % dt)
    idle.close()

T.done()
