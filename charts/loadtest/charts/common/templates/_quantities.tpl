{{/*
Kubernetes quantities as numbers, for comparing values in templates.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
A CPU quantity ("1500m", "1.5", 2) in millicores, for comparing values in templates.
Usage: include "common.quantities.millicores" "1500m"
*/}}
{{- define "common.quantities.millicores" -}}
{{- $q := toString . -}}
{{- if hasSuffix "m" $q }}{{ trimSuffix "m" $q | float64 }}{{ else }}{{ mulf ($q | float64) 1000 }}{{ end -}}
{{- end -}}

{{/*
A memory quantity ("512Mi", "1G", 1e9, 536870912) in bytes, for comparing values in templates.
Usage: include "common.quantities.bytes" "512Mi"
*/}}
{{- define "common.quantities.bytes" -}}
{{- $q := toString . -}}
{{- $units := dict "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 -}}
{{- $number := regexReplaceAll "[A-Za-z]+$" $q "" -}}
{{- $unit := trimPrefix $number $q -}}
{{- mulf ($number | float64) (get $units $unit | default 1.0) -}}
{{- end -}}
