{{/*
Whether the user's own test runs instead of the built-in scenario ("true" or empty).
*/}}
{{- define "locust.ownTest" -}}
{{- if or .Values.test.files .Values.test.existingConfigMap }}true{{ end }}
{{- end -}}

{{/*
The --locustfile argument, the same for master and workers: the user's test with the project's plugin beside it,
or the built-in scenario; plus the step load shape when it is on.
*/}}
{{- define "locust.locustfiles" -}}
{{- if include "locust.ownTest" . -}}
/home/locust/test/{{ .Values.test.main }}.py,/home/locust/locustfiles/loadtest_plugin.py
{{- else -}}
/home/locust/locustfiles/{{ .Values.scenario }}.py
{{- end }}
{{- if .Values.stepLoad.enabled }},/home/locust/locustfiles/loadtest_shapes.py{{ end }}
{{- end -}}

{{/*
The image of master and workers: the one with the packages baked in, else the Locust image.
*/}}
{{- define "locust.image" -}}
{{- .Values.packages.image | default (include "common.image" .Values.image) }}
{{- end -}}

{{/*
Requirements a pod's init container installs: the plugin's in the master, the user's in both. Empty when an image
has them baked in. Args (as for every pod helper below): ctx, master (bool).
*/}}
{{- define "locust.requirements" -}}
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
{{- define "locust.packagesInitContainer" -}}
- name: packages
  image: {{ include "locust.image" .ctx }}
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
    {{- include "common.containerSecurityContext" .ctx | nindent 4 }}
  volumeMounts:
    - name: packages
      mountPath: /home/locust/packages
    - name: tmp
      mountPath: /tmp
{{- end -}}

{{/*
Env entries of master and workers: the Python path (the user's test and library, the project's modules, the
installed packages), the scenario settings read by the locustfiles (loadtest_lib.setting: LOADTEST_<NAME>), the
open model's rate, then the user's extraEnv.
*/}}
{{- define "locust.env" -}}
{{- $values := .ctx.Values }}
{{- $packages := ne (include "locust.requirements" .) "" }}
{{- $path := list }}
{{- if include "locust.ownTest" .ctx }}{{ $path = append $path "/home/locust/test" }}{{ end }}
{{- if $values.test.libraryConfigMap }}{{ $path = append $path "/home/locust/library" }}{{ end }}
{{- $path = append $path "/home/locust/locustfiles" }}
{{- if $packages }}{{ $path = append $path "/home/locust/packages" }}{{ end }}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: HOME
  value: /tmp
- name: PYTHONPATH
  value: {{ join ":" $path }}
- name: LOADTEST_ROUTES
  value: {{ $values.routes | int64 | quote }}
{{- if and (eq $values.mode "run") (not $values.stepLoad.enabled) }}
{{- /* A judged run's figures are its steady window's: Locust resets its statistics once every user runs, on the
master and on each worker, as Locust asks. (Step load spawns at every step: its run keeps every step.) */}}
- name: LOCUST_RESET_STATS
  value: "true"
{{- end }}
{{- with include "common.arrivalRate" $values }}
{{- /* The open model (locust.load.arrivalRate): the master splits the rate over the workers, each sends its share
on a fixed schedule. */}}
- name: LOADTEST_ARRIVAL_RATE
  value: {{ . | quote }}
{{- end }}
{{- with $values.stepLoad }}
{{- if .enabled }}
- name: LOADTEST_STEP_USERS
  value: {{ .users | int64 | quote }}
- name: LOADTEST_STEP_TIME
  value: {{ .stepTime | quote }}
- name: LOADTEST_STEPS
  value: {{ .steps | int64 | quote }}
{{- end }}
{{- end }}
{{- with $values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Volume mounts of master and workers: the project's locustfiles, the user's test and library, the packages, /tmp,
the user's Secrets.
*/}}
{{- define "locust.mounts" -}}
{{- $values := .ctx.Values }}
- name: locustfiles
  mountPath: /home/locust/locustfiles
  readOnly: true
{{- if include "locust.ownTest" .ctx }}
- name: test
  mountPath: /home/locust/test
  readOnly: true
{{- end }}
{{- if $values.test.libraryConfigMap }}
- name: library
  mountPath: /home/locust/library
  readOnly: true
{{- end }}
{{- if include "locust.requirements" . }}
- name: packages
  mountPath: /home/locust/packages
  readOnly: true
{{- end }}
- name: tmp
  mountPath: /tmp
{{- range $i, $mount := $values.secretMounts }}
- name: secret-{{ $i }}
  mountPath: {{ $mount.mountPath }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
The volumes behind locust.mounts.
*/}}
{{- define "locust.volumes" -}}
{{- $ctx := .ctx }}
{{- $values := .ctx.Values }}
- name: locustfiles
  configMap:
    name: {{ include "common.fullname" (dict "ctx" $ctx "component" "locustfiles") }}
{{- if include "locust.ownTest" $ctx }}
- name: test
  configMap:
    name: {{ $values.test.existingConfigMap | default (include "common.fullname" (dict "ctx" $ctx "component" "locust-test")) }}
{{- end }}
{{- with $values.test.libraryConfigMap }}
- name: library
  configMap:
    name: {{ . }}
{{- end }}
{{- if include "locust.requirements" . }}
- name: packages
  emptyDir: {}
{{- end }}
- name: tmp
  emptyDir: {}
{{- range $i, $mount := $values.secretMounts }}
- name: secret-{{ $i }}
  secret:
    secretName: {{ $mount.secretName }}
    defaultMode: 0440
{{- end }}
{{- end -}}
