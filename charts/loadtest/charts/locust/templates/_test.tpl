{{/*
The test the pods run: the chart's scenarios or the user's own files, and the packages it needs.
*/}}

{{/*
Whether the user's own test runs instead of the built-in scenario ("true" or empty).
*/}}
{{- define "locust.test.own" -}}
{{- if or .Values.test.files .Values.test.existingConfigMap }}true{{ end }}
{{- end -}}

{{/*
The --locustfile argument, the same for master and workers: the user's test with the project's plugin beside it,
or the built-in scenario; plus the step load shape when it is on.
*/}}
{{- define "locust.test.locustfiles" -}}
{{- if include "locust.test.own" . -}}
/home/locust/test/{{ .Values.test.main }}.py,/home/locust/locustfiles/loadtest_plugin.py
{{- else -}}
/home/locust/locustfiles/{{ .Values.scenario }}.py
{{- end }}
{{- if .Values.stepLoad.enabled }},/home/locust/locustfiles/loadtest_shapes.py{{ end }}
{{- end -}}

{{/*
Requirements a pod's init container installs: the plugin's in the master, the user's in both. Empty when an image
has them baked in. Args (as for every pod helper below): ctx, master (bool).
*/}}
{{- define "locust.test.requirements" -}}
{{- $values := .ctx.Values }}
{{- $parts := list }}
{{- if not $values.packages.image }}
{{- if .master }}{{ $parts = append $parts (.ctx.Files.Get "plugin-requirements.txt" | trim) }}{{ end }}
{{- with $values.packages.requirements | trim }}{{ $parts = append $parts . }}{{ end }}
{{- end }}
{{- join "\n" $parts }}
{{- end -}}

{{/*
The init container that pip-installs `requirements` (hash-checked, wheels only) into the packages volume.
Args: ctx, requirements.
*/}}
{{- define "locust.test.packagesInitContainer" -}}
- name: packages
  image: {{ include "locust.images.image" .ctx }}
  imagePullPolicy: {{ .ctx.Values.image.pullPolicy }}
  command:
    - sh
    - -c
    - >-
      printf '%s\n' "$REQUIREMENTS" > /tmp/requirements.txt &&
      exec pip install --no-cache-dir --disable-pip-version-check --require-hashes
      --only-binary=:all: --target /home/locust/packages -r /tmp/requirements.txt
  env:
    - name: HOME
      value: /tmp
    - name: REQUIREMENTS
      value: {{ .requirements | quote }}
  resources:
    requests:
      cpu: 100m
      memory: 128Mi
    limits:
      cpu: 500m
      memory: 256Mi
  securityContext:
    {{- include "common.security.container" .ctx | nindent 4 }}
  volumeMounts:
    - name: packages
      mountPath: /home/locust/packages
    - name: tmp
      mountPath: /tmp
{{- end -}}
