{{/*
Named templates shared by every loadtest chart. The umbrella chart lists this library as a dependency,
so these templates are visible to all of its subcharts. Arguments that are not the chart context are
passed in a dict; "ctx" is always the calling chart's root context ($).
*/}}

{{/*
Object name: <release>-<component>, within the 63 characters of a DNS label (see below for long release names).
Usage: include "common.fullname" (dict "ctx" $ "component" "locust-master")
*/}}
{{- define "common.fullname" -}}
{{- $name := printf "%s-%s" .ctx.Release.Name .component -}}
{{- if gt (len $name) 63 -}}
{{- /* Too long for a DNS label: shorten the release part, never the component, and tell releases apart by a hash
of the whole release name, so no two components (and no two long releases) end up with the same name. */ -}}
{{- $keep := sub 63 (add (len .component) 7) | int -}}
{{- $name = printf "%s-%s-%s" (trunc $keep .ctx.Release.Name | trimSuffix "-") (sha256sum .ctx.Release.Name | trunc 5) .component -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/*
A CPU quantity ("1500m", "1.5", 2) in millicores, for comparing values in templates.
Usage: include "common.millicores" "1500m"
*/}}
{{- define "common.millicores" -}}
{{- $q := toString . -}}
{{- if hasSuffix "m" $q }}{{ trimSuffix "m" $q | float64 }}{{ else }}{{ mulf ($q | float64) 1000 }}{{ end -}}
{{- end -}}

{{/*
A memory quantity ("512Mi", "1G", 1e9, 536870912) in bytes, for comparing values in templates.
Usage: include "common.bytes" "512Mi"
*/}}
{{- define "common.bytes" -}}
{{- $q := toString . -}}
{{- $units := dict "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 -}}
{{- $number := regexReplaceAll "[A-Za-z]+$" $q "" -}}
{{- $unit := trimPrefix $number $q -}}
{{- mulf ($number | float64) (get $units $unit | default 1.0) -}}
{{- end -}}

{{/*
Fails when a container's resource request is above its limit, as the API server would refuse the pod only once
deployed; `path` names the values block.
Usage: include "common.requestsWithinLimits" (dict "path" "locust.master.resources" "resources" $resources)
*/}}
{{- define "common.requestsWithinLimits" -}}
{{- $requests := .resources.requests | default dict -}}
{{- $limits := .resources.limits | default dict -}}
{{- if and $requests.cpu $limits.cpu (gt (include "common.millicores" $requests.cpu | float64) (include "common.millicores" $limits.cpu | float64)) -}}
{{- fail (printf "%s.requests.cpu %v is above limits.cpu %v: Kubernetes refuses such a pod; raise the limit or lower the request" .path $requests.cpu $limits.cpu) -}}
{{- end -}}
{{- if and $requests.memory $limits.memory (gt (include "common.bytes" $requests.memory | float64) (include "common.bytes" $limits.memory | float64)) -}}
{{- fail (printf "%s.requests.memory %v is above limits.memory %v: Kubernetes refuses such a pod; raise the limit or lower the request" .path $requests.memory $limits.memory) -}}
{{- end -}}
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
Service name of an in-chart target (loadtest/workload/targets.py lists them; _registry.tpl gives each one's component).
The target charts name their Service with it, the Locust chart its URL.
Usage: include "common.targetName" (dict "ctx" $ "target" "nginx")
*/}}
{{- define "common.targetName" -}}
{{- $component := get (include "common.targetComponents" . | fromJson) .target -}}
{{- include "common.fullname" (dict "ctx" .ctx "component" ($component | required (printf "unknown target %q" .target))) -}}
{{- end -}}

{{/*
URL of an in-chart target's Service: port 80, or with https the TLS port 443.
Usage: include "common.targetURL" (dict "ctx" $ "target" "haproxy" "https" false)
*/}}
{{- define "common.targetURL" -}}
{{- if .https -}}
https://{{ include "common.targetName" . }}:443
{{- else -}}
http://{{ include "common.targetName" . }}:80
{{- end -}}
{{- end -}}

{{/*
The URL the Locust users load: locust.host when set, else the Service of the in-chart target, over HTTPS when
locust.https is set or the scenario needs TLS (loadtest/workload/scenarios.py; _registry.tpl lists them). Shared by the master, NOTES.txt and the helm test pod.
Usage: include "common.locustTargetURL" (dict "ctx" $ "locust" <the locust chart's values>)
*/}}
{{- define "common.locustTargetURL" -}}
{{- if .locust.host -}}
{{- .locust.host -}}
{{- else if eq .locust.target "url" -}}
{{- fail "locust.target url needs locust.host: the URL the users load (e.g. --set locust.host=https://shop.example.com)" -}}
{{- else -}}
{{- $https := or .locust.https (has .locust.scenario (include "common.tlsScenarios" . | fromJsonArray)) -}}
{{- include "common.targetURL" (dict "ctx" .ctx "target" .locust.target "https" $https) -}}
{{- end -}}
{{- end -}}

{{/*
The open model's rate, locust.load.arrivalRate (requests/s for the whole release), written as a number ("2000",
"0.5"); empty in the closed model (0). Master and workers get it as LOADTEST_ARRIVAL_RATE.
Usage: include "common.arrivalRate" <the locust chart's values>
*/}}
{{- define "common.arrivalRate" -}}
{{- $rate := .load.arrivalRate | float64 -}}
{{- if gt $rate 0.0 -}}
{{- if eq $rate (floor $rate) }}{{ $rate | int64 }}{{ else }}{{ $rate }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
The users of the open model: a pool that holds the rate while responses take up to common.arrivalPoolSeconds
(0.5 s: ceil(rate x 0.5)), and at least one per worker, so each worker has a user for its share.
The master's --users in arrival mode, in place of autostart.users.
Usage: include "common.arrivalPool" <the locust chart's values>
*/}}
{{- define "common.arrivalPool" -}}
{{- max (.worker.replicas | int64) (mulf (.load.arrivalRate | float64) (include "common.arrivalPoolSeconds" . | float64) | ceil | int64) -}}
{{- end -}}

