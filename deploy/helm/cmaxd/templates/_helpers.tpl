{{/* The chart's name, at most 63 characters (a label value). */}}
{{- define "cmaxd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: the release's when it contains the chart's ("cmaxd"), else RELEASE-cmaxd. */}}
{{- define "cmaxd.fullname" -}}
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

{{/* cmaxd takes its fleet-breaker Leases in cmax-system (sched::KubernetesOptions::breaker_namespace;
no flag changes it), so their Role lives there whatever the release's namespace. */}}
{{- define "cmaxd.breakerNamespace" -}}
cmax-system
{{- end }}

{{- define "cmaxd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cmaxd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cmaxd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cmaxd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The container's arguments: each value mapped to the cmaxd flag it names in values.yaml. */}}
{{- define "cmaxd.args" -}}
- --node=$(NODE_NAME)
- --scheduler=kubernetes
- --db=/var/lib/cmax/cmaxd.db
- {{ printf "--act-on=%s" .Values.thresholds.actOn | quote }}
- {{ printf "--drain-at=%s" .Values.thresholds.drainAt | quote }}
{{- if .Values.thresholds.reboot }}
- --reboot
{{- end }}
- {{ printf "--boot-grace-s=%d" (int64 .Values.thresholds.bootGraceSeconds) | quote }}
- {{ printf "--breaker-max=%d" (int64 .Values.breaker.max) | quote }}
- {{ printf "--breaker-window=%d" (int64 .Values.breaker.windowSeconds) | quote }}
- {{ printf "--dedup-window=%d" (int64 .Values.breaker.dedupWindowSeconds) | quote }}
{{- if .Values.fleetBreaker.enabled }}
- {{ printf "--fleet-max-percent=%v" .Values.fleetBreaker.maxPercent | quote }}
- {{ printf "--fleet-max-nodes=%d" (int64 .Values.fleetBreaker.maxNodes) | quote }}
{{- with .Values.fleetBreaker.poolSelector }}
- {{ printf "--kube-pool-selector=%s" . | quote }}
{{- end }}
{{- else }}
- --no-fleet-breaker
{{- end }}
- {{ printf "--kube-timeout-ms=%d" (int64 .Values.kubeTimeoutMs) | quote }}
{{- if .Values.nvml.enabled }}
- {{ printf "--nvml-lib=%s" .Values.nvml.library | quote }}
{{- else }}
- --no-nvml
{{- end }}
{{- if .Values.infiniband.enabled }}
{{- range .Values.infiniband.expect }}
- {{ printf "--ib-expect=%s" . | quote }}
{{- end }}
{{- else }}
- --no-ib
{{- end }}
{{- if .Values.metrics.enabled }}
- {{ printf "--metrics-listen=0.0.0.0:%d" (int64 .Values.metrics.port) | quote }}
{{- else }}
{{- /* Two arguments: CLI11 reads "--metrics-listen=" as the option without its value. */}}
- --metrics-listen
- ""
{{- end }}
{{- if .Values.dryRun }}
- --dry-run
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* A Prometheus Operator object needs the metrics port. */}}
{{- define "cmaxd.requireMetrics" -}}
{{- if not .Values.metrics.enabled }}
{{- fail "serviceMonitor.enabled and podMonitor.enabled need metrics.enabled: cmaxd serves nothing to scrape without --metrics-listen" }}
{{- end }}
{{- end }}
