#!/usr/bin/env python3
"""test_tls.py - the TLS front door: protocol floor and non-TLS bytes on the TLS port.

What it is for: ARCHITECTURE.md promises TLS 1.2 as the minimum. A client limited to TLS 1.0
or 1.1 must be refused at the handshake; TLS 1.2 and 1.3 clients must be answered. Plain
HTTP, an SSLv2-style hello and random bytes sent to the TLS port must get the connection
closed (no answer, no crash), and the server must keep answering afterwards.

What it must never do: listen anywhere but 127.0.0.1 or leave the server running.
"""

import argparse
import json
import os
import socket
import ssl
import sys
import tempfile
import warnings

import harness as H


warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.0/1.1 on purpose


def handshake(port, cafile, lo, hi):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile)
    try:
        ctx.minimum_version, ctx.maximum_version = lo, hi
        # let this client offer old protocols at all (OpenSSL 3 refuses them at level >= 1)
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    except (ValueError, ssl.SSLError) as e:
        return "client-cannot", repr(e)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        v = s.version()
        s.close()
        return "ok", v
    except ssl.SSLError as e:
        raw.close()
        if e.reason in ("NO_PROTOCOLS_AVAILABLE", "UNSUPPORTED_PROTOCOL", "NO_CIPHERS_AVAILABLE"):
            return "client-cannot", e.reason  # never reached the server: proves nothing
        return "refused", "%s %s" % (type(e).__name__, e.reason)
    except OSError as e:
        raw.close()
        return "refused", type(e).__name__


def client_can_offer(certs, lo, hi):
    """Self-check on a throwaway in-process TLS server that accepts anything: can this
    Python/OpenSSL client really speak [lo, hi]? (Otherwise a 'refused' proves nothing.)"""
    import threading
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        sctx.minimum_version = ssl.TLSVersion.TLSv1
        sctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    except (ValueError, ssl.SSLError):
        return False
    sctx.load_cert_chain(os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"))
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    ls.settimeout(10)

    def serve():
        try:
            c, _ = ls.accept()
            with sctx.wrap_socket(c, server_side=True) as t:
                t.recv(1)
        except (OSError, ssl.SSLError):
            pass
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    got, _ = handshake(ls.getsockname()[1], os.path.join(certs, "ca.crt"), lo, hi)
    ls.close()
    th.join(timeout=10)
    return got == "ok"


def negotiated(port, cafile, version, ciphers):
    """The suite a client offering `ciphers` (OpenSSL's order) ends up with, or the refusal."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile)
    ctx.minimum_version = ctx.maximum_version = version
    if ciphers:
        ctx.set_ciphers(ciphers)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        name = s.cipher()[0]
        s.close()
        return name
    except (ssl.SSLError, OSError) as e:
        raw.close()
        return "refused (%s)" % getattr(e, "reason", type(e).__name__)


def junk(port, data):
    """Sends non-TLS bytes; returns what came back before the close (None on a timeout)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(data)
        got = b""
        while True:
            d = s.recv(4096)
            if not d:
                return got
            got += d
    except socket.timeout:
        return None
    except OSError:
        return b""
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    work = tempfile.mkdtemp(prefix="gpa-abuse-tls-")
    certs = H.make_certs(binary, os.path.join(work, "certs"))
    ca = os.path.join(certs, "ca.crt")
    problems, seen = [], {}
    V = ssl.TLSVersion
    with H.Server(binary, a.policies, cert_dir=certs, workdir=work, ready_timeout=60,
                  extra=["--idle-timeout", "3s"]) as srv:
        srv.wait_ready(H.client_context(ca), timeout=60)
        for name, lo, hi, want in (("tls1.0", V.TLSv1, V.TLSv1, "refused"),
                                   ("tls1.1", V.TLSv1_1, V.TLSv1_1, "refused"),
                                   ("tls1.2", V.TLSv1_2, V.TLSv1_2, "ok"),
                                   ("tls1.3", V.TLSv1_3, V.TLSv1_3, "ok")):
            if want == "refused" and not client_can_offer(certs, lo, hi):
                got, detail = "client-cannot", "self-check failed"
            else:
                got, detail = handshake(srv.port, ca, lo, hi)
            seen[name] = "%s (%s)" % (got, detail)
            if got == "client-cannot":
                # a client that cannot even offer the protocol proves nothing either way
                H.log("note: this Python/OpenSSL cannot offer %s: %s" % (name, detail))
                if want == "ok":
                    problems.append("%s: the client cannot offer it: %s" % (name, detail))
            elif got != want:
                problems.append("%s: %s (%s), want %s" % (name, got, detail, want))
        # The server's suite order wins: OpenSSL clients list AES-256-GCM first, yet get
        # AES-128-GCM (what Go picks); a TLS 1.2 client offering only CBC suites is refused.
        for name, version, ciphers, want in (
                ("suite-tls1.3", V.TLSv1_3, None, "TLS_AES_128_GCM_SHA256"),
                ("suite-tls1.2", V.TLSv1_2, None, "ECDHE-ECDSA-AES128-GCM-SHA256"),
                ("suite-tls1.2-aes256-first", V.TLSv1_2,
                 "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256",
                 "ECDHE-ECDSA-AES128-GCM-SHA256"),
                ("suite-tls1.2-cbc-only", V.TLSv1_2,
                 "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA", "refused")):
            got = negotiated(srv.port, ca, version, ciphers)
            seen[name] = got
            if not got.startswith(want):
                problems.append("%s: negotiated %s, want %s" % (name, got, want))
        for name, data in (("plain-http", b"POST /validate HTTP/1.1\r\nHost: x\r\n"
                                          b"Content-Length: 2\r\n\r\n{}"),
                           ("sslv2-hello", bytes.fromhex("802e0103010015000000100100800300"
                                                         "8002008004008000000600400700c0"
                                                         "00000000000000000000000000000000")),
                           ("random", os.urandom(4096))):
            got = junk(srv.port, data)
            seen[name] = "timeout" if got is None else "closed after %d bytes" % len(got)
            if got is None:
                problems.append("%s: the server neither answered nor closed within 10 s" % name)
            elif b"HTTP/1." in got or b"AdmissionReview" in got:
                problems.append("%s: got an HTTP answer over plain TCP: %r" % (name, got[:100]))
        st, _, _ = H.one_request(srv.port, H.client_context(ca), "POST", "/validate",
                                 H.dumps(H.review(H.pod("after", "research-x", gpus=2))))
        if st != 200:
            problems.append("a normal request afterwards got HTTP %s" % st)
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s" % rc)
    return H.finish(problems, work, "TLS " + json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
