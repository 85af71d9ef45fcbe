{{/*
The dashboards, as ConfigMaps for a Grafana sidecar or provisioned into the chart's own Grafana.
*/}}

{{/*
Name of the ConfigMap holding one dashboard: dashboards/loadtest-overview.json -> <release>-dashboard-overview.
Usage: include "monitoring.grafana.dashboardConfigMap" (dict "ctx" $ "path" "dashboards/loadtest-overview.json")
*/}}
{{- define "monitoring.grafana.dashboardConfigMap" -}}
{{- $dashboard := base .path | trimSuffix ".json" | trimPrefix "loadtest-" -}}
{{- include "common.names.fullname" (dict "ctx" .ctx "component" (printf "dashboard-%s" $dashboard)) -}}
{{- end -}}

{{/*
Grafana's provisioning files (ConfigMap data): the in-chart Prometheus as the default data source, and the
dashboards folder.
*/}}
{{- define "monitoring.grafana.provisioning" -}}
datasources.yaml: |
  apiVersion: 1
  datasources:
    - name: Prometheus
      uid: prometheus
      type: prometheus
      access: proxy
      url: http://{{ include "common.names.fullname" (dict "ctx" . "component" "prometheus") }}:9090
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
