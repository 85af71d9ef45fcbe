{{/*
What Prometheus scrapes: the cluster's name, the pods' jobs, their namespaces and labels, and the API token it reads them with.
*/}}

{{/*
Name of a cluster-scoped object: <namespace>-<release>-<component>, unique per release and namespace (RBAC names
may be longer than a DNS label, so nothing is cut off).
Usage: include "monitoring.discovery.clusterName" (dict "ctx" $ "component" "prometheus")
*/}}
{{- define "monitoring.discovery.clusterName" -}}
{{- printf "%s-%s" .ctx.Release.Namespace (include "common.names.fullname" .) -}}
{{- end -}}

{{/*
What Prometheus scrapes besides the cluster (kube-state-metrics, cAdvisor), as a YAML list of
{name, namespace, selector, port, path, role}: the Locust master (role generator) and the targets (role target):
the release's own (backend, NGINX Ingress Controller, HAProxy: each is scraped on its container port named
"metrics" when it is installed and has one) and targets.pods.
The in-chart scrape configuration and the PodMonitors of operator mode are both made from it.
*/}}
{{- define "monitoring.discovery.podJobs" -}}
- name: locust-master
  namespace: {{ .Release.Namespace }}
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/component: locust-master
  port: metrics
  path: /metrics
  role: generator
{{- if .Values.targets.inChart }}
{{- range (include "common.registry.targetComponents" . | fromJson) }}
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
{{- define "monitoring.discovery.apiTokenVolume" -}}
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
{{- define "monitoring.discovery.labelSelector" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/*
Namespaces whose pods the in-chart Prometheus discovers: the release's and every target's.
*/}}
{{- define "monitoring.discovery.podNamespaces" -}}
{{- $namespaces := list -}}
{{- range include "monitoring.discovery.podJobs" . | fromYamlArray -}}
{{- $namespaces = append $namespaces .namespace -}}
{{- end -}}
{{- $namespaces | uniq | toJson -}}
{{- end -}}
