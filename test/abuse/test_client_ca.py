#!/usr/bin/env python3
"""test_client_ca.py - only the API server can call the webhook when --client-ca is set.

What it is for: the threat "a client that is not the API server" (docs/security.md). With
--client-ca CA the server must answer an AdmissionReview only to a client presenting a
certificate signed by CA; a client with no certificate, with a certificate from another CA,
or with the server's own serving certificate (signed by the serving CA, not the client CA)
must get no admission answer (handshake refused, or an HTTP 4xx without an AdmissionReview).
Control: without --client-ca the certificate-less client is answered, so the refusals above
are the flag's doing.

What it must never do: bind anything but 127.0.0.1 or leave a server running.
"""

import argparse
import json
import os
import ssl
import sys
import tempfile

import harness as H


def attempt(port, cafile, cert=None, key=None):
    """('answered', status) | ('refused', status or reason)."""
    ctx = H.client_context(cafile, cert, key)
    body = H.dumps(H.review(H.pod("cc", "research-x", gpus=1), uid="client-ca-1"))
    c = H.Conn(port, ctx, timeout=10)
    try:
        st, _, data, _ = c.request("POST", "/validate", body)
    except (ssl.SSLError, OSError, ConnectionError) as e:
        return "refused", type(e).__name__
    except Exception as e:  # http.client errors after a handshake the server then dropped
        return "refused", type(e).__name__
    finally:
        c.close()
    if st == 200:
        try:
            H.parse_review_response(data, "client-ca-1")
            return "answered", st
        except H.Malformed:
            return "refused", "200 without an AdmissionReview: %r" % data[:100]
    if 400 <= st < 500 and b'"AdmissionReview"' not in data:
        return "refused", st
    return "answered?", "%s %r" % (st, data[:200])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    work = tempfile.mkdtemp(prefix="gpa-abuse-ca-")
    certs = H.make_certs(binary, os.path.join(work, "serving"))
    ca = os.path.join(certs, "ca.crt")
    api_ca, api_crt, api_key = H.make_client_ca_and_cert(os.path.join(work, "api"), "apiserver")
    _, rogue_crt, rogue_key = H.make_client_ca_and_cert(os.path.join(work, "rogue"), "rogue")
    problems, seen = [], {}

    with H.Server(binary, a.policies, cert_dir=certs, workdir=os.path.join(work, "s1"),
                  extra=["--client-ca", api_ca], ready_timeout=60) as srv:
        cases = [("api-server-cert", api_crt, api_key, "answered"),
                 ("no-cert", None, None, "refused"),
                 ("other-ca-cert", rogue_crt, rogue_key, "refused"),
                 ("serving-cert-as-client", os.path.join(certs, "tls.crt"),
                  os.path.join(certs, "tls.key"), "refused"),
                 ("api-server-cert-again", api_crt, api_key, "answered")]
        for name, crt, key, want in cases:
            got, detail = attempt(srv.port, ca, crt, key)
            seen[name] = "%s (%s)" % (got, detail)
            if got != want:
                problems.append("--client-ca %s: %s (%s), want %s" % (name, got, detail, want))
        if not srv.alive():
            problems.append("server died:\n" + srv.stderr_tail())
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s" % rc)

    with H.Server(binary, a.policies, cert_dir=certs, workdir=os.path.join(work, "s2"),
                  ready_timeout=60) as srv:
        got, detail = attempt(srv.port, ca)
        seen["control-no-client-ca-flag"] = "%s (%s)" % (got, detail)
        if got != "answered":
            problems.append("without --client-ca a client without a certificate must be "
                            "answered: %s (%s)" % (got, detail))
        srv.terminate(timeout=60)

    return H.finish(problems, work, "CLIENT-CA " + json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
