{{/*
Names the controller's objects share. Cluster-scoped objects carry the namespace too, so that releases of the same
name in two namespaces do not collide.
*/}}
{{- define "nginx.name" -}}
{{- include "common.targetName" (dict "ctx" . "target" "nginx") -}}
{{- end -}}

{{- define "nginx.clusterName" -}}
{{- printf "%s-%s-nginx-ingress" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nginx.ingressClass" -}}
{{- .Values.ingressClass | default (printf "%s-%s-nginx" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-") -}}
{{- end -}}

{{- define "nginx.tlsSecret" -}}
{{- include "common.tlsSecretName" (dict "ctx" . "component" "nginx-ingress" "tls" .Values.tls) -}}
{{- end -}}

{{/*
Route host names (common.routeHosts), as a list.
*/}}
{{- define "nginx.routeHosts" -}}
{{- include "common.routeHosts" (dict "ctx" . "target" "nginx" "hostname" .Values.hostname "routes" .Values.routes) -}}
{{- end -}}
