{{/*
Where the monitoring pods run (the names, labels and security contexts come from the common library).
*/}}

{{/*
nodeSelector of every monitoring pod (empty when neither nodeType nor nodeSelector is set).
*/}}
{{- define "monitoring.scheduling.nodeSelector" -}}
{{- include "common.scheduling.nodeSelector" (dict "nodeType" .Values.nodeType "nodeSelector" .Values.nodeSelector) -}}
{{- end -}}

{{/*
Scheduling of a monitoring pod: nodeSelector and tolerations.
Usage: include "monitoring.scheduling.pod" $
*/}}
{{- define "monitoring.scheduling.pod" -}}
{{- with include "monitoring.scheduling.nodeSelector" . }}
nodeSelector:
  {{- . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
