{{/*
Name of the chart, or nameOverride.
*/}}
{{- define "mcp-catalog-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: release-chart, or the release name alone when it already contains
the chart name, or fullnameOverride. Cluster-scoped objects are prefixed with
it, so two releases never share a ClusterRole.
*/}}
{{- define "mcp-catalog-operator.fullname" -}}
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

{{- define "mcp-catalog-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every object.
*/}}
{{- define "mcp-catalog-operator.labels" -}}
helm.sh/chart: {{ include "mcp-catalog-operator.chart" . }}
app.kubernetes.io/name: {{ include "mcp-catalog-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mcp-catalog-operator
{{- end }}

{{/*
Labels that select the manager pods. Never change them in an upgrade: a
Deployment's selector is immutable.
*/}}
{{- define "mcp-catalog-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-catalog-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "mcp-catalog-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcp-catalog-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: repository@digest when a digest is set, else
repository:tag with the tag defaulting to the chart's appVersion.
*/}}
{{- define "mcp-catalog-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The ServiceAccount subject of the manager's bindings.
*/}}
{{- define "mcp-catalog-operator.subject" -}}
- kind: ServiceAccount
  name: {{ include "mcp-catalog-operator.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
The Secret holding the gateway's approval signing keys.
*/}}
{{- define "mcp-catalog-operator.approvalKeySecret" -}}
{{- default (printf "%s-approval-key" (include "mcp-catalog-operator.fullname" .)) .Values.gateway.approvalKeySecret }}
{{- end }}

{{/*
Labels that select the gateway pods (immutable, like the manager's).
*/}}
{{- define "mcp-catalog-operator.gatewaySelectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-catalog-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{/*
The gateways to render, as a JSON list of {pool, name, namespaces}: without
gateway.pools the one gateway (pool "", named <fullname>-gateway, watching
watchNamespaces); with them one gateway per pool, named
<fullname>-gateway-<pool> and watching the pool's namespaces only
(docs/adr/036-gateway-pools.md). Empty when the gateway is off.
*/}}
{{- define "mcp-catalog-operator.gateways" -}}
{{- $out := list }}
{{- if .Values.gateway.enabled }}
{{- $base := printf "%s-gateway" (include "mcp-catalog-operator.fullname" .) }}
{{- if .Values.gateway.pools }}
{{- $seen := dict }}
{{- range .Values.gateway.pools }}
{{- $pool := . }}
{{- if hasKey $seen .name }}
{{- fail (printf "gateway.pools: the pool name %q is used twice" .name) }}
{{- end }}
{{- $_ := set $seen .name true }}
{{- if not .namespaces }}
{{- fail (printf "gateway.pools: pool %q lists no namespaces" .name) }}
{{- end }}
{{- range $ns := .namespaces }}
{{- if and $.Values.watchNamespaces (not (has $ns $.Values.watchNamespaces)) }}
{{- fail (printf "gateway.pools: pool %q serves namespace %q, which is not in watchNamespaces: no controller would reconcile its tools" $pool.name $ns) }}
{{- end }}
{{- end }}
{{- $out = append $out (dict "pool" .name "name" (printf "%s-%s" $base .name | trunc 63 | trimSuffix "-") "namespaces" .namespaces) }}
{{- end }}
{{- else }}
{{- $out = append $out (dict "pool" "" "name" ($base | trunc 63 | trimSuffix "-") "namespaces" (.Values.watchNamespaces | default list)) }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/*
Labels that select one gateway's pods: the gateway's, and for a pool its
name. Takes (dict "root" . "gw" <an entry of gateways>).
*/}}
{{- define "mcp-catalog-operator.gatewayPoolSelectorLabels" -}}
{{ include "mcp-catalog-operator.gatewaySelectorLabels" .root }}
{{- with .gw.pool }}
mcp.catalog.dev/gateway-pool: {{ . }}
{{- end }}
{{- end }}

{{/*
The ServiceAccount subjects of every gateway: the bindings every pool
shares (token and access reviews, the approval key).
*/}}
{{- define "mcp-catalog-operator.gatewaySubjects" -}}
{{- range $i, $gw := include "mcp-catalog-operator.gateways" . | fromJsonArray }}
{{- if $i }}{{ "\n" }}{{ end -}}
- kind: ServiceAccount
  name: {{ $gw.name }}
  namespace: {{ $.Release.Namespace }}
{{- end }}
{{- end }}

{{/*
The gateway's issuers file (--gateway-oauth-issuers-file), for its
ConfigMap and the checksum that rolls the gateway when it changes.
*/}}
{{- define "mcp-catalog-operator.gatewayOAuthIssuers" -}}
{{ toYaml (dict "issuers" .Values.gateway.oauth.issuers) }}
{{- end }}
