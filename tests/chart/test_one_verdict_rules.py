"""The same windows (tests/verdict_table.py) as Prometheus sees them, under promtool: each sample becomes one rule
evaluation's series (the workers' CPU, their containers' CFS counters, HAProxy's busy time as the target's CPU, the
shared machine's idle CPU, Locust's request and failure counters, the master's fault counts), and the saturation rules
must find each side saturated in the same share of the window as `loadtest run --local` does, and, where every sample
is alike, record the same verdict, and the advice `loadtest tune` gives for the window. The shares are what
`loadtest run --release`, the sweep and `loadtest tune` read from Prometheus into the one verdict module."""
from __future__ import annotations

import subprocess

import pytest
import yaml
from verdict_table import CASES, OFFERED_RPS

from loadtest_shared import verdict

from loadtest import paths
from loadtest.judging import tuning
from loadtest.runtime import tools

STEP_S = 15  # a cluster's scrape interval: Prometheus 2 and 3 count a range's samples alike at 15 s
UUID = "0123456789abcdef0123456789abcdef"


def values(numbers) -> str:
    return " ".join(f"{n:g}" for n in numbers)


def cumulative(increments) -> list[float]:
    total, out = 0.0, [0.0]
    for step in increments:
        total += step
        out.append(total)
    return out


def series_of(case) -> list[dict]:
    """The case's samples as input series: a first evaluation before the run (its counters' start), then one per
    sample, all steady."""
    r, samples = case.name, case.samples
    first = samples[0]
    locust = f'release="{r}", namespace="{r}", pod="{r}-locust-master"'
    out = [{"series": f'locust_runner_state{{{locust}, state="running"}}', "values": values([0] + [1] * len(samples))}]
    for w in first.workers():
        worker = f'{locust}, worker="{r}-worker-{w}_{UUID}"'
        cpu = [first.workers()[w]] + [s.workers()[w] for s in samples]
        out += [{"series": f"locust_worker_cpu_usage_cores{{{worker}}}", "values": values(cpu)},
                {"series": f"locust_worker_cpu_limit_cores{{{worker}}}", "values": values([1] * len(cpu))}]
        if first.worker_throttling is not None:
            container = f'namespace="{r}", pod="{r}-worker-{w}", container="worker"'
            out += [{"series": f"container_cpu_cfs_periods_total{{{container}}}",
                     "values": values(cumulative([150] * len(samples)))},
                    {"series": f"container_cpu_cfs_throttled_periods_total{{{container}}}",
                     "values": values(cumulative([150 * s.throttling()[w] for s in samples]))}]
    if first.target_cpu is not None:  # else the target's CPU is not measured: no series of it
        idle = [100 - first.target_cpu * 100] + [100 - s.target_cpu * 100 for s in samples]
        out.append({"series": f'haproxy_process_idle_time_percent{{release="{r}", namespace="{r}-target", '
                              f'pod="haproxy-0", loadtest_role="target"}}', "values": values(round(i, 6) for i in idle)})
    if case.failure_ratio is not None:  # Locust's counters: 1,000 requests an evaluation, the case's share failed
        out += [{"series": f'locust_requests_total{{{locust}, method="GET", name="/"}}',
                 "values": values(cumulative([1000] * len(samples)))},
                {"series": f'locust_request_failures_total{{{locust}, method="GET", name="/"}}',
                 "values": values(cumulative([1000 * case.failure_ratio] * len(samples)))}]
    if (a := case.arrival) is not None:  # the open model: every slot on time, the case's share of the rate sent
        sent = OFFERED_RPS * a.sent * STEP_S
        out += [{"series": f"locust_arrival_rate_offered_rps{{{locust}}}",
                 "values": values([OFFERED_RPS] * (len(samples) + 1))},
                {"series": f'locust_requests_total{{{locust}, method="GET", name="/"}}',
                 "values": values(cumulative([sent] * len(samples)))},
                {"series": f'locust_worker_arrival_slots_total{{{locust}, worker="{r}-worker-0_{UUID}"}}',
                 "values": values(cumulative([sent / a.per_slot] * len(samples)))},
                {"series": f'locust_worker_late_starts_total{{{locust}, worker="{r}-worker-0_{UUID}", cause="cpu"}}',
                 "values": values(cumulative([sent / a.per_slot * a.late_cpu] * len(samples)))},
                {"series": f"locust_arrival_loop_probes_total{{{locust}}}",
                 "values": values(cumulative([150] * len(samples)))},
                {"series": f"locust_arrival_loop_lagged_total{{{locust}}}",
                 "values": values(cumulative([150 * a.loop_lagged] * len(samples)))}]
    for kind, faults in (("worker lost", case.losses), ("target silent", case.silences)):
        # The master counts every kind from its start (0 without any); a row's fault, one more at every evaluation:
        # each sees one in its window.
        out.append({"series": f'loadtest_faults_total{{{locust}, kind="{kind}"}}',
                    "values": values(cumulative([1 if faults else 0] * len(samples)))})
    if first.host_cpu is not None:
        out.append({"series": f'node_cpu_seconds_total{{release="{r}", loadtest_role="host", cpu="0", mode="idle"}}',
                    "values": values(cumulative([STEP_S * (1 - s.host_cpu) for s in samples]))})
    return out


