"""test_no_stall.py - no answer waits for a timer: sequential requests on one keep-alive
connection from a TCP_NODELAY client (as Go's, the API server's) get every answer in about
the time the server needs to compute it, whatever its size, path or status.

The regression it guards: libmicrohttpd 0.9.75 leaves TCP_CORK on a TLS socket after its first
one-segment answer and pushes each later answer with TCP_NODELAY; the server's own corked TLS
record went out after that push, so every later answer between ~1.4 and ~3.7 KB sat in the
kernel for the TCP_CORK ceiling (200 ms). Here, every answer size from ~100 B to 8 KB in
16-byte steps (answer size set by the review's uid, which every answer echoes), each after
an answer of its own size and after a tiny one, plus the soak's real reviews, /validate,
error answers, a chunked request body, HTTP/1.0, new connections and the plain-HTTP ops port.
Each case's median of three must be far below 200 ms (40 ms; 100 ms under sanitizers).

Must never: pass without having measured answers that really cover the sizes it claims, or
talk to anything but the server it started on 127.0.0.1.
"""

import http.client
import json
import os
import shutil
import socket
import ssl
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S  # noqa: E402

A = S.args()
BIN = A["bin"]
sys.path.insert(0, os.path.join(A["src"], "test", "soak"))
import soak  # noqa: E402  (its build_requests: the reviews the soak sends)

