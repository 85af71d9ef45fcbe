{{/*
The --locustfile argument: the scenario, plus the step load shape when it is on. Master and workers load the same.
*/}}
{{- define "locust.locustfiles" -}}
/home/locust/locustfiles/{{ .Values.scenario }}.py
{{- if .Values.stepLoad.enabled }},/home/locust/locustfiles/loadtest_shapes.py{{ end }}
{{- end -}}

{{/*
Scenario settings read by the locustfiles (loadtest_lib.setting: LOADTEST_<NAME>), as env entries.
*/}}
{{- define "locust.scenarioEnv" -}}
- name: LOADTEST_ROUTES
  value: {{ .Values.routes | int64 | quote }}
{{- with .Values.stepLoad }}
{{- if .enabled }}
- name: LOADTEST_STEP_USERS
  value: {{ .users | int64 | quote }}
- name: LOADTEST_STEP_TIME
  value: {{ .stepTime | quote }}
- name: LOADTEST_STEPS
  value: {{ .steps | int64 | quote }}
{{- end }}
{{- end }}
{{- end -}}
