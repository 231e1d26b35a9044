{{/*
The chart's name, truncated to 63 characters (the DNS label limit of Kubernetes names).
*/}}
{{- define "spool.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The fully qualified app name, truncated to 63 characters. A release name that already contains
the chart name is used as it is.
*/}}
{{- define "spool.fullname" -}}
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

{{/*
"<fullname>-<suffix>" within 63 characters: the fullname is cut, never the suffix.
Call with (dict "root" $ "suffix" "jobs").
*/}}
{{- define "spool.suffixedName" -}}
{{- $full := include "spool.fullname" .root }}
{{- $room := sub 62 (len .suffix) | int }}
{{- printf "%s-%s" ($full | trunc $room | trimSuffix "-") .suffix }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "spool.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "spool.labels" -}}
helm.sh/chart: {{ include "spool.chart" . }}
{{ include "spool.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: spool
{{- end }}

{{/*
Selector labels.
*/}}
{{- define "spool.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
A component's labels and selector labels. Call with (dict "root" $ "component" "jobs").
*/}}
{{- define "spool.componentLabels" -}}
{{ include "spool.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "spool.componentSelectorLabels" -}}
{{ include "spool.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The image reference.
*/}}
{{- define "spool.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The Secret every component reads.
*/}}
{{- define "spool.secretName" -}}
{{- default (include "spool.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "spool.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "spool.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The gRPC services, in the order they are listed everywhere.
*/}}
{{- define "spool.services" -}}
{{- toJson (list "accounts" "jobs" "stations" "webhooks") }}
{{- end }}

{{/*
The address a component calls a service at: its headless Service through the dns resolver, so
that grpc-js's round_robin spreads the calls over every ready replica.
Call with (dict "root" $ "service" "jobs").
*/}}
{{- define "spool.serviceAddress" -}}
{{- $values := index .root.Values .service }}
{{- printf "dns:///%s.%s.svc.%s:%d" (include "spool.suffixedName" (dict "root" .root "suffix" .service)) .root.Release.Namespace .root.Values.clusterDomain (int $values.grpcPort) }}
{{- end }}

{{/*
The port a component serves GET /metrics on (metrics.port; 0: none), apart from its API, refused
when it is one of the component's other ports. Call with (dict "root" $ "component" "jobs").
*/}}
{{- define "spool.metricsPort" -}}
{{- $port := int .root.Values.metrics.port }}
{{- $values := index .root.Values .component }}
{{- if gt $port 0 }}
{{- if eq .component "gateway" }}
{{- if eq $port (int $values.port) }}
{{- fail (printf "metrics.port %d is also gateway.port; give them different ports" $port) }}
{{- end }}
{{- else if eq $port (int $values.grpcPort) }}
{{- fail (printf "metrics.port %d is also %s.grpcPort; give them different ports" $port .component) }}
{{- end }}
{{- if and (eq .component "stations") (eq $port (int $values.link.port)) }}
{{- fail (printf "metrics.port %d is also stations.link.port; give them different ports" $port) }}
{{- end }}
{{- end }}
{{- if and (eq .component "stations") (eq (int $values.grpcPort) (int $values.link.port)) }}
{{- fail (printf "stations.grpcPort %d is also stations.link.port; give them different ports" (int $values.grpcPort)) }}
{{- end }}
{{- if gt $port 0 }}
{{- $port }}
{{- else }}
{{- 0 }}
{{- end }}
{{- end }}

{{/*
Seconds Kubernetes waits between SIGTERM and SIGKILL: the component's whole drain (the gateway's
delay, then the shutdown grace) and 10 s to close connections. A value set in a component's
terminationGracePeriodSeconds must leave that much time.
Call with (dict "root" $ "component" "gateway").
*/}}
{{- define "spool.terminationGracePeriodSeconds" -}}
{{- $values := index .root.Values .component }}
{{- $drainMs := int .root.Values.config.shutdownGraceMs }}
{{- if eq .component "gateway" }}
{{- $drainMs = add $drainMs (int $values.shutdownDelayMs) }}
{{- end }}
{{- $needed := add (div (add $drainMs 999) 1000) 10 }}
{{- if kindIs "invalid" $values.terminationGracePeriodSeconds }}
{{- $needed }}
{{- else if lt (int $values.terminationGracePeriodSeconds) (int $needed) }}
{{- fail (printf "%s.terminationGracePeriodSeconds is %d, but draining takes up to %d s (config.shutdownGraceMs%s, and 10 s to close); give at least %d" .component (int $values.terminationGracePeriodSeconds) (div (add $drainMs 999) 1000) (ternary " + gateway.shutdownDelayMs" "" (eq .component "gateway")) (int $needed)) }}
{{- else }}
{{- $values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/*
Environment variables from a name: value map, in name order.
*/}}
{{- define "spool.envMap" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
{{- /* YAML numbers arrive as floats, whose text is 3.3554432e+07 from 1e6 up: a whole number
   is written as one. */}}
{{- if and (kindIs "float64" $value) (eq $value (float64 (int64 $value))) }}
  value: {{ int64 $value | toString | quote }}
{{- else }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The environment of a component: what every component shares, then its own.
Call with (dict "root" $ "component" "jobs").
*/}}
{{- define "spool.env" -}}
{{- $root := .root }}
{{- $component := .component }}
{{- $values := index $root.Values $component }}
{{- $secret := include "spool.secretName" $root -}}
- name: LOG_LEVEL
  value: {{ $root.Values.config.logLevel | quote }}
- name: SHUTDOWN_GRACE_MS
  value: {{ $root.Values.config.shutdownGraceMs | int | toString | quote }}
- name: NATS_URL
  value: {{ $root.Values.nats.url | quote }}
- name: NATS_REPLICAS
  value: {{ $root.Values.nats.replicas | int | toString | quote }}
- name: REGION
  value: {{ $root.Values.region | quote }}
{{- if and $root.Values.regions (not (has $root.Values.region $root.Values.regions)) }}
{{- fail (printf "region %q is not one of regions (%s)" $root.Values.region (join ", " $root.Values.regions)) }}
{{- end }}
{{- with $root.Values.regions }}
- name: REGIONS
  value: {{ join "," . | quote }}
{{- end }}
{{- if $root.Values.nats.credentials }}
- name: NATS_CREDS
  value: /etc/spool/nats/{{ $root.Values.secrets.keys.natsCreds }}
{{- end }}
{{- /* Every address goes to every component: each reads those it calls. */}}
{{- range $service := include "spool.services" $root | fromJsonArray }}
- name: {{ upper $service }}_ADDR
  value: {{ include "spool.serviceAddress" (dict "root" $root "service" $service) | quote }}
{{- end }}
{{- if eq $component "gateway" }}
- name: HOST
  value: {{ $root.Values.bindAddress | quote }}
- name: PORT
  value: {{ $values.port | int | toString | quote }}
- name: SPOOL_URL
  # For `kubectl exec … -- spool admin …` inside the container.
  value: "http://127.0.0.1:{{ $values.port | int }}"
- name: SHUTDOWN_DELAY_MS
  value: {{ $values.shutdownDelayMs | int | toString | quote }}
- name: TRUST_PROXY
  value: {{ $values.trustProxy | toString | quote }}
{{- with $values.publicUrl }}
- name: PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
- name: SPOOL_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $root.Values.secrets.keys.adminToken }}
{{- $metricsPort := include "spool.metricsPort" . | int }}
{{- if gt $metricsPort 0 }}
- name: METRICS_PORT
  value: {{ $metricsPort | toString | quote }}
{{- end }}
{{- else }}
- name: GRPC_HOST
  value: {{ $root.Values.bindAddress | quote }}
- name: GRPC_PORT
  value: {{ $values.grpcPort | int | toString | quote }}
{{- $metricsPort := include "spool.metricsPort" . | int }}
{{- if gt $metricsPort 0 }}
- name: METRICS_PORT
  value: {{ $metricsPort | toString | quote }}
{{- end }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $root.Values.secrets.keys.databaseUrl }}
{{- end }}
{{- if eq $component "stations" }}
- name: STATION_HOST
  value: {{ $root.Values.bindAddress | quote }}
- name: STATION_PORT
  value: {{ $values.link.port | int | toString | quote }}
{{- /* Agents download release tarballs from the gateway's public address. */}}
{{- with $root.Values.gateway.publicUrl }}
- name: AGENT_DOWNLOAD_URL
  value: {{ printf "%s/agent/v1/releases" (trimSuffix "/" .) | quote }}
{{- end }}
{{- end }}
{{- /* Optional: spool itself names every variable it needs and lacks when it starts. */}}
{{- range $name, $key := $values.secretEnv }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $key }}
      optional: true
{{- end }}
{{- include "spool.envMap" $root.Values.config.env }}
{{- include "spool.envMap" $values.env }}
{{- with $root.Values.config.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- with $values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Volumes and mounts every pod has: a writable /tmp (the root file system is read-only), the NATS
credentials when used, and extraVolumes.
*/}}
{{- define "spool.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- if .Values.nats.credentials }}
- name: nats-creds
  secret:
    secretName: {{ include "spool.secretName" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.secrets.keys.natsCreds }}
        path: {{ .Values.secrets.keys.natsCreds }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "spool.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.nats.credentials }}
- name: nats-creds
  mountPath: /etc/spool/nats
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}
