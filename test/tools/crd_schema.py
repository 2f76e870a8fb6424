"""crd_schema.py - validates objects against a CustomResourceDefinition's openAPIV3Schema, the
subset the wgpolicyk8s.io CRDs use (type, properties, additionalProperties, items, required,
enum, format int32/int64), as the API server does for a structural schema with strict field
validation (what `kubectl apply` sends since v1.27): an unknown field is an error, not pruned.

Also the ObjectMeta rules the API server applies to every object (a schema's `metadata: {type:
object}` says nothing of them): name a DNS-1123 subdomain, namespace a DNS-1123 label, label
keys/values and annotation values strings, label values at most 63 characters.

usage as a module: errors = validate(crd_docs, obj) -> list of "path: message" strings.
"""
import re

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
HANDLED = {"type", "properties", "additionalProperties", "items", "required", "enum", "format",
           "description"}


def schema_for(crds, api_version, kind):
    """The openAPIV3Schema of the served version api_version of the CRD for kind, or None."""
    group, _, version = api_version.partition("/")
    for crd in crds:
        spec = crd.get("spec", {})
        if spec.get("group") != group or spec.get("names", {}).get("kind") != kind:
            continue
        for v in spec.get("versions", []):
            if v.get("name") == version and v.get("served"):
                return v["schema"]["openAPIV3Schema"]
    return None


def _check(schema, value, path, errors):
    unknown = set(schema) - HANDLED
    if unknown:
        # a keyword this validator does not implement must not pass silently
        errors.append("%s: schema keyword(s) %s not supported by crd_schema.py" %
                      (path, sorted(unknown)))
    t = schema.get("type")
    if t == "object":
        if not isinstance(value, dict):
            errors.append("%s: must be an object" % path)
            return
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k in schema.get("required", []):
            if k not in value:
                errors.append("%s: required field %s missing" % (path, k))
        for k, v in value.items():
            if props is not None and k in props:
                _check(props[k], v, "%s.%s" % (path, k), errors)
            elif isinstance(extra, dict):
                _check(extra, v, "%s.%s" % (path, k), errors)
            elif props is not None:
                errors.append("%s: unknown field %s" % (path, k))
            # neither: an object without a schema (metadata) takes any field
    elif t == "array":
        if not isinstance(value, list):
            errors.append("%s: must be an array" % path)
            return
        for i, v in enumerate(value):
            _check(schema.get("items", {}), v, "%s[%d]" % (path, i), errors)
    elif t == "string":
        if not isinstance(value, str):
            errors.append("%s: must be a string" % path)
    elif t == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append("%s: must be an integer" % path)
        elif schema.get("format") == "int32" and not -2**31 <= value < 2**31:
            errors.append("%s: out of int32 range" % path)
        elif not -2**63 <= value < 2**63:
            errors.append("%s: out of int64 range" % path)
    elif t == "boolean":
        if not isinstance(value, bool):
            errors.append("%s: must be a boolean" % path)
    elif t is not None:
        errors.append("%s: schema type %s not supported by crd_schema.py" % (path, t))
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r is not one of %s" % (path, value, schema["enum"]))


def _check_meta(md, namespaced, errors):
    name = md.get("name")
    if not isinstance(name, str) or len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        errors.append("metadata.name: %r is not a DNS-1123 subdomain" % (name,))
    ns = md.get("namespace")
    if namespaced and (not isinstance(ns, str) or len(ns) > 63 or not DNS_LABEL.match(ns)):
        errors.append("metadata.namespace: %r is not a DNS-1123 label" % (ns,))
    if not namespaced and ns is not None:
        errors.append("metadata.namespace: a cluster-scoped object has no namespace")
    for k, v in (md.get("labels") or {}).items():
        if not isinstance(v, str) or len(v) > 63 or not LABEL_VALUE.match(v):
            errors.append("metadata.labels[%s]: %r is not a label value" % (k, v))
    for k, v in (md.get("annotations") or {}).items():
        if not isinstance(v, str):
            errors.append("metadata.annotations[%s]: must be a string" % k)


def validate(crds, obj):
    errors = []
    if not isinstance(obj, dict):
        return ["object: must be a mapping"]
    schema = schema_for(crds, obj.get("apiVersion", ""), obj.get("kind", ""))
    if schema is None:
        return ["no served CRD version for %s %s" % (obj.get("apiVersion"), obj.get("kind"))]
    _check(schema, obj, "", errors)
    scope = next(c["spec"]["scope"] for c in crds
                 if c["spec"]["names"]["kind"] == obj.get("kind"))
    _check_meta(obj.get("metadata") or {}, scope == "Namespaced", errors)
    return errors
