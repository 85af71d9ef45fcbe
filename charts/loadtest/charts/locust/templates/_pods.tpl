{{/*
The master's and the workers' pods: their specs, environment, mounts and volumes.
*/}}

{{/*
Env entries of master and workers: the Python path (the user's test and library, the project's modules, the
installed packages), the scenario settings read by the locustfiles (loadtest_lib.setting: LOADTEST_<NAME>), the
open model's rate, then the user's extraEnv.
*/}}
{{- define "locust.pods.env" -}}
{{- $values := .ctx.Values }}
{{- $packages := ne (include "locust.test.requirements" .) "" }}
{{- $path := list }}
{{- if include "locust.test.own" .ctx }}{{ $path = append $path "/home/locust/test" }}{{ end }}
{{- if $values.test.libraryConfigMap }}{{ $path = append $path "/home/locust/library" }}{{ end }}
{{- $path = concat $path (list "/home/locust/locustfiles" "/home/locust/shared") }}
{{- if $packages }}{{ $path = append $path "/home/locust/packages" }}{{ end }}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: HOME
  value: /tmp
- name: PYTHONPATH
  value: {{ join ":" $path }}
- name: {{ include "common.settings.env" "routes" }}
  value: {{ $values.routes | int64 | quote }}
{{- if and (eq $values.mode "run") (not $values.stepLoad.enabled) }}
{{- /* A judged run's figures are its steady window's: Locust resets its statistics once every user runs, on the
master and on each worker, as Locust asks. (Step load spawns at every step: its run keeps every step.) */}}
- name: LOCUST_RESET_STATS
  value: "true"
{{- end }}
{{- with include "common.locust.arrivalRate" $values }}
{{- /* The open model (locust.load.arrivalRate): the master splits the rate over the workers, each sends its share
on a fixed schedule. */}}
- name: {{ include "common.settings.env" "arrival_rate" }}
  value: {{ . | quote }}
{{- end }}
{{- with $values.stepLoad }}
{{- if .enabled }}
- name: {{ include "common.settings.env" "step_users" }}
  value: {{ .users | int64 | quote }}
- name: {{ include "common.settings.env" "step_time" }}
  value: {{ .stepTime | quote }}
- name: {{ include "common.settings.env" "steps" }}
  value: {{ .steps | int64 | quote }}
{{- end }}
{{- end }}
{{- with $values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Volume mounts of master and workers: the project's locustfiles, the package they share with the CLI, the user's
test and library, the packages, /tmp, the user's Secrets.
*/}}
{{- define "locust.pods.mounts" -}}
{{- $values := .ctx.Values }}
- name: locustfiles
  mountPath: /home/locust/locustfiles
  readOnly: true
- name: shared
  mountPath: /home/locust/shared/loadtest_shared
  readOnly: true
{{- if include "locust.test.own" .ctx }}
- name: test
  mountPath: /home/locust/test
  readOnly: true
{{- end }}
{{- if $values.test.libraryConfigMap }}
- name: library
  mountPath: /home/locust/library
  readOnly: true
{{- end }}
{{- if include "locust.test.requirements" . }}
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
{{- define "locust.pods.volumes" -}}
{{- $ctx := .ctx }}
{{- $values := .ctx.Values }}
- name: locustfiles
  configMap:
    name: {{ include "common.names.fullname" (dict "ctx" $ctx "component" "locustfiles") }}
- name: shared
  configMap:
    name: {{ include "common.names.fullname" (dict "ctx" $ctx "component" "locust-shared") }}
{{- if include "locust.test.own" $ctx }}
- name: test
  configMap:
    name: {{ $values.test.existingConfigMap | default (include "common.names.fullname" (dict "ctx" $ctx "component" "locust-test")) }}
{{- end }}
{{- with $values.test.libraryConfigMap }}
- name: library
  configMap:
    name: {{ . }}
{{- end }}
{{- if include "locust.test.requirements" . }}
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
The master's Deployment or Job spec: in a Job of mode run, or in the jobTemplate of its CronJob. prometheus_client
for the metrics plugin and the user's packages: baked into packages.image, else pip-installed by an init
container.
*/}}
{{- define "locust.pods.master" }}
{{- $host := include "common.locust.targetURL" (dict "ctx" . "locust" .Values) }}
{{- $pod := dict "ctx" . "master" true }}
{{- $requirements := include "locust.test.requirements" $pod }}
{{- $run := eq .Values.mode "run" }}
{{- $arrivalRate := include "common.locust.arrivalRate" .Values }}
{{- $results := include "locust.results.store" . }}
{{- if $run }}
backoffLimit: 0
activeDeadlineSeconds: {{ include "locust.workload.activeDeadlineSeconds" . }}
{{- /* Exit code 1, a check failed or a regression against the pinned baseline, is the only failure left to
backoffLimit, so only it fails the Job with reason BackoffLimitExceeded, the one LoadTestRegression alerts on. Every
other end fails it at once with reason PodFailurePolicy: a disrupted pod (evicted, preempted, its node gone), the
packages' install failing, and the master's other codes (2 bad input, 3 invalid: the workers were the limit, 4 not
one request sent, a signal). */}}
podFailurePolicy:
  rules:
    - action: FailJob
      onPodConditions:
        - type: DisruptionTarget
          status: "True"
    {{- if $requirements }}
    - action: FailJob
      onExitCodes:
        containerName: packages
        operator: NotIn
        values: [0]
    {{- end }}
    - action: FailJob
      onExitCodes:
        containerName: master
        operator: NotIn
        values: [0, 1]
{{- else }}
replicas: 1
strategy:
  type: Recreate
