{{/*
_modes.tpl - the enforcement mode (values `mode`, issue 32 item 3): which mode the cluster can
serve, the generated ValidatingAdmissionPolicy / MutatingAdmissionPolicy objects the chart
installs (read, checked and returned as data; apiserver-policies.yaml renders them), the
failure policy each webhook entry gets from the mode, and the export check the policy-check
hook runs. Like _helpers.tpl it never renders an object by itself.

Must never: let an entry fail open unless a generated policy the API server evaluates matches
the same resources and operations (a dropped rule in the export keeps the entry closed), or
install the export of the shipped policies next to a user's own (it would enforce a policy the
webhook does not serve).
*/}}

{{/*
`mode`, checked: webhook when absent (--reuse-values from a chart without it). backstop needs
the API server to serve ValidatingAdmissionPolicy (GA in 1.30), native MutatingAdmissionPolicy
too (GA in 1.36, admissionregistration.k8s.io/v1). A live install reads both from the cluster:
the version, and discovery (helm lists every served kind as group/version/Kind), so a cluster
whose API server turned the API off (--runtime-config) is refused too. `helm template` has no
kind-level list (helm's built-in one names group/versions only, whatever --kube-version says):
there the version decides, unless --api-versions names kinds (Argo CD passes the cluster's).
*/}}
{{- define "gpu-admission.mode" -}}
{{- $mode := toString (.Values.mode | default "webhook") }}
{{- $need := dict "webhook" (list) "backstop" (list "1.30" "ValidatingAdmissionPolicy" "ValidatingAdmissionPolicyBinding") "native" (list "1.36" "ValidatingAdmissionPolicy" "ValidatingAdmissionPolicyBinding" "MutatingAdmissionPolicy" "MutatingAdmissionPolicyBinding") }}
{{- if not (hasKey $need $mode) }}
{{- fail (printf "mode must be webhook, backstop or native, not %q" $mode) }}
{{- end }}
{{- with get $need $mode }}
{{- $caps := $.Capabilities.APIVersions }}
{{- $kv := $.Capabilities.KubeVersion.Version }}
{{- if not (semverCompare (printf ">=%s-0" (first .)) $kv) }}
{{- fail (printf "enforcement mode %s needs Kubernetes >= %s (the API server evaluates the generated admission policies); this cluster is %s: use mode webhook, or backstop on 1.30+" $mode (first .) $kv) }}
{{- end }}
{{- $live := $caps.Has "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration" }}
{{- range rest . }}
{{- if and $live (not ($caps.Has (printf "admissionregistration.k8s.io/v1/%s" .))) }}
{{- fail (printf "enforcement mode %s needs the API server to serve admissionregistration.k8s.io/v1 %s, and this cluster does not (turned off with --runtime-config?): use mode webhook" $mode .) }}
{{- end }}
{{- end }}
{{- end }}
{{- $mode }}
{{- end }}

{{/* The kinds each generated file may hold: policy kind, binding kind. */}}
{{- define "gpu-admission.apiServerKinds" -}}
{{- if eq . "vap" }}ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding{{ else }}MutatingAdmissionPolicy,MutatingAdmissionPolicyBinding{{ end }}
{{- end }}

