{{/*
_helpers.tpl - names, labels and the pieces several templates share. It must never render an
object by itself, and must never generate key material (that lives in webhooks.yaml only, so
the Secret and the caBundle come from ONE generated CA).
*/}}

{{- define "gpu-admission.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpu-admission.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpu-admission.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpu-admission.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-admission.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpu-admission.labels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
{{ include "gpu-admission.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: admission-webhook
{{- end }}

{{- define "gpu-admission.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-admission.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Secret holding tls.crt / tls.key the server reads from --cert-dir. */}}
{{- define "gpu-admission.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "existing" }}
{{- required "certificates.existingSecret is required when certificates.mode is existing" .Values.certificates.existingSecret }}
{{- else }}
{{- printf "%s-tls" (include "gpu-admission.fullname" .) }}
{{- end }}
{{- end }}

{{- define "gpu-admission.policyConfigMapName" -}}
{{- if .Values.existingPolicyConfigMap }}
{{- .Values.existingPolicyConfigMap }}
{{- else }}
{{- printf "%s-policies" (include "gpu-admission.fullname" .) }}
{{- end }}
{{- end }}

{{- define "gpu-admission.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The DNS names the API server may use to reach the Service. */}}
{{- define "gpu-admission.dnsNames" -}}
{{- $svc := include "gpu-admission.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) }}
{{- range .Values.certificates.extraDNSNames }}{{ $names = append $names . }}{{ end }}
{{- $host := include "gpu-admission.urlHost" . }}
{{- if and $host (not (regexMatch "^[0-9.]+$|:" $host)) }}{{ $names = append $names $host }}{{ end }}
{{- toJson (uniq $names) }}
{{- end }}

{{- define "gpu-admission.ipAddresses" -}}
{{- $ips := list }}
{{- range .Values.certificates.extraIPAddresses }}{{ $ips = append $ips . }}{{ end }}
{{- $host := include "gpu-admission.urlHost" . }}
{{- if and $host (regexMatch "^[0-9.]+$|:" $host) }}{{ $ips = append $ips $host }}{{ end }}
{{- toJson (uniq $ips) }}
{{- end }}

{{/* Host part of webhook.url without port or IPv6 brackets; empty when no url. */}}
{{- define "gpu-admission.urlHost" -}}
{{- if .Values.webhook.url }}
{{- $h := (urlParse .Values.webhook.url).host }}
{{- if hasPrefix "[" $h }}
{{- regexReplaceAll "^\\[([^]]*)\\].*$" $h "${1}" }}
{{- else }}
{{- regexReplaceAll ":[0-9]*$" $h "" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Namespaces no webhook ever sees, by name: the release namespace (the webhook must be able to
recover itself), kube-system (the control plane's pods), the GPU operator's namespace
(webhook.gpuOperatorNamespace; its validator pods ask for nvidia.com/gpu) and
webhook.excludeNamespaces. dig: a release upgraded with --reuse-values from a chart without
gpuOperatorNamespace keeps that chart's list.
*/}}
{{- define "gpu-admission.excludedNamespaces" -}}
{{- $names := list .Release.Namespace "kube-system" }}
{{- with dig "gpuOperatorNamespace" "" .Values.webhook }}{{ $names = append $names . }}{{ end }}
{{- toJson (uniq (concat $names .Values.webhook.excludeNamespaces)) }}
{{- end }}

{{/*
The namespaceSelector of every validating entry (and the base of the mutating one): by name
only. kubernetes.io/metadata.name is set by the API server on every namespace and cannot be
changed by whoever edits the namespace. Never a label a namespace's editor
may set: the validating webhook is the backstop that refuses untrusted pods on shared GPUs.
*/}}
{{- define "gpu-admission.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- range include "gpu-admission.excludedNamespaces" . | fromJsonArray }}
      - {{ . | quote }}
      {{- end }}
{{- end }}

{{/*
webhook.excludedNamespaceCreators: "true" when the guard on the excluded names is rendered
(absent: --reuse-values from an older chart, on with the defaults), and the creators list the
server reads (user:NAME,group:NAME).
*/}}
{{- define "gpu-admission.squatGuard" -}}
{{- if dig "excludedNamespaceCreators" "enabled" true .Values.webhook }}true{{ end }}
{{- end }}
{{- define "gpu-admission.squatCreators" -}}
{{- $c := list }}
{{- range (dig "excludedNamespaceCreators" "users" list .Values.webhook) }}{{ $c = append $c (printf "user:%s" .) }}{{ end }}
{{- range (dig "excludedNamespaceCreators" "groups" (list "system:masters") .Values.webhook) }}{{ $c = append $c (printf "group:%s" .) }}{{ end }}
{{- join "," $c }}
{{- end }}

{{/* webhook.ignoreLabel, {} when absent (--reuse-values from an older chart: off). */}}
{{- define "gpu-admission.ignoreLabelEnabled" -}}
{{- if dig "ignoreLabel" "enabled" false .Values.webhook }}
{{- if not (dig "ignoreLabel" "namespaces" list .Values.webhook) }}
{{- fail "webhook.ignoreLabel.enabled needs webhook.ignoreLabel.namespaces: the namespaces allowed to carry the label gpu-admission.io/ignore (the server refuses it on every other namespace)" }}
{{- end }}true
{{- end }}
{{- end }}

{{/*
webhook.dra.enabled: "true" when the DRA claim entries are rendered. auto (also when the key is
absent: --reuse-values from an older chart) needs both the API group in the capabilities AND
Kubernetes >= 1.34: `helm template` fills .Capabilities.APIVersions from the API versions helm
itself was built with (helm v4.1 lists resource.k8s.io/v1 whatever --kube-version says), so the
capability alone would render the entries for a 1.33 cluster. A live install reads both from
the cluster.
*/}}
{{- define "gpu-admission.draEnabled" -}}
{{- $v := dig "dra" "enabled" "auto" .Values.webhook }}
{{- if kindIs "bool" $v }}
{{- if $v }}true{{ end }}
{{- else if eq (toString $v) "auto" }}
{{- if and (.Capabilities.APIVersions.Has "resource.k8s.io/v1") (semverCompare ">=1.34-0" .Capabilities.KubeVersion.Version) }}true{{ end }}
{{- else }}
{{- fail (printf "webhook.dra.enabled must be auto, true or false, not %v" $v) }}
{{- end }}
{{- end }}

{{/*
The mutating entry's namespaceSelector: by name, plus the opt-in label when
webhook.ignoreLabel.enabled (then namespaces.gpu-admission.io keeps the label to the listed
namespaces).
*/}}
{{- define "gpu-admission.mutatingNamespaceSelector" -}}
{{- include "gpu-admission.namespaceSelector" . }}
{{- if include "gpu-admission.ignoreLabelEnabled" . }}
  - key: gpu-admission.io/ignore
    operator: NotIn
    values: ["true"]
{{- end }}
{{- end }}

{{/*
CEL predicate "container c asks for a GPU resource": any key of its requests or limits starts
with one of webhook.matchConditions.resourcePrefixes, or with deviceclass.resource.kubernetes.io/
(a DRA extended resource: the scheduler makes the claim for it and the webhook leaves that
claim alone, so the pod is where its GPUs are judged; not a value, so it cannot be left out).
Every optional field is guarded by has(): an evaluation error makes the API server apply
failurePolicy to the call.
*/}}
{{- define "gpu-admission.celContainerHasGPU" -}}
{{- $p := list "r.startsWith('deviceclass.resource.kubernetes.io/')" }}
{{- range .Values.webhook.matchConditions.resourcePrefixes }}
{{- $p = append $p (printf "r.startsWith(%s)" (squote .)) }}
{{- end }}
{{- $any := join " || " $p }}
{{- printf "has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, %s)) || (has(c.resources.requests) && c.resources.requests.exists(r, %s)))" $any $any }}
{{- end }}

{{/*
CEL: the pod (object) asks for a GPU in a container or an init container. The pod helpers
below take the root context (the pod is `object`) or a dict {Values, celSpec, celMeta} naming
the CEL text of a pod spec and its metadata (a workload's pod template, celWorkloadJudged).
*/}}
{{- define "gpu-admission.celPodHasGPU" -}}
{{- $s := default "object.spec" (index . "celSpec") }}
{{- $c := include "gpu-admission.celContainerHasGPU" . }}
{{- printf "(has(%s.containers) && %s.containers.exists(c, %s))\n|| (has(%s.initContainers) && %s.initContainers.exists(c, %s))" $s $s $c $s $s $c }}
{{- end }}

{{/*
CEL: some container of any kind sets NVIDIA_VISIBLE_DEVICES / NVIDIA_MIG_CONFIG_DEVICES or is
privileged - what the validating webhook checks on every pod, GPU or not.
*/}}
{{- define "gpu-admission.celPodReachesGPUs" -}}
{{- $s := default "object.spec" (index . "celSpec") }}
{{- $c := "(has(c.env) && c.env.exists(e, has(e.name) && (e.name == 'NVIDIA_VISIBLE_DEVICES' || e.name == 'NVIDIA_MIG_CONFIG_DEVICES'))) || (has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged == true)" }}
{{- $parts := list }}
{{- range list "containers" "initContainers" "ephemeralContainers" }}
{{- $parts = append $parts (printf "(has(%s.%s) && %s.%s.exists(c, %s))" $s . $s . $c) }}
{{- end }}
{{- join "\n|| " $parts }}
{{- end }}

{{/*
CEL: the pod could reach devices beside its resources (POLICY.md "Isolation by default"): a
hostPath volume (any path: the server canonicalises it and judges), an env name the NVIDIA
container toolkit reads (every NVIDIA_*, CUDA_VERSION, DOCKER_RESOURCE_GPU), or an envFrom whose
prefix could produce one of the device-granting names (the server's table in
src/core/k8s/toolkit_env.c; test/chart/test_cel.py holds the two equal). One linear pass per
list; the name list is a constant.
*/}}
{{- define "gpu-admission.celPodReachesDevices" -}}
{{- $s := default "object.spec" (index . "celSpec") }}
{{- $names := "['NVIDIA_VISIBLE_DEVICES', 'NVIDIA_MIG_CONFIG_DEVICES', 'NVIDIA_MIG_MONITOR_DEVICES', 'NVIDIA_IMEX_CHANNELS', 'DOCKER_RESOURCE_GPU', 'CUDA_VERSION', 'NVIDIA_REQUIRE_CUDA', 'NVIDIA_REQUIRE_JETPACK', 'NVIDIA_GDS', 'NVIDIA_MOFED', 'NVIDIA_GDRCOPY', 'NVIDIA_NVSWITCH']" }}
{{- $c := printf "(has(c.env) && c.env.exists(e, has(e.name) && (e.name.startsWith('NVIDIA_') || e.name == 'CUDA_VERSION' || e.name == 'DOCKER_RESOURCE_GPU'))) || (has(c.envFrom) && c.envFrom.exists(f, !has(f.prefix) || %s.exists(n, n.startsWith(f.prefix))))" $names }}
{{- $parts := list (printf "(has(%s.volumes) && %s.volumes.exists(v, has(v.hostPath)))" $s $s) }}
{{- range list "containers" "initContainers" "ephemeralContainers" }}
{{- $parts = append $parts (printf "(has(%s.%s) && %s.%s.exists(c, %s))" $s . $s . $c) }}
{{- end }}
{{- join "\n|| " $parts }}
{{- end }}

{{/*
CEL: the pod carries a gpu-admission.io/ label (tenant, trust, pool, group ...) or annotation
(a malformed gpu-admission.io/gpu-memory is refused even on a pod without GPUs).
*/}}
{{- define "gpu-admission.celPodHasOurMetadata" -}}
{{- $m := default "object.metadata" (index . "celMeta") }}
{{- printf "(has(%s.labels) && %s.labels.exists(k, k.startsWith('gpu-admission.io/')))\n|| (has(%s.annotations) && %s.annotations.exists(k, k.startsWith('gpu-admission.io/')))" $m $m $m $m }}
{{- end }}

{{/*
webhook.dra.gpuClasses as a CEL list literal. The schema keeps each a DeviceClass name (a DNS
subdomain), so no quote can reach the expression. dig: --reuse-values from a chart without the
value gets NVIDIA's GPU classes, the default.
*/}}
{{- define "gpu-admission.celGpuClasses" -}}
{{- $q := list }}
{{- range (dig "dra" "gpuClasses" (list "gpu.nvidia.com" "mig.nvidia.com" "vfio.gpu.nvidia.com") .Values.webhook) }}
{{- $q = append $q (squote .) }}
{{- end }}
{{- printf "[%s]" (join ", " $q) }}
{{- end }}

{{/*
CEL: the claim or claim template (object) is one the server judges (POLICY.md "Dynamic Resource
Allocation" and "Isolation by default"): a request (v1 `exactly` or a `firstAvailable`
alternative; v1beta1 fields on the request itself) naming a class of webhook.dra.gpuClasses,
or asking adminAccess or allocationMode All (refused to tenants without the right whatever
the class: engine_claim.c check_rights), or an opaque config for NVIDIA's gpu.nvidia.com driver
(checked on every claim: the driver reads it whatever the class). A ResourceClaim keeps its
requests under spec.devices, a template under spec.spec.devices; the one-element list binds
whichever is there. Every other claim (ComputeDomain channels, NICs, ...) never waits on the
webhook.
*/}}
{{- define "gpu-admission.celClaimJudged" -}}
{{- $cls := include "gpu-admission.celGpuClasses" . }}
{{- $asks := printf "(has(%%[1]s.deviceClassName) && %%[1]s.deviceClassName in %s) || (has(%%[1]s.allocationMode) && %%[1]s.allocationMode == 'All')" $cls }}
{{- $exact := printf "(has(%%[1]s.adminAccess) && %%[1]s.adminAccess == true) || %s" $asks }}
{{- $req := printf "(has(r.exactly) && (%s))\n|| (has(r.firstAvailable) && r.firstAvailable.exists(a, %s))\n|| %s" (printf $exact "r.exactly") (printf $asks "a") (printf $exact "r") }}
{{- printf "(has(object.spec) && has(object.spec.devices) ? [object.spec.devices]\n : has(object.spec) && has(object.spec.spec) && has(object.spec.spec.devices) ? [object.spec.spec.devices] : []).exists(d,\n(has(d.requests) && d.requests.exists(r,\n%s))\n|| (has(d.config) && d.config.exists(g, has(g.opaque) && has(g.opaque.driver) && g.opaque.driver == 'gpu.nvidia.com')))" $req }}
{{- end }}

{{/*
CEL: a pod template t the workloads entry judges - what the Pod validating entry's conditions
send (a GPU resource, a path to devices beside it, a gpu-admission.io/ label or annotation).
*/}}
{{- define "gpu-admission.celTemplateJudged" -}}
{{- $d := dict "Values" .Values "celSpec" "t.spec" "celMeta" "t.metadata" }}
{{- printf "(has(t.spec) && (%s\n|| %s\n|| %s))\n|| (has(t.metadata) && (%s))" (include "gpu-admission.celPodHasGPU" $d) (include "gpu-admission.celPodReachesGPUs" $d) (include "gpu-admission.celPodReachesDevices" $d) (include "gpu-admission.celPodHasOurMetadata" $d) }}
{{- end }}

{{/*
The workload kinds the workloads entry's condition can read, with their template paths (the
server's built-in kinds, docs/policy.md "Workloads", each path as the server reads it), then
webhook.workloads.extraResources entries that give `templates`. JSON list of {apiGroup,
resources, templates}.
*/}}
{{- define "gpu-admission.workloadTemplateKinds" -}}
{{- $k := list
  (dict "apiGroup" "apps" "resources" (list "deployments" "statefulsets" "daemonsets" "replicasets") "templates" (list "spec.template"))
  (dict "apiGroup" "batch" "resources" (list "jobs") "templates" (list "spec.template"))
  (dict "apiGroup" "batch" "resources" (list "cronjobs") "templates" (list "spec.jobTemplate.spec.template"))
  (dict "apiGroup" "" "resources" (list "replicationcontrollers") "templates" (list "spec.template"))
  (dict "apiGroup" "" "resources" (list "podtemplates") "templates" (list "template"))
  (dict "apiGroup" "kubeflow.org" "resources" (list "pytorchjobs") "templates" (list "spec.pytorchReplicaSpecs.*.template"))
  (dict "apiGroup" "kubeflow.org" "resources" (list "tfjobs") "templates" (list "spec.tfReplicaSpecs.*.template"))
  (dict "apiGroup" "kubeflow.org" "resources" (list "mpijobs") "templates" (list "spec.mpiReplicaSpecs.*.template"))
  (dict "apiGroup" "jobset.x-k8s.io" "resources" (list "jobsets") "templates" (list "spec.replicatedJobs.*.template.spec.template"))
  (dict "apiGroup" "ray.io" "resources" (list "rayclusters") "templates" (list "spec.headGroupSpec.template" "spec.workerGroupSpecs.*.template"))
  (dict "apiGroup" "ray.io" "resources" (list "rayjobs") "templates" (list "spec.rayClusterSpec.headGroupSpec.template" "spec.rayClusterSpec.workerGroupSpecs.*.template"))
  (dict "apiGroup" "leaderworkerset.x-k8s.io" "resources" (list "leaderworkersets") "templates" (list "spec.leaderWorkerTemplate.leaderTemplate" "spec.leaderWorkerTemplate.workerTemplate")) }}
{{- range .Values.webhook.workloads.extraResources }}
{{- if .templates }}{{ $k = append $k . }}{{ end }}
{{- end }}
{{- toJson $k }}
{{- end }}

{{/*
CEL: the list of pod templates at one path of the object (dot-separated keys, at most one `*`:
every value of a map or element of a list, as the server's paths say). Each step is guarded
by has(); the `*` step takes a map's values or a list as it is (type() tells them apart: a
kind's `*` is a map in one CRD and a list in another), then keeps the elements that have the
rest of the path.
*/}}
{{- define "gpu-admission.celTemplatesAt" -}}
{{- $segs := splitList "." . }}
{{- $star := -1 }}
{{- range $i, $s := $segs }}
{{- if eq $s "*" }}{{ if ge $star 0 }}{{ fail (printf "template path %q: at most one `*` (webhook.workloads.extraResources)" $) }}{{ end }}{{ $star = $i }}{{ end }}
{{- end }}
{{- $cur := "object" }}{{- $g := list }}
{{- range $i, $s := $segs }}
{{- if or (lt $star 0) (lt $i $star) }}{{ $cur = printf "%s.%s" $cur $s }}{{ $g = append $g (printf "has(%s)" $cur) }}{{ end }}
{{- end }}
{{- $guard := join " && " $g | default "true" }}
{{- if lt $star 0 }}
{{- printf "(%s ? [%s] : [])" $guard $cur }}
{{- else }}
{{- $l := printf "(type(%[1]s) == map ? %[1]s.map(k, %[1]s[k]) : type(%[1]s) == list ? %[1]s : [])" $cur }}
{{- $v := "v" }}{{- $vg := list }}
{{- range $i, $s := $segs }}
{{- if gt $i $star }}{{ $v = printf "%s.%s" $v $s }}{{ $vg = append $vg (printf "has(%s)" $v) }}{{ end }}
{{- end }}
{{- if $vg }}{{ $l = printf "%s.filter(v, type(v) == map && %s).map(v, %s)" $l (join " && " $vg) $v }}{{ end }}
{{- printf "(%s ? %s : [])" $guard $l }}
{{- end }}
{{- end }}

{{/*
CEL: the workload (object) is one the workloads entry must see. A kind whose template paths
the chart knows (workloadTemplateKinds) is sent only when one of its templates is judged
(celTemplateJudged); any other kind (webhook.workloads.extraResources without `templates`) is
always sent.
*/}}
{{- define "gpu-admission.celWorkloadJudged" -}}
{{- $known := list }}{{- $cands := list }}
{{- range include "gpu-admission.workloadTemplateKinds" . | fromJsonArray }}
{{- $res := list }}{{ range .resources }}{{ $res = append $res (squote .) }}{{ end }}
{{- $is := printf "(request.resource.group == %s && request.resource.resource in [%s])" (squote .apiGroup) (join ", " $res) }}
{{- $paths := list }}{{ range .templates }}{{ $paths = append $paths (include "gpu-admission.celTemplatesAt" .) }}{{ end }}
{{- $known = append $known $is }}
{{- $cands = append $cands (printf "(%s ? %s : [])" $is (join " + " $paths)) }}
{{- end }}
{{- printf "!(%s)\n|| (%s).exists(t,\n%s)" (join "\n || " $known) (join "\n + " $cands) (include "gpu-admission.celTemplateJudged" .) }}
{{- end }}

{{- define "gpu-admission.matchConditionsEnabled" -}}
{{- if .Values.webhook.matchConditions.enabled }}true{{ end }}
{{- end }}

{{/*
Rules of the workloads webhook: the server's built-in workload kinds (docs/policy.md
"Workloads"), as the API server names their REST resources (plural, lower case; the CRD
plurals are those of the kubeflow, JobSet, KubeRay and LWS projects' own CRDs), then
webhook.workloads.extraResources. Any version: training jobs come as v1, v2beta1... Subresources (scale, status) never carry a changed template.
*/}}
{{- define "gpu-admission.workloadRules" -}}
{{- $builtin := list
  (dict "apiGroup" "apps" "resources" (list "deployments" "statefulsets" "daemonsets" "replicasets"))
  (dict "apiGroup" "batch" "resources" (list "jobs" "cronjobs"))
  (dict "apiGroup" "" "resources" (list "replicationcontrollers" "podtemplates"))
  (dict "apiGroup" "kubeflow.org" "resources" (list "pytorchjobs" "tfjobs" "mpijobs"))
  (dict "apiGroup" "jobset.x-k8s.io" "resources" (list "jobsets"))
  (dict "apiGroup" "ray.io" "resources" (list "rayclusters" "rayjobs"))
  (dict "apiGroup" "leaderworkerset.x-k8s.io" "resources" (list "leaderworkersets")) }}
{{- range concat $builtin .Values.webhook.workloads.extraResources }}
- apiGroups: [{{ .apiGroup | quote }}]
  apiVersions: ["*"]
  operations: ["CREATE", "UPDATE"]
  resources: {{ toJson .resources }}
  scope: Namespaced
{{- end }}
{{- end }}

{{/*
Labels of the policy check's objects (policy-check.yaml): the release's, but never both
selector labels of the Deployment (so no Service, PDB or spread constraint counts its pod).
*/}}
{{- define "gpu-admission.policyCheckLabels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
app.kubernetes.io/name: {{ printf "%s-policy-check" (include "gpu-admission.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: policy-check
{{- end }}

{{/*
The pod spec (without restartPolicy) of the policy check, shared by the hook Job and the
`helm test` Pod so both run exactly the same command: {root: ., configMap: NAME, exported:
NAME}. In backstop and native the export check's containers and volumes follow (_modes.tpl),
reading the generated files from the ConfigMap `exported`.
*/}}
{{- define "gpu-admission.policyCheckPodSpec" -}}
{{- $v := .root.Values -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
containers:
  - name: check
    image: {{ include "gpu-admission.image" .root | quote }}
    imagePullPolicy: {{ $v.image.pullPolicy }}
    # The image's entrypoint is the gpu-admission binary. --strict: a set that only loads
    # with warnings (a rule that can never match, one that denies every pod) fails too.
    args: ["check", "--strict", "/etc/gpu-admission/policies"]
    securityContext:
      runAsNonRoot: true
      runAsUser: 65532
      runAsGroup: 65532
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      privileged: false
      capabilities:
        drop: ["ALL"]
      seccompProfile:
        type: RuntimeDefault
    {{- with $v.policyCheck.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - name: policies
        mountPath: /etc/gpu-admission/policies
        readOnly: true
  {{- if ne (include "gpu-admission.mode" .root) "webhook" }}
  {{- include "gpu-admission.exportCheckContainers" . | nindent 2 }}
  {{- end }}
volumes:
  - name: policies
    configMap:
      name: {{ .configMap }}
  {{- if ne (include "gpu-admission.mode" .root) "webhook" }}
  {{- include "gpu-admission.exportCheckVolumes" . | nindent 2 }}
  {{- end }}
{{- end }}