T = S.Checks("no_stall")
SAN = os.environ.get("GPA_SANITIZED") == "1"
BOUND_MS = 100.0 if SAN else 40.0
REPS = 3
work = S.tmpdir("gpa-nostall-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ctx = S.client_ctx(os.path.join(certs, "ca.crt"))
policies = os.path.join(work, "policies")
shutil.copytree(os.path.join(A["src"], "test", "soak", "sets", "a"), policies)


class Client:
    """One keep-alive HTTP connection (TLS or plain) with TCP_NODELAY, timing each exchange
    from the first byte sent to the last byte of the answer read."""

    def __init__(self, port, tls=True, http10=False):
        self.port, self.tls, self.http10 = port, tls, http10
        self.c = None
        self.connects = 0

    def _connect(self):
        if self.tls:
            self.c = http.client.HTTPSConnection("localhost", self.port, timeout=10,
                                                 context=ctx)
        else:
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        if self.http10:
            self.c._http_vsn, self.c._http_vsn_str = 10, "HTTP/1.0"
        self.c.connect()
        nodelay = self.c.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        if not nodelay:  # http.client sets it; the test is about such a client
            raise RuntimeError("client socket has no TCP_NODELAY")
        self.connects += 1

    def request(self, method, path, body=None, headers=None, chunked=False):
        """(status, answer bytes, milliseconds). The connect (handshake) is not timed unless
        it happens inside the exchange because the server closed the previous one."""
        if self.c is None:
            self._connect()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        t0 = time.monotonic()
        if chunked:
            pieces = [body[i:i + 700] for i in range(0, len(body), 700)]
            self.c.request(method, path, body=iter(pieces), headers=h, encode_chunked=True)
        else:
            self.c.request(method, path, body=body, headers=h)
        r = self.c.getresponse()
        data = r.read()
        ms = (time.monotonic() - t0) * 1000.0
        if r.will_close:
            self.close()
        return r.status, data, ms

    def close(self):
        if self.c is not None:
            self.c.close()
        self.c = None


class Cases:
    """Medians per case; failures are reported with their timings. A stalled case costs
    ~0.4 s, so a sweep stops after GIVE_UP of them (already a failure) to finish within the
    ctest timeout."""

    GIVE_UP = 40

    def __init__(self):
        self.n = 0
        self.slow = []

    def gave_up(self):
        return len(self.slow) >= self.GIVE_UP

    def judge(self, name, times, bound=BOUND_MS):
        self.n += 1
        med = statistics.median(times)
        if med >= bound:
            self.slow.append("%s: median %.1f ms (%s)"
                             % (name, med, ", ".join("%.1f" % t for t in times)))
        return med

    def report(self, what):
        for s in self.slow[:25]:
            print("  slow: " + s)
        if len(self.slow) > 25:
            print("  ... and %d more" % (len(self.slow) - 25))
        T.check(self.n > 0 and not self.slow,
                "%s: %d of %d cases have a median >= %.0f ms%s"
                % (what, len(self.slow), self.n, BOUND_MS,
                   " (stopped there)" if self.gave_up() else ""))


def reps(fn):
    """Runs fn() (-> ms) up to REPS times; stops after two when both are over the bound (the
    median is then decided), so a failing run does not take minutes."""
    times = []
    for i in range(REPS):
        times.append(fn())
        if i == 1 and min(times) >= BOUND_MS:
            break
    return times


def sized_review(size, hook="mutate", shape="allowed"):
    """A review whose answer body is `size` bytes (or as close as the shape allows): the
    answer echoes the uid, so the uid's length sets the size byte for byte."""
    if shape == "allowed":  # no GPUs: allowed, no patch
        obj = S.review(namespace="default", gpus=0)
    elif shape == "mutated":  # research pod, one GPU: a patch placing it on the MIG pool
        obj = S.review(namespace="research-x", gpus=1)
    else:  # sandbox: denied with a message
        obj = S.review(namespace="sandbox", gpus=1)
    obj["request"]["uid"] = "u"
    base = len(answer_of(hook, obj))
    obj["request"]["uid"] = "u" * max(1, size - base + 1)
    return obj


def raw_request(method, path, body=b"", headers=None):
    h = "%s %s HTTP/1.1\r\nHost: localhost\r\n" % (method, path)
    if body or method == "POST":
        h += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    for k, v in (headers or {}).items():
        h += "%s: %s\r\n" % (k, v)
    return h.encode() + b"\r\n" + (body or b"")


def read_answer(t, head=False):
    """(status, body) of one answer read from a raw socket: Content-Length bodies only (a 1xx
    or, with head=True, a HEAD answer has none)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = t.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the answer's header")
        buf += chunk
    hdr, _, rest = buf.partition(b"\r\n\r\n")
    status = int(hdr.split(b" ")[1])
    n = 0
    for line in hdr.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    if head or status < 200:
        n = 0
    while len(rest) < n:
        chunk = t.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside the answer's body")
        rest += chunk
    if len(rest) > n:
        raise RuntimeError("more bytes than one answer: %r" % rest[n:][:100])
    return status, rest


ANSWERS = {}


def answer_of(hook, obj):
    """The answer body for obj, computed by the CLI (the server answers byte for byte the
    same; cached per hook+shape so the sweep runs the CLI once per shape)."""
    key = (hook, json.dumps(obj, sort_keys=True))
    if key not in ANSWERS:
        f = os.path.join(work, "probe.json")
        with open(f, "w") as fh:
            json.dump(obj, fh)
        rc, out, err = S.run(BIN, ["review", hook, "--policies", policies, f])
        if rc not in (0, 2):
            raise RuntimeError("review failed: %s" % err.decode()[-500:])
        ANSWERS[key] = out.rstrip(b"\n")
    return ANSWERS[key]


with S.Server(BIN, policies, cert_dir=certs, extra=["--log-level", "warn"]) as srv:
    # -- 1. every answer size from ~100 B to 8 KB, 16-byte steps, both hooks, on one
    #       keep-alive connection: three in a row of each size, then three each after a
    #       tiny answer (the state that left TCP_CORK on)
    cli = Client(srv.port)
    tiny = json.dumps(sized_review(100)).encode()
    st, data, _ = cli.request("POST", "/mutate", tiny)
    T.check(st == 200 and len(data) <= 110, "tiny answer: %d, %d bytes" % (st, len(data)))
    sizes_seen = []
    sweep = Cases()
    sizes = list(range(100, 8192, 16)) + [8192]
    bodies = {}
    for i, size in enumerate(sizes):
        hook = "mutate" if i % 2 == 0 else "validate"
        bodies[size] = (hook, json.dumps(sized_review(size, hook)).encode())
    for size in sizes:
        if sweep.gave_up():
            break
        hook, body = bodies[size]
        got = []

        def same():
            st, data, ms = cli.request("POST", "/" + hook, body)
            if st != 200:
                raise RuntimeError("%s size %d: HTTP %d %r" % (hook, size, st, data[:200]))
            got.append(len(data))
            return ms

        sweep.judge("%s %d B, repeated" % (hook, size), reps(same))

        def after_tiny():
            cli.request("POST", "/mutate", tiny)
            return same()

        sweep.judge("%s %d B, after a tiny answer" % (hook, size), reps(after_tiny))
        sizes_seen.extend(got)
    sizes_seen = sorted(set(sizes_seen))
    gaps = [b - a for a, b in zip(sizes_seen, sizes_seen[1:])]
    if not sweep.gave_up():  # a sweep cut short has failed already
        T.check(sizes_seen[0] <= 128 and sizes_seen[-1] >= 8192,
                "answers cover ~100 B to 8 KB (%d..%d)" % (sizes_seen[0], sizes_seen[-1]))
        T.check(gaps and max(gaps) <= 16,
                "answer sizes in steps of at most 16 B (largest gap %s)"
                % (max(gaps) if gaps else None))
        T.check(len(sizes_seen) >= 500, "%d distinct answer sizes" % len(sizes_seen))
    T.eq(cli.connects, 1, "the whole sweep ran on one keep-alive connection")
    sweep.report("size sweep (allowed answers)")

    # -- 2. the other answer shapes: a patch (mutated) and a denial, 1.7/0.4 KB up to 8 KB
    shapes = Cases()
    for shape, hook in (("mutated", "mutate"), ("denied", "validate"), ("denied", "mutate")):
        obj = sized_review(1, hook, shape)
        smallest = len(answer_of(hook, obj))
        for size in range(smallest, 8193, 256):
            if shapes.gave_up():
                break
            body = json.dumps(sized_review(size, hook, shape)).encode()
            got = []

            def one():
                st, data, ms = cli.request("POST", "/" + hook, body)
                ok = json.loads(data)["response"]
                if st != 200 or ok["allowed"] != (shape == "mutated") or \
                        (shape == "mutated") != ("patch" in ok):
                    raise RuntimeError("%s %s: unexpected answer %r" % (shape, hook, data[:300]))
                got.append(len(data))
                return ms

            def after_tiny():
                cli.request("POST", "/mutate", tiny)
                return one()

            shapes.judge("%s %s %d B" % (shape, hook, size), reps(one))
            shapes.judge("%s %s %d B after a tiny answer" % (shape, hook, size), reps(after_tiny))
            T.check(set(got) == {size},
                    "%s %s answers are %d B (%s)" % (shape, hook, size, set(got)))
    T.eq(cli.connects, 1, "the shapes ran on the same connection")
    shapes.report("patch and denial answers")
    cli.close()

    # -- 3. the soak's real reviews, in the soak's order, on one connection
    real = Cases()
    cli = Client(srv.port)
    reqs = soak.build_requests()
    times, sizes_of = {}, {}
    for _ in range(5):
        for name, hook, rv in reqs:
            st, data, ms = cli.request("POST", "/" + hook, json.dumps(rv).encode())
            T.check(st == 200, "%s/%s: HTTP %d" % (name, hook, st))
            times.setdefault((name, hook), []).append(ms)
            sizes_of[(name, hook)] = len(data)
    for (name, hook), ts in times.items():
        real.judge("%s/%s (%d B)" % (name, hook, sizes_of[(name, hook)]), ts)
    for name in ("research-mem", "platform-1gpu", "research-1gpu-v1beta1"):
        n = sizes_of.get((name, "mutate"), 0)
        T.check(1400 < n < 3800, "%s/mutate answer (%d B) is in the range that stalled" % (name, n))
    real.report("soak reviews")
    cli.close()

    # -- 4. error answers and probes, each right after a tiny answer on the same connection.
    #       The 400s answer a fully read request and keep the connection; the others are
    #       answered on the request's headers, and libmicrohttpd 0.9.75 closes a connection
    #       whose answer was queued that early (the next request reconnects, untimed).
    errs = Cases()
    bad = [("400 body is not JSON", "POST", "/mutate", b"{not json", None, 400, True),
           ("400 not an AdmissionReview", "POST", "/validate", b'{"kind":"Pod"}', None, 400,
            True),
           ("404 unknown path", "GET", "/nope", None, None, 404, False),
           ("405 GET /mutate", "GET", "/mutate", None, None, 405, False),
           ("415 wrong content type", "POST", "/mutate", b"", {"Content-Type": "text/plain"},
            415, False),
           ("200 /healthz", "GET", "/healthz", None, None, 200, False),
           ("200 /readyz", "GET", "/readyz", None, None, 200, False)]
    for what, method, path, body, hdrs, want, keeps in bad:
        cli = Client(srv.port)

        def one():
            cli.request("POST", "/mutate", tiny)
            st, data, ms = cli.request(method, path, body, hdrs)
            if st != want or not data:
                raise RuntimeError("%s: HTTP %d %r" % (what, st, data[:200]))
            return ms

        errs.judge(what, reps(one))
        if keeps:
            T.eq(cli.connects, 1, "%s kept the connection alive" % what)
        cli.close()
    errs.report("error answers and probes")

    # -- 5. a chunked request body, HTTP/1.0 (a connection per request, and keep-alive),
    #       a new connection per request (handshake included)
    misc = Cases()
    big = json.dumps(sized_review(8000)).encode()
    mid = json.dumps(sized_review(2000)).encode()
    cli = Client(srv.port)
    for size, body in ((2000, mid), (8000, big)):
        def chunked():
            cli.request("POST", "/mutate", tiny)
            st, data, ms = cli.request("POST", "/mutate", body, chunked=True)
            if st != 200 or len(data) != size:
                raise RuntimeError("chunked: HTTP %d, %d bytes" % (st, len(data)))
            return ms

        misc.judge("chunked request, %d B answer" % size, reps(chunked))
    T.eq(cli.connects, 1, "chunked requests kept the connection alive")
    cli.close()
    for size, body in ((100, tiny), (2000, mid), (8000, big)):
        def fresh(http10=False, keep=False):
            c = Client(srv.port, http10=http10)
            try:
                t0 = time.monotonic()
                hdrs = {"Connection": "keep-alive"} if keep else None
                st, data, _ = c.request("POST", "/mutate", body, hdrs)
                ms = (time.monotonic() - t0) * 1000.0
                if keep:  # the second exchange on an HTTP/1.0 keep-alive connection
                    st, data, ms = c.request("POST", "/mutate", body, hdrs)
            finally:
                c.close()
            if st != 200 or len(data) != size:
                raise RuntimeError("HTTP %d, %d bytes" % (st, len(data)))
            return ms

        misc.judge("new TLS connection, %d B answer" % size, reps(fresh))
        misc.judge("HTTP/1.0, %d B answer" % size, reps(lambda: fresh(http10=True)))
        misc.judge("HTTP/1.0 keep-alive, %d B answer" % size,
                   reps(lambda: fresh(http10=True, keep=True)))
    misc.report("chunked, HTTP/1.0 and new connections")

    # -- 6. the ops port (plain HTTP): small and large answers (libmicrohttpd closes each
    #       connection after its answer there too: every answer is queued on the headers)
    ops = Cases()
    cli = Client(srv.metrics_port, tls=False)
    for what, path, want in (("/healthz", "/healthz", 200), ("/readyz", "/readyz", 200),
                             ("/metrics", "/metrics", 200), ("404", "/nope", 404)):
        def one():
            cli.request("GET", "/healthz")
            st, data, ms = cli.request("GET", path)
            if st != want or not data:
                raise RuntimeError("ops %s: HTTP %d" % (path, st))
            return ms

        ops.judge("ops port %s" % what, reps(one))
    ops.report("ops port")
    cli.close()

    # -- 7. new connections from a client that delays its ACKs (TCP_QUICKACK off): the
    #       server's TLS 1.3 handshake is two flights, and with Nagle on the second waited
    #       for the client's delayed ACK of the first (>= 40 ms per new connection). Judged
    #       against the same handshake from a client that ACKs at once, interleaved, so the
    #       40 ms shows whatever the machine's speed.
    hs = Cases()
    for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
        vctx = S.client_ctx(os.path.join(certs, "ca.crt"))
        vctx.minimum_version = vctx.maximum_version = version

        def handshake_and_answer(delayed_ack):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if delayed_ack:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
            t0 = time.monotonic()
            t = vctx.wrap_socket(s, server_hostname="localhost")
            try:
                t.sendall(raw_request("POST", "/mutate", mid))
                st, data = read_answer(t)
            finally:
                t.close()
            if st != 200 or len(data) != 2000:
                raise RuntimeError("HTTP %s, %d bytes" % (st, len(data)))
            return (time.monotonic() - t0) * 1000.0

        delayed, prompt = [], []
        for _ in range(5):
            delayed.append(handshake_and_answer(True))
            prompt.append(handshake_and_answer(False))
        name = "new %s connection" % version.name
        hs.judge(name + ", delayed-ACK client", delayed)
        hs.judge(name + ", prompt-ACK client", prompt)
        extra = statistics.median(delayed) - statistics.median(prompt)
        T.check(extra < 20, "%s: a delayed-ACK client waits %.1f ms longer (medians %.1f, %.1f)"
                % (name, extra, statistics.median(delayed), statistics.median(prompt)))
    hs.report("handshakes with a delayed-ACK client")

    # -- 8. the answers libmicrohttpd sends itself on a raw keep-alive connection whose socket
    #       already carries TCP_CORK (after a tiny answer): 100 Continue, then the answer, and a
    #       HEAD answer (header only)
    raw = Cases()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = ctx.wrap_socket(s, server_hostname="localhost")
    cont, after = [], []
    for _ in range(REPS):
        t.sendall(raw_request("POST", "/mutate", tiny))
        read_answer(t)
        t0 = time.monotonic()
        t.sendall(raw_request("POST", "/mutate", mid, {"Expect": "100-continue"})[:-len(mid)])
        st, _ = read_answer(t)
        t1 = time.monotonic()
        T.eq(st, 100, "Expect: 100-continue gets 100 Continue before the body is sent")
        t.sendall(mid)
        st, data = read_answer(t)
        cont.append((t1 - t0) * 1000.0)
        after.append((time.monotonic() - t1) * 1000.0)
        T.check(st == 200 and len(data) == 2000, "answer after 100 Continue: %s" % st)
    raw.judge("100 Continue", cont)
    raw.judge("answer after 100 Continue", after)
    heads = []
    for _ in range(REPS):
        t.sendall(raw_request("POST", "/mutate", tiny))
        read_answer(t)
        t0 = time.monotonic()
        t.sendall(raw_request("HEAD", "/healthz"))
        st, data = read_answer(t, head=True)
        heads.append((time.monotonic() - t0) * 1000.0)
        T.check(st == 200 and data == b"", "HEAD /healthz: %s %r" % (st, data))
        t.close()  # HEAD is answered on its headers: libmicrohttpd closes the connection
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t = ctx.wrap_socket(s, server_hostname="localhost")
    t.close()
    raw.judge("HEAD /healthz", heads)
    raw.report("100 Continue and HEAD")

    T.check(srv.alive(), "server alive at the end")

T.done()
