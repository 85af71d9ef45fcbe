{{/*
TLS Secrets the charts generate.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
A kubernetes.io/tls Secret with a self-signed RSA 2048 certificate (Sprig's genSelfSignedCert) for `hosts`, the first
one as its CN, valid for a year. An upgrade keeps the certificate already in the cluster, so a running test sees no
change; clients of a load test do not verify it (the scenarios set verify = False). "namespace" (optional) puts it
outside the release's namespace.
Usage: include "common.tls.selfSignedSecret" (dict "ctx" $ "component" "haproxy" "tls" .Values.tls "hosts" $hosts)
*/}}
{{- define "common.tls.selfSignedSecret" -}}
{{- $name := include "common.names.tlsSecret" . -}}
{{- $existing := lookup "v1" "Secret" (.namespace | default .ctx.Release.Namespace) $name -}}
{{- $data := ($existing.data | default dict) -}}
{{- if not (and (index $data "tls.crt") (index $data "tls.key")) -}}
{{- $cert := genSelfSignedCert (first .hosts) nil .hosts 365 -}}
{{- $data = dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) -}}
{{- end -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
  {{- with .namespace }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "common.labels.standard" (dict "ctx" .ctx "component" .component) | nindent 4 }}
type: kubernetes.io/tls
data:
  tls.crt: {{ index $data "tls.crt" }}
  tls.key: {{ index $data "tls.key" }}
{{- end -}}
