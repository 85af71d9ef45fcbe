{{/*
Image references.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
Image reference: repository:tag, with @digest appended when a digest is set.
Usage: include "common.images.image" .Values.image
*/}}
{{- define "common.images.image" -}}
{{- .repository }}:{{ .tag }}{{ with .digest }}@{{ . }}{{ end -}}
{{- end -}}
