{{/*
The image the master and workers run.
*/}}

{{/*
The image of master and workers: the one with the packages baked in, else the Locust image.
*/}}
{{- define "locust.images.image" -}}
{{- .Values.packages.image | default (include "common.images.image" .Values.image) }}
{{- end -}}
