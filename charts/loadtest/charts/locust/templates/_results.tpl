{{/*
Where a judged run's results are kept (locust.results).
*/}}

{{/*
Where a judged run keeps its results folder: "pvc" or "s3"; empty outside mode run and for store none.
*/}}
{{- define "locust.results.store" -}}
{{- if and (eq .Values.mode "run") (ne .Values.results.store "none") }}{{ .Values.results.store }}{{ end }}
{{- end -}}

{{/*
The claim of results.store pvc: the user's existing one, else the chart's <release>-locust-results.
*/}}
{{- define "locust.results.claim" -}}
{{- .Values.results.pvc.existingClaim | default (include "common.names.fullname" (dict "ctx" . "component" "locust-results")) }}
{{- end -}}