selector:
  matchLabels:
    {{- include "common.labels.selector" (dict "ctx" $ "component" "locust-master") | nindent 4 }}
{{- end }}
template:
  metadata:
    labels:
      {{- include "common.labels.standard" (dict "ctx" $ "component" "locust-master") | nindent 6 }}
      {{- if and (not .Values.host) (ne .Values.target "url") }}
      {{- /* The Deployment of the in-chart target the users load: the saturation rules measure its pods' CPU. */}}
      loadtest.io/target-deployment: {{ include "common.names.target" (dict "ctx" $ "target" .Values.target) }}
      {{- end }}
    annotations:
      checksum/locustfiles: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
      {{- if .Values.test.files }}
      checksum/test: {{ include (print $.Template.BasePath "/test-configmap.yaml") . | sha256sum }}
      {{- end }}
  spec:
    {{- if $run }}
    restartPolicy: Never
    {{- end }}
    serviceAccountName: {{ include "common.names.serviceAccount" (dict "ctx" $ "component" "locust" "serviceAccount" .Values.serviceAccount) }}
    automountServiceAccountToken: false
    enableServiceLinks: false
    securityContext:
      {{- include "common.security.pod" 1000 | nindent 6 }}
    {{- with include "common.scheduling.nodeSelector" (dict "nodeType" .Values.nodeType "nodeSelector" .Values.master.nodeSelector) }}
    nodeSelector:
      {{- . | nindent 6 }}
    {{- end }}
    {{- with .Values.master.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $requirements }}
    initContainers:
      {{- include "locust.test.packagesInitContainer" (dict "ctx" $ "requirements" .) | nindent 6 }}
    {{- end }}
    containers:
      - name: master
        image: {{ include "locust.images.image" . }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        args:
          - --locustfile={{ include "locust.test.locustfiles" . }}
          - --master
          - --host={{ $host }}
          {{- if .Values.enableRebalancing }}
          - --enable-rebalancing
          {{- end }}
          {{- if ne .Values.mode "interactive" }}
          - --autostart
          {{- if $run }}
          {{- /* autostart.autoquitSeconds after the run, for Prometheus' last scrape of the final counters and for
          reading the web UI's report (the umbrella's templates/validate.yaml holds it above the scrape interval). */}}
          - --autoquit={{ .Values.autostart.autoquitSeconds | int64 }}
          {{- end }}
          {{- if not .Values.stepLoad.enabled }}
          {{- /* The open model: the users are the pool its rate needs (common.arrivalPool). */}}
          - --users={{ include "common.locust.users" .Values }}
          - --spawn-rate={{ .Values.autostart.spawnRate }}
          {{- with .Values.autostart.runTime }}
          - --run-time={{ . }}
          {{- end }}
          {{- end }}
          - --expect-workers={{ .Values.worker.replicas | int64 }}
          {{- end }}
          {{- if $results }}
          {{- /* Locust's own files in the run's folder; Kubernetes expands $({{ include "common.settings.env" "run_name" }}) from the env. */}}
          - --csv=/results/$({{ include "common.settings.env" "run_name" }})/stats
          - --json-file=/results/$({{ include "common.settings.env" "run_name" }})/stats
          - --html=/results/$({{ include "common.settings.env" "run_name" }})/report.html
          {{- end }}
        env:
          {{- include "locust.pods.env" $pod | nindent 10 }}
          - name: {{ include "common.settings.env" "metrics_port" }}
            value: "9646"
          {{- if $run }}
          - name: {{ include "common.settings.env" "checks" }}
            value: {{ join "\n" .Values.checks | quote }}
          {{- with .Values.abortOn }}
          - name: {{ include "common.settings.env" "abort_on" }}
            value: {{ join "\n" . | quote }}
          {{- end }}
          {{- end }}
          {{- if $results }}
          {{- /* The run's folder is /results/<its Job's name>: each scheduled run has its own. */}}
          - name: {{ include "common.settings.env" "results_dir" }}
            value: /results
          {{- /* The run's name, its folder's: a scheduled run's Job is named after its minute; a run at install
          always has the same Job name, so its Job's uid makes it unique. */}}
          - name: {{ include "common.settings.env" "job_name" }}
            valueFrom:
              fieldRef:
                fieldPath: metadata.labels['batch.kubernetes.io/job-name']
          {{- if .Values.schedule.cron }}
          - name: {{ include "common.settings.env" "run_name" }}
            value: $({{ include "common.settings.env" "job_name" }})
          {{- else }}
          - name: {{ include "common.settings.env" "job_uid" }}
            valueFrom:
              fieldRef:
                fieldPath: metadata.labels['batch.kubernetes.io/controller-uid']
          - name: {{ include "common.settings.env" "run_name" }}
            value: $({{ include "common.settings.env" "job_name" }})-$({{ include "common.settings.env" "job_uid" }})
          {{- end }}
          {{- /* The release's series in the run's folder (series.csv): the master queries the release's Prometheus,
          whose address the umbrella chart's ConfigMap gives when it runs one (below, envFrom). */}}
          - name: {{ include "common.settings.env" "release" }}
            value: {{ .Release.Name | quote }}
          {{- end }}
          {{- if eq $results "s3" }}
          {{- with .Values.results.s3 }}
          - name: {{ include "common.settings.env" "s3_url" }}
            value: {{ printf "s3://%s/%s" .bucket (trimAll "/" .prefix) | trimSuffix "/" | quote }}
          - name: {{ include "common.settings.env" "s3_endpoint" }}
            value: {{ .endpoint | quote }}
          - name: {{ include "common.settings.env" "s3_region" }}
            value: {{ .region | quote }}
          {{- range list "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" }}
          - name: {{ . }}
            valueFrom:
              secretKeyRef:
                name: {{ $.Values.results.s3.existingSecret }}
                key: {{ . }}
          {{- end }}
          {{- end }}
          {{- end }}
          {{- if .Values.webAuth.enabled }}
          - name: {{ include "common.settings.env" "web_auth_file" }}
            value: /etc/loadtest/web-auth/credentials
          {{- end }}
        {{- if or .Values.envFrom $results }}
        envFrom:
          {{- with .Values.envFrom }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
          {{- if $results }}
          - configMapRef:
              name: {{ include "common.names.fullname" (dict "ctx" $ "component" "prometheus-endpoint") }}
              optional: true
          {{- end }}
        {{- end }}
        ports:
          - name: web
            containerPort: 8089
            protocol: TCP
          - name: workers
            containerPort: 5557
            protocol: TCP
          - name: metrics
            containerPort: 9646
            protocol: TCP
        readinessProbe:
          tcpSocket:
            port: web
          periodSeconds: 5
        resources:
          {{- toYaml .Values.master.resources | nindent 10 }}
        securityContext:
          {{- include "common.security.container" . | nindent 10 }}
        volumeMounts:
          {{- include "locust.pods.mounts" $pod | nindent 10 }}
          {{- if $results }}
          - name: results
            mountPath: /results
          {{- end }}
          {{- if .Values.webAuth.enabled }}
          - name: web-auth
            mountPath: /etc/loadtest/web-auth
            readOnly: true
          {{- end }}
    volumes:
      {{- include "locust.pods.volumes" $pod | nindent 6 }}
      {{- if eq $results "pvc" }}
      {{- /* The master's alone: the workers write nothing there, and ReadWriteOnce takes one node's pods. */}}
      - name: results
        persistentVolumeClaim:
          claimName: {{ include "locust.results.claim" . }}
      {{- else if eq $results "s3" }}
      {{- /* Written here during the run, uploaded to the bucket at its end. */}}
      - name: results
        emptyDir: {}
      {{- end }}
      {{- if .Values.webAuth.enabled }}
      - name: web-auth
        secret:
          secretName: {{ include "common.names.locustWebAuthSecret" (dict "ctx" $ "webAuth" .Values.webAuth) }}
          defaultMode: 0440
          items:
            - key: credentials
              path: credentials
      {{- end }}
{{- end }}

{{/*
The workers' Deployment or Job spec: in a Job of mode run, or in the jobTemplate of its CronJob.
*/}}
{{- define "locust.pods.worker" }}
{{- $pod := dict "ctx" . "master" false }}
{{- $requirements := include "locust.test.requirements" $pod }}
{{- $selectorLabels := include "common.labels.selector" (dict "ctx" $ "component" "locust-worker") | fromYaml }}
{{- /* mode run: a Job whose workers end with the master's run (it tells them to quit); a worker that fails is
replaced, and the master gives it users. */}}
{{- $run := eq .Values.mode "run" }}
{{- /* Where the plugin marks the worker accepted by the master, in the writable /tmp emptyDir. */}}
{{- $readyFile := "/tmp/connected" }}
{{- if $run }}
completions: {{ .Values.worker.replicas | int64 }}
parallelism: {{ .Values.worker.replicas | int64 }}
backoffLimit: {{ .Values.worker.replicas | int64 }}
{{- /* The master's deadline: a worker whose master is gone quits after Locust's 60 s heartbeat timeout, and a Job
still waiting for its master (or for room to run) ends here. */}}
activeDeadlineSeconds: {{ include "locust.workload.activeDeadlineSeconds" . }}
{{- else }}
replicas: {{ .Values.worker.replicas | int64 }}
selector:
  matchLabels:
    {{- include "common.labels.selector" (dict "ctx" $ "component" "locust-worker") | nindent 4 }}
{{- end }}
template:
  metadata:
    labels:
      {{- include "common.labels.standard" (dict "ctx" $ "component" "locust-worker") | nindent 6 }}
    annotations:
      {{- /* A new master pod (an upgrade that changes its arguments, e.g. the users) brings new workers: the old
      ones stay connected to the old pod's address, which no longer answers, until Locust's 60 s master heartbeat
      timeout ends them, and the new master waits for them that long. */}}
      checksum/master: {{ (include "locust.pods.master" . | fromYaml).template | toJson | sha256sum }}
      checksum/locustfiles: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
      {{- if .Values.test.files }}
      checksum/test: {{ include (print $.Template.BasePath "/test-configmap.yaml") . | sha256sum }}
      {{- end }}
  spec:
    {{- if $run }}
    restartPolicy: Never
    {{- end }}
    serviceAccountName: {{ include "common.names.serviceAccount" (dict "ctx" $ "component" "locust" "serviceAccount" .Values.serviceAccount) }}
    automountServiceAccountToken: false
    enableServiceLinks: false
    securityContext:
      {{- include "common.security.pod" 1000 | nindent 6 }}
    {{- with include "common.scheduling.nodeSelector" (dict "nodeType" .Values.nodeType "nodeSelector" .Values.worker.nodeSelector) }}
    nodeSelector:
      {{- . | nindent 6 }}
    {{- end }}
    {{- with .Values.worker.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.worker.topologySpreadConstraints }}
    {{- $constraints := list }}
    {{- range . }}
    {{- $constraints = append $constraints (merge (deepCopy .) (dict "labelSelector" (dict "matchLabels" $selectorLabels))) }}
    {{- end }}
    topologySpreadConstraints:
      {{- toYaml $constraints | nindent 6 }}
    {{- end }}
    {{- with $requirements }}
    initContainers:
      {{- include "locust.test.packagesInitContainer" (dict "ctx" $ "requirements" .) | nindent 6 }}
    {{- end }}
    containers:
      - name: worker
        image: {{ include "locust.images.image" . }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        args:
          - --locustfile={{ include "locust.test.locustfiles" . }}
          - --worker
          - --master-host={{ include "common.names.fullname" (dict "ctx" $ "component" "locust-workers") }}
          - --master-port=5557
        env:
          {{- include "locust.pods.env" $pod | nindent 10 }}
          - name: {{ include "common.settings.env" "worker_ready_file" }}
            value: {{ $readyFile }}
        {{- with .Values.envFrom }}
        envFrom:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        # Ready once the master accepted the worker (the plugin creates the file): a rolling update (a new CPU
        # size) stops the old worker only then, or the master, left without workers, would stop the run.
        readinessProbe:
          exec:
            command: [cat, {{ $readyFile }}]
          periodSeconds: 2
        resources:
          requests:
            cpu: {{ .Values.worker.cpu | quote }}
            memory: {{ .Values.worker.memory | quote }}
          limits:
            cpu: {{ .Values.worker.cpu | quote }}
            memory: {{ .Values.worker.memory | quote }}
        securityContext:
          {{- include "common.security.container" . | nindent 10 }}
        volumeMounts:
          {{- include "locust.pods.mounts" $pod | nindent 10 }}
    volumes:
      {{- include "locust.pods.volumes" $pod | nindent 6 }}
{{- end }}
