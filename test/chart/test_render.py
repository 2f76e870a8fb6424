"""test_render.py - renders the chart with the real helm for each certificate mode, webhook.url
mode and Kubernetes 1.20 / 1.27 / 1.28 / 1.30, and asserts on the rendered objects: webhook
rules, selectors, policies, certificates (checked with the openssl tool), the hardened pod,
directory mounts (hot reload), probes, PDB, Service wiring."""
import base64
import os
import re
import subprocess
import tempfile
import unittest

import yaml

import chartlib as c

# Every webhook entry leaves namespaces out by name only (issue 25): the release namespace,
# kube-system and the GPU operator's. No label a namespace's editor could set.
EXCLUDED = [c.RELEASE_NS, "kube-system", "gpu-operator"]
NS_SELECTOR = {"matchExpressions": [
    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": EXCLUDED},
]}
IGNORE_EXPR = {"key": "gpu-admission.io/ignore", "operator": "NotIn", "values": ["true"]}


def webhooks(objs):
    """The configurations and their Pod webhooks (each comes first; the workloads, DRA claims
    and namespaces entries, when rendered, follow it: test_dra.py checks the claims ones)."""
    m = c.one(objs, "MutatingWebhookConfiguration")
    v = c.one(objs, "ValidatingWebhookConfiguration")
    assert [w["name"] for w in m["webhooks"]] in (
        ["mutate.gpu-admission.io"], ["mutate.gpu-admission.io", "mutate-claims.gpu-admission.io"])
    assert 1 <= len(v["webhooks"])
    assert len({w["name"] for w in v["webhooks"]}) == len(v["webhooks"])
    assert v["webhooks"][0]["name"] == "validate.gpu-admission.io"
    return m, v, m["webhooks"][0], v["webhooks"][0]


def workload_hook(objs):
    """The workloads.gpu-admission.io entry, or None when the chart did not render it."""
    v = c.one(objs, "ValidatingWebhookConfiguration")
    found = [w for w in v["webhooks"] if w["name"] == "workloads.gpu-admission.io"]
    assert len(found) <= 1
    return found[0] if found else None


# The server's built-in workload kinds (issue 16, docs/policy.md) and the REST resource the API
# server names each by: (API group, kind) -> resource. The plurals of the CRD kinds are the
# projects' own CRDs' spec.names.plural (kubeflow training-operator, JobSet, KubeRay, LWS).
BUILTIN_WORKLOADS = {
    ("apps", "Deployment"): "deployments", ("apps", "StatefulSet"): "statefulsets",
    ("apps", "DaemonSet"): "daemonsets", ("apps", "ReplicaSet"): "replicasets",
    ("batch", "Job"): "jobs", ("batch", "CronJob"): "cronjobs",
    ("", "ReplicationController"): "replicationcontrollers", ("", "PodTemplate"): "podtemplates",
    ("kubeflow.org", "PyTorchJob"): "pytorchjobs", ("kubeflow.org", "TFJob"): "tfjobs",
    ("kubeflow.org", "MPIJob"): "mpijobs", ("jobset.x-k8s.io", "JobSet"): "jobsets",
    ("ray.io", "RayCluster"): "rayclusters", ("ray.io", "RayJob"): "rayjobs",
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkersets",
}


def rule_resources(hook):
    """(group, resource) pairs a webhook's rules select, each rule checked for the shape every
    workloads rule must have."""
    out = []
    for r in hook["rules"]:
        assert r["apiVersions"] == ["*"], r
        assert r["operations"] == ["CREATE", "UPDATE"], r
        assert r["scope"] == "Namespaced", r
        assert len(r["apiGroups"]) == 1, r
        out += [(r["apiGroups"][0], res) for res in r["resources"]]
    return out


def pod_spec(objs):
    return c.one(objs, "Deployment")["spec"]["template"]["spec"]


def openssl(*args, stdin=None):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, input=stdin)
    return r.returncode, r.stdout + r.stderr


