{{/* Names and labels, as `helm create` makes them. */}}
{{- define "toolsvc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsvc.fullname" -}}
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

{{- define "toolsvc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "toolsvc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "toolsvc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolsvc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "toolsvc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "toolsvc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
toolsvc.validate fails the render on a configuration that cannot work,
with the reason, before anything reaches the cluster.
*/}}
{{- define "toolsvc.validate" -}}
{{- if and .Values.auth.existingSecret .Values.auth.configMap }}
{{- fail "auth.existingSecret and auth.configMap are mutually exclusive: the auth file comes from one of them" }}
{{- end }}
{{- if not (or .Values.auth.existingSecret .Values.auth.configMap) }}
{{- fail "auth.existingSecret is required: the pods listen on every interface, which toolsvc refuses without an auth file (create it with: kubectl create secret generic toolsvc-auth --from-file=auth.yaml)" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.postgres.existingSecret) }}
{{- fail (printf "replicaCount %d needs postgres.existingSecret: SQLite is one file on one pod's volume; a fleet shares PostgreSQL" (int .Values.replicaCount)) }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.redis.existingSecret) }}
{{- fail (printf "replicaCount %d needs redis.existingSecret: MCP sessions, rate limits and the result cache are shared between replicas through Redis" (int .Values.replicaCount)) }}
{{- end }}
{{- if and .Values.knowledge.configMap .Values.knowledge.volume }}
{{- fail "knowledge: give configMap or volume, not both" }}
{{- end }}
{{- if and .Values.tls.clientCASecret (not .Values.tls.secretName) }}
{{- fail "tls.clientCASecret (mutual TLS) needs tls.secretName: the server's own certificate" }}
{{- end }}
{{- if and .Values.persistence.enabled .Values.postgres.existingSecret }}
{{- fail "persistence is the SQLite database's volume: with postgres.existingSecret there is nothing to persist; set persistence.enabled=false" }}
{{- end }}
{{- end }}

{{/* The scheme the probes and the ServiceMonitor use. */}}
{{- define "toolsvc.scheme" -}}
{{- if .Values.tls.secretName }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
