{{/*
maxconn: the value, or twice the planned client connections; less fails the rendering.
*/}}
{{- define "haproxy.maxconn" -}}
{{- $least := mul 2 (.Values.clientConnections | int64) -}}
{{- $maxconn := .Values.maxconn | int64 | default $least -}}
{{- if lt $maxconn $least -}}
{{- fail (printf "haproxy.maxconn %d is below twice haproxy.clientConnections (%d): the connections above it would queue and the test would measure the queue" $maxconn $least) -}}
{{- end -}}
{{- $maxconn -}}
{{- end -}}

{{/*
The `rate-limit sessions` line of a client frontend (with its leading newline), when sessionRateLimit is set.
*/}}
{{- define "haproxy.sessionRateLimit" -}}
{{- with .Values.sessionRateLimit | int64 }}
        rate-limit sessions {{ . }}
{{- end -}}
{{- end -}}