class Defaults(unittest.TestCase):
    """Default values (certificates.mode generate) on Kubernetes 1.33."""

    @classmethod
    def setUpClass(cls):
        cls.objs = c.render(kube_version="1.33.0")
        cls.values = yaml.safe_load(open(os.path.join(c.CHART, "values.yaml")))

    def test_webhook_contract(self):
        m, v, mw, vw = webhooks(self.objs)
        self.assertEqual(mw["name"], "mutate.gpu-admission.io")
        self.assertEqual(vw["name"], "validate.gpu-admission.io")
        for w in (mw, vw):
            self.assertEqual(w["sideEffects"], "None")
            self.assertEqual(w["admissionReviewVersions"], ["v1"])
            self.assertEqual(w["failurePolicy"], "Fail")
            self.assertEqual(w["timeoutSeconds"], 5)
            self.assertEqual(w["namespaceSelector"], NS_SELECTOR)
            self.assertNotIn("objectSelector", w)
            r = w["rules"][0]
            self.assertEqual((r["apiGroups"], r["apiVersions"], r["resources"]),
                             ([""], ["v1"], ["pods"]))
        self.assertEqual(len(mw["rules"]), 1)
        self.assertEqual(mw["rules"][0]["operations"], ["CREATE"])
        self.assertEqual(sorted(vw["rules"][0]["operations"]), ["CREATE", "UPDATE"])
        # kubectl debug's containers reach the validating webhook (and only that one)
        self.assertEqual(len(vw["rules"]), 2)
        eph = vw["rules"][1]
        self.assertEqual((eph["apiGroups"], eph["apiVersions"], eph["resources"],
                          eph["operations"]),
                         ([""], ["v1"], ["pods/ephemeralcontainers"], ["UPDATE"]))
        self.assertEqual(mw["reinvocationPolicy"], "IfNeeded")
        self.assertNotIn("reinvocationPolicy", vw)  # not a field of validating webhooks

    def test_client_config_points_at_service(self):
        _, _, mw, vw = webhooks(self.objs)
        svc = c.one(self.objs, "Service")
        for w, path in ((mw, "/mutate"), (vw, "/validate")):
            cc = w["clientConfig"]
            self.assertNotIn("url", cc)
            self.assertEqual(cc["service"], {"name": svc["metadata"]["name"],
                                             "namespace": c.RELEASE_NS, "path": path,
                                             "port": 443})
        # 443 reaches the container's TLS port
        port = [p for p in svc["spec"]["ports"] if p["port"] == 443][0]
        ctr = pod_spec(self.objs)["containers"][0]
        named = {p["name"]: p["containerPort"] for p in ctr["ports"]}
        self.assertEqual(named[port["targetPort"]], 8443)
        self.assertIn("--listen=:8443", ctr["args"])
        self.assertIn("--metrics-listen=:9090", ctr["args"])
        # the Service selects the Deployment's pods
        pod_labels = c.one(self.objs, "Deployment")["spec"]["template"]["metadata"]["labels"]
        for k, val in svc["spec"]["selector"].items():
            self.assertEqual(pod_labels.get(k), val)

    def test_generated_certificate_is_valid_for_the_service(self):
        _, _, mw, vw = webhooks(self.objs)
        sec = [s for s in c.by_kind(self.objs, "Secret")
               if s["metadata"]["name"] == c.FULLNAME + "-tls"][0]
        self.assertEqual(sec["type"], "kubernetes.io/tls")
        ca = base64.b64decode(sec["data"]["ca.crt"]).decode()
        crt = base64.b64decode(sec["data"]["tls.crt"]).decode()
        key = base64.b64decode(sec["data"]["tls.key"]).decode()
        # both webhooks trust exactly the CA that signed the served certificate
        self.assertEqual(mw["clientConfig"]["caBundle"], sec["data"]["ca.crt"])
        self.assertEqual(vw["clientConfig"]["caBundle"], sec["data"]["ca.crt"])
        with tempfile.TemporaryDirectory() as d:
            for n, t in (("ca.crt", ca), ("tls.crt", crt), ("tls.key", key)):
                with open(os.path.join(d, n), "w") as f:
                    f.write(t)
            host = f"{c.FULLNAME}.{c.RELEASE_NS}.svc"
            rc, out = openssl("verify", "-CAfile", f"{d}/ca.crt", "-verify_hostname", host,
                              "-purpose", "sslserver", f"{d}/tls.crt")
            self.assertEqual(rc, 0, out)
            rc, out = openssl("verify", "-CAfile", f"{d}/ca.crt", "-verify_hostname",
                              "other.example.com", f"{d}/tls.crt")
            self.assertNotEqual(rc, 0, "certificate must not be valid for foreign names")
            rc, text = openssl("x509", "-in", f"{d}/tls.crt", "-noout", "-text")
            self.assertEqual(rc, 0)
            san = text.split("Subject Alternative Name:", 1)[1].strip().splitlines()[0]
            self.assertEqual([x.strip() for x in san.split(",")],
                             [f"DNS:{n}" for n in (
                                 c.FULLNAME, f"{c.FULLNAME}.{c.RELEASE_NS}",
                                 f"{c.FULLNAME}.{c.RELEASE_NS}.svc",
                                 f"{c.FULLNAME}.{c.RELEASE_NS}.svc.cluster.local")])
            self.assertIn("prime256v1", text)  # ECDSA P-256, as the architecture asks
            # the key belongs to the certificate
            _, pub1 = openssl("x509", "-in", f"{d}/tls.crt", "-noout", "-pubkey")
            _, pub2 = openssl("pkey", "-in", f"{d}/tls.key", "-pubout")
            self.assertEqual(pub1.strip(), pub2.strip())
        self.assertIn("gpu-admission.io/not-after", sec["metadata"]["annotations"])

    def test_hardened_pod(self):
        spec = pod_spec(self.objs)
        self.assertIs(spec["automountServiceAccountToken"], False)
        psc = spec["securityContext"]
        self.assertIs(psc["runAsNonRoot"], True)
        self.assertEqual(psc["runAsUser"], 65532)
        self.assertEqual(psc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertEqual(len(spec["containers"]), 1)
        sc = spec["containers"][0]["securityContext"]
        self.assertIs(sc["runAsNonRoot"], True)
        self.assertEqual(sc["runAsUser"], 65532)
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertNotIn("add", sc["capabilities"])
        sa = c.one(self.objs, "ServiceAccount")
        self.assertEqual(sa["metadata"]["name"], spec["serviceAccountName"])
        self.assertIs(sa["automountServiceAccountToken"], False)
        self.assertEqual(c.by_kind(self.objs, "Role") + c.by_kind(self.objs, "ClusterRole"), [])
        res = spec["containers"][0]["resources"]
        self.assertIn("memory", res["requests"])
        self.assertIn("memory", res["limits"])

    def test_mounts_are_directories_for_hot_reload(self):
        spec = pod_spec(self.objs)
        ctr = spec["containers"][0]
        mounts = {m["name"]: m for m in ctr["volumeMounts"]}
        for m in ctr["volumeMounts"]:
            self.assertNotIn("subPath", m, "subPath mounts are never updated by the kubelet")
            self.assertNotIn("subPathExpr", m)
            self.assertIs(m.get("readOnly"), True)
        vols = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(mounts["policies"]["mountPath"], "/etc/gpu-admission/policies")
        self.assertEqual(mounts["tls"]["mountPath"], "/etc/gpu-admission/tls")
        self.assertIn("--policies=/etc/gpu-admission/policies", ctr["args"])
        self.assertIn("--cert-dir=/etc/gpu-admission/tls", ctr["args"])
        self.assertEqual(ctr["args"][0], "serve")
        cm = c.policy_cm(self.objs)
        self.assertEqual(vols["policies"]["configMap"]["name"], cm["metadata"]["name"])
        self.assertNotIn("items", vols["policies"]["configMap"])  # every file, as a directory
        self.assertEqual(vols["tls"]["secret"]["secretName"], c.FULLNAME + "-tls")
        self.assertNotIn("items", vols["tls"]["secret"])
        # hot reload: no checksum annotation restarting pods on policy/cert changes
        ann = c.one(self.objs, "Deployment")["spec"]["template"]["metadata"].get(
            "annotations") or {}
        self.assertEqual([k for k in ann if "checksum" in k], [])

    def test_policies_configmap_is_values_policies(self):
        cm = c.policy_cm(self.objs)
        self.assertEqual(self.values["policies"], {})
        self.assertEqual(cm["data"], self.values["defaultPolicies"])
        self.assertTrue(all(k.endswith((".yaml", ".yml")) for k in cm["data"]))

    def test_probes_and_shutdown(self):
        spec = pod_spec(self.objs)
        ctr = spec["containers"][0]
        self.assertEqual(ctr["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "metrics"})
        self.assertEqual(ctr["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "metrics"})
        named = {p["name"]: p["containerPort"] for p in ctr["ports"]}
        self.assertEqual(named["metrics"], 9090)
        grace = [a for a in ctr["args"] if a.startswith("--shutdown-grace=")]
        self.assertEqual(len(grace), 1)
        secs = int(grace[0].split("=")[1].rstrip("s"))
        self.assertGreater(spec["terminationGracePeriodSeconds"], secs + 5)

    def test_availability(self):
        d = c.one(self.objs, "Deployment")
        self.assertEqual(d["spec"]["replicas"], 2)
        self.assertEqual(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
        tsc = d["spec"]["template"]["spec"]["topologySpreadConstraints"]
        self.assertEqual(tsc[0]["topologyKey"], "kubernetes.io/hostname")
        self.assertEqual(tsc[0]["whenUnsatisfiable"], "DoNotSchedule")
        # beside the host spread, a zone spread that only prefers (single-zone clusters)
        self.assertEqual(len(tsc), 2)
        self.assertEqual((tsc[1]["topologyKey"], tsc[1]["whenUnsatisfiable"], tsc[1]["maxSkew"]),
                         ("topology.kubernetes.io/zone", "ScheduleAnyway", 1))
        for t in tsc:
            self.assertEqual(t["labelSelector"]["matchLabels"],
                             d["spec"]["selector"]["matchLabels"])
        pdb = c.one(self.objs, "PodDisruptionBudget")
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"], d["spec"]["selector"]["matchLabels"])
        self.assertEqual(d["spec"]["template"]["spec"]["priorityClassName"],
                         "system-cluster-critical")

    def test_optional_objects_off_by_default(self):
        for kind in ("ServiceMonitor", "NetworkPolicy", "Certificate", "Issuer"):
            self.assertEqual(c.by_kind(self.objs, kind), [], kind)


class Options(unittest.TestCase):
    def test_failure_policy_timeout_and_excluded_namespaces(self):
        objs = c.render({"webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 12,
                                     "excludeNamespaces": ["gpu-operator"]},
                         "terminationGracePeriodSeconds": 40})
        for w in webhooks(objs)[2:]:
            self.assertEqual(w["failurePolicy"], "Ignore")
            self.assertEqual(w["timeoutSeconds"], 12)
            self.assertEqual(w["namespaceSelector"]["matchExpressions"][0]["values"],
                             [c.RELEASE_NS, "kube-system", "gpu-operator"])

    def test_single_replica_has_no_pdb_and_priority_class(self):
        objs = c.render({"replicaCount": 1, "priorityClassName": "system-cluster-critical"})
        self.assertEqual(c.by_kind(objs, "PodDisruptionBudget"), [])
        self.assertEqual(pod_spec(objs)["priorityClassName"], "system-cluster-critical")
        self.assertEqual(c.one(objs, "Deployment")["spec"]["replicas"], 1)

    def test_host_network(self):
        self.assertNotIn("hostNetwork", pod_spec(c.render()))
        spec = pod_spec(c.render({"hostNetwork": True}))
        self.assertIs(spec["hostNetwork"], True)
        self.assertEqual(spec["dnsPolicy"], "ClusterFirstWithHostNet")
        self.assertEqual(spec["containers"][0]["ports"][0]["containerPort"], 8443)

    def test_existing_policy_configmap(self):
        objs = c.render({"existingPolicyConfigMap": "team-policies"})
        self.assertEqual(c.by_kind(objs, "ConfigMap"), [])
        vols = {v["name"]: v for v in pod_spec(objs)["volumes"]}
        self.assertEqual(vols["policies"]["configMap"]["name"], "team-policies")

    def test_custom_policies(self):
        pol = {"a.yaml": "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                         "metadata: {name: x}\nspec: {unmatched: deny}\n",
               "b.yml": "# only a comment\n"}
        objs = c.render({"policies": pol})
        # the user's files replace the shipped set entirely
        self.assertEqual(c.policy_cm(objs)["data"], pol)

    def test_server_args(self):
        objs = c.render({"server": {"logLevel": "debug", "threads": 4, "maxBodyBytes": 2097152,
                                    "shutdownGraceSeconds": 7, "clientCASecret": "apiserver-ca"}})
        spec = pod_spec(objs)
        args = spec["containers"][0]["args"]
        for a in ("--log-level=debug", "--threads=4", "--max-body=2097152",
                  "--shutdown-grace=7s", "--client-ca=/etc/gpu-admission/client-ca/ca.crt",
                  "--header-timeout=10s", "--min-body-rate=1024"):
            self.assertIn(a, args)
        args = pod_spec(c.render({"server": {"headerTimeoutSeconds": 0,
                                             "minBodyBytesPerSecond": 4096}}))[
            "containers"][0]["args"]
        self.assertIn("--header-timeout=0s", args)
        self.assertIn("--min-body-rate=4096", args)
        vols = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(vols["client-ca"]["secret"]["secretName"], "apiserver-ca")

    def test_grace_period_must_exceed_twice_the_shutdown_grace(self):
        # the server answers for the grace, then gives open connections as long again
        r = c.template({"terminationGracePeriodSeconds": 20,
                        "server": {"shutdownGraceSeconds": 10}}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("terminationGracePeriodSeconds (20) must be greater than 20", r.stderr)
        r = c.template({"terminationGracePeriodSeconds": 21,
                        "server": {"shutdownGraceSeconds": 10}}, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = c.template({"terminationGracePeriodSeconds": 30, "webhook": {"timeoutSeconds": 30},
                        "server": {"shutdownGraceSeconds": 2}}, check=False)
        self.assertIn("must be greater than 32", r.stderr)

    def test_client_ca_is_the_only_restart_trigger(self):
        pem = ("-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n")
        objs = c.render({"server": {"clientCA": pem}})
        cms = {x["metadata"]["name"]: x for x in c.by_kind(objs, "ConfigMap")}
        self.assertEqual(cms[c.FULLNAME + "-client-ca"]["data"], {"ca.crt": pem})
        tpl = c.one(objs, "Deployment")["spec"]["template"]
        ann = tpl["metadata"]["annotations"]
        self.assertEqual(list(ann), ["checksum/client-ca"])
        self.assertIn("--client-ca=/etc/gpu-admission/client-ca/ca.crt",
                      tpl["spec"]["containers"][0]["args"])
        vols = {v["name"]: v for v in tpl["spec"]["volumes"]}
        self.assertEqual(vols["client-ca"]["configMap"]["name"], c.FULLNAME + "-client-ca")
        other = c.one(c.render({"server": {"clientCA": pem.replace("AA==", "AB==")}}),
                      "Deployment")["spec"]["template"]["metadata"]["annotations"]
        self.assertNotEqual(other["checksum/client-ca"], ann["checksum/client-ca"])
        # policies and certificates never add a checksum (they hot-reload)
        changed = c.one(c.render({"policies": {"x.yaml": "# x\n"}}), "Deployment")
        self.assertNotIn("annotations", changed["spec"]["template"]["metadata"])

    def test_service_monitor_and_network_policy(self):
        objs = c.render({"metrics": {"serviceMonitor": {"enabled": True}},
                         "networkPolicy": {"enabled": True,
                                           "webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}})
        sm = c.one(objs, "ServiceMonitor")
        self.assertEqual(sm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(sm["spec"]["endpoints"][0]["port"], "metrics")
        self.assertEqual(sm["spec"]["endpoints"][0]["path"], "/metrics")
        np = c.one(objs, "NetworkPolicy")
        ing = {r["ports"][0]["port"]: r for r in np["spec"]["ingress"]}
        self.assertEqual(ing[8443]["from"], [{"ipBlock": {"cidr": "10.0.0.0/8"}}])
        self.assertEqual(ing[9090]["from"][0]["namespaceSelector"]["matchLabels"],
                         {"kubernetes.io/metadata.name": "monitoring"})
        # default webhookFrom: the webhook port is open to every source (the API server)
        objs = c.render({"networkPolicy": {"enabled": True}})
        ing = {r["ports"][0]["port"]: r for r in c.one(objs, "NetworkPolicy")["spec"]["ingress"]}
        self.assertNotIn("from", ing[8443])


class Workloads(unittest.TestCase):
    """The workloads.gpu-admission.io entry of the ValidatingWebhookConfiguration."""

    def test_default_entry(self):
        # 1.33: without the DRA entries (1.34+), which come after this one (test_dra.py)
        for kube in ("1.33.0",):
            with self.subTest(kube=kube):
                objs = c.render(kube_version=kube)
                _, v, _, vw = webhooks(objs)
                w = workload_hook(objs)
                self.assertIsNotNone(w, "enabled by default")
                self.assertEqual([x["name"] for x in v["webhooks"]],
                                 ["validate.gpu-admission.io", "workloads.gpu-admission.io",
                                  SQUAT])
                # fails open and answers quickly, whatever the Pod webhooks do
                self.assertEqual(w["failurePolicy"], "Ignore")
                self.assertEqual(vw["failurePolicy"], "Fail")
                self.assertEqual(w["timeoutSeconds"], 3)
                self.assertEqual(w["sideEffects"], "None")  # so --dry-run=server reaches it
                self.assertEqual(w["admissionReviewVersions"], ["v1"])
                self.assertEqual(w["matchPolicy"], "Equivalent")
                # the same endpoint, certificate and namespaces as the Pod validating webhook
                self.assertEqual(w["clientConfig"], vw["clientConfig"])
                self.assertEqual(w["clientConfig"]["service"]["path"], "/validate")
                self.assertEqual(w["namespaceSelector"], NS_SELECTOR)
                self.assertNotIn("objectSelector", w)
                # its own condition over the templates (test_cel_scope.py runs it)
                self.assertEqual([m["name"] for m in w["matchConditions"]], ["judged-workload"])
                self.assertNotIn("reinvocationPolicy", w)

    def test_reuse_values_from_an_older_chart(self):
        """`helm upgrade --reuse-values` from a chart without webhook.workloads and the two
        deadline values (null removes them here): it must render, with no workloads entry and
        no deadline flags (the server's defaults), never with a deadline of 0 (off)."""
        objs = c.render(extra=["--set", "webhook.workloads=null",
                               "--set", "server.headerTimeoutSeconds=null",
                               "--set", "server.minBodyBytesPerSecond=null",
                               # issue 25's keys (ReuseValues below replays 0.1.0's values.yaml)
                               "--set", "webhook.gpuOperatorNamespace=null",
                               "--set", "webhook.ignoreLabel=null",
                               "--set", "topologySpread.zone=null",
                               "--set", "policyCheck=null"])
        self.assertIsNone(workload_hook(objs))
        self.assertEqual([o for o in objs if c.is_hook(o)], [])
        self.assertEqual(webhooks(objs)[2]["namespaceSelector"]["matchExpressions"],
                         [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                           "values": [c.RELEASE_NS, "kube-system"]}])
        self.assertEqual(len(pod_spec(objs)["topologySpreadConstraints"]), 1)
        args = " ".join(c.one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"])
        self.assertNotIn("--header-timeout", args)
        self.assertNotIn("--min-body-rate", args)
        off = c.render(extra=["--set", "server.headerTimeoutSeconds=0"])
        args = c.one(off, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertIn("--header-timeout=0s", args)

    def test_rules_are_the_builtin_kinds(self):
        w = workload_hook(c.render())
        got = rule_resources(w)
        self.assertEqual(len(got), len(set(got)), "a resource listed twice")
        self.assertEqual(sorted(got), sorted((g, r) for (g, _), r in BUILTIN_WORKLOADS.items()))
        # never Pods (the other two webhooks' job) nor a subresource
        for g, r in got:
            self.assertNotIn("/", r)
            self.assertNotEqual((g, r), ("", "pods"))

    def test_rules_follow_the_server(self):
        # The server's own table of built-in kinds (workload.c in its core layer): a kind added
        # there without a rule here would never be sent by the API server. Found by name, so
        # the file may move between layers.
        found = [os.path.join(d, "workload.c") for d, _, files in
                 os.walk(os.path.join(c.SRC, "src", "core")) if "workload.c" in files]
        self.assertEqual(len(found), 1, "workload.c under src/core: %s" % found)
        with open(found[0]) as f:
            src = f.read()
        table = re.search(r"BUILTIN\[\]\s*=\s*\{(.*?)\n\};", src, re.S)
        self.assertIsNotNone(table, "BUILTIN table not found in " + found[0])
        kinds = set(re.findall(r'\{\s*"([a-z0-9.-]*)",\s*"([A-Za-z]+)",', table.group(1)))
        self.assertGreaterEqual(len(kinds), 15)
        self.assertEqual(kinds, set(BUILTIN_WORKLOADS))

    def test_own_failure_policy_and_timeout(self):
        objs = c.render({"webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 7,
                                     "workloads": {"failurePolicy": "Fail",
                                                   "timeoutSeconds": 11}}})
        _, _, mw, vw = webhooks(objs)
        w = workload_hook(objs)
        self.assertEqual((w["failurePolicy"], w["timeoutSeconds"]), ("Fail", 11))
        for pod_hook in (mw, vw):
            self.assertEqual((pod_hook["failurePolicy"], pod_hook["timeoutSeconds"]),
                             ("Ignore", 7))

    def test_disabled(self):
        # 1.30: no DRA claims entry (test_dra.py) beside the Pod one
        objs = c.render({"webhook": {"workloads": {"enabled": False}}}, kube_version="1.33.0")
        self.assertIsNone(workload_hook(objs))
        _, v, _, vw = webhooks(objs)
        self.assertEqual([w["name"] for w in v["webhooks"]], ["validate.gpu-admission.io", SQUAT])
        self.assertEqual(vw["rules"][0]["resources"], ["pods"])

    def test_extra_resources_added_after_the_builtin_ones(self):
        extra = [{"apiGroup": "example.com", "resources": ["trainingjobs", "servejobs"]},
                 {"apiGroup": "", "resources": ["podsets"]}]
        w = workload_hook(c.render({"webhook": {"workloads": {"extraResources": extra}}}))
        got = rule_resources(w)
        builtin = [(g, r) for (g, _), r in BUILTIN_WORKLOADS.items()]
        self.assertEqual(sorted(got[:len(builtin)]), sorted(builtin))
        self.assertEqual(got[len(builtin):], [("example.com", "trainingjobs"),
                                              ("example.com", "servejobs"), ("", "podsets")])

    def test_url_mode_and_excluded_namespaces(self):
        objs = c.render({"webhook": {"url": "https://127.0.0.1:18443/gpa",
                                     "excludeNamespaces": ["gpu-operator"]}})
        w = workload_hook(objs)
        self.assertEqual(w["clientConfig"]["url"], "https://127.0.0.1:18443/gpa/validate")
        self.assertNotIn("service", w["clientConfig"])
        self.assertEqual(w["clientConfig"]["caBundle"], webhooks(objs)[3]["clientConfig"]["caBundle"])
        self.assertEqual(w["namespaceSelector"]["matchExpressions"][0]["values"],
                         [c.RELEASE_NS, "kube-system", "gpu-operator"])

    def test_cert_manager_injects_into_it_too(self):
        objs = c.render({"certificates": {"mode": "cert-manager"}})
        v = c.one(objs, "ValidatingWebhookConfiguration")
        self.assertIn("cert-manager.io/inject-ca-from", v["metadata"]["annotations"])
        self.assertNotIn("caBundle", workload_hook(objs)["clientConfig"])

    def test_grace_period_counts_the_workloads_timeout(self):
        vals = {"terminationGracePeriodSeconds": 30, "server": {"shutdownGraceSeconds": 10},
                "webhook": {"workloads": {"timeoutSeconds": 25}}}
        r = c.template(vals, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("must be greater than 35", r.stderr)
        self.assertIn("webhook.workloads.timeoutSeconds", r.stderr)
        # a disabled entry makes no call, so its timeout does not count
        vals["webhook"]["workloads"]["enabled"] = False
        r = c.template(vals, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_notes_name_it(self):
        r = c.helm("install", "--dry-run", c.RELEASE, c.CHART, "--namespace", c.RELEASE_NS)
        self.assertIn("workloads.gpu-admission.io", r.stdout)
        self.assertIn("failurePolicy Ignore, timeout 3s", r.stdout)
        args, _ = c._set_args({"webhook": {"workloads": {"enabled": False}}})
        r = c.helm("install", "--dry-run", c.RELEASE, c.CHART, "--namespace", c.RELEASE_NS, *args)
        self.assertNotIn("workloads.gpu-admission.io", r.stdout)


def selector_matches(sel, labels):
    """A LabelSelector's matchExpressions (In, NotIn, Exists, DoesNotExist) against labels,
    as the API server evaluates namespaceSelector and objectSelector."""
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return all(labels.get(k) == v for k, v in (sel.get("matchLabels") or {}).items())


def ns_labels(name, **extra):
    return dict({"kubernetes.io/metadata.name": name}, **extra)


def ns_hook(objs):
    v = c.one(objs, "ValidatingWebhookConfiguration")
    found = [w for w in v["webhooks"] if w["name"] == "namespaces.gpu-admission.io"]
    assert len(found) <= 1
    return found[0] if found else None


SQUAT = "namespace-names.gpu-admission.io"


def squat_hook(objs):
    v = c.one(objs, "ValidatingWebhookConfiguration")
    found = [w for w in v["webhooks"] if w["name"] == SQUAT]
    assert len(found) <= 1
    return found[0] if found else None


class ExcludedNamesCannotBeSquatted(unittest.TestCase):
    """Issue 33: a namespace the webhooks leave out by name (the GPU operator's, ...) is made
    only by the users and groups webhook.excludedNamespaceCreators names."""

    def test_default_guard(self):
        objs = c.render(kube_version="1.33.0")
        w = squat_hook(objs)
        self.assertIsNotNone(w)
        self.assertEqual(w["failurePolicy"], "Fail")
        self.assertEqual(w["rules"], [{"apiGroups": [""], "apiVersions": ["v1"],
                                       "operations": ["CREATE"], "resources": ["namespaces"],
                                       "scope": "Cluster"}])
        self.assertNotIn("namespaceSelector", w)  # no namespace may exempt itself
        self.assertEqual(w["clientConfig"]["service"]["path"], "/validate")
        sel = w["objectSelector"]
        # exactly the excluded names, as the API server labels a new namespace
        for ns in EXCLUDED:
            self.assertTrue(selector_matches(sel, ns_labels(ns)), ns)
        for ns in ("team-a", "gpu-operator-2", "nvidia-gpu-operator"):
            self.assertFalse(selector_matches(sel, ns_labels(ns)), ns)
        args = pod_spec(objs)["containers"][0]["args"]
        self.assertIn("--excluded-namespaces=%s" % ",".join(EXCLUDED), args)
        self.assertIn("--excluded-namespace-creators=group:system:masters", args)

    def test_names_follow_the_values(self):
        objs = c.render({"webhook": {"gpuOperatorNamespace": "nvidia-gpu-operator",
                                     "excludeNamespaces": ["batch-infra"],
                                     "excludedNamespaceCreators": {
                                         "users": ["argocd", "alice@example.com"],
                                         "groups": ["platform-admins"]}}})
        sel = squat_hook(objs)["objectSelector"]
        for ns in ("nvidia-gpu-operator", "batch-infra"):
            self.assertTrue(selector_matches(sel, ns_labels(ns)), ns)
        self.assertFalse(selector_matches(sel, ns_labels("gpu-operator")))
        args = pod_spec(objs)["containers"][0]["args"]
        self.assertIn("--excluded-namespace-creators=user:argocd,user:alice@example.com,"
                      "group:platform-admins", args)
        # the server accepts what the chart renders
        names = [a for a in args if a.startswith("--excluded-namespaces=")]
        self.assertEqual(names, ["--excluded-namespaces=%s,kube-system,nvidia-gpu-operator,"
                                 "batch-infra" % c.RELEASE_NS])

    def test_disabled(self):
        objs = c.render({"webhook": {"excludedNamespaceCreators": {"enabled": False}}})
        self.assertIsNone(squat_hook(objs))
        args = pod_spec(objs)["containers"][0]["args"]
        self.assertEqual([a for a in args if "excluded-namespace" in a], [])

    def test_schema_refuses_a_comma(self):
        r = c.template({"webhook": {"excludedNamespaceCreators": {"users": ["a,b"]}}},
                       check=False)
        self.assertNotEqual(r.returncode, 0)


class Exemptions(unittest.TestCase):
    """Issue 25: namespaces are left out by name only; the GPU operator's by default; the
    label gpu-admission.io/ignore only as an opt-in for the mutating entry, with its lock."""

    OPT_IN = {"webhook": {"ignoreLabel": {"enabled": True,
                                          "namespaces": ["ops-recovery", "team-a"]}}}

    def entries(self, objs):
        _, v, mw, _ = webhooks(objs)
        return mw, [w for w in v["webhooks"] if w["name"] not in
                    ("namespaces.gpu-admission.io", SQUAT)]

    def test_default_no_label_anywhere(self):
        objs = c.render(kube_version="1.33.0")
        mw, validating = self.entries(objs)
        self.assertEqual(len(validating), 2)  # validate + workloads
        for w in [mw] + validating:
            self.assertEqual(w["namespaceSelector"], NS_SELECTOR, w["name"])
            self.assertNotIn("gpu-admission.io/ignore", c.dump(w))
        self.assertIsNone(ns_hook(objs))
        args = pod_spec(objs)["containers"][0]["args"]
        self.assertEqual([a for a in args if "ignore-label" in a], [])
        # as the API server evaluates it: a tenant's label exempts nothing
        for w in [mw] + validating:
            sel = w["namespaceSelector"]
            self.assertTrue(selector_matches(sel, ns_labels("team-a",
                                                            **{"gpu-admission.io/ignore": "true"})))
            for ns in EXCLUDED:
                self.assertFalse(selector_matches(sel, ns_labels(ns)), (w["name"], ns))

    def test_gpu_operator_namespace_value(self):
        for val, want in (("", [c.RELEASE_NS, "kube-system"]),
                          ("nvidia-gpu-operator", [c.RELEASE_NS, "kube-system",
                                                   "nvidia-gpu-operator"])):
            with self.subTest(val=val):
                objs = c.render({"webhook": {"gpuOperatorNamespace": val,
                                             "excludeNamespaces": ["kube-system", "batch-infra"]}})
                mw, validating = self.entries(objs)
                for w in [mw] + validating:
                    self.assertEqual(w["namespaceSelector"]["matchExpressions"],
                                     [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                       "values": want + ["batch-infra"]}], w["name"])

    def test_opt_in_label_mutating_only(self):
        objs = c.render(self.OPT_IN, kube_version="1.33.0")
        mw, validating = self.entries(objs)
        self.assertEqual(mw["namespaceSelector"],
                         {"matchExpressions": NS_SELECTOR["matchExpressions"] + [IGNORE_EXPR]})
        for w in validating:
            self.assertEqual(w["namespaceSelector"], NS_SELECTOR, w["name"])
        labelled = ns_labels("ops-recovery", **{"gpu-admission.io/ignore": "true"})
        self.assertFalse(selector_matches(mw["namespaceSelector"], labelled))
        for w in validating:
            self.assertTrue(selector_matches(w["namespaceSelector"], labelled), w["name"])
        # the server gets the exempt list
        args = pod_spec(objs)["containers"][0]["args"]
        self.assertIn("--ignore-label-namespaces=ops-recovery,team-a", args)

    def test_opt_in_lock_entry(self):
        objs = c.render(dict(self.OPT_IN, webhook=dict(self.OPT_IN["webhook"],
                                                       failurePolicy="Ignore")),
                        kube_version="1.33.0")
        _, v, _, vw = webhooks(objs)
        self.assertEqual([w["name"] for w in v["webhooks"]],
                         ["validate.gpu-admission.io", "workloads.gpu-admission.io",
                          "namespaces.gpu-admission.io", SQUAT])
        w = ns_hook(objs)
        self.assertEqual(w["failurePolicy"], "Fail")  # fails closed whatever the Pod hooks do
        self.assertEqual(vw["failurePolicy"], "Ignore")
        self.assertEqual(w["sideEffects"], "None")
        self.assertEqual(w["clientConfig"], vw["clientConfig"])
        self.assertEqual(w["clientConfig"]["service"]["path"], "/validate")
        self.assertEqual(w["rules"], [{"apiGroups": [""], "apiVersions": ["v1"],
                                       "operations": ["CREATE", "UPDATE"],
                                       "resources": ["namespaces"], "scope": "Cluster"}])
        # every namespace carrying the label (old or new object), none exempt by selector
        self.assertNotIn("namespaceSelector", w)
        self.assertNotIn("matchConditions", w)
        sel = w["objectSelector"]
        self.assertTrue(selector_matches(sel, {"gpu-admission.io/ignore": "false"}))
        self.assertTrue(selector_matches(sel, ns_labels("kube-system",
                                                        **{"gpu-admission.io/ignore": "true"})))
        self.assertFalse(selector_matches(sel, ns_labels("team-a")))
        # url mode: the same endpoint as the other validating entries
        objs = c.render(dict(self.OPT_IN, webhook=dict(self.OPT_IN["webhook"],
                                                       url="https://127.0.0.1:9443")))
        self.assertEqual(ns_hook(objs)["clientConfig"]["url"], "https://127.0.0.1:9443/validate")

    def test_opt_in_needs_a_list(self):
        r = c.template({"webhook": {"ignoreLabel": {"enabled": True}}}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("webhook.ignoreLabel.enabled needs webhook.ignoreLabel.namespaces",
                      r.stderr)
        # a list while disabled changes nothing
        objs = c.render({"webhook": {"ignoreLabel": {"namespaces": ["ops-recovery"]}}})
        self.assertIsNone(ns_hook(objs))
        self.assertEqual(webhooks(objs)[2]["namespaceSelector"], NS_SELECTOR)

    def test_notes_say_what_changed(self):
        r = c.helm("install", "--dry-run", c.RELEASE, c.CHART, "--namespace", c.RELEASE_NS)
        self.assertIn("never skips the validating webhooks", r.stdout)
        self.assertIn("kubectl get namespaces -l gpu-admission.io/ignore -L "
                      "gpu-admission.io/ignore", r.stdout)
        self.assertIn("by name only): %s, kube-system, gpu-operator." % c.RELEASE_NS, r.stdout)
        args, _ = c._set_args(self.OPT_IN)
        r = c.helm("install", "--dry-run", c.RELEASE, c.CHART, "--namespace", c.RELEASE_NS, *args)
        self.assertIn("kubectl get namespaces -l 'gpu-admission.io/ignore,"
                      "kubernetes.io/metadata.name notin (ops-recovery,team-a)'", r.stdout)
        self.assertIn("only these namespaces may carry it", r.stdout)


class Scheduling(unittest.TestCase):
    """Issue 25: priority class and the zone spread, and the values turning them off."""

    def test_priority_class_off(self):
        self.assertNotIn("priorityClassName", pod_spec(c.render({"priorityClassName": ""})))
        self.assertEqual(pod_spec(c.render({"priorityClassName": "gpu-critical"}))[
            "priorityClassName"], "gpu-critical")

    def test_spreads(self):
        def keys(values):
            return [(t["topologyKey"], t["whenUnsatisfiable"]) for t in
                    pod_spec(c.render(values)).get("topologySpreadConstraints", [])]
        self.assertEqual(keys({"topologySpread": {"zone": {"enabled": False}}}),
                         [("kubernetes.io/hostname", "DoNotSchedule")])
        self.assertEqual(keys({"topologySpread": {"enabled": False}}),
                         [("topology.kubernetes.io/zone", "ScheduleAnyway")])
        self.assertEqual(keys({"topologySpread": {"enabled": False, "zone": {"enabled": False}}}),
                         [])
        self.assertEqual(keys({"topologySpread": {"zone": {"whenUnsatisfiable": "DoNotSchedule",
                                                           "topologyKey": "example.com/rack"}}}),
                         [("kubernetes.io/hostname", "DoNotSchedule"),
                          ("example.com/rack", "DoNotSchedule")])


class CertManager(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.objs = c.render({"certificates": {"mode": "cert-manager"}})

    def test_inject_annotation_and_no_ca_bundle(self):
        m, v, mw, vw = webhooks(self.objs)
        certs = {x["metadata"]["name"]: x for x in c.by_kind(self.objs, "Certificate")}
        for cfg, w in ((m, mw), (v, vw)):
            ref = cfg["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            ns, name = ref.split("/")
            self.assertEqual(ns, c.RELEASE_NS)
            self.assertIn(name, certs)
            self.assertNotIn("caBundle", w["clientConfig"])
        self.assertEqual([s for s in c.by_kind(self.objs, "Secret")], [])

    def test_serving_certificate_feeds_the_pod(self):
        vols = {v["name"]: v for v in pod_spec(self.objs)["volumes"]}
        secret = vols["tls"]["secret"]["secretName"]
        serving = [x for x in c.by_kind(self.objs, "Certificate")
                   if x["spec"]["secretName"] == secret]
        self.assertEqual(len(serving), 1)
        s = serving[0]["spec"]
        self.assertIn(f"{c.FULLNAME}.{c.RELEASE_NS}.svc", s["dnsNames"])
        self.assertIn(f"{c.FULLNAME}.{c.RELEASE_NS}.svc.cluster.local", s["dnsNames"])
        self.assertEqual(s["privateKey"]["algorithm"], "ECDSA")
        self.assertNotIn("isCA", s)
        # issued by the chart's CA Issuer, itself backed by a self-signed CA Certificate
        issuers = {x["metadata"]["name"]: x for x in c.by_kind(self.objs, "Issuer")}
        ca_issuer = issuers[s["issuerRef"]["name"]]
        ca_cert = [x for x in c.by_kind(self.objs, "Certificate")
                   if x["spec"]["secretName"] == ca_issuer["spec"]["ca"]["secretName"]][0]
        self.assertIs(ca_cert["spec"]["isCA"], True)
        self.assertEqual(issuers[ca_cert["spec"]["issuerRef"]["name"]]["spec"], {"selfSigned": {}})

    def test_external_issuer(self):
        objs = c.render({"certificates": {"mode": "cert-manager", "certManager": {
            "issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}}})
        self.assertEqual(c.by_kind(objs, "Issuer"), [])
        cert = c.one(objs, "Certificate")
        self.assertEqual(cert["spec"]["issuerRef"],
                         {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})


class Existing(unittest.TestCase):
    def test_existing_secret_and_ca_bundle(self):
        bundle = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
        objs = c.render({"certificates": {"mode": "existing", "existingSecret": "my-tls",
                                          "caBundle": bundle}})
        for w in webhooks(objs)[2:]:
            self.assertEqual(w["clientConfig"]["caBundle"], bundle)
        vols = {v["name"]: v for v in pod_spec(objs)["volumes"]}
        self.assertEqual(vols["tls"]["secret"]["secretName"], "my-tls")
        self.assertEqual(c.by_kind(objs, "Secret"), [])
        self.assertEqual(c.by_kind(objs, "Certificate"), [])


class URLMode(unittest.TestCase):
    def test_url_replaces_service(self):
        objs = c.render({"webhook": {"url": "https://127.0.0.1:18443/"}})
        _, _, mw, vw = webhooks(objs)
        self.assertEqual(mw["clientConfig"]["url"], "https://127.0.0.1:18443/mutate")
        self.assertEqual(vw["clientConfig"]["url"], "https://127.0.0.1:18443/validate")
        for w in (mw, vw):
            self.assertNotIn("service", w["clientConfig"])
            self.assertTrue(w["clientConfig"]["caBundle"])
        # the generated certificate is valid for the URL's host
        sec = c.one(objs, "Secret")
        with tempfile.TemporaryDirectory() as d:
            for n, k in (("ca", "ca.crt"), ("crt", "tls.crt")):
                with open(f"{d}/{n}", "wb") as f:
                    f.write(base64.b64decode(sec["data"][k]))
            rc, out = openssl("verify", "-CAfile", f"{d}/ca", "-verify_ip", "127.0.0.1",
                              f"{d}/crt")
            self.assertEqual(rc, 0, out)

    def test_url_with_dns_host_in_cert_manager_mode(self):
        objs = c.render({"webhook": {"url": "https://webhook.example.com:9443/gpa"},
                         "certificates": {"mode": "cert-manager"}})
        _, _, mw, _ = webhooks(objs)
        self.assertEqual(mw["clientConfig"]["url"], "https://webhook.example.com:9443/gpa/mutate")
        serving = [x for x in c.by_kind(objs, "Certificate") if not x["spec"].get("isCA")][0]
        self.assertIn("webhook.example.com", serving["spec"]["dnsNames"])


class KubeVersions(unittest.TestCase):
    def test_match_conditions_on_every_supported_version(self):
        for ver in ("1.33.0", "1.34.0", "1.37.2"):
            objs = c.render(kube_version=ver)
            _, _, mw, vw = webhooks(objs)
            self.assertIn("matchConditions", mw, ver)
            self.assertIn("matchConditions", vw, ver)
            self.assertEqual(c.one(objs, "PodDisruptionBudget")["apiVersion"], "policy/v1", ver)
        _, _, mw, vw = webhooks(c.render({"webhook": {"matchConditions": {"enabled": False}}},
                                         kube_version="1.33.0"))
        self.assertNotIn("matchConditions", mw)
        self.assertNotIn("matchConditions", vw)

    def test_older_than_supported_is_refused(self):
        # Chart.yaml's kubeVersion: 1.33 is the oldest the project supports (docs/operations.md)
        for ver in ("1.20.2", "1.32.9"):
            r = c.template(kube_version=ver, check=False)
            self.assertNotEqual(r.returncode, 0, ver)
            self.assertIn(">=1.33.0-0", r.stderr, ver)

    def test_match_condition_structure(self):
        _, _, mw, vw = webhooks(c.render({"webhook": {"matchConditions": {
            "resourcePrefixes": ["nvidia.com/", "example.org/gpu"]}}}, kube_version="1.33.0"))
        (mc,) = mw["matchConditions"]
        (vc,) = vw["matchConditions"]
        self.assertEqual(mc["name"], "gpu-pod")
        self.assertEqual(vc["name"], "gpu-relevant-pod")
        for e in (mc["expression"], vc["expression"]):
            self.assertIn("r.startsWith('example.org/gpu')", e)
            self.assertIn("r.startsWith('deviceclass.resource.kubernetes.io/')", e)
            self.assertIn("has(object.spec.initContainers) && object.spec.initContainers.exists(", e)
            self.assertEqual(e.count("("), e.count(")"))
        for needle in ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES",
                       "c.securityContext.privileged", "object.spec.ephemeralContainers",
                       "object.metadata.labels.exists(k, k.startsWith('gpu-admission.io/'))",
                       "object.metadata.annotations.exists(k, k.startsWith('gpu-admission.io/'))"):
            self.assertIn(needle, vc["expression"])
            self.assertNotIn(needle, mc["expression"])
        # the validating condition includes the mutating one (a superset of pods)
        self.assertTrue(vc["expression"].startswith(mc["expression"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
