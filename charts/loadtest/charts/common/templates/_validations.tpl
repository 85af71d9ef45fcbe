{{/*
Refusals shared by the charts: what the API server would refuse only once deployed, said at install.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
Fails when a container's resource request is above its limit, as the API server would refuse the pod only once
deployed; `path` names the values block.
Usage: include "common.validations.requestsWithinLimits" (dict "path" "locust.master.resources" "resources" $resources)
*/}}
{{- define "common.validations.requestsWithinLimits" -}}
{{- $requests := .resources.requests | default dict -}}
{{- $limits := .resources.limits | default dict -}}
{{- if and $requests.cpu $limits.cpu (gt (include "common.quantities.millicores" $requests.cpu | float64) (include "common.quantities.millicores" $limits.cpu | float64)) -}}
{{- fail (printf "%s.requests.cpu %v is above limits.cpu %v: Kubernetes refuses such a pod; raise the limit or lower the request" .path $requests.cpu $limits.cpu) -}}
{{- end -}}
{{- if and $requests.memory $limits.memory (gt (include "common.quantities.bytes" $requests.memory | float64) (include "common.quantities.bytes" $limits.memory | float64)) -}}
{{- fail (printf "%s.requests.memory %v is above limits.memory %v: Kubernetes refuses such a pod; raise the limit or lower the request" .path $requests.memory $limits.memory) -}}
{{- end -}}
{{- end -}}
