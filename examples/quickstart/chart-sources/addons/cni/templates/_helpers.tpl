{{- define "cni.labels" -}}
app.kubernetes.io/name: kindnet
app.kubernetes.io/component: cni
{{- end -}}
