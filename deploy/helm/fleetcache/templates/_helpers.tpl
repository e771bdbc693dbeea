{{/* fleetcache.name is the chart name, or nameOverride. */}}
{{- define "fleetcache.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
fleetcache.fullname names the release's objects: fullnameOverride, else
"<release>-<name>", or just the release name when it already contains the name.
Object names are DNS labels, hence the 63 characters.
*/}}
{{- define "fleetcache.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "fleetcache.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* fleetcache.selectorLabels select the pods; they never change after install. */}}
{{- define "fleetcache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fleetcache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* fleetcache.labels go on every object. */}}
{{- define "fleetcache.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "fleetcache.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* fleetcache.serviceAccountName is the ServiceAccount the pod runs as. */}}
{{- define "fleetcache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fleetcache.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* fleetcache.clusterSecretsNamespace is where cluster Secrets are read. */}}
{{- define "fleetcache.clusterSecretsNamespace" -}}
{{- default .Release.Namespace .Values.clusterSecrets.namespace }}
{{- end }}

{{/* fleetcache.kubeconfigsSecret names the Secret of kubeconfig files, if any. */}}
{{- define "fleetcache.kubeconfigsSecret" -}}
{{- if .Values.kubeconfigs.existingSecret }}
{{- .Values.kubeconfigs.existingSecret }}
{{- else if .Values.kubeconfigs.files }}
{{- printf "%s-kubeconfigs" (include "fleetcache.fullname" .) }}
{{- end }}
{{- end }}

{{/*
fleetcache.config is the aggregator's config file: .Values.config with the
parts the chart owns (listen address, mounted paths) filled in.
*/}}
{{- define "fleetcache.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $_ := set $cfg "addr" (printf ":%d" (int .Values.service.port)) }}
{{- if include "fleetcache.kubeconfigsSecret" . }}
{{- $_ := set $cfg "kubeconfigDir" "/etc/fleetcache/kubeconfigs" }}
{{- end }}
{{- if .Values.clusterSecrets.enabled }}
{{- $_ := set $cfg "clusterSecrets" (dict "namespace" (include "fleetcache.clusterSecretsNamespace" .)) }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/*
fleetcache.memberRules are the RBAC rules of the member-cluster ClusterRole:
list and watch on each configured type (kubectl names, "deployments.apps" is
resource deployments in group apps), one rule per API group in the order the
groups first appear.
*/}}
{{- define "fleetcache.memberRules" -}}
{{- $names := .Values.config.resources }}
{{- if not $names }}
{{- $names = .Files.Get "files/default-resources.yaml" | fromYamlArray }}
{{- end }}
{{- $groups := list }}
{{- $byGroup := dict }}
{{- range $names }}
{{- $parts := splitn "." 2 . }}
{{- $group := default "" $parts._1 }}
{{- if not (hasKey $byGroup $group) }}
{{- $groups = append $groups $group }}
{{- $_ := set $byGroup $group list }}
{{- end }}
{{- $_ := set $byGroup $group (append (get $byGroup $group) $parts._0) }}
{{- end }}
{{- range $groups }}
- apiGroups: [{{ . | quote }}]
  resources: {{ get $byGroup . | toJson }}
  verbs: ["list", "watch"]
{{- end }}
{{- end }}
