#!/usr/bin/env bash
# A CI job for loadtest, generic shell: run, check, keep the results, compare with the baseline.
#
#   examples/ci/pipeline.sh local     the whole stack on the CI machine (no cluster), with `loadtest run --local`
#   examples/ci/pipeline.sh cluster   a judged run in the cluster: helm install with locust.mode=run
#   examples/ci/pipeline.sh release   install (interactive), `loadtest run --release` collects everything, compare
#
# Settings (environment): RESULTS (folder the job keeps as artifacts, default ./loadtest-results), BASELINE (a
# results folder of an earlier run to compare with; unset or not there yet: nothing compared), MAX_RPS_DROP and MAX_P95_RISE (the
# comparison's limits, default 5% and 10%), CHECKS (comma-separated checks);
# for cluster and release: RELEASE, NAMESPACE, VALUES (the node type's values file), RUN_TIME, USERS.
# Exit code: loadtest's own (0 passed, 1 a check failed or a regression, 2 bad input, 3 invalid: generator-bound,
# 4 the run could not be made).
set -euo pipefail

mode=${1:?say local, cluster or release}
here=$(cd "$(dirname "$0")/../.." && pwd)
results=${RESULTS:-./loadtest-results}
checks=${CHECKS:-p95<200ms,fail_ratio<1%}
mkdir -p "$results"

compare_with_baseline() {  # $1: this run's folder
    [ -n "${BASELINE:-}" ] || return 0
    if [ ! -e "$BASELINE" ]; then  # the first run of a pipeline: it becomes the baseline
        echo "pipeline.sh: no baseline at $BASELINE yet, nothing compared; keep $1 as the baseline" >&2
        return 0
    fi
    loadtest compare "$BASELINE" "$1" --max-rps-drop "${MAX_RPS_DROP:-5%}" --max-p95-rise "${MAX_P95_RISE:-10%}" \
        --markdown "$results/comparison.md"
}

case "$mode" in
local)
    run="$results/run-$(date -u +%Y%m%dT%H%M%SZ)"
    code=0
    loadtest run --local --workers "${WORKERS:-1}" --users "${USERS:-10}" --wait "${WAIT:-0.05}" \
        --run-time "${RUN_TIME:-20s}" --check "$checks" --output "$run" || code=$?
    # A failed check still leaves the folder (JUnit in checks.xml); compare only a valid measurement.
    if [ "$code" -eq 0 ]; then compare_with_baseline "$run" || code=$?; fi
    exit "$code"
    ;;
cluster)
    release=${RELEASE:-lt} namespace=${NAMESPACE:-loadtest}
    # One run per install: a Job cannot be upgraded. --wait-for-jobs returns when the run ended, and fails with it.
    helm uninstall "$release" -n "$namespace" --wait 2>/dev/null || true
    checks_json="[\"${checks//,/\",\"}\"]"
    code=0
    helm install "$release" "$here/charts/loadtest" -n "$namespace" --create-namespace \
        -f "${VALUES:?set VALUES to a node-type values file, e.g. values/c5-xlarge.yaml}" \
        --set locust.mode=run --set "locust.autostart.runTime=${RUN_TIME:-5m}" \
        --set "locust.autostart.users=${USERS:-100}" --set-json "locust.checks=$checks_json" \
        --wait --wait-for-jobs --timeout "${TIMEOUT:-30m}" || code=$?
    master="$release-locust-master"
    kubectl -n "$namespace" logs "job/$master" > "$results/locust-master.log" || true
    # The master's exit code is the run's: 0 passed, 1 a check failed, 3 invalid (the workers were the limit), 4 no request sent.
    job_code=$(kubectl -n "$namespace" get pods -l "job-name=$master" \
        -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}' 2>/dev/null || true)
    grep -E 'check |busiest worker|exit code' "$results/locust-master.log" || true
    exit "${job_code:-$code}"
    ;;
release)
    release=${RELEASE:-lt} namespace=${NAMESPACE:-loadtest}
    helm upgrade --install "$release" "$here/charts/loadtest" -n "$namespace" --create-namespace \
        -f "${VALUES:?set VALUES to a node-type values file, e.g. values/c5-xlarge.yaml}" \
        --set locust.mode=interactive --set monitoring.enabled=true --wait --timeout "${TIMEOUT:-15m}"
    run="$results/run-$(date -u +%Y%m%dT%H%M%SZ)"
    code=0
    # Port-forwards, the web UI's credentials, Locust's files and the release's Prometheus series: all the CLI's.
    loadtest run --release "$release" --namespace "$namespace" --users "${USERS:-100}" \
        --run-time "${RUN_TIME:-5m}" --check "$checks" --output "$run" || code=$?
    if [ "$code" -eq 0 ]; then compare_with_baseline "$run" || code=$?; fi
    exit "$code"
    ;;
*)
    echo "pipeline.sh: say local, cluster or release, not $mode" >&2
    exit 2
    ;;
esac
