{{/*
Name of the ClusterClass: <provider>-<name>-<major>-<minor>-<stack version in dot form>,
e.g. docker-ferrol-1-30-v1. The Helm release name is the first four parts of the release tag.
*/}}
{{- define "ferrol.className" -}}
{{- printf "%s-%s" .Release.Name .Chart.Version -}}
{{- end -}}

{{/*
Name of a template referenced by the ClusterClass. It carries the class name (and so the chart
version), so templates of different releases never collide in one namespace.
Usage: include "ferrol.templateName" (list . "worker")
*/}}
{{- define "ferrol.templateName" -}}
{{- $ctx := index . 0 -}}
{{- printf "%s-%s" (include "ferrol.className" $ctx) (index . 1) -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "ferrol.labels" -}}
clusterstack.x-k8s.io/cluster-class: {{ include "ferrol.className" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* kubelet arguments shared by control plane and worker nodes. */}}
{{- define "ferrol.kubeletExtraArgs" -}}
eviction-hard: {{ .Values.evictionHard | quote }}
node-labels: {{ tpl .Values.nodeLabels . | quote }}
{{- end -}}
