{{/*
Object names: <release>-<component> within a DNS label, and the names other objects refer to.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
Object name: <release>-<component>, within the 63 characters of a DNS label (see below for long release names).
Usage: include "common.names.fullname" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.names.fullname" -}}
{{- $name := printf "%s-%s" .ctx.Release.Name .component -}}
{{- if gt (len $name) 63 -}}
{{- /* Too long for a DNS label: shorten the release part, never the component, and tell releases apart by a hash
of the whole release name, so no two components (and no two long releases) end up with the same name. */ -}}
{{- $keep := sub 63 (add (len .component) 7) | int -}}
{{- $name = printf "%s-%s-%s" (trunc $keep .ctx.Release.Name | trimSuffix "-") (sha256sum .ctx.Release.Name | trunc 5) .component -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/*
Service name of an in-chart target (loadtest/workload/targets.py lists them; _registry.tpl gives each one's component).
The target charts name their Service with it, the Locust chart its URL.
Usage: include "common.names.target" (dict "ctx" $ "target" "nginx")
*/}}
{{- define "common.names.target" -}}
{{- $component := get (include "common.registry.targetComponents" . | fromJson) .target -}}
{{- include "common.names.fullname" (dict "ctx" .ctx "component" ($component | required (printf "unknown target %q" .target))) -}}
{{- end -}}

{{/*
Name of a component's TLS Secret (type kubernetes.io/tls): tls.existingSecret, else <release>-<component>-tls,
which the chart generates (common.selfSignedTLSSecret).
Usage: include "common.names.tlsSecret" (dict "ctx" $ "component" "haproxy" "tls" .Values.tls)
*/}}
{{- define "common.names.tlsSecret" -}}
{{- .tls.existingSecret | default (include "common.names.fullname" (dict "ctx" .ctx "component" (printf "%s-tls" .component))) -}}
{{- end -}}

{{/*
Name of the Secret holding the Locust web UI credentials ("user:password" under the key "credentials").
Usage: include "common.names.locustWebAuthSecret" (dict "ctx" $ "webAuth" .Values.webAuth)
*/}}
{{- define "common.names.locustWebAuthSecret" -}}
{{- .webAuth.existingSecret | default (include "common.names.fullname" (dict "ctx" .ctx "component" "locust-web-auth")) -}}
{{- end -}}

{{/*
ServiceAccount name of a chart: serviceAccount.name, else <release>-<component> when the chart creates it,
else "default".
Usage: include "common.names.serviceAccount" (dict "ctx" $ "component" "locust" "serviceAccount" .Values.serviceAccount)
*/}}
{{- define "common.names.serviceAccount" -}}
{{- if .serviceAccount.create -}}
{{- .serviceAccount.name | default (include "common.names.fullname" (dict "ctx" .ctx "component" .component)) -}}
{{- else -}}
{{- .serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}
