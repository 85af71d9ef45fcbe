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

{{/*
Master or workers: a Deployment (modes interactive and autostart), a Job (mode run), or, with locust.schedule.cron,
a CronJob whose jobTemplate.spec is that same Job spec, so a scheduled run is the judged run of an install. Args:
ctx, component, spec (the Deployment's or the Job's spec, YAML at column 0).
*/}}
{{- define "locust.workload" -}}
{{- $values := .ctx.Values }}
{{- $run := eq $values.mode "run" }}
{{- $name := include "common.fullname" (dict "ctx" .ctx "component" .component) }}
{{- $labels := include "common.labels" (dict "ctx" .ctx "component" .component) }}
{{- $schedule := $values.schedule }}
{{- if and $run $schedule.cron }}
{{- /* The Job controller names each run <cronjob>-<scheduled minute>: 11 characters more, within a label's 63. */}}
{{- if gt (len $name) 52 }}
{{- fail (printf "locust.schedule.cron: the CronJob %s has %d characters, and Kubernetes takes 52 at most (each run's Job adds 11 to the name); install with a release name of at most %d characters" $name (len $name) (sub 52 (sub (len $name) (len .ctx.Release.Name)))) }}
{{- end }}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ $name }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  schedule: {{ $schedule.cron | quote }}
  {{- with $schedule.timeZone }}
  timeZone: {{ . | quote }}
  {{- end }}
  {{- /* A run still going when the next is due: the next does not start (the controller records an event,
  JobAlreadyActive) and is skipped unless the running one ends within startingDeadlineSeconds of its time. */}}
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: {{ $schedule.startingDeadlineSeconds | int64 }}
  successfulJobsHistoryLimit: {{ $schedule.historyLimit | int64 }}
  failedJobsHistoryLimit: {{ $schedule.historyLimit | int64 }}
  jobTemplate:
    metadata:
      labels:
        {{- $labels | nindent 8 }}
    spec:
      {{- .spec | trim | nindent 6 }}
{{- else }}
apiVersion: {{ ternary "batch/v1" "apps/v1" $run }}
kind: {{ ternary "Job" "Deployment" $run }}
metadata:
  name: {{ $name }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  {{- .spec | trim | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
A duration of locust.autostart.runTime's or stepLoad.stepTime's form (300s, 20m, 1h30m) in seconds.
Usage: include "locust.seconds" "1h30m"
*/}}
{{- define "locust.seconds" -}}
{{- $seconds := 0 }}
{{- $unit := dict "h" 3600 "m" 60 "s" 1 }}
{{- range regexFindAll "[0-9]+[hms]" (toString .) -1 }}
{{- $seconds = add $seconds (mul (regexFind "[0-9]+" . | int) (get $unit (regexFind "[hms]$" .))) }}
{{- end }}
{{- $seconds }}
{{- end -}}

{{/*
activeDeadlineSeconds of a judged run's Jobs, master and workers alike: the run (the step load's steps x stepTime, else
autostart.runTime), the master's autostart.autoquitSeconds after it (for Prometheus' last scrape), plus 14 minutes to
start (image pull, the packages' pip install, every worker connecting) and to stop (the verdict, the results'
upload): 15 minutes past the run at the default autoquit of a minute. A run cut there fails its Job with reason
DeadlineExceeded, and no worker outlives it.
*/}}
{{- define "locust.activeDeadlineSeconds" -}}
{{- $values := .Values }}
{{- $run := include "locust.seconds" $values.autostart.runTime | int }}
{{- if $values.stepLoad.enabled }}
{{- $run = mul (include "locust.seconds" $values.stepLoad.stepTime | int) ($values.stepLoad.steps | int) }}
{{- end }}
{{- add $run ($values.autostart.autoquitSeconds | int) 840 }}
{{- end -}}

{{/*
Where a judged run keeps its results folder: "pvc" or "s3"; empty outside mode run and for store none.
*/}}
{{- define "locust.resultsStore" -}}
{{- if and (eq .Values.mode "run") (ne .Values.results.store "none") }}{{ .Values.results.store }}{{ end }}
{{- end -}}

{{/*
The claim of results.store pvc: the user's existing one, else the chart's <release>-locust-results.
*/}}
{{- define "locust.resultsClaim" -}}
{{- .Values.results.pvc.existingClaim | default (include "common.fullname" (dict "ctx" . "component" "locust-results")) }}
{{- end -}}
