"""test_log_user.py - every admission log line of a real server names who asked (issue 31):
`user` from request.userInfo.username and `groups` from request.userInfo.groups, bounded (a
256-byte user, 16 groups of 128 bytes, `groups_omitted` for the rest; docs/operations.md), on
/mutate and /validate, allowed, mutated, denied and 400 answers alike; a review without
userInfo logs `user: null` and no `groups`.

Must never: talk to anything but the server it started on 127.0.0.1, or pass without having
read the log lines of the requests it sent.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("log_user")
work = S.tmpdir("gpa-loguser-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ca = os.path.join(certs, "ca.crt")
policies = os.path.join(work, "policies")
S.copy_policies(A["src"], policies)


def uid(i):
    return "00000000-0000-0000-0000-%012d" % i


def review(i, user_info, **kw):
    r = S.review(uid=uid(i), **kw)
    if user_info is None:
        del r["request"]["userInfo"]
    else:
        r["request"]["userInfo"] = user_info
    return r


LONG = "x" * 300 + "@example.com"
UTF8 = "é" * 200  # 400 bytes: the 256-byte cut must not split a character
MANY = ["team-%02d" % i for i in range(20)]
CASES = {
    # i: (hook, review, expected user, expected groups, expected groups_omitted)
    1: ("mutate", review(1, {"username": "alice@example.com",
                             "groups": ["ml-team", "system:authenticated"]}, gpus=4),
        "alice@example.com", ["ml-team", "system:authenticated"], None),
    2: ("validate", review(2, {"username": "system:serviceaccount:kube-system:job-controller",
                               "uid": "9", "groups": ["system:serviceaccounts"]},
                           namespace="sandbox", gpus=1),
        "system:serviceaccount:kube-system:job-controller", ["system:serviceaccounts"], None),
    3: ("validate", review(3, {"username": LONG, "groups": MANY}, gpus=4),
        LONG[:253] + "...", MANY[:16], 4),
    4: ("mutate", review(4, {"username": UTF8, "groups": ["g" * 200]}, gpus=4),
        "é" * 126 + "...", ["g" * 125 + "..."], None),
    5: ("mutate", review(5, None, gpus=4), None, None, None),
}

with S.Server(BIN, policies, certs, extra=["--log-level", "debug"]) as srv:
    ctx = S.client_ctx(ca)
    for i, (hook, body, *_rest) in CASES.items():
        st = S.post(srv.port, ctx, "/" + hook, json.dumps(body).encode())[0]
        T.eq(st, 200, "case %d answered" % i)
    # a 400: no uid, but who sent it is known
    bad = review(6, {"username": "mallory", "groups": ["intruders"]})
    del bad["request"]["uid"]
    st = S.post(srv.port, ctx, "/validate", json.dumps(bad).encode())[0]
    T.eq(st, 400, "no uid: 400")
    srv.settle_logs()
    lines = [l for l in srv.logs() if l.get("msg") in ("admission request",
                                                      "bad admission request")]
    by_uid = {l.get("uid"): l for l in lines}
    for i, (hook, body, user, groups, omitted) in CASES.items():
        line = by_uid.get(uid(i))
        if not T.check(line is not None, "case %d logged" % i):
            continue
        T.eq(line.get("user"), user, "case %d user" % i)
        T.eq(line.get("groups"), groups, "case %d groups" % i)
        T.eq(line.get("groups_omitted"), omitted, "case %d groups_omitted" % i)
        T.check("user" in line, "case %d: the user field is always there" % i)
        T.check("truncated" not in line, "case %d: line not truncated" % i)
        T.check(len(json.dumps(line, ensure_ascii=False).encode()) < 4096, "case %d size" % i)
    T.eq(by_uid.get(uid(2), {}).get("webhook"), "validate", "case 2 on /validate")
    T.eq(by_uid.get(uid(1), {}).get("decision"), "mutated", "case 1 mutated")
    bad_lines = [l for l in lines if l.get("msg") == "bad admission request"]
    T.check(any(l.get("user") == "mallory" and l.get("groups") == ["intruders"]
                for l in bad_lines), "the 400 names who sent it: %s" % bad_lines)
    # every admission line of the run carries the user field
    T.check(lines and all("user" in l for l in lines), "user on every admission line")

T.done()
