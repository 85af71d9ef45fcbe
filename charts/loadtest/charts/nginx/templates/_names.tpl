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
Namespace of the controller's TLS Secret (rbac.yaml says why it has one of its own): tls.secretNamespace, else the
one the chart creates, <namespace>-<release>-nginx-tls. Namespaces are cluster-wide, so the name carries the
release's namespace; common.fullname's rule keeps it a DNS label (a long one is shortened and told apart by a hash).
*/}}
{{- define "nginx.secretNamespace" -}}
{{- $owner := dict "Release" (dict "Name" (printf "%s-%s" .Release.Namespace .Release.Name)) -}}
{{- .Values.tls.secretNamespace | default (include "common.fullname" (dict "ctx" $owner "component" "nginx-tls")) -}}
{{- end -}}

{{/*
Name of the Role and RoleBinding that let the controller read its TLS Secret, in nginx.secretNamespace.
*/}}
{{- define "nginx.secretReader" -}}
{{- include "common.fullname" (dict "ctx" . "component" "nginx-ingress-tls") -}}
{{- end -}}

{{/*
Route host names (common.routeHosts), as a list.
*/}}
{{- define "nginx.routeHosts" -}}
{{- include "common.routeHosts" (dict "ctx" . "target" "nginx" "hostname" .Values.hostname "routes" .Values.routes) -}}
{{- end -}}