{{/*
The objects of one generated file, (dict "root" . "which" "vap"|"map"), as a JSON list: the
documents of apiServerPolicies.<which>, or of files/generated/<which>.yaml when that is empty.
Checked here so a wrong file (the other exporter's, a Kubernetes object of another kind, an
empty or half-written one) fails the render instead of installing something else: every
document is admissionregistration.k8s.io/v1 of the file's two kinds, named gpu-admission-*,
there is a policy and a binding, and every binding names a policy of the file.
*/}}
{{- define "gpu-admission.apiServerDocs" -}}
{{- $root := .root }}
{{- $which := .which }}
{{- $mode := include "gpu-admission.mode" $root }}
{{- $given := dig $which "" ($root.Values.apiServerPolicies | default dict) }}
{{- $text := $given }}
{{- if not $given }}
{{- if or $root.Values.policies $root.Values.existingPolicyConfigMap }}
{{- fail (printf "enforcement mode %s with your own policies (policies or existingPolicyConfigMap) needs their export: gpu-admission export %s --policies DIR --output %s.yaml, then --set-file apiServerPolicies.%s=%s.yaml (the chart's own export is of the shipped policies)" $mode $which $which $which $which) }}
{{- end }}
{{- $text = $root.Files.Get (printf "files/generated/%s.yaml" $which) }}
{{- if not $text }}
{{- fail (printf "enforcement mode %s needs the %s objects, and this chart has no files/generated/%s.yaml: give them with --set-file apiServerPolicies.%s=FILE (gpu-admission export %s --policies DIR --output FILE)" $mode $which $which $which $which) }}
{{- end }}
{{- end }}
{{- $kinds := splitList "," (include "gpu-admission.apiServerKinds" $which) }}
{{- $policyKind := index $kinds 0 }}
{{- $bindingKind := index $kinds 1 }}
{{- $src := ternary (printf "apiServerPolicies.%s" $which) (printf "files/generated/%s.yaml" $which) (ne $given "") }}
{{- $docs := list }}
{{- $policies := list }}
{{- $bindings := list }}
{{- range $i, $part := regexSplit "(?m)^---[ \\t]*$" $text -1 }}
{{- $d := fromYaml $part }}
{{- if hasKey $d "Error" }}
{{- fail (printf "generated objects in %s: document %d is not YAML: %s" $src (add1 $i) (get $d "Error")) }}
{{- end }}
{{- if $d }}
{{- $kind := toString (get $d "kind") }}
{{- $name := toString (dig "metadata" "name" "" $d) }}
{{- if or (ne (toString (get $d "apiVersion")) "admissionregistration.k8s.io/v1") (not (has $kind $kinds)) }}
{{- fail (printf "generated objects in %s: document %d is %s %s, not admissionregistration.k8s.io/v1 %s or %s (is this the export of `gpu-admission export %s`?)" $src (add1 $i) (toString (get $d "apiVersion")) $kind $policyKind $bindingKind $which) }}
{{- end }}
{{- if not (hasPrefix "gpu-admission-" $name) }}
{{- fail (printf "generated objects in %s: %s %q is not named gpu-admission-*: the chart installs only the exporter's objects" $src $kind $name) }}
{{- end }}
{{- if eq $kind $policyKind }}{{ $policies = append $policies $name }}{{ else }}{{ $bindings = append $bindings $d }}{{ end }}
{{- $docs = append $docs $d }}
{{- end }}
{{- end }}
{{- if or (not $policies) (not $bindings) }}
{{- fail (printf "generated objects in %s: no %s with its %s, an export with nothing to enforce" $src $policyKind $bindingKind) }}
{{- end }}
{{- range $bindings }}
{{- $p := toString (dig "spec" "policyName" "" .) }}
{{- if not (has $p $policies) }}
{{- fail (printf "generated objects in %s: %s %s names policy %q, which the file does not hold" $src $bindingKind .metadata.name $p) }}
{{- end }}
{{- end }}
{{- toJson $docs }}
{{- end }}

{{/*
"true" when a generated policy of the file that some binding of the file names matches every
(resource, operation) pair of .want ("resource:OP" in the API group .group), as the API server
would send it the request: a rule listing the group (or *), the resource (or *) and the
operation (or *), and no excludeResourceRules entry naming the resource. (dict "docs" LIST
"group" G "want" LIST)
*/}}
{{- define "gpu-admission.apiServerCovers" -}}
{{- $bound := list }}
{{- range .docs }}{{ with dig "spec" "policyName" "" . }}{{ $bound = append $bound . }}{{ end }}{{ end }}
{{- $group := .group }}
{{- $missing := 0 }}
{{- range $w := .want }}
{{- $res := index (splitList ":" $w) 0 }}
{{- $op := index (splitList ":" $w) 1 }}
{{- $hit := false }}
{{- range $.docs }}
{{- if and (has (dig "metadata" "name" "" .) $bound) (not (dig "spec" "policyName" "" .)) }}
{{- $excluded := false }}
{{- range (dig "spec" "matchConstraints" "excludeResourceRules" list .) }}
{{- if and (or (has $group .apiGroups) (has "*" .apiGroups)) (or (has $res .resources) (has "*" .resources)) }}{{ $excluded = true }}{{ end }}
{{- end }}
{{- range (dig "spec" "matchConstraints" "resourceRules" list .) }}
{{- if and (not $excluded) (or (has $group .apiGroups) (has "*" .apiGroups)) (or (has $res .resources) (has "*" .resources)) (or (has $op .operations) (has "*" .operations)) }}{{ $hit = true }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- if not $hit }}{{ $missing = add1 $missing }}{{ end }}
{{- end }}
{{- if eq $missing 0 }}true{{ end }}
{{- end }}

