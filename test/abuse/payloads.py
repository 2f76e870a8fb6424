"""payloads.py - pathological AdmissionReview bodies shared by the server and CLI abuse tests.

What it is for: one list of hostile inputs, each with what a correct webhook must do with it,
so the server (POST /mutate, /validate) and the CLI (`gpu-admission review`) are held to the
same bar.

Each payload is a dict:
  name      short id used in test output
  body      the exact bytes sent
  expect    "400"   must be refused with a 400 Status (input that cannot be answered)
            "413"   server only: over the default --max-body; the CLI must still not crash
            "any"   a 400 Status or a well-formed AdmissionReview answer are both correct
  object    for bodies that are valid JSON: the Pod as a standard parser reads it, so an
            accepted answer's patch can be applied to it
  uid       the request uid when there is one (the answer must echo it)
  deny      True when an answer must be a denial (allowed=false) if it is not a 400
  big       True for the multi-megabyte ones (the CLI test runs them too, with a longer timeout)
  xfail     (optional) a known, reported defect: its problems are printed as XFAIL and do not
            fail the test; when it passes, XPASS is printed (remove the marker then)

What it must never do: depend on a particular policy set beyond the namespace names used
below (research-* untrusted, ml-platform trusted - see POLICY.md's example and the shipped
policies), or build payloads larger than ~12 MB.
"""

import copy
import json

import harness as H

UID = "ab05e000-0000-0000-0000-000000000000"


def _rv(pod, uid=UID, **kw):
    return H.review(pod, uid=uid, **kw)


def _gpu_container(q, name="main", resource="nvidia.com/gpu"):
    return {"name": name, "image": "registry.example/app:1",
            "resources": {"limits": {resource: q}, "requests": {resource: q}}}


def _nested(depth, open_s, close_s, leaf=None):
    if leaf is None:
        leaf = b"0" if isinstance(open_s, bytes) else "0"
    return open_s * depth + leaf + close_s * depth


def _json_payload(name, rv, expect="any", deny=False, big=False):
    return {"name": name, "body": H.dumps(rv), "expect": expect,
            "object": copy.deepcopy(rv["request"].get("object")) if isinstance(rv, dict)
            and isinstance(rv.get("request"), dict) else None,
            "uid": rv["request"].get("uid") if isinstance(rv, dict) and isinstance(
                rv.get("request"), dict) else None,
            "deny": deny, "big": big}


def _lenient_object(body):
    """The Pod as a standard parser reads a body that is JSON apart from its encoding
    (invalid UTF-8 kept as surrogate escapes, a BOM dropped); None when it is not JSON."""
    try:
        doc = json.loads(body.decode("utf-8", "surrogateescape").lstrip("\ufeff"))
        return copy.deepcopy(doc["request"]["object"])
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


def _raw(name, body, expect="any", obj=None, uid=None, deny=False, big=False):
    if obj is None and expect != "400":
        obj = _lenient_object(body)
    return {"name": name, "body": body, "expect": expect, "object": obj, "uid": uid,
            "deny": deny, "big": big}


