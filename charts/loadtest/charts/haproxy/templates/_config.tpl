{{/*
maxconn: the value, or twice the planned client connections; less fails the rendering.
*/}}
{{- define "haproxy.config.maxconn" -}}
{{- $least := mul 2 (.Values.clientConnections | int64) -}}
{{- $maxconn := .Values.maxconn | int64 | default $least -}}
{{- if lt $maxconn $least -}}
{{- fail (printf "haproxy.maxconn %d is below twice haproxy.clientConnections (%d): the connections above it would queue and the test would measure the queue" $maxconn $least) -}}
{{- end -}}
{{- $maxconn -}}
{{- end -}}

{{/*
The `rate-limit sessions` line of a client frontend (with its leading newline), when sessionRateLimit is set.
*/}}
{{- define "haproxy.config.sessionRateLimit" -}}
{{- with .Values.sessionRateLimit | int64 }}
        rate-limit sessions {{ . }}
{{- end -}}
{{- end -}}

{{/*
cpuSet as cpu-map takes it, checked: each range from low to high, no CPU twice, one CPU per thread (threads of them),
and on a nodeType only CPUs its nodes have. Empty: no pinning.
*/}}
{{- define "haproxy.config.cpuSet" -}}
{{- $set := .Values.cpuSet | toString -}}
{{- $threads := .Values.threads | int -}}
{{- $cpus := list -}}
{{- range $part := splitList " " $set | compact -}}
{{- $low := splitList "-" $part | first | int -}}
{{- $high := splitList "-" $part | last | int -}}
{{- if gt $low $high -}}
{{- fail (printf "haproxy.cpuSet %q: the range %s runs backwards; write it %d-%d" $set $part $high $low) -}}
{{- end -}}
{{- if gt (add (len $cpus) (sub $high $low) 1 | int) $threads -}}
{{- fail (printf "haproxy.cpuSet %q lists more CPUs than haproxy.threads (%d): cpu-map pins each thread to one CPU; list %d CPU(s), or raise haproxy.threads" $set $threads $threads) -}}
{{- end -}}
{{- range $cpu := untilStep $low (add1 $high | int) 1 -}}
{{- if has $cpu $cpus -}}
{{- fail (printf "haproxy.cpuSet %q lists CPU %d twice; list each CPU once" $set $cpu) -}}
{{- end -}}
{{- $cpus = append $cpus $cpu -}}
{{- end -}}
{{- end -}}
{{- if and $cpus (lt (len $cpus) $threads) -}}
{{- fail (printf "haproxy.cpuSet %q lists %d CPU(s) for haproxy.threads %d: cpu-map pins each thread to one CPU; list %d, or set haproxy.threads=%d" $set (len $cpus) $threads $threads (len $cpus)) -}}
{{- end -}}
{{- with .Values.nodeType -}}
{{- $has := get (include "common.registry.nodeCPUs" $ | fromJson) . | int -}}
{{- range $cpu := $cpus -}}
{{- if ge $cpu $has -}}
{{- fail (printf "haproxy.cpuSet %q names CPU %d, and a %s node has %d (0 to %d); list CPUs it has" $set $cpu $.Values.nodeType $has (sub $has 1)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $set -}}
{{- end -}}
