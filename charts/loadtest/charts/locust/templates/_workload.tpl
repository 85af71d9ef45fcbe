{{/*
The object that runs a pod spec (Deployment, Job or CronJob, by locust.mode and locust.schedule), and its time limits.
*/}}

{{/*
Master or workers: a Deployment (modes interactive and autostart), a Job (mode run), or, with locust.schedule.cron,
a CronJob whose jobTemplate.spec is that same Job spec, so a scheduled run is the judged run of an install. Args:
ctx, component, spec (the Deployment's or the Job's spec, YAML at column 0).
*/}}
{{- define "locust.workload.object" -}}
{{- $values := .ctx.Values }}
{{- $run := eq $values.mode "run" }}
{{- $name := include "common.names.fullname" (dict "ctx" .ctx "component" .component) }}
{{- $labels := include "common.labels.standard" (dict "ctx" .ctx "component" .component) }}
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
Usage: include "locust.workload.seconds" "1h30m"
*/}}
{{- define "locust.workload.seconds" -}}
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
{{- define "locust.workload.activeDeadlineSeconds" -}}
{{- $values := .Values }}
{{- $run := include "locust.workload.seconds" $values.autostart.runTime | int }}
{{- if $values.stepLoad.enabled }}
{{- $run = mul (include "locust.workload.seconds" $values.stepLoad.stepTime | int) ($values.stepLoad.steps | int) }}
{{- end }}
{{- add $run ($values.autostart.autoquitSeconds | int) 840 }}
{{- end -}}