def expectations(case) -> list[dict]:
    n, local = len(case.samples), case.window()
    at, window = f"{n * STEP_S}s", f"{n * STEP_S - 1}s"  # the n steady evaluations, whichever end a range includes
    # A target whose CPU is not measured has no share at all (no series), where the local window says 0 of 0.
    shares = (("generator_saturated_steady:ratio", local.generator_share),
              ("target_saturated_steady:bool", local.target_share if local.target_measured else None))
    tests = [{"expr": f'avg_over_time(loadtest:{record}{{release="{case.name}"}}[{window}])',
              "eval_time": at,
              "exp_samples": [] if share is None else [{"labels": f'{{release="{case.name}"}}', "value": share}]}
             for record, share in shares]
    if len(set(case.samples)) == 1:
        tests.append({"expr": f'loadtest:verdict{{release="{case.name}"}}', "eval_time": at, "exp_samples": [
            {"labels": f'loadtest:verdict{{release="{case.name}", verdict="{case.kind}"}}', "value": 1}]})
        tests.append({"expr": f'loadtest:advice{{release="{case.name}"}}', "eval_time": at, "exp_samples": [
            {"labels": f'loadtest:advice{{release="{case.name}", advice="{tunes_diagnosis(case)}"}}', "value": 1}]})
    return tests


def tunes_diagnosis(case) -> str:
    """What `loadtest tune` advises for the case's window, on a release of whole-core workers (the series' limit)."""
    snapshot = tuning.Snapshot(case.name, "autostart", 1000, 512, len(case.samples[0].workers()), 0, 100, 1000.0,
                               case.failure_ratio, 10.0, case.window(),
                               arrival_rate=OFFERED_RPS if case.arrival else None)
    return tuning.advise(snapshot).diagnosis


def test_the_rules_judge_the_table_as_the_local_run_does(tmp_path):
    cases = CASES
    assert {verdict.judge(c.window()).kind for c in cases} == set(verdict.KINDS)
    # Every diagnosis of a cause is some row's, the rules' advice held to tune's on each.
    assert {tunes_diagnosis(c) for c in cases} == set(tuning.DIAGNOSES) - {tuning.WORKERS_PENDING}
    test_file = tmp_path / "one-verdict.test.yaml"
    test_file.write_text(yaml.safe_dump({
        "rule_files": [str(paths.RULES_FILE)], "evaluation_interval": f"{STEP_S}s",
        "tests": [{"interval": f"{STEP_S}s", "input_series": [s for c in cases for s in series_of(c)],
                   "promql_expr_test": [t for c in cases for t in expectations(c)]}]}, sort_keys=False))
    result = subprocess.run([tools.find("promtool"), "test", "rules", str(test_file)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr + test_file.read_text()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_case_is_one_the_rules_can_express(case):
    """Each sample has what a series can carry: a worker count that does not change, signals set in every sample."""
    first = case.samples[0]
    assert all(len(s.workers()) == len(first.workers()) and (s.target_cpu is None) == (first.target_cpu is None)
               for s in case.samples)
    assert all((s.worker_throttling is None) == (first.worker_throttling is None)
               and (s.host_cpu is None) == (first.host_cpu is None) for s in case.samples)
