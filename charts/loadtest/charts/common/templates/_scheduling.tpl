{{/*
Where pods may run: node types, and targets kept off the generator's nodes.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
nodeSelector map: the extra selector, plus node.kubernetes.io/instance-type when nodeType is set.
Renders nothing when both are empty.
Usage: include "common.scheduling.nodeSelector" (dict "nodeType" .Values.nodeType "nodeSelector" .Values.master.nodeSelector)
*/}}
{{- define "common.scheduling.nodeSelector" -}}
{{- $selector := deepCopy (.nodeSelector | default dict) -}}
{{- with .nodeType -}}
{{- $_ := set $selector "node.kubernetes.io/instance-type" . -}}
{{- end -}}
{{- with $selector -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/*
Pod anti-affinity that keeps a target's pods off the nodes running Locust pods of the same release (and, the rule
being symmetric for the scheduler, Locust pods off the target's nodes): generator and target never share a node,
whatever node types the values choose. Empty when global.targetsApartFromLocust is false (a one-node cluster).
Usage: include "common.scheduling.awayFromLocust" $
*/}}
{{- define "common.scheduling.awayFromLocust" -}}
{{- if ne (toString (.Values.global | default dict).targetsApartFromLocust) "false" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          app.kubernetes.io/instance: {{ .Release.Name }}
          app.kubernetes.io/name: locust
{{- end }}
{{- end -}}
