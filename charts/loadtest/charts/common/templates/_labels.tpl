{{/*
The labels every object carries, and the selector subset that never changes across upgrades.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
Selector labels: only the keys that never change across upgrades (a Deployment's selector is immutable).
Usage: include "common.labels.selector" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.labels.selector" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
Standard labels for every object.
Usage: include "common.labels.standard" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.labels.standard" -}}
{{ include "common.labels.selector" . }}
app.kubernetes.io/part-of: loadtest
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}
