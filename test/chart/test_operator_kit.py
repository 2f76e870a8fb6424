"""test_operator_kit.py - the chart's operator's kit (metrics.prometheusRule,
metrics.grafanaDashboard): off by default, rendered when enabled, refused by the schema when
misconfigured; and every alert and dashboard expression run by promtool (Debian's
`prometheus` package) against series scraped from the REAL server.

The scenario drives a real `gpu-admission serve` through phases - steady traffic, a denial
spike, an error spike, a broken policy set, slow requests (bodies dripped so the server's own
duration histogram records them), certificate rotations to a 10-day and back to a 365-day
certificate, SIGTERM and then a kill - and scrapes /metrics once per step. Each scrape becomes
one sample, one synthetic minute apart, of promtool input series carrying the labels the chart's
ServiceMonitor gives them (job, namespace, instance, pod). Only two things are derived, not
scraped: `up` (1 when the scrape answered, as Prometheus records it) and
kube-state-metrics' kube_deployment_status_replicas_available (1 when /readyz answered 200).
Certificate expiry is shifted so that `expiry - time()` at each synthetic minute equals the
real validity left at that scrape (promtool's clock starts at 0).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import yaml

import chartlib as c

sys.path.insert(0, os.path.join(c.SRC, "test", "integration"))
import srvlib as S  # noqa: E402

BINARY = os.environ.get("GPA_BINARY", "")
DASHBOARD = os.path.join(c.CHART, "dashboards", "gpu-admission.json")
ALERTS = ["GPUAdmissionNoReadyReplica", "GPUAdmissionDenialsRising", "GPUAdmissionErrorsRising",
          "GPUAdmissionLatencyOverBudget", "GPUAdmissionPolicyReloadFailing",
          "GPUAdmissionCertificateExpiring"]
# The labels the Prometheus Operator puts on series scraped through the chart's ServiceMonitor.
TARGET = {"job": c.FULLNAME, "namespace": c.RELEASE_NS, "instance": "10.0.0.7:9090",
          "pod": c.FULLNAME + "-6d5f8-x2x9q", "service": c.FULLNAME, "endpoint": "metrics"}
KSM = {"job": "kube-state-metrics", "namespace": c.RELEASE_NS, "deployment": c.FULLNAME}


def kit(extra=None):
    v = {"metrics": {"prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}}}
    for k, val in (extra or {}).items():
        v[k] = val
    return v


def rule_spec(values=None):
    """The PrometheusRule's spec (a Prometheus rule file's content) rendered with values."""
    return c.one(c.render(values or kit()), "PrometheusRule")["spec"]


def promtool(*args, cwd=None):
    return subprocess.run([c.tool("promtool"), *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


# ------------------------------------------------------------------ rendering and schema

class Render(unittest.TestCase):
    def test_off_by_default(self):
        objs = c.render()
        self.assertEqual(c.by_kind(objs, "PrometheusRule"), [])
        self.assertEqual([o for o in c.by_kind(objs, "ConfigMap")
                          if "grafana_dashboard" in o["metadata"].get("labels", {})], [])

    def test_enabled(self):
        objs = c.render(kit())
        pr = c.one(objs, "PrometheusRule")
        self.assertEqual(pr["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(pr["metadata"]["namespace"], c.RELEASE_NS)
        rules = [r for g in pr["spec"]["groups"] for r in g["rules"]]
        self.assertEqual(sorted(r["alert"] for r in rules), sorted(ALERTS))
        for r in rules:
            self.assertIn(r["labels"]["severity"], ("critical", "warning"))
            self.assertTrue(r["annotations"]["summary"] and r["annotations"]["description"])
            # the default selector is what the chart's ServiceMonitor produces
            if r["alert"] != "GPUAdmissionNoReadyReplica":
                self.assertIn(f'job="{c.FULLNAME}",namespace="{c.RELEASE_NS}"', r["expr"])
        cms = [o for o in c.by_kind(objs, "ConfigMap")
               if o["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
        self.assertEqual(len(cms), 1)
        cm = cms[0]
        self.assertEqual(cm["metadata"]["namespace"], c.RELEASE_NS)
        with open(DASHBOARD) as f:
            self.assertEqual(json.loads(cm["data"]["gpu-admission.json"]), json.load(f))

    def test_latency_budget_follows_the_webhook_timeout(self):
        def budget(values):
            r = [r for g in rule_spec(values)["groups"] for r in g["rules"]
                 if r["alert"] == "GPUAdmissionLatencyOverBudget"][0]
            return float(r["expr"].rsplit(">", 1)[1])
        self.assertEqual(budget(kit()), 5.0)
        self.assertEqual(budget(kit({"webhook": {"timeoutSeconds": 12}})), 12.0)
        v = kit({"webhook": {"timeoutSeconds": 12}})
        v["metrics"]["prometheusRule"]["latencyBudgetSeconds"] = 2.5
        self.assertEqual(budget(v), 2.5)

    def test_values_reach_the_objects(self):
        v = kit()
        v["metrics"]["prometheusRule"].update({
            "labels": {"release": "kube-prometheus-stack"}, "alertLabels": {"team": "ml"},
            "selector": 'job="gpu", namespace=~"gpu-.*"', "risingFactor": 4,
            "risingMinEvents": 9, "certExpiryDays": 21})
        v["metrics"]["grafanaDashboard"].update({
            "namespace": "monitoring", "labels": {"grafana_dashboard": "yes"},
            "annotations": {"grafana_folder": "GPU"}})
        objs = c.render(v)
        pr = c.one(objs, "PrometheusRule")
        self.assertEqual(pr["metadata"]["labels"]["release"], "kube-prometheus-stack")
        rules = {r["alert"]: r for g in pr["spec"]["groups"] for r in g["rules"]}
        for r in rules.values():
            self.assertEqual(r["labels"]["team"], "ml")
        self.assertRegex(
            rules["GPUAdmissionDenialsRising"]["expr"],
            r'gpu_admission_denials_total\{job="gpu", namespace=~"gpu-\.\*"\}\[10m\]\)\)\s+> 4 \*')
        self.assertIn(">= 9", rules["GPUAdmissionErrorsRising"]["expr"])
        self.assertIn("< 21 * 86400", rules["GPUAdmissionCertificateExpiring"]["expr"])
        cm = [o for o in c.by_kind(objs, "ConfigMap")
              if o["metadata"]["name"].endswith("-dashboard")][0]
        self.assertEqual(cm["metadata"]["namespace"], "monitoring")
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "yes")
        self.assertEqual(cm["metadata"]["annotations"], {"grafana_folder": "GPU"})

    def test_values_from_an_older_release(self):
        """`helm upgrade --reuse-values` from a chart version without these keys keeps none of
        their defaults (null here removes them): the chart must still render, kit off."""
        r = c.template(extra=["--set", "metrics.prometheusRule=null",
                              "--set", "metrics.grafanaDashboard=null"], check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kind: Deployment", r.stdout)
        self.assertNotIn("PrometheusRule", r.stdout)
        self.assertNotIn("grafana_dashboard", r.stdout)

    def test_lint_strict(self):
        args, _ = c._set_args(kit())
        r = c.helm("lint", "--strict", c.CHART, *args, check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


BAD = [
    ("enabled not boolean", {"prometheusRule": {"enabled": "yes"}},
     "/metrics/prometheusRule/enabled"),
    ("unknown key", {"prometheusRule": {"enable": True}}, "enable"),
    ("selector injection", {"prometheusRule": {"selector": 'job="x"}) or vector(1) #'}},
     "/metrics/prometheusRule/selector"),
    ("selector not matchers", {"prometheusRule": {"selector": "gpu-admission"}},
     "/metrics/prometheusRule/selector"),
    ("rising factor 1", {"prometheusRule": {"risingFactor": 1}},
     "/metrics/prometheusRule/risingFactor"),
    ("min events 0", {"prometheusRule": {"risingMinEvents": 0}},
     "/metrics/prometheusRule/risingMinEvents"),
    ("budget over 30", {"prometheusRule": {"latencyBudgetSeconds": 45}},
     "/metrics/prometheusRule/latencyBudgetSeconds"),
    ("cert days 0", {"prometheusRule": {"certExpiryDays": 0}},
     "/metrics/prometheusRule/certExpiryDays"),
    ("alert label name", {"prometheusRule": {"alertLabels": {"team-name": "x"}}},
     "invalid propertyName 'team-name'"),
    ("alert severity", {"prometheusRule": {"alertLabels": {"severity": "page"}}},
     "/metrics/prometheusRule/alertLabels"),
    ("dashboard namespace", {"grafanaDashboard": {"namespace": "Monitoring"}},
     "/metrics/grafanaDashboard/namespace"),
    ("dashboard label value", {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}},
     "/metrics/grafanaDashboard/labels/grafana_dashboard"),
]


class Schema(unittest.TestCase):
    def test_bad_values_are_refused(self):
        for name, metrics, where in BAD:
            with self.subTest(name):
                r = c.template({"metrics": metrics}, check=False)
                self.assertNotEqual(r.returncode, 0, f"{name}: helm accepted {metrics}")
                self.assertIn("schema", r.stderr, r.stderr)
                self.assertIn(where, r.stderr, r.stderr)
                self.assertEqual(r.stdout.strip(), "", "nothing may be rendered")

    def test_good_values_are_accepted(self):
        r = c.template({"metrics": {"prometheusRule": {
            "enabled": True, "selector": 'job="gpu",namespace!~"kube-.*", pod=~"a\\"b.*"',
            "risingFactor": 1.5, "latencyBudgetSeconds": 0.5, "certExpiryDays": 30}}},
            check=False)
        self.assertEqual(r.returncode, 0, r.stderr)


# ------------------------------------------------------------------ the real server

PAD = "x" * 8000


def drip(port, ctx, body, chunks, gap):
    """POSTs body to /validate in `chunks` pieces `gap` seconds apart (faster than 1 KiB/s,
    so no body-rate limit cuts it): the server's duration starts at the request headers, so
    it records about chunks*gap seconds. Returns the status."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    t = ctx.wrap_socket(s, server_hostname="localhost")
    try:
        t.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json"
                  b"\r\nContent-Length: %d\r\n\r\n" % len(body))
        n = (len(body) + chunks - 1) // chunks
        for i in range(0, len(body), n):
            time.sleep(gap)
            t.sendall(body[i:i + n])
        return S.status_of(t.recv(65536))
    finally:
        t.close()


