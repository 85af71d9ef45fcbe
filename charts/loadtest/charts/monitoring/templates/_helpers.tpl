{{/*
Templates of the monitoring chart; the names, labels and security contexts come from the common library.
*/}}

{{/*
nodeSelector of every monitoring pod (empty when neither nodeType nor nodeSelector is set).
*/}}
{{- define "monitoring.nodeSelector" -}}
{{- include "common.nodeSelector" (dict "nodeType" .Values.nodeType "nodeSelector" .Values.nodeSelector) -}}
{{- end -}}

{{/*
Scheduling of a monitoring pod: nodeSelector and tolerations.
Usage: include "monitoring.scheduling" $
*/}}
{{- define "monitoring.scheduling" -}}
{{- with include "monitoring.nodeSelector" . }}
nodeSelector:
  {{- . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Name of a cluster-scoped object: <namespace>-<release>-<component>, unique per release and namespace (RBAC names
may be longer than a DNS label, so nothing is cut off).
Usage: include "monitoring.clusterName" (dict "ctx" $ "component" "prometheus")
*/}}
{{- define "monitoring.clusterName" -}}
{{- printf "%s-%s" .ctx.Release.Namespace (include "common.fullname" .) -}}
{{- end -}}

{{/*
What Prometheus scrapes besides the cluster (kube-state-metrics, cAdvisor), as a YAML list of
{name, namespace, selector, port, path, role}: the Locust master (role generator) and the targets (role target):
the release's own (backend, NGINX Ingress Controller, HAProxy: each is scraped on its container port named
"metrics" when it is installed and has one) and targets.pods.
The in-chart scrape configuration and the PodMonitors of operator mode are both made from it.
*/}}
{{- define "monitoring.podJobs" -}}
- name: locust-master
  namespace: {{ .Release.Namespace }}
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/component: locust-master
  port: metrics
  path: /metrics
  role: generator
{{- if .Values.targets.inChart }}
{{- range (include "common.targetComponents" . | fromJson) }}
- name: {{ . }}
  namespace: {{ $.Release.Namespace }}
  selector:
    app.kubernetes.io/instance: {{ $.Release.Name }}
    app.kubernetes.io/component: {{ . }}
  port: metrics
  path: /metrics
  role: target
{{- end }}
{{- end }}
{{- range $index, $target := .Values.targets.pods }}
- name: target-{{ $index }}
  namespace: {{ $target.namespace }}
  selector:
    {{- toYaml $target.selector | nindent 4 }}
  port: {{ $target.port }}
  path: {{ $target.path | default "/metrics" }}
  role: target
{{- end }}
{{- end -}}

{{/*
The projected ServiceAccount token, CA and namespace that a client inside the cluster reads (the pods set
automountServiceAccountToken: false and mount this only into the container that talks to the API server).
*/}}
{{- define "monitoring.apiTokenVolume" -}}
- name: api-token
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3607
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                fieldPath: metadata.namespace
{{- end -}}

{{/*
A label map as a Kubernetes label selector string: "k1=v1,k2=v2" (keys sorted).
*/}}
{{- define "monitoring.labelSelector" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/*
Namespaces whose pods the in-chart Prometheus discovers: the release's and every target's.
*/}}
{{- define "monitoring.podNamespaces" -}}
{{- $namespaces := list -}}
{{- range include "monitoring.podJobs" . | fromYamlArray -}}
{{- $namespaces = append $namespaces .namespace -}}
{{- end -}}
{{- $namespaces | uniq | toJson -}}
{{- end -}}

{{/*
Name of the ConfigMap holding one dashboard: dashboards/loadtest-overview.json -> <release>-dashboard-overview.
Usage: include "monitoring.dashboardConfigMap" (dict "ctx" $ "path" "dashboards/loadtest-overview.json")
*/}}
{{- define "monitoring.dashboardConfigMap" -}}
{{- $dashboard := base .path | trimSuffix ".json" | trimPrefix "loadtest-" -}}
{{- include "common.fullname" (dict "ctx" .ctx "component" (printf "dashboard-%s" $dashboard)) -}}
{{- end -}}

{{/*
Grafana's provisioning files (ConfigMap data): the in-chart Prometheus as the default data source, and the
dashboards folder.
*/}}
{{- define "monitoring.grafanaProvisioning" -}}
datasources.yaml: |
  apiVersion: 1
  datasources:
    - name: Prometheus
      uid: prometheus
      type: prometheus
      access: proxy
      url: http://{{ include "common.fullname" (dict "ctx" . "component" "prometheus") }}:9090
      isDefault: true
      editable: false
      jsonData:
        # The scrape interval, so that $__rate_interval spans at least four samples.
        timeInterval: {{ .Values.prometheus.scrapeInterval }}
dashboards.yaml: |
  apiVersion: 1
  providers:
    - name: loadtest
      folder: Load test
      type: file
      disableDeletion: true
      allowUiUpdates: false
      options:
        path: /etc/grafana/dashboards
{{- end -}}

{{/*
A number of seconds as a Prometheus duration: whole minutes as "2m" (so the default window renders the rules file
as written), else seconds ("30s").
*/}}
{{- define "monitoring.duration" -}}
{{- $s := . | int -}}
{{- if eq (mod $s 60) 0 }}{{ div $s 60 }}m{{ else }}{{ $s }}s{{ end -}}
{{- end -}}

{{/*
The saturation rules (rules/loadtest.rules.yaml, the one source; the promtool tests run it as written, for a window of
a minute) over the release's window, rules.windowSeconds: each range `[1m]` and `for: 1m` becomes one window, each
`[2m]` and `for: 2m` two. In mode inChart a window must hold four scrape intervals, or be at least the minute the
file is written for (which the 30 s maximum scrape interval fits twice): a rate needs two scrapes in its range, and
a window of two or three has none as soon as one scrape is late.
*/}}
{{- define "monitoring.rules" -}}
{{- $window := .Values.rules.windowSeconds | int -}}
{{- if eq .Values.mode "inChart" -}}
{{- $scrape := .Values.prometheus.scrapeInterval | trimSuffix "s" | int -}}
{{- $floor := min (mul 4 $scrape) 60 -}}
{{- if lt $window $floor -}}
{{- fail (printf "monitoring.rules.windowSeconds %d holds fewer than four scrapes of monitoring.prometheus.scrapeInterval %s: the rules' rates would have too few samples to judge; set monitoring.rules.windowSeconds=%d or more, or a shorter scrape interval (at most %ds)" $window .Values.prometheus.scrapeInterval $floor (max 1 (div $window 4))) -}}
{{- end -}}
{{- end -}}
{{- $one := include "monitoring.duration" $window -}}
{{- $two := include "monitoring.duration" (mul 2 $window) -}}
{{- /* Through placeholders, so that a window of 120 s does not turn a `[1m]` into a `[2m]` doubled again. */ -}}
{{- $text := .Files.Get "rules/loadtest.rules.yaml" | replace "[1m]" "[@ONE@]" | replace "[2m]" "[@TWO@]" -}}
{{- $text = regexReplaceAll "(?m)^(\\s+for: )1m$" $text "${1}@ONE@" -}}
{{- $text = regexReplaceAll "(?m)^(\\s+for: )2m$" $text "${1}@TWO@" -}}
{{- $text | replace "@ONE@" $one | replace "@TWO@" $two -}}
{{- end -}}
