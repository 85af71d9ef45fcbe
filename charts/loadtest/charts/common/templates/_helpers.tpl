{{/*
Named templates shared by every loadtest chart. The umbrella chart lists this library as a dependency,
so these templates are visible to all of its subcharts. Arguments that are not the chart context are
passed in a dict; "ctx" is always the calling chart's root context ($).
*/}}

{{/*
Object name: <release>-<component>, truncated to the 63 characters of a DNS label.
Usage: include "common.fullname" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.fullname" -}}
{{- printf "%s-%s" .ctx.Release.Name .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Selector labels: only the keys that never change across upgrades (a Deployment's selector is immutable).
Usage: include "common.selectorLabels" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
Standard labels for every object.
Usage: include "common.labels" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.labels" -}}
{{ include "common.selectorLabels" . }}
app.kubernetes.io/part-of: loadtest
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/*
Image reference: repository:tag, with @digest appended when a digest is set.
Usage: include "common.image" .Values.image
*/}}
{{- define "common.image" -}}
{{- .repository }}:{{ .tag }}{{ with .digest }}@{{ . }}{{ end -}}
{{- end -}}

{{/*
Pod securityContext meeting the Pod Security Standard "restricted", for an image whose user id is uid
(set numerically: the kubelet cannot check runAsNonRoot against a user name).
Usage: include "common.podSecurityContext" 1000
*/}}
{{- define "common.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
Container securityContext meeting the Pod Security Standard "restricted", with a read-only root filesystem.
Usage: include "common.containerSecurityContext" .
*/}}
{{- define "common.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
nodeSelector map: the extra selector, plus node.kubernetes.io/instance-type when nodeType is set.
Renders nothing when both are empty.
Usage: include "common.nodeSelector" (dict "nodeType" .Values.nodeType "nodeSelector" .Values.master.nodeSelector)
*/}}
{{- define "common.nodeSelector" -}}
{{- $selector := deepCopy (.nodeSelector | default dict) -}}
{{- with .nodeType -}}
{{- $_ := set $selector "node.kubernetes.io/instance-type" . -}}
{{- end -}}
{{- with $selector -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/*
URL of the in-chart backend Service (charts/backend): the default target of the Locust chart.
Usage: include "common.backendURL" $
*/}}
{{- define "common.backendURL" -}}
http://{{ include "common.fullname" (dict "ctx" . "component" "backend") }}:80
{{- end -}}

{{/*
Name of the Secret holding the Locust web UI credentials ("user:password" under the key "credentials").
Usage: include "common.locustWebAuthSecretName" (dict "ctx" $ "webAuth" .Values.webAuth)
*/}}
{{- define "common.locustWebAuthSecretName" -}}
{{- .webAuth.existingSecret | default (include "common.fullname" (dict "ctx" .ctx "component" "locust-web-auth")) -}}
{{- end -}}

{{/*
ServiceAccount name of a chart: serviceAccount.name, else <release>-<component> when the chart creates it,
else "default".
Usage: include "common.serviceAccountName" (dict "ctx" $ "component" "locust" "serviceAccount" .Values.serviceAccount)
*/}}
{{- define "common.serviceAccountName" -}}
{{- if .serviceAccount.create -}}
{{- .serviceAccount.name | default (include "common.fullname" (dict "ctx" .ctx "component" .component)) -}}
{{- else -}}
{{- .serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}
