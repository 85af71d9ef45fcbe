{{/*
The saturation rules over the release's window.
*/}}

{{/*
A number of seconds as a Prometheus duration: whole minutes as "2m" (so the default window renders the rules file
as written), else seconds ("30s").
*/}}
{{- define "monitoring.rules.duration" -}}
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
{{- define "monitoring.rules.file" -}}
{{- $window := .Values.rules.windowSeconds | int -}}
{{- if eq .Values.mode "inChart" -}}
{{- $scrape := .Values.prometheus.scrapeInterval | trimSuffix "s" | int -}}
{{- $floor := min (mul 4 $scrape) 60 -}}
{{- if lt $window $floor -}}
{{- fail (printf "monitoring.rules.windowSeconds %d holds fewer than four scrapes of monitoring.prometheus.scrapeInterval %s: the rules' rates would have too few samples to judge; set monitoring.rules.windowSeconds=%d or more, or a shorter scrape interval (at most %ds)" $window .Values.prometheus.scrapeInterval $floor (max 1 (div $window 4))) -}}
{{- end -}}
{{- end -}}
{{- $one := include "monitoring.rules.duration" $window -}}
{{- $two := include "monitoring.rules.duration" (mul 2 $window) -}}
{{- /* Through placeholders, so that a window of 120 s does not turn a `[1m]` into a `[2m]` doubled again. */ -}}
{{- $text := .Files.Get "rules/loadtest.rules.yaml" | replace "[1m]" "[@ONE@]" | replace "[2m]" "[@TWO@]" -}}
{{- $text = regexReplaceAll "(?m)^(\\s+for: )1m$" $text "${1}@ONE@" -}}
{{- $text = regexReplaceAll "(?m)^(\\s+for: )2m$" $text "${1}@TWO@" -}}
{{- $text | replace "@ONE@" $one | replace "@TWO@" $two -}}
{{- end -}}
