{{- define "metrics-server.labels" -}}
app.kubernetes.io/name: metrics-server
app.kubernetes.io/component: metrics
{{- end -}}