def parse_metrics(text):
    """[(name, {labels}, value)] of a Prometheus text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$', line)
        assert m, f"unparsable metrics line {line!r}"
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def series_key(name, labels):
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


class Scenario:
    """Runs the phases once; keeps per-step samples and the raw scrapes."""

    def __init__(self):
        self.steps = []   # per step: {series_key: value} (None = scrape failed)
        self.up = []
        self.ready = []
        self.scrapes = []
        self.marks = {}
        work = S.tmpdir("gpa-kit-")
        self.certs = S.make_certs(BINARY, os.path.join(work, "certs"))
        self.pol = S.copy_policies(c.SRC, os.path.join(work, "pol"))
        self.srv = S.Server(BINARY, self.pol, self.certs,
                            extra=["--reload-interval", "1s", "--shutdown-grace", "60s"])

    # -- traffic
    def _post(self, path, body):
        st, _, _ = self.conn.request("POST", path, body)
        return st

    def baseline(self, step):
        ok = self._post("/validate", S.review_bytes(namespace="default", gpus=0))
        mu = self._post("/mutate", S.review_bytes(namespace="ml-platform", gpus=4))
        assert (ok, mu) == (200, 200), (ok, mu)
        if step % 5 == 0:  # a steady trickle of denials ...
            self.denied("notebooks", 1)
        if step % 10 == 0:  # ... and of 404s (someone probing a wrong path)
            assert self._post("/nope", b"{}") == 404

    def denied(self, ns, gpus):
        st, _, body = self.conn.request("POST", "/validate",
                                        S.review_bytes(namespace=ns, gpus=gpus))
        assert st == 200 and json.loads(body)["response"]["allowed"] is False, body[:300]

    def bad(self):
        assert self._post("/validate", b'{"apiVersion":') == 400

    # -- scraping
    def scrape(self):
        try:
            text = self.srv.metrics()
        except OSError:
            text = None
        try:
            ready = self.srv.http_get("/readyz", timeout=2)[0] == 200
        except OSError:
            ready = False
        now = time.time()
        step = len(self.steps)
        sample = None
        if text is not None:
            self.scrapes.append(text)
            sample = {}
            for name, labels, value in parse_metrics(text):
                if name == "gpu_admission_cert_expiry_timestamp_seconds" and value > 0:
                    value = value - now + step * 60  # validity left at this synthetic minute
                sample[series_key(name, dict(labels, **TARGET))] = value
        self.steps.append(sample)
        self.up.append(1 if text is not None else 0)
        self.ready.append(1 if ready else 0)
        return text

    def metric(self, name, labels=None):
        return S.metric(self.srv.metrics(), name, labels)

    def wait_metric(self, name, labels, pred, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.metric(name, labels)
            if v is not None and pred(v):
                return v
            time.sleep(0.05)
        raise AssertionError(f"{name}{labels} never satisfied the condition")

    def rotate(self, days):
        """A real rotation: a new serving pair from the same CA, picked up by the server."""
        before = self.metric("gpu_admission_cert_expiry_timestamp_seconds")
        S.run(BINARY, ["certs", "--service", "gpu-admission", "--namespace", "gpu-admission",
                       "--out", self.certs, "--san", "localhost", "--days", str(days)])
        self.wait_metric("gpu_admission_cert_expiry_timestamp_seconds", None,
                         lambda v: v != before)

    def run(self):
        self.srv.start()
        ctx = S.client_ctx(os.path.join(self.certs, "ca.crt"))
        self.conn = S.Conn(self.srv.port, ctx)

        def mark(name):
            self.marks[name] = len(self.steps)

        # steady traffic
        for _ in range(70):
            self.baseline(len(self.steps))
            self.scrape()
        # denial spike: the usual reason 8x, and a reason never seen before
        mark("denial_spike")
        for _ in range(15):
            self.baseline(len(self.steps))
            for _ in range(3):
                self.denied("notebooks", 1)
            self.denied("ml-platform", 16)  # topology-size
            self.scrape()
        # error spike: 400s (bodies that are not AdmissionReviews), a code not seen before
        mark("error_spike")
        for _ in range(15):
            self.baseline(len(self.steps))
            self.bad()
            self.bad()
            self.scrape()
        # a broken policy set: every periodic re-check (--reload-interval, here 1 s standing in
        # for the default 60 s, one per synthetic minute) fails again
        mark("policy_broken")
        with open(os.path.join(self.pol, "99-broken.yaml"), "w") as f:
            f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec: {rules: 7}\n")
        for _ in range(10):
            before = self.metric("gpu_admission_policy_reloads_total", {"result": "failure"})
            self.wait_metric("gpu_admission_policy_reloads_total", {"result": "failure"},
                             lambda v: v > before)
            self.baseline(len(self.steps))
            self.scrape()
        mark("policy_fixed")
        ok_before = self.metric("gpu_admission_policy_reloads_total", {"result": "success"})
        os.unlink(os.path.join(self.pol, "99-broken.yaml"))
        self.wait_metric("gpu_admission_policy_reloads_total", {"result": "success"},
                         lambda v: v > ok_before)
        for _ in range(15):
            self.baseline(len(self.steps))
            self.scrape()
        # slow requests: bodies dripped over ~6.4 s, over the 5 s budget, three steps running
        rv = S.review(namespace="default", gpus=0)
        rv["request"]["object"]["metadata"]["annotations"] = {"pad": PAD}
        padded = json.dumps(rv).encode()
        self.slow_seconds = []

        def slow_pair(chunks, gap):
            res = []
            ts = [threading.Thread(target=lambda: res.append(drip(self.srv.port, ctx, padded,
                                                                  chunks, gap)))
                  for _ in range(2)]
            t0 = time.monotonic()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.slow_seconds.append(time.monotonic() - t0)
            assert res == [200, 200], res

        mark("slow")
        for _ in range(3):
            self.baseline(len(self.steps))
            slow_pair(8, 0.8)
            self.scrape()
        for _ in range(12):
            self.baseline(len(self.steps))
            self.scrape()
        # requests of ~1.6 s: slower than the old top bucket (1 s), well under the budget
        mark("medium")
        for _ in range(3):
            self.baseline(len(self.steps))
            slow_pair(4, 0.4)
            self.scrape()
        for _ in range(12):
            self.baseline(len(self.steps))
            self.scrape()
        # certificate rotations: to one valid 10 days, then back to 365 days
        mark("cert_short")
        self.rotate(10)
        for _ in range(20):
            self.baseline(len(self.steps))
            self.scrape()
        mark("cert_long")
        self.rotate(365)
        for _ in range(10):
            self.baseline(len(self.steps))
            self.scrape()
        # SIGTERM: /readyz turns 503 while /metrics still answers (draining; the grace is
        # long so that a loaded machine cannot end it mid-phase), then the process is gone
        # (killed, as a crash or the end of the grace leaves it)
        self.conn.close()
        self.srv.signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        while self.srv.http_get("/readyz")[0] == 200:  # the signal is handled asynchronously
            assert time.monotonic() < deadline, "/readyz never turned 503 after SIGTERM"
            time.sleep(0.02)
        mark("draining")
        for _ in range(8):  # each /readyz answer is a 503, as the kubelet's probes get
            self.scrape()
        assert self.ready[-8:] == [0] * 8 and self.up[-8:] == [1] * 8, \
            (self.ready[-8:], self.up[-8:])
        self.srv.kill()
        mark("gone")
        for _ in range(6):
            self.scrape()
        assert self.up[-1] == 0

    def input_series(self, ksm=True):
        keys = []
        for s in self.steps:
            for k in s or {}:
                if k not in keys:
                    keys.append(k)
        out = []
        for k in keys:
            vals, seen = [], False
            for s in self.steps:
                if s is not None and k in s:
                    vals.append(repr(s[k]))
                    seen = True
                elif s is None and seen:
                    vals.append("stale")  # what Prometheus writes after a failed scrape
                    seen = False
                else:
                    vals.append("_")
            out.append({"series": k, "values": " ".join(vals)})
        out.append({"series": series_key("up", TARGET), "values": " ".join(map(str, self.up))})
        if ksm:
            out.append({"series": series_key("kube_deployment_status_replicas_available", KSM),
                        "values": " ".join(map(str, self.ready))})
        return out


_scenario = None


def scenario():
    global _scenario
    if _scenario is None:
        if not BINARY or not os.access(BINARY, os.X_OK):
            raise AssertionError("GPA_BINARY must name the built gpu-admission (ctest sets it)")
        _scenario = Scenario()
        _scenario.run()
    return _scenario


def strip_annotations(spec):
    """promtool compares annotations exactly; these tests check the expressions, so the rule
    file they run has none (`promtool check rules` checks the real file's templates)."""
    spec = json.loads(json.dumps(spec))
    for g in spec["groups"]:
        for r in g["rules"]:
            r.pop("annotations", None)
    return spec


class Alerts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sc = scenario()
        cls.dir = tempfile.mkdtemp(prefix="gpa-kit-promtool-")

    def run_promtool_test(self, spec, tests, name):
        rules = os.path.join(self.dir, name + "-rules.yaml")
        with open(rules, "w") as f:
            yaml.safe_dump(strip_annotations(spec), f)
        t = os.path.join(self.dir, name + "-test.yaml")
        with open(t, "w") as f:
            yaml.safe_dump({"rule_files": [os.path.basename(rules)], "evaluation_interval": "1m",
                            "tests": tests}, f, width=1 << 30)
        r = promtool("test", "rules", os.path.basename(t), cwd=self.dir)
        self.assertEqual(r.returncode, 0, f"promtool test rules {t}:\n{r.stdout}\n{r.stderr}")
        self.assertIn("SUCCESS", r.stdout + r.stderr)

    def expect(self, at, alert, firing):
        """An alert_rule_test: at minute `at`, `alert` fires with exactly these label sets
        (plus the alert's severity), or not at all when `firing` is empty."""
        sev = {"GPUAdmissionNoReadyReplica": "critical",
               "GPUAdmissionLatencyOverBudget": "critical"}.get(alert, "warning")
        return {"eval_time": f"{at}m", "alertname": alert,
                "exp_alerts": [{"exp_labels": dict(l, severity=sev)} for l in firing]}

    def test_promtool_check_rules(self):
        """The real rule file (annotations and their templates included) is valid."""
        for values in (kit(), kit({"webhook": {"timeoutSeconds": 1, "failurePolicy": "Ignore"}})):
            with self.subTest(str(values)):
                p = os.path.join(self.dir, "check.yaml")
                with open(p, "w") as f:
                    yaml.safe_dump(rule_spec(values), f)
                r = promtool("check", "rules", p)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("SUCCESS: 6 rules found", r.stdout)

    def test_real_metrics_pass_promtool_lint(self):
        r = subprocess.run([c.tool("promtool"), "check", "metrics"], input=self.sc.scrapes[-1],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_alert_metric_is_exported(self):
        exported = {name for name, _, _ in parse_metrics(self.sc.scrapes[-1])}
        for g in rule_spec()["groups"]:
            for r in g["rules"]:
                for name in re.findall(r"\bgpu_admission_[a-z_]+", r["expr"]):
                    self.assertIn(name, exported, f"{r['alert']} uses {name}")

    def test_alerts(self):
        sc, m = self.sc, self.sc.marks
        # the drips really took longer than the budget (and the medium ones less)
        self.assertTrue(all(s > 5.5 for s in sc.slow_seconds[:3]), sc.slow_seconds)
        self.assertTrue(all(1.2 < s < 4.5 for s in sc.slow_seconds[3:]), sc.slow_seconds)
        pod = {"instance": TARGET["instance"], "pod": TARGET["pod"]}
        d, e = m["denial_spike"], m["error_spike"]
        pb, pf = m["policy_broken"], m["policy_fixed"]
        sl, md = m["slow"], m["medium"]
        cs, cl = m["cert_short"], m["cert_long"]
        dr, gone = m["draining"], m["gone"]
        tests = [
            # steady traffic with its trickle of denials and 404s: nothing fires
            *[self.expect(d - 1, a, []) for a in ALERTS],
            # denials: both reasons of the spike (one of them new), not before 5 minutes
            self.expect(d + 3, "GPUAdmissionDenialsRising", []),
            self.expect(d + 12, "GPUAdmissionDenialsRising",
                        [{"reason": "isolation-missing"}, {"reason": "topology-size"}]),
            self.expect(d + 12, "GPUAdmissionErrorsRising", []),
            # back to the usual trickle: resolved
            self.expect(e + 14, "GPUAdmissionDenialsRising", []),
            # errors: the new 400s, not the steady 404s
            self.expect(e + 12, "GPUAdmissionErrorsRising", [{"code": "400"}]),
            # broken policy set: at once, as long as it stays, and not after the fix
            self.expect(pb - 1, "GPUAdmissionPolicyReloadFailing", []),
            self.expect(pb + 1, "GPUAdmissionPolicyReloadFailing", [pod]),
            self.expect(pf - 1, "GPUAdmissionPolicyReloadFailing", [pod]),
            self.expect(pf + 6, "GPUAdmissionPolicyReloadFailing", []),
            # slow /validate calls over the 5 s budget; /mutate stays fast
            self.expect(sl + 1, "GPUAdmissionLatencyOverBudget", []),
            self.expect(sl + 5, "GPUAdmissionLatencyOverBudget", [{"webhook": "validate"}]),
            self.expect(sl + 12, "GPUAdmissionLatencyOverBudget", []),
            # 1.6 s is under the 5 s budget
            self.expect(md + 5, "GPUAdmissionLatencyOverBudget", []),
            # a 10-day certificate, after 15 minutes; resolved by the next rotation
            self.expect(cs - 1, "GPUAdmissionCertificateExpiring", []),
            self.expect(cs + 10, "GPUAdmissionCertificateExpiring", []),
            self.expect(cs + 17, "GPUAdmissionCertificateExpiring", [pod]),
            self.expect(cl + 1, "GPUAdmissionCertificateExpiring", []),
            # draining (/readyz 503, /metrics up): kube-state-metrics sees it after 2 minutes
            self.expect(dr + 1, "GPUAdmissionNoReadyReplica", []),
            self.expect(dr + 3, "GPUAdmissionNoReadyReplica", [{}]),
            self.expect(gone + 5, "GPUAdmissionNoReadyReplica", [{}]),
        ]
        self.run_promtool_test(rule_spec(), [{"interval": "1m",
                                              "input_series": sc.input_series(),
                                              "alert_rule_test": tests}], "default")

    def test_draining_503s_are_not_errors(self):
        """The /readyz 503s of a draining replica would make the errors expression fire (the
        control: the same expression without code!="503"); with it they do not."""
        expr = [r["expr"] for g in rule_spec()["groups"] for r in g["rules"]
                if r["alert"] == "GPUAdmissionErrorsRising"][0]
        self.assertIn(',code!="503"', expr)
        at = f"{self.sc.marks['gone'] - 1}m"
        tests = [{"expr": f"(count({q}) > bool 0) or vector(0)", "eval_time": at,
                  "exp_samples": [{"labels": "{}", "value": want}]}
                 for q, want in ((expr, 0), (expr.replace(',code!="503"', ""), 1))]
        d = tempfile.mkdtemp(prefix="gpa-kit-503-")
        with open(os.path.join(d, "t.yaml"), "w") as f:
            yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m",
                            "tests": [{"interval": "1m", "input_series": self.sc.input_series(),
                                       "promql_expr_test": tests}]}, f, width=1 << 30)
        r = promtool("test", "rules", "t.yaml", cwd=d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_no_ready_replica_without_kube_state_metrics(self):
        """Without kube-state-metrics only `up` tells: a draining replica still answers its
        scrape, a gone one does not."""
        m = self.sc.marks
        tests = [self.expect(m["draining"] + 3, "GPUAdmissionNoReadyReplica", []),
                 self.expect(m["gone"] + 1, "GPUAdmissionNoReadyReplica", []),
                 self.expect(m["gone"] + 4, "GPUAdmissionNoReadyReplica", [{}])]
        self.run_promtool_test(rule_spec(), [{"interval": "1m",
                                              "input_series": self.sc.input_series(ksm=False),
                                              "alert_rule_test": tests}], "noksm")

    def test_latency_budget_is_the_webhook_timeout(self):
        """The same real 1.6 s requests are over budget when webhook.timeoutSeconds is 1."""
        m = self.sc.marks
        tests = [self.expect(m["medium"] - 1, "GPUAdmissionLatencyOverBudget", []),
                 self.expect(m["medium"] + 5, "GPUAdmissionLatencyOverBudget",
                             [{"webhook": "validate"}])]
        self.run_promtool_test(rule_spec(kit({"webhook": {"timeoutSeconds": 1}})),
                               [{"interval": "1m", "input_series": self.sc.input_series(),
                                 "alert_rule_test": tests}], "budget1")

    def test_selector_that_matches_nothing_is_loud(self):
        """A wrong metrics.prometheusRule.selector must not silence the kit: the replica
        alert fires (nothing with up == 1 is selected)."""
        v = kit()
        v["metrics"]["prometheusRule"]["selector"] = 'job="somebody-else"'
        tests = [self.expect(10, "GPUAdmissionNoReadyReplica", [{}])]
        self.run_promtool_test(rule_spec(v), [{"interval": "1m",
                                               "input_series": self.sc.input_series(ksm=False),
                                               "alert_rule_test": tests}], "wrongsel")


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)
        cls.targets = [(p["title"], t["expr"]) for p in cls.dash["panels"]
                       for t in p.get("targets", [])]

    def test_shape(self):
        d = self.dash
        self.assertEqual(d["uid"], "gpu-admission")
        names = [v["name"] for v in d["templating"]["list"]]
        self.assertEqual(names, ["datasource", "namespace", "job"])
        titles = [p["title"] for p in d["panels"]]
        self.assertEqual(len(titles), len(set(titles)))
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        # the list: requests, denials by reason, latency, reloads, certificate expiry
        for want in ("Requests by webhook and result", "Denials by reason", "Latency by webhook",
                     "Policy reloads", "Certificate validity left"):
            self.assertIn(want, titles)
        for p in d["panels"]:
            if p["type"] == "row":
                continue
            self.assertTrue(p["targets"], p["title"])
            self.assertEqual(p["datasource"]["uid"], "${datasource}")
            for t in p["targets"]:
                # every query is scoped to the chosen release
                self.assertIn('namespace="$namespace",job="$job"', t["expr"], p["title"])

    def test_metric_names_are_exported(self):
        exported = {name for name, _, _ in parse_metrics(scenario().scrapes[-1])}
        used = set()
        for title, expr in self.targets:
            for name in re.findall(r"\bgpu_admission_[a-z_]+", expr):
                used.add(name)
                self.assertIn(name, exported, f"panel {title!r} uses {name}")
        for v in self.dash["templating"]["list"][1:]:
            for name in re.findall(r"\bgpu_admission_[a-z_]+", v["query"]["query"]):
                self.assertIn(name, exported, f"variable {v['name']} uses {name}")
        self.assertGreaterEqual(len(used), 9)

    def test_every_panel_shows_data_from_the_real_server(self):
        """Each query, with the variables set as Grafana would, is valid PromQL and returns
        something over the scraped series (a misspelled metric or label returns nothing)."""
        sc = scenario()
        at = sc.marks["cert_long"] + 5
        tests = []
        for title, expr in self.targets:
            q = (expr.replace("$namespace", TARGET["namespace"]).replace("$job", TARGET["job"])
                 .replace("$__rate_interval", "5m"))
            tests.append({"expr": f"(count({q}) > bool 0) or vector(0)", "eval_time": f"{at}m",
                          "exp_samples": [{"labels": "{}", "value": 1}]})
        d = tempfile.mkdtemp(prefix="gpa-kit-dash-")
        with open(os.path.join(d, "t.yaml"), "w") as f:
            yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m",
                            "tests": [{"interval": "1m", "input_series": sc.input_series(),
                                       "promql_expr_test": tests}]}, f, width=1 << 30)
        r = promtool("test", "rules", "t.yaml", cwd=d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