def build(max_body_default=7 * 1024 * 1024):
    out = []
    base_pod = H.pod("victim", "research-x", gpus=2)
    base = _rv(base_pod)
    base_body = H.dumps(base)

    # --- structure
    out.append(_raw("empty-body", b"", "400"))
    out.append(_raw("null", b"null", "400"))
    out.append(_raw("array", b"[]", "400"))
    out.append(_raw("empty-object", b"{}", "400"))
    out.append(_raw("truncated", base_body[:len(base_body) // 2], "400"))
    out.append(_raw("truncated-one-byte-short", base_body[:-1], "400"))
    out.append(_raw("trailing-garbage", base_body + b"garbage", "any", base_pod, UID))
    no_uid = copy.deepcopy(base)
    del no_uid["request"]["uid"]
    out.append(_raw("no-uid", H.dumps(no_uid), "400"))
    out.append(_raw("uid-not-string", H.dumps({**base, "request": {**base["request"],
                                                                    "uid": 12}}), "400"))
    out.append(_raw("request-not-object", H.dumps({**base, "request": "pod"}), "400"))
    out.append(_json_payload("object-is-string", {**base, "request": {**base["request"],
                                                                      "object": "pod"}}))
    out.append(_json_payload("containers-not-array",
                             _rv({**base_pod, "spec": {"containers": {"a": 1}}})))
    out.append(_json_payload("limits-number-not-string", _rv(
        H.pod("n", "research-x", containers=[{"name": "c", "image": "i", "resources": {
            "limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}}}]))))

    # --- depth: 10,000 deep as the body, inside the pod, and as objects
    out.append(_raw("nesting-10000-body", _nested(10000, b"[", b"]"), "400"))
    deep = base_body[:-2] + b',"deep":' + _nested(10000, b"[", b"]") + b"}}"
    out.append(_raw("nesting-10000-in-request", deep, "any", base_pod, UID))
    d = _nested(10000, '{"a":', "}")
    deep_obj = H.dumps(base).replace(b'"spec":{', b'"spec":{"x":' + d.encode() + b",", 1)
    out.append(_raw("nesting-10000-in-pod-spec", deep_obj, "any", None, UID))
    # deep but far from 10,000 (the reader may still refuse it: real pods nest < 20 deep)
    d900 = _nested(900, b"[", b"]")
    out.append(_raw("nesting-900-in-pod-spec",
                    H.dumps(base).replace(b'"spec":{', b'"spec":{"x":' + d900 + b",", 1),
                    "any", None, UID))

    # --- width: 100,000 containers (one asks a GPU), 50,000 labels
    many = [{"name": "c%d" % i, "image": "i"} for i in range(100000)]
    many[0] = _gpu_container("2", name="c0")
    p = H.pod("wide", "research-x", containers=many)
    out.append(_json_payload("containers-100000", _rv(p), big=True))
    p = H.pod("wide-env", "research-x", containers=[
        {"name": "c%d" % i, "image": "i", "env": [{"name": "A", "value": "b"}]}
        for i in range(100000)])
    p["spec"]["containers"][99999]["env"].append({"name": "NVIDIA_VISIBLE_DEVICES",
                                                  "value": "all"})
    out.append(_json_payload("containers-100000-last-sets-visible-devices", _rv(p),
                             deny=True, big=True))
    p = H.pod("labels", "research-x", gpus=2,
              labels={"k%d.example.com/l" % i: "v" for i in range(50000)})
    out.append(_json_payload("labels-50000", _rv(p), big=True))

    # --- size: a 10 MB string (over the default max body), and just under it
    p = H.pod("big", "research-x", gpus=2, annotations={"note": "x" * (10 * 1000 * 1000)})
    out.append(_json_payload("string-10MB", _rv(p), expect="413", big=True))
    pad = max_body_default - len(H.dumps(_rv(H.pod("big", "research-x", gpus=2,
                                                   annotations={"note": ""})))) - 16
    p = H.pod("big", "research-x", gpus=2, annotations={"note": "y" * pad})
    out.append(_json_payload("string-just-under-max-body", _rv(p), big=True))

    # --- duplicate keys (a standard parser keeps the last one)
    body = base_body.replace(b'"uid":"' + UID.encode() + b'"',
                             b'"uid":"' + UID.encode() + b'","uid":"' + UID.encode() + b'"', 1)
    out.append(_raw("duplicate-uid-same", body, "any", base_pod, UID))
    dl = H.pod("dup", "research-x", gpus=2, labels={"gpu-admission.io/tenant": "research"})
    b = H.dumps(_rv(dl)).replace(b'"gpu-admission.io/tenant":"research"',
                                 b'"gpu-admission.io/tenant":"platform",'
                                 b'"gpu-admission.io/tenant":"research"', 1)
    # as a standard (last-wins) parser reads it, the claim is legitimate; as a first-wins
    # parser reads it, it is a forged tenant claim: either a 400 or a consistent answer
    out.append(_raw("duplicate-tenant-label", b, "any", dl, UID))
    dl2 = H.pod("dup", "research-x", gpus=2, labels={"gpu-admission.io/tenant": "platform"})
    b = H.dumps(_rv(dl2)).replace(b'"gpu-admission.io/tenant":"platform"',
                                  b'"gpu-admission.io/tenant":"research",'
                                  b'"gpu-admission.io/tenant":"platform"', 1)
    # the other order: last-wins reads a forged claim - a first-wins reader must not be
    # the only thing standing between it and an allowed pod (the API server never sends
    # duplicates, so only a direct caller can try this)
    out.append(_raw("duplicate-tenant-label-forged-last", b, "any", dl2, UID))
    b = H.dumps(_rv(base_pod)).replace(b'"namespace":"research-x"',
                                       b'"namespace":"ml-platform","namespace":"research-x"')
    out.append(_raw("duplicate-namespace", b, "any", base_pod, UID))

    # --- encodings
    p = H.pod("utf8", "research-x", gpus=2, labels={"app": "PLACEHOLDER"})
    # JSON text must be UTF-8 (RFC 8259 8.1): the reader refuses anything else with a 400, so
    # an invalid uid can never be echoed into an answer that is not valid JSON itself.
    out.append(_raw("invalid-utf8-label", H.dumps(_rv(p)).replace(b"PLACEHOLDER", b"\xff\xfe"),
                    "400"))
    # ... while every valid sequence length is read and answered (a decision with a patch)
    out.append(_raw("valid-utf8-label", H.dumps(_rv(p)).replace(
        b"PLACEHOLDER", "\u00fc\u20ac\U0001f600".encode("utf-8")), "any", None, UID))
    out.append(_raw("invalid-utf8-uid", base_body.replace(UID.encode(), b"\xc3\x28" + b"-uid"),
                    "400"))
    out.append(_raw("overlong-utf8-slash", base_body.replace(b'"research-x"',
                                                             b'"research\xc0\xafx"'), "400"))
    out.append(_raw("bom-prefix", b"\xef\xbb\xbf" + base_body, "any", base_pod, UID))
    out.append(_raw("utf16-body", base_body.decode().encode("utf-16"), "400"))
    for s in ("\\ud800", "\\udc00", "\\ud800\\u0041", "\\ud83d\\ude00"):
        b = H.dumps(_rv(H.pod("sur", "research-x", gpus=2, labels={"app": "PH"})))
        b = b.replace(b'"PH"', b'"' + s.encode() + b'"')
        out.append(_raw("surrogate-" + s.replace("\\", ""), b, "any", None, UID))
    out.append(_raw("raw-nul-inside", base_body[:40] + b"\x00" + base_body[40:], "400"))
    out.append(_raw("raw-nul-after", base_body + b"\x00", "any", base_pod, UID))
    p = H.pod("nul", "research-x", gpus=2,
              labels={"gpu-admission.io/tenant": "research\u0000platform"})
    out.append(_json_payload("escaped-nul-in-tenant-label", _rv(p)))
    p = H.pod("nul", "research-x\u0000", gpus=2)
    out.append(_json_payload("escaped-nul-in-namespace", _rv(p)))
    # the API server forwards this (env values are not validated): a reader that cuts
    # strings at NUL would see "void" and allow an untrusted pod what the runtime reads as
    # "void<NUL>,0"
    p = H.pod("nul", "research-x", containers=[{"name": "c", "image": "i", "env": [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void\u0000,0"}]}])
    out.append(_json_payload("escaped-nul-in-visible-devices", _rv(p), deny=True))

    # --- numbers and quantities
    def q(name, value_json, deny):
        b = H.dumps(_rv(H.pod("q", "research-x", containers=[_gpu_container("QQ")])))
        b = b.replace(b'"QQ"', value_json)
        obj = json.loads(b)["request"]["object"] if _std_json_ok(b) else None
        out.append(_raw(name, b, "any", obj, UID, deny=deny))
    q("number-1e999", b"1e999", False)
    q("number-neg-zero", b"-0", False)
    q("number-huge-int", b"123456789012345678901234567890", False)
    q("quantity-1e999", b'"1e999"', True)
    q("quantity-huge", b'"99999999999999999999999"', True)
    q("quantity-int64-max+1", b'"9223372036854775808"', True)
    q("quantity-negative", b'"-1"', True)
    q("quantity-neg-zero", b'"-0"', False)
    q("quantity-fraction", b'"0.5"', True)
    q("quantity-milli", b'"1500m"', True)
    q("quantity-garbage", b'"lots"', True)
    q("quantity-empty", b'""', True)
    rq = H.pod("q", "research-x", containers=[{
        "name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                 "requests": {"nvidia.com/gpu": "2"}}}])
    out.append(_json_payload("requests-ne-limits", _rv(rq), deny=True))
    out.append(_raw("number-in-uid-position", base_body.replace(
        b'"operation":"CREATE"', b'"operation":1e999'), "any"))

    # --- pointer escaping: keys with / and ~ in an object the patch touches
    p = H.pod("esc", "research-x", gpus=2,
              annotations={"a/b~c": "1", "~1": "2", "x~0y/z": "3"},
              labels={"app.kubernetes.io/name": "n", "we~ird/key": "v"})
    out.append(_json_payload("pointer-escaping", _rv(p)))
    return out


def _std_json_ok(b):
    try:
        json.loads(b)
        return True
    except ValueError:
        return False