{{/*
The master's --users in modes autostart and run: the open model's pool when locust.load.arrivalRate is set, else
locust.autostart.users, 100 when empty.
Usage: include "common.users" <the locust chart's values>
*/}}
{{- define "common.users" -}}
{{- if include "common.arrivalRate" . -}}
{{- include "common.arrivalPool" . -}}
{{- else -}}
{{- .autostart.users | default 100 | int64 -}}
{{- end -}}
{{- end -}}

{{/*
URL of the in-chart backend Service (charts/backend): the default target of the Locust chart.
Usage: include "common.backendURL" $
*/}}
{{- define "common.backendURL" -}}
{{- include "common.targetURL" (dict "ctx" . "target" "backend" "https" false) -}}
{{- end -}}

{{/*
Host names of a target's routes: the first is `hostname` (empty: the target's Service name, which is the Host the
in-chart Locust sends), route i > 0 is r<i>.<hostname>. A Locust user spreading over N routes sends the same names
(plugin/loadtest_lib.py, RouteSpread), so the two sides agree without sharing values.
Usage: include "common.routeHosts" (dict "ctx" $ "target" "haproxy" "hostname" .Values.hostname "routes" .Values.routes) | fromJsonArray
*/}}
{{- define "common.routeHosts" -}}
{{- $first := .hostname | default (include "common.targetName" .) -}}
{{- $hosts := list $first -}}
{{- range $i := untilStep 1 (.routes | int) 1 -}}
{{- $hosts = append $hosts (printf "r%d.%s" $i $first) -}}
{{- end -}}
{{- toJson $hosts -}}
{{- end -}}

{{/*
Name of a component's TLS Secret (type kubernetes.io/tls): tls.existingSecret, else <release>-<component>-tls,
which the chart generates (common.selfSignedTLSSecret).
Usage: include "common.tlsSecretName" (dict "ctx" $ "component" "haproxy" "tls" .Values.tls)
*/}}
{{- define "common.tlsSecretName" -}}
{{- .tls.existingSecret | default (include "common.fullname" (dict "ctx" .ctx "component" (printf "%s-tls" .component))) -}}
{{- end -}}

{{/*
A kubernetes.io/tls Secret with a self-signed RSA 2048 certificate (Sprig's genSelfSignedCert) for `hosts`, the first
one as its CN, valid for a year. An upgrade keeps the certificate already in the cluster, so a running test sees no
change; clients of a load test do not verify it (the scenarios set verify = False). "namespace" (optional) puts it
outside the release's namespace.
Usage: include "common.selfSignedTLSSecret" (dict "ctx" $ "component" "haproxy" "tls" .Values.tls "hosts" $hosts)
*/}}
{{- define "common.selfSignedTLSSecret" -}}
{{- $name := include "common.tlsSecretName" . -}}
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
    {{- include "common.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
type: kubernetes.io/tls
data:
  tls.crt: {{ index $data "tls.crt" }}
  tls.key: {{ index $data "tls.key" }}
{{- end -}}

{{/*
Pod anti-affinity that keeps a target's pods off the nodes running Locust pods of the same release (and, the rule
being symmetric for the scheduler, Locust pods off the target's nodes): generator and target never share a node,
whatever node types the values choose. Empty when global.targetsApartFromLocust is false (a one-node cluster).
Usage: include "common.awayFromLocust" $
*/}}
{{- define "common.awayFromLocust" -}}
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
