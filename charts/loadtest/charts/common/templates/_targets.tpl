{{/*
The in-chart targets' URLs and route host names.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
URL of an in-chart target's Service: port 80, or with https the TLS port 443.
Usage: include "common.targets.url" (dict "ctx" $ "target" "haproxy" "https" false)
*/}}
{{- define "common.targets.url" -}}
{{- if .https -}}
https://{{ include "common.names.target" . }}:443
{{- else -}}
http://{{ include "common.names.target" . }}:80
{{- end -}}
{{- end -}}

{{/*
URL of the in-chart backend Service (charts/backend): the default target of the Locust chart.
Usage: include "common.targets.backendURL" $
*/}}
{{- define "common.targets.backendURL" -}}
{{- include "common.targets.url" (dict "ctx" . "target" "backend" "https" false) -}}
{{- end -}}

{{/*
Host names of a target's routes: the first is `hostname` (empty: the target's Service name, which is the Host the
in-chart Locust sends), route i > 0 is r<i>.<hostname>. A Locust user spreading over N routes sends the same names
(plugin/loadtest_lib.py, RouteSpread), so the two sides agree without sharing values.
Usage: include "common.targets.routeHosts" (dict "ctx" $ "target" "haproxy" "hostname" .Values.hostname "routes" .Values.routes) | fromJsonArray
*/}}
{{- define "common.targets.routeHosts" -}}
{{- $first := .hostname | default (include "common.names.target" .) -}}
{{- $hosts := list $first -}}
{{- range $i := untilStep 1 (.routes | int) 1 -}}
{{- $hosts = append $hosts (printf "r%d.%s" $i $first) -}}
{{- end -}}
{{- toJson $hosts -}}
{{- end -}}