{{/*
failurePolicy of a webhook entry, (dict "root" . "entry" NAME): webhook.failurePolicy when set
(Fail or Ignore for the Pod and claim entries, as before modes existed). Otherwise from the
mode: Fail in webhook mode. In backstop and native an entry fails open only when the API
server's generated policies do its job while the webhook is away, judged from the objects
themselves (apiServerCovers): the validating entries by the ValidatingAdmissionPolicy, the
mutating ones (native only) by the MutatingAdmissionPolicies. Fails closed otherwise: an entry
with no policy behind it is the only thing between the request and the cluster.
  validate         pods CREATE/UPDATE, pods/ephemeralcontainers UPDATE (kubectl debug);
                   pods CREATE/UPDATE only when splitEphemeral moved the subresource out
  validate-ephemeral  pods/ephemeralcontainers UPDATE (rendered by splitEphemeral only)
  validate-claims  resourceclaims, resourceclaimtemplates CREATE/UPDATE: Fail in every mode.
                   The claims policy of `export vap` judges adminAccess, allocationMode All
                   and unknown classes only; the checks that depend on where a claim is placed
                   (an untrusted claim on a multiAllocatable pool, sharing configs, isolation
                   by default for claims) are the webhook's, and its matchConditions send only
                   GPU claims, so failing closed blocks only those during an outage.
  mutate           pods CREATE
  mutate-claims    resourceclaims, resourceclaimtemplates CREATE/UPDATE
*/}}
{{- define "gpu-admission.failurePolicy" -}}
{{- $explicit := dig "failurePolicy" "" .root.Values.webhook }}
{{- if $explicit }}
{{- $explicit }}
{{- else }}
{{- $mode := include "gpu-admission.mode" .root }}
{{- $want := dict
  "validate" (list "" (list "pods:CREATE" "pods:UPDATE" "pods/ephemeralcontainers:UPDATE") "vap")
  "validate-ephemeral" (list "" (list "pods/ephemeralcontainers:UPDATE") "vap")
  "validate-claims" (list "resource.k8s.io" (list "resourceclaims:CREATE" "resourceclaims:UPDATE" "resourceclaimtemplates:CREATE" "resourceclaimtemplates:UPDATE") "vap")
  "mutate" (list "" (list "pods:CREATE") "map")
  "mutate-claims" (list "resource.k8s.io" (list "resourceclaims:CREATE" "resourceclaims:UPDATE" "resourceclaimtemplates:CREATE" "resourceclaimtemplates:UPDATE") "map") }}
{{- $w := get $want .entry }}
{{- if and (eq .entry "validate") (include "gpu-admission.splitEphemeral" .root) }}
{{- $w = list "" (list "pods:CREATE" "pods:UPDATE") "vap" }}
{{- end }}
{{- $which := index $w 2 }}
{{- if or (eq $mode "webhook") (eq .entry "validate-claims") (and (eq $which "map") (ne $mode "native")) }}
{{- "Fail" }}
{{- else }}
{{- $docs := include "gpu-admission.apiServerDocs" (dict "root" .root "which" $which) | fromJsonArray }}
{{- ternary "Ignore" "Fail" (eq (include "gpu-admission.apiServerCovers" (dict "docs" $docs "group" (index $w 0) "want" (index $w 1))) "true") }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Containers the policy check adds in backstop and native, (dict "root" . "exported" CMNAME):
`gpu-admission export vap` (and `map` in native) on the policies mounted at
/etc/gpu-admission/policies, each in a container of its own (they run side by side with
`check`; any one failing fails the Job and so the install or upgrade). With
apiServerPolicies.verifyCurrent the output must also be byte for byte the file the release
installs (mounted from CMNAME): an export older than the policies is refused too. A shell
(dash, cmp and diff: debian:12-slim's essential packages) only compares; the exporter's exit
status is the verdict on the policy.
*/}}
{{- define "gpu-admission.exportCheckContainers" -}}
{{- $v := .root.Values }}
{{- $mode := include "gpu-admission.mode" .root }}
{{- $verify := dig "verifyCurrent" true ($v.apiServerPolicies | default dict) }}
{{- range $which := ternary (list "vap" "map") (list "vap") (eq $mode "native") }}
- name: {{ printf "export-%s" $which }}
  image: {{ include "gpu-admission.image" $.root | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  command: ["/bin/sh", "-c"]
  args:
    - |
      out=/tmp/export/{{ $which }}.yaml
      /usr/local/bin/gpu-admission export {{ $which }} --policies /etc/gpu-admission/policies --output "$out"
      rc=$?
      if [ "$rc" -ne 0 ]; then
        echo "policy-check: gpu-admission export {{ $which }} failed (exit $rc): the API server cannot be given this policy set (mode {{ $mode }})" >&2
        exit 1
      fi
      {{- if $verify }}
      if ! cmp -s "$out" /etc/gpu-admission/exported/{{ $which }}.yaml; then
        echo "policy-check: apiServerPolicies.{{ $which }} is not the export of the policies this release serves; regenerate it (gpu-admission export {{ $which }} --policies DIR --output {{ $which }}.yaml) and pass it with --set-file apiServerPolicies.{{ $which }}={{ $which }}.yaml" >&2
        diff -u /etc/gpu-admission/exported/{{ $which }}.yaml "$out" | head -n 60 >&2
        exit 1
      fi
      echo "policy-check: export {{ $which }} OK, the same objects the release installs"
      {{- else }}
      echo "policy-check: export {{ $which }} OK"
      {{- end }}
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
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: policies
      mountPath: /etc/gpu-admission/policies
      readOnly: true
    - name: exported
      mountPath: /etc/gpu-admission/exported
      readOnly: true
    - name: {{ printf "export-%s-out" $which }}
      mountPath: /tmp/export
{{- end }}
{{- end }}

{{/* Volumes of those containers: the raw export the release installs, and a scratch dir each. */}}
{{- define "gpu-admission.exportCheckVolumes" -}}
{{- $mode := include "gpu-admission.mode" .root }}
- name: exported
  configMap:
    name: {{ .exported }}
{{- range $which := ternary (list "vap" "map") (list "vap") (eq $mode "native") }}
- name: {{ printf "export-%s-out" $which }}
  emptyDir:
    sizeLimit: 16Mi
{{- end }}
{{- end }}

{{/* ConfigMap data: the raw generated files of the mode, as the release installs them. */}}
{{- define "gpu-admission.exportedData" -}}
{{- $mode := include "gpu-admission.mode" . }}
{{- range $which := ternary (list "vap" "map") (list "vap") (eq $mode "native") }}
{{- $given := dig $which "" ($.Values.apiServerPolicies | default dict) }}
{{- $text := $given | default ($.Files.Get (printf "files/generated/%s.yaml" $which)) }}
{{ $which }}.yaml: {{ $text | toYaml | indent 2 | trim }}
{{- end }}
{{- end }}

{{/*
"true" when the validating Pod entry's `kubectl debug` rule (pods/ephemeralcontainers UPDATE)
goes into an entry of its own, validate-ephemeral.gpu-admission.io: in backstop and native,
with failurePolicy from the mode, when the VAP matches pods CREATE and UPDATE but not that
subresource (`export vap` leaves ephemeral containers to the webhook). The Pod entry may then
fail open while a debug container attached during an outage is still refused. Never in
webhook mode: one entry, as before.
*/}}
{{- define "gpu-admission.splitEphemeral" -}}
{{- if and (ne (include "gpu-admission.mode" .) "webhook") (not (dig "failurePolicy" "" .Values.webhook)) }}
{{- $docs := include "gpu-admission.apiServerDocs" (dict "root" . "which" "vap") | fromJsonArray }}
{{- $pods := include "gpu-admission.apiServerCovers" (dict "docs" $docs "group" "" "want" (list "pods:CREATE" "pods:UPDATE")) }}
{{- $eph := include "gpu-admission.apiServerCovers" (dict "docs" $docs "group" "" "want" (list "pods/ephemeralcontainers:UPDATE")) }}
{{- if and $pods (not $eph) }}true{{ end }}
{{- end }}
{{- end }}

{{/* What a pod the Pod entries see meets while no replica answers (alert text, NOTES). */}}
{{- define "gpu-admission.downEffect" -}}
{{- $mode := include "gpu-admission.mode" . }}
{{- $m := include "gpu-admission.failurePolicy" (dict "root" . "entry" "mutate") }}
{{- $v := include "gpu-admission.failurePolicy" (dict "root" . "entry" "validate") }}
{{- if or (eq $m "Fail") (eq $v "Fail") }}
{{- printf "With failurePolicy %s (mutate) / %s (validate), every pod creation the webhooks see is refused." $m $v }}
{{- else if eq $mode "webhook" }}
{{- "With failurePolicy Ignore, pods the webhooks see are admitted unchecked." }}
{{- else }}
{{- printf "Mode %s, failurePolicy Ignore: pods the webhooks see are judged only by the API server's generated admission policies (what CEL cannot decide lapses)." $mode }}
{{- end }}
{{- end }}
