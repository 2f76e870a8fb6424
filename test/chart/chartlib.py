"""chartlib.py - shared helpers of the chart tests: find the real helm/kubectl/node, render the
chart with given values and Kubernetes version, parse the output with PyYAML.

Never fakes a tool: when helm is missing the tests fail with a message saying how to get it
(scripts/setup.sh test)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

SRC = os.environ.get("GPA_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(SRC, "helm", "gpu-admission")
DEPS_BIN = os.environ.get("GPA_DEPS_BIN") or os.path.join(SRC, ".deps", "bin")
NPM_MODULES = os.path.join(os.path.dirname(DEPS_BIN), "npm", "node_modules")
RELEASE_NS = "gpu-system"
RELEASE = "gpa"
FULLNAME = "gpa-gpu-admission"


def tool(name):
    """PATH first (scripts/test.sh prepends .deps/bin), then .deps/bin of the source tree."""
    p = shutil.which(name)
    if p:
        return p
    p = os.path.join(DEPS_BIN, name)
    if os.access(p, os.X_OK):
        return p
    sys.exit(f"FAIL: {name} not found on PATH nor in {DEPS_BIN} (run scripts/setup.sh test)")


_home = tempfile.mkdtemp(prefix="gpa-chart-helm-")
ENV = dict(os.environ, HELM_CACHE_HOME=_home + "/cache", HELM_CONFIG_HOME=_home + "/config",
           HELM_DATA_HOME=_home + "/data", HOME=_home)
ENV.pop("KUBECONFIG", None)


def helm(*args, check=True):
    r = subprocess.run([tool("helm"), *args], capture_output=True, text=True, env=ENV,
                       timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return r


def _set_args(values):
    """values: dict written to a temp values file (so types are exact, unlike --set)."""
    if not values:
        return [], None
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, dir=_home)
    yaml.safe_dump(values, f)
    f.close()
    return ["-f", f.name], f.name


def template(values=None, kube_version=None, extra=(), check=True):
    args, _ = _set_args(values)
    cmd = ["template", RELEASE, CHART, "--namespace", RELEASE_NS, *args, *extra]
    if kube_version:
        cmd += ["--kube-version", kube_version]
    return helm(*cmd, check=check)


def render(values=None, kube_version=None, extra=()):
    """Rendered objects as a list of dicts (empty documents dropped)."""
    out = template(values, kube_version, extra).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def by_kind(objs, kind):
    return [o for o in objs if o.get("kind") == kind]


def one(objs, kind):
    found = by_kind(objs, kind)
    if len(found) != 1:
        raise AssertionError(f"expected exactly one {kind}, got {len(found)}")
    return found[0]


def dump(o):
    return json.dumps(o, indent=1, sort_keys=True)


def is_hook(o):
    return "helm.sh/hook" in ((o.get("metadata") or {}).get("annotations") or {})


def policy_cm(objs):
    """The release's own policy ConfigMap (not the policy check's hook copy)."""
    found = [o for o in by_kind(objs, "ConfigMap")
             if o["metadata"]["name"] == FULLNAME + "-policies"]
    if len(found) != 1:
        raise AssertionError(f"expected one ConfigMap {FULLNAME}-policies, got {len(found)}")
    return found[0]
