{{/*
securityContexts meeting the Pod Security Standard "restricted".
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
Pod securityContext meeting the Pod Security Standard "restricted", for an image whose user id is uid
(set numerically: the kubelet cannot check runAsNonRoot against a user name).
Usage: include "common.security.pod" 1000
*/}}
{{- define "common.security.pod" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
Container securityContext meeting the Pod Security Standard "restricted", with a read-only root filesystem.
Usage: include "common.security.container" .
*/}}
{{- define "common.security.container" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}
