{{/*
Names the controller's objects share. Cluster-scoped objects carry the namespace too, so that releases of the same
name in two namespaces do not collide.
*/}}
{{- define "nginx.names.name" -}}
{{- include "common.names.target" (dict "ctx" . "target" "nginx") -}}
{{- end -}}

{{- define "nginx.names.clusterName" -}}
{{- printf "%s-%s-nginx-ingress" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nginx.names.ingressClass" -}}
{{- .Values.ingressClass | default (printf "%s-%s-nginx" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-") -}}
{{- end -}}

{{- define "nginx.names.tlsSecret" -}}
{{- include "common.names.tlsSecret" (dict "ctx" . "component" "nginx-ingress" "tls" .Values.tls) -}}
{{- end -}}

{{/*
Namespace of the controller's TLS Secret (rbac.yaml says why it has one of its own): tls.secretNamespace, else the
one the chart creates, <namespace>-<release>-nginx-tls. Namespaces are cluster-wide, so the name carries the
release's namespace; common.fullname's rule keeps it a DNS label (a long one is shortened and told apart by a hash).
*/}}
{{- define "nginx.names.secretNamespace" -}}
{{- $owner := dict "Release" (dict "Name" (printf "%s-%s" .Release.Namespace .Release.Name)) -}}
{{- .Values.tls.secretNamespace | default (include "common.names.fullname" (dict "ctx" $owner "component" "nginx-tls")) -}}
{{- end -}}

{{/*
Name of the Role and RoleBinding that let the controller read its TLS Secret, in nginx.secretNamespace.
*/}}
{{- define "nginx.names.secretReader" -}}
{{- include "common.names.fullname" (dict "ctx" . "component" "nginx-ingress-tls") -}}
{{- end -}}

{{/*
Route host names (common.routeHosts), as a list.
*/}}
{{- define "nginx.names.routeHosts" -}}
{{- include "common.targets.routeHosts" (dict "ctx" . "target" "nginx" "hostname" .Values.hostname "routes" .Values.routes) -}}
{{- end -}}
