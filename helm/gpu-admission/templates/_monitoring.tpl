{{/*
_monitoring.tpl - what the operator's kit (prometheusrule.yaml, dashboard-configmap.yaml)
shares. It must never render an object by itself.
*/}}

{{/* PromQL label matchers selecting this release's scraped series: by default what the
chart's ServiceMonitor produces (job = the Service's name, namespace = its namespace). */}}
{{- define "gpu-admission.metricsSelector" -}}
{{- with dig "prometheusRule" "selector" "" .Values.metrics }}
{{- . }}
{{- else }}
{{- printf "job=%q,namespace=%q" (include "gpu-admission.fullname" .) .Release.Namespace }}
{{- end }}
{{- end }}
