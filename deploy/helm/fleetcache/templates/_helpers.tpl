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
fleetcache.authn is "true" when callers are authenticated with TokenReviews;
it fails on a mode the aggregator does not know, so that a typo does not
silently change what the chart grants.
*/}}
{{- define "fleetcache.authn" -}}
{{- if eq .Values.authn.mode "tokenreview" }}true
{{- else if ne .Values.authn.mode "none" }}
{{- fail (printf "authn.mode must be tokenreview or none, not %q" .Values.authn.mode) }}
{{- end }}
{{- end }}

{{/*
fleetcache.subjectAccessReview is "true" when member clusters decide what a
caller sees: they must then let fleetcache create SubjectAccessReviews.
*/}}
{{- define "fleetcache.subjectAccessReview" -}}
{{- if include "fleetcache.authn" . }}
{{- if eq .Values.authz.mode "subjectaccessreview" }}true
{{- else if ne .Values.authz.mode "policy" }}
{{- fail (printf "authz.mode must be subjectaccessreview or policy, not %q" .Values.authz.mode) }}
{{- end }}
{{- end }}
{{- end }}

{{/* fleetcache.tlsDir is where the serving certificate is mounted. */}}
{{- define "fleetcache.tlsDir" -}}
/etc/fleetcache/tls
{{- end }}

{{/*
fleetcache.probe is a probe of the values with scheme HTTPS when the
aggregator serves TLS: the kubelet does not follow a plain-HTTP probe to
HTTPS, and skips certificate verification for probes.
*/}}
{{- define "fleetcache.probe" -}}
{{- $probe := deepCopy .probe }}
{{- if and .root.Values.serving.tls.secretName $probe.httpGet }}
{{- $_ := set $probe.httpGet "scheme" "HTTPS" }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/*
fleetcache.config is the aggregator's config file: .Values.config with the
parts the chart owns filled in: listen address, mounted paths, and authn,
authz and serving from the values of those names.
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
{{- with .Values.inventory.clusterProfiles }}
{{- if .enabled }}
{{- /* config.clusterProfiles may add a kubeconfig (a hub elsewhere). */}}
{{- $src := merge (dict "enabled" true "providersFile" "/etc/fleetcache/providers/providers.json") (get $cfg "clusterProfiles" | default dict) }}
{{- with .namespace }}{{ $_ := set $src "namespace" . }}{{ end }}
{{- $_ := set $cfg "clusterProfiles" $src }}
{{- end }}
{{- end }}
{{- range $key, $src := dict "clusterAPI" .Values.inventory.clusterAPI "argoCD" .Values.inventory.argoCD }}
{{- if $src.enabled }}
{{- $out := merge (dict "enabled" true) (get $cfg $key | default dict) }}
{{- with $src.namespace }}{{ $_ := set $out "namespace" . }}{{ end }}
{{- if $src.allowExecPlugins }}{{ $_ := set $out "allowExecPlugins" true }}{{ end }}
{{- $_ := set $cfg $key $out }}
{{- end }}
{{- end }}
{{- $authn := dict "mode" .Values.authn.mode }}
{{- with .Values.authn.cacheTTL }}
{{- $_ := set $authn "cacheTTL" . }}
{{- end }}
{{- $_ := set $cfg "authn" $authn }}
{{- /* The aggregator refuses authz settings without authentication. */}}
{{- if include "fleetcache.authn" . }}
{{- $_ := include "fleetcache.subjectAccessReview" . }}{{/* checks authz.mode */}}
{{- $authz := dict "mode" .Values.authz.mode }}
{{- with .Values.authz.cacheTTL }}
{{- $_ := set $authz "cacheTTL" . }}
{{- end }}
{{- with .Values.authz.cacheSize }}
{{- $_ := set $authz "cacheSize" . }}
{{- end }}
{{- with .Values.authz.rules }}
{{- $_ := set $authz "rules" . }}
{{- end }}
{{- $_ := set $cfg "authz" $authz }}
{{- end }}
{{- $serving := dict }}
{{- with .Values.serving.tls.secretName }}
{{- $_ := set $serving "tlsCertFile" (printf "%s/tls.crt" (include "fleetcache.tlsDir" $)) }}
{{- $_ := set $serving "tlsPrivateKeyFile" (printf "%s/tls.key" (include "fleetcache.tlsDir" $)) }}
{{- end }}
{{- with .Values.serving.corsAllowedOrigins }}
{{- $_ := set $serving "corsAllowedOrigins" . }}
{{- end }}
{{- with .Values.serving.rateLimit }}
{{- $_ := set $serving "rateLimit" . }}
{{- end }}
{{- if .Values.serving.cacheSecretData }}
{{- $_ := set $serving "cacheSecretData" true }}
{{- end }}
{{- with $serving }}
{{- $_ := set $cfg "serving" . }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/*
fleetcache.memberRules are the RBAC rules of the member-cluster ClusterRole:
list and watch on each configured type (kubectl names, "deployments.apps" is
resource deployments in group apps), one rule per API group in the order the
groups first appear; get on the kube-system namespace, whose UID identifies
the member (a warm start resumes only on the same member); then create on
subjectaccessreviews, when the member clusters authorize callers.
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
- apiGroups: [""]
  resources: ["namespaces"]
  resourceNames: ["kube-system"]
  verbs: ["get"]
{{- if include "fleetcache.subjectAccessReview" . }}
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
{{- end }}
{{- end }}

{{/*
fleetcache.topologySpreadConstraints are the values' constraints, each
without a labelSelector given the pods' selector labels: a constraint counts
only the pods it selects.
*/}}
{{- define "fleetcache.topologySpreadConstraints" -}}
{{- $out := list }}
{{- range .Values.topologySpreadConstraints }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "fleetcache.selectorLabels" $ | fromYaml)) }}
{{- end }}
{{- $out = append $out $c }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
fleetcache.snapshotVolume is the snapshot's volume source (see
values.yaml, snapshot), empty for snapshot.volume none; it fails on a kind
the chart does not know.
*/}}
{{- define "fleetcache.snapshotVolume" -}}
{{- $s := .Values.snapshot }}
{{- if eq $s.volume "emptyDir" }}
emptyDir:
  {{- with $s.sizeLimit }}
  sizeLimit: {{ . }}
  {{- else }} {}
  {{- end }}
{{- else if eq $s.volume "ephemeral" }}
ephemeral:
  volumeClaimTemplate:
    metadata:
      labels:
        {{- include "fleetcache.selectorLabels" . | nindent 8 }}
    spec:
      accessModes: {{ toJson $s.ephemeral.accessModes }}
      {{- with $s.ephemeral.storageClassName }}
      storageClassName: {{ . | quote }}
      {{- end }}
      resources:
        requests:
          storage: {{ $s.ephemeral.size }}
{{- else if ne $s.volume "none" }}
{{- fail (printf "snapshot.volume must be emptyDir, ephemeral or none, not %q" $s.volume) }}
{{- end }}
{{- end }}

{{/*
fleetcache.checkTermination fails when the grace period cannot hold the
preStop sleep and the aggregator's shutdown (10 s): Kubernetes would kill
the container before its WebSockets' close handshakes.
*/}}
{{- define "fleetcache.checkTermination" -}}
{{- $need := add (int .Values.preStopSleepSeconds) 10 }}
{{- if lt (int .Values.terminationGracePeriodSeconds) (int $need) }}
{{- fail (printf "terminationGracePeriodSeconds %d is less than preStopSleepSeconds + 10 = %d" (int .Values.terminationGracePeriodSeconds) (int $need)) }}
{{- end }}
{{- end }}
