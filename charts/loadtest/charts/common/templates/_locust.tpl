{{/*
Locust's own rules that other charts read too (the umbrella's NOTES.txt and helm test pod, the
monitoring chart): the URL the users load, and the open model's rate and pool.
Shared by every loadtest chart (the umbrella lists this library as a dependency); arguments that are not the
chart context come in a dict whose "ctx" is the calling chart's root context ($).
*/}}

{{/*
The URL the Locust users load: locust.host when set, else the Service of the in-chart target, over HTTPS when
locust.https is set or the scenario needs TLS (loadtest/workload/scenarios.py; _registry.tpl lists them). Shared by the master, NOTES.txt and the helm test pod.
Usage: include "common.locust.targetURL" (dict "ctx" $ "locust" <the locust chart's values>)
*/}}
{{- define "common.locust.targetURL" -}}
{{- if .locust.host -}}
{{- .locust.host -}}
{{- else if eq .locust.target "url" -}}
{{- fail "locust.target url needs locust.host: the URL the users load (e.g. --set locust.host=https://shop.example.com)" -}}
{{- else -}}
{{- $https := or .locust.https (has .locust.scenario (include "common.registry.tlsScenarios" . | fromJsonArray)) -}}
{{- include "common.targets.url" (dict "ctx" .ctx "target" .locust.target "https" $https) -}}
{{- end -}}
{{- end -}}

{{/*
The open model's rate, locust.load.arrivalRate (requests/s for the whole release), written as a number ("2000",
"0.5"); empty in the closed model (0). Master and workers get it as LOADTEST_ARRIVAL_RATE.
Usage: include "common.locust.arrivalRate" <the locust chart's values>
*/}}
{{- define "common.locust.arrivalRate" -}}
{{- $rate := .load.arrivalRate | float64 -}}
{{- if gt $rate 0.0 -}}
{{- if eq $rate (floor $rate) }}{{ $rate | int64 }}{{ else }}{{ $rate }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
The users of the open model: a pool that holds the rate while responses take up to common.arrivalPoolSeconds
(0.5 s: ceil(rate x 0.5)), and at least one per worker, so each worker has a user for its share.
The master's --users in arrival mode, in place of autostart.users.
Usage: include "common.locust.arrivalPool" <the locust chart's values>
*/}}
{{- define "common.locust.arrivalPool" -}}
{{- max (.worker.replicas | int64) (mulf (.load.arrivalRate | float64) (include "common.registry.arrivalPoolSeconds" . | float64) | ceil | int64) -}}
{{- end -}}

{{/*
The master's --users in modes autostart and run: the open model's pool when locust.load.arrivalRate is set, else
locust.autostart.users, 100 when empty.
Usage: include "common.locust.users" <the locust chart's values>
*/}}
{{- define "common.locust.users" -}}
{{- if include "common.locust.arrivalRate" . -}}
{{- include "common.locust.arrivalPool" . -}}
{{- else -}}
{{- .autostart.users | default 100 | int64 -}}
{{- end -}}
{{- end -}}
