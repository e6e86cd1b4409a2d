{{/*
The labels of every object: the kustomize base's (its labels transformer: name and part-of, not
on selectors or pod templates), and Helm's own, which the kustomize base has not.
*/}}
{{- define "operator-sweeper.labels" -}}
app.kubernetes.io/name: operator-sweeper
app.kubernetes.io/part-of: operator-sweeper
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The config file: values' config, or the shipped one, a copy of manifests/base/config.yaml.
*/}}
{{- define "operator-sweeper.config" -}}
{{- .Values.config | default (.Files.Get "files/config.yaml") }}
{{- end }}

{{/*
Sharded: the CronJob's Job is Indexed, one pod per shard.
*/}}
{{- define "operator-sweeper.sharded" -}}
{{- if gt (int .Values.sharding.shards) 1 }}true{{ end }}
{{- end }}
