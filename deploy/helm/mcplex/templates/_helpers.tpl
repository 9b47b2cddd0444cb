{{/*
The chart's shared definitions: names and labels, the refusals no schema can state (replicas on
SQLite, a PostgreSQL store without its Secrets), the Host names the gateway must trust, the
config file the ConfigMap holds, and the pod's security settings.
*/}}

{{- define "mcplex.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's objects are named this; the release name alone when it already says mcplex. */}}
{{- define "mcplex.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "mcplex.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "mcplex.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "mcplex.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcplex.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "mcplex.labels" -}}
{{ include "mcplex.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "mcplex.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "mcplex.postgres" -}}
{{- if eq .Values.store.backend "postgres" }}true{{ end }}
{{- end }}

{{/*
Refusals. SQLite is one file in one ReadWriteOnce volume: a second gateway could neither mount
it on another node nor share it safely, so more than one replica needs PostgreSQL. A PostgreSQL
store made without a given admin key would print the one it makes on the gateway's output,
which in a cluster is the pod's log (on the node, in every log shipper): the key must come from
a Secret.
*/}}
{{- define "mcplex.validate" -}}
{{- if not (include "mcplex.postgres" .) }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- fail (printf "replicaCount is %d with store.backend sqlite: the SQLite store is one file in one volume and cannot be shared by several pods; set store.backend: postgres (with store.postgres.urlSecret) for more than one replica" (int .Values.replicaCount)) }}
{{- end }}
{{- if .Values.autoscaling.enabled }}
{{- fail "autoscaling.enabled with store.backend sqlite: the SQLite store cannot be shared by several pods; set store.backend: postgres" }}
{{- end }}
{{- else }}
{{- if not .Values.store.postgres.urlSecret.name }}
{{- fail "store.backend postgres needs store.postgres.urlSecret.name: the Secret that holds the store's URL (kubectl create secret generic mcplex-store --from-literal=MCPLEX_STORE='postgres://…')" }}
{{- end }}
{{- if not .Values.tokenKey.secret.name }}
{{- fail "store.backend postgres needs tokenKey.secret.name: every replica must seal OAuth logins with the same key (kubectl create secret generic mcplex-token-key --from-literal=MCPLEX_TOKEN_KEY=$(openssl rand -hex 32))" }}
{{- end }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not (or .Values.metrics.serviceMonitor.apiKeySecret.name .Values.apiKey.secret.name)) (ne (toString (index .Values.config "require_auth")) "false") }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.serviceMonitor.apiKeySecret.name or apiKey.secret.name: /metrics takes the admin API key where the gateway requires authentication (see the chart's README for that Secret)" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (dig "requests" "cpu" "" (.Values.resources | default dict))) }}
{{- fail "autoscaling.enabled needs resources.requests.cpu: the HPA scales on CPU use relative to the request" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas is above autoscaling.maxReplicas" }}
{{- end }}
{{- if and (include "mcplex.postgres" .) (not .Values.apiKey.secret.name) }}
{{- fail (printf "store.backend postgres needs apiKey.secret.name: without it the gateway that creates the store prints the admin API key it makes on its output, which in a cluster is the pod's log, kept on the node and by every log shipper. Create a Secret with a new key and name it in apiKey.secret.name (an existing store takes it in place of the key it printed): kubectl -n %s create secret generic mcplex-admin --from-literal=%s=\"$(openssl rand -hex 32)\"" .Release.Namespace .Values.apiKey.secret.key) }}
{{- end }}
{{- if and (eq (include "mcplex.procMount" .) "Unmasked") (not (include "mcplex.userNamespace" .)) }}
{{- fail "podSecurity.procMount Unmasked needs podSecurity.hostUsers: false: Kubernetes unmasks /proc only for a pod in a user namespace of its own" }}
{{- end }}
{{- if and .Values.ingress.tls.enabled (not .Values.ingress.tls.secretName) }}
{{- fail "ingress.tls.enabled needs ingress.tls.secretName" }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.ingress.hosts) }}
{{- fail "ingress.enabled needs at least one entry in ingress.hosts" }}
{{- end }}
{{- end }}

{{/*
The Host names clients use to reach the gateway in the cluster (the Service's DNS names) and from
outside (the ingress hosts): the gateway answers only loopback names and trusted_hosts.
*/}}
{{- define "mcplex.chartTrustedHosts" -}}
{{- $service := include "mcplex.fullname" . }}
{{- $namespace := .Release.Namespace }}
{{- $hosts := list $service (printf "%s.%s" $service $namespace) (printf "%s.%s.svc" $service $namespace) (printf "%s.%s.svc.%s" $service $namespace .Values.clusterDomain) }}
{{- if .Values.ingress.enabled }}
{{- $hosts = concat $hosts .Values.ingress.hosts }}
{{- end }}
{{- toJson $hosts }}
{{- end }}

{{/* The config file: `config` with the chart's Host names added to its own trusted_hosts. */}}
{{- define "mcplex.configJson" -}}
{{- $config := deepCopy .Values.config }}
{{- $ownHosts := default (list) (index $config "trusted_hosts") }}
{{- $hosts := concat $ownHosts (include "mcplex.chartTrustedHosts" . | fromJsonArray) | uniq }}
{{- $_ := set $config "trusted_hosts" $hosts }}
{{- toPrettyJson $config }}
{{- end }}

{{/* An HTTP probe of the gateway's own route, with a Host it always accepts (a loopback name). */}}
{{- define "mcplex.probe" -}}
httpGet:
  path: {{ . }}
  port: http
  httpHeaders:
    - name: Host
      value: localhost
{{- end }}

{{/*
The pod's security settings. The defaults give stdio servers' sandbox Landlock alone; a
user namespace (hostUsers: false), an unmasked /proc, and seccomp and AppArmor profiles that
permit unshare and mount give it its namespaces too (README.md, "Stdio upstream servers").
*/}}
{{- define "mcplex.userNamespace" -}}
{{- $hostUsers := dig "hostUsers" true (.Values.podSecurity | default dict) }}
{{- if and (kindIs "bool" $hostUsers) (not $hostUsers) }}true{{ end }}
{{- end }}

{{- define "mcplex.procMount" -}}
{{- dig "procMount" "Default" (.Values.podSecurity | default dict) }}
{{- end }}

{{- define "mcplex.seccompProfile" -}}
{{- $profile := dig "seccompProfile" dict (.Values.podSecurity | default dict) }}
{{- $type := $profile.type | default "RuntimeDefault" -}}
type: {{ $type }}
{{- if eq $type "Localhost" }}
localhostProfile: {{ $profile.localhostProfile | quote }}
{{- end }}
{{- end }}

{{/* The pod's AppArmor profile, or nothing (the runtime's default) while its type is "". */}}
{{- define "mcplex.appArmorProfile" -}}
{{- $profile := dig "appArmorProfile" dict (.Values.podSecurity | default dict) }}
{{- with $profile.type -}}
type: {{ . }}
{{- if eq . "Localhost" }}
localhostProfile: {{ $profile.localhostProfile | quote }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcplex.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  {{- include "mcplex.seccompProfile" . | nindent 2 }}
{{- if eq (include "mcplex.procMount" .) "Unmasked" }}
procMount: Unmasked
{{- end }}
{{- end }}
