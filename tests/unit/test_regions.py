"""One run from several releases (#57), its pure parts: how releases and shares are named and refused, how the
users are split, how checks name a region, how the regions' verdicts make the whole's, and that the whole's
percentiles are Locust's own over the union of the regions' requests (Locust's StatsEntry merging the same
requests, not this project's code)."""
from __future__ import annotations

import json
import random

import pytest
import yaml
from helpers import cli
from locust.stats import StatsEntry
from loadtest_shared import checks, results, verdict

from loadtest.errors import UsageError
from loadtest.judging import regions as judged, sweepreport
from loadtest.judging.knee import Step
from loadtest.workload import regions


def test_a_release_is_named_with_its_namespace_and_context():
    assert regions.parse("lt") == regions.Region("lt", None, None)
    assert regions.parse("lt@us-east-1").region == "us-east-1"
    found = regions.parse("loadtest/lt@arn:aws:eks:eu-west-1:123456789012:cluster/lt")
    assert (found.namespace, found.name, found.region) == ("loadtest", "lt", "arn:aws:eks:eu-west-1:123456789012:cluster/lt")
    assert regions.parse("loadtest/lt").region == "loadtest/lt"
    assert regions.folder_name("loadtest/lt") == "loadtest-lt"


@pytest.mark.parametrize("text", ["", "LT", "lt@", "a/b/c", "lt@x@y", "-lt", "lt@us east", "lt@a=b", "x" * 54])
def test_a_malformed_release_is_refused_naming_the_form(text):
    with pytest.raises(UsageError, match=r"Helm release name"):
        regions.parse(text)


@pytest.mark.parametrize("texts, says", [
    (["lt@a", "lt@a"], "the same release as --release lt@a"),
    (["ns/lt@a", "ns/lt@a"], "the same release"),
    (["lt@a", "other@a"], "both region 'a'"),
    (["ns/lt", "ns/lt@b", "ns/lt"], "the same release"),
])
def test_a_release_or_a_region_named_twice_is_refused(texts, says):
    with pytest.raises(UsageError, match=says):
        regions.parse_all(texts)


TWO = regions.parse_all(["lt@us-east-1", "lt@eu-west-1"])


@pytest.mark.parametrize("texts, says", [
    (["us-east-1=60%", "eu-west-1=30%"], r"add up to 90.00%, not 100%; us-east-1=66.67%, eu-west-1=33.33% would"),
    (["us-east-1=60%"], "no share for eu-west-1"),
    (["us-east-1=60%", "ap-south-1=40%"], "no region 'ap-south-1' in this run; one of us-east-1, eu-west-1"),
    (["us-east-1=60%", "us-east-1=40%"], "has a share already"),
    (["us-east-1=0%", "eu-west-1=100%"], "a percentage above 0"),
    (["us-east-1=lots", "eu-west-1=40%"], "a percentage above 0"),
    (["us-east-1", "eu-west-1=40%"], "give REGION=PERCENT, e.g. us-east-1=50%"),
])
def test_shares_that_do_not_add_up_or_name_no_region_are_refused(texts, says):
    with pytest.raises(UsageError, match=says.replace("(", r"\(")):
        regions.parse_shares(texts, TWO)


def test_shares_are_fractions_and_one_release_takes_none():
    assert regions.parse_shares(["us-east-1=60", "eu-west-1=40%"], TWO) == {"us-east-1": 0.6, "eu-west-1": 0.4}
    assert regions.parse_shares([], TWO) is None
    with pytest.raises(UsageError, match="two --release or more"):
        regions.parse_shares(["lt=100%"], regions.parse_all(["lt"]))


@pytest.mark.parametrize("total, weights, parts", [
    (100, {"a": 3, "b": 1}, {"a": 75, "b": 25}),
    (10, {"a": 1, "b": 1, "c": 1}, {"a": 4, "b": 3, "c": 3}),
    (7, {"a": 0.6, "b": 0.4}, {"a": 4, "b": 3}),
    (1, {"a": 1, "b": 1}, {"a": 1, "b": 0}),
])
def test_users_are_split_in_proportion_and_add_up(total, weights, parts):
    assert regions.split(total, weights) == parts


def test_any_split_adds_up_to_the_total():
    rng = random.Random(57)
    for _ in range(500):
        weights = {f"r{i}": rng.uniform(0.01, 10) for i in range(rng.randint(2, 6))}
        total = rng.randint(1, 100_000)
        parts = regions.split(total, weights)
        assert sum(parts.values()) == total
        assert all(abs(parts[r] - total * w / sum(weights.values())) < 1 for r, w in weights.items())


def test_an_arrival_rate_is_split_to_a_thousandth_and_adds_up():
    assert regions.split_rate(1000, {"a": 1, "b": 1, "c": 1}) == {"a": 333.334, "b": 333.333, "c": 333.333}
    assert regions.split_rate(120, {"a": 0.75, "b": 0.25}) == {"a": 90, "b": 30}
    rng = random.Random(58)
    for _ in range(200):
        weights = {f"r{i}": rng.uniform(0.01, 10) for i in range(rng.randint(2, 6))}
        rate = round(rng.uniform(1, 50_000), 3)
        parts = regions.split_rate(rate, weights)
        assert abs(sum(parts.values()) - rate) < 1e-6
        assert all(abs(parts[r] - rate * w / sum(weights.values())) <= 0.001 for r, w in weights.items())


def opened(workers: int, rate: float = 0):
    from loadtest.runtime import release, releaserun
    return releaserun.Opened(release.Release("lt", "default"), {"load": {"arrivalRate": rate}}, None, None, workers)


def test_in_the_open_model_each_region_runs_its_rates_pool_and_the_models_are_not_mixed():
    from loadtest.runtime import regionsrun
    assert regionsrun.users_by_region({"a": opened(2, 90), "b": opened(1, 30)}, 0, None) == {"a": 45, "b": 15}
    assert regionsrun.users_by_region({"a": opened(4, 2), "b": opened(1, 1)}, 0, None) == {"a": 4, "b": 1}
    assert regionsrun.users_by_region({"a": opened(3), "b": opened(1)}, 0, None) == {"a": 150, "b": 50}
    for by_region, users, shares, says in [
            ({"a": opened(1, 90), "b": opened(1)}, 0, None, "region b runs the closed model and region a the open"),
            ({"a": opened(1, 90), "b": opened(1, 30)}, 0, {"a": 0.5, "b": 0.5}, "--share with releases in the open"),
            ({"a": opened(1, 90), "b": opened(1, 30)}, 10, None,
             "release lt's locust.load.arrivalRate 90 with --users: the open model's rate replaces a user count")]:
        with pytest.raises(UsageError, match=says):
            regionsrun.users_by_region(by_region, users, shares)


def test_the_split_is_by_shares_when_given_else_by_workers():
    assert regions.weights(None, {"a": 3, "b": 1}) == {"a": 3.0, "b": 1.0}
    assert regions.weights({"a": 0.5, "b": 0.5}, {"a": 3, "b": 1}) == {"a": 0.5, "b": 0.5}


def test_a_check_names_its_region_before_a_colon():
    whole, by_region = judged.split_checks(
        ["p99<300ms", "us-east-1:p95<200ms, eu-west-1:fail_ratio<1%", "p99[/a:b]<1s"], ["us-east-1", "eu-west-1"])
    assert [w.strip() for w in whole] == ["p99<300ms", "p99[/a:b]<1s"]
    assert by_region == {"us-east-1": ["p95<200ms"], "eu-west-1": ["fail_ratio<1%"]}
    with pytest.raises(UsageError, match="no region 'ap-south-1' in this run; one of us-east-1, eu-west-1"):
        judged.split_checks(["ap-south-1:p99<1s"], ["us-east-1", "eu-west-1"])
    arn = "arn:aws:eks:us-east-1:123456789012:cluster/lt"
    assert judged.split_checks([f"{arn}:p99[/a:b]<1s"], [arn]) == ([], {arn: ["p99[/a:b]<1s"]})


def test_a_regions_outcome_is_named_with_its_region():
    figures = checks.from_entries([entry("/", {10: 999, 200: 1})])
    (outcome,) = judged.region_outcomes("eu-west-1", checks.judge(checks.parse_all(["p99<100ms"]), figures))
    assert outcome.check.text == "eu-west-1:p99<100ms" and outcome.measured == 10 and outcome.passed


V = {kind: verdict.Verdict(kind, f"{kind} because", "cause") for kind in verdict.KINDS}


@pytest.mark.parametrize("by_region, kind", [
    ({"a": V["healthy"], "b": V["healthy"]}, "healthy"),
    ({"a": V["healthy"], "b": V["target-bound"]}, "target-bound"),
    ({"a": V["target-bound"], "b": V["generator-bound"]}, "generator-bound"),
    ({"a": V["healthy"], "b": V["not generator-bound"]}, "not generator-bound"),
    ({"a": V["generator-bound"], "b": None}, None),
    ({"a": None, "b": V["healthy"]}, None),
])
def test_the_wholes_verdict_is_the_most_limiting_regions_and_none_where_a_region_has_none(by_region, kind):
    found, why = judged.combined(by_region)
    assert (found.kind if found else None) == kind
    if kind is None:
        assert why.startswith("no verdict for the whole run: ") and found is None
    else:
        limited = [r for r, v in by_region.items() if v.kind == kind]
        assert all(f"{r}: " in found.reason for r in limited) or kind == "healthy"


def entry(name: str, times_ms: dict[int, int], start: float = 1000.0, seconds: float = 30.0) -> dict:
    """One request name's statistics as Locust serializes them (its --json-file), with these response times."""
    e = StatsEntry(None, name, "GET", use_response_times_cache=False)
    e.start_time = start
    for ms, count in times_ms.items():
        for _ in range(count):
            e.num_requests += 1
            e._log_response_time(ms)
            e.total_response_time += ms
            e.max_response_time = max(e.max_response_time, ms)
    e.last_request_timestamp = start + seconds
    return e.serialize()


def test_the_wholes_percentiles_are_locusts_own_over_the_union_of_the_regions_requests():
    rng = random.Random(57)
    for _ in range(40):
        by_region = {region: [entry(name, {rng.choice([1, 3, 12, 57, 140, 980, 1230, 4100]): rng.randint(1, 400)
                                           for _ in range(rng.randint(1, 6))}, start=1000 + rng.random())
                              for name in rng.sample(["/", "/a", "/b"], rng.randint(1, 3))]
                     for region in ("us-east-1", "eu-west-1", "ap-south-1")[:rng.randint(2, 3)]}
        merged = checks.from_entries(judged.merged_entries(by_region))
        # Locust's own: every entry of every region unserialized and extended into one (StatsEntry.extend adds the
        # response-time counts), then its percentile.
        union = StatsEntry(None, "Aggregated", "", use_response_times_cache=False)
        for entries in by_region.values():
            for e in entries:
                union.extend(StatsEntry.unserialize(e, None))
        total = merged[checks.AGGREGATED]
        assert total.requests == union.num_requests
        for fraction in checks.PERCENTILES.values():
            assert total.percentiles_ms[fraction] == union.get_response_time_percentile(fraction), fraction


def sweep_record(rps: float, requests: int, failures: int, kind: str, target_cores=1.0) -> sweepreport.StepRecord:
    return sweepreport.StepRecord(step=Step(0, 10, rps, 0.0, failures / requests, kind == verdict.GENERATOR_BOUND),
                                  start=1000.0 + rps, end=1015.0 + rps, p50_ms=0.0, p99_ms=0.0, requests=requests,
                                  failures=failures, users=10, workers=1, worker_cpu_max=rps / 1000,
                                  worker_cpu_cores=0.5, target_cpus=2, target_cpu_cores=target_cores, verdict=kind)


def test_a_sweep_steps_whole_adds_the_regions_and_its_percentiles_are_locusts_over_their_union():
    """A sweep step of several regions (loadtest sweep with several --release): each region's window counted as
    Locust rounds each response time, the whole's percentiles Locust's own StatsEntry over every request of both."""
    rng = random.Random(5757)
    for _ in range(40):
        windows = {region: [rng.choice([0.4, 2.6, 7, 31.2, 140, 988.7, 1230, 4100, 12345]) for _ in
                            range(rng.randint(1, 300))] for region in ("us-east-1", "eu-west-1")}
        union = StatsEntry(None, "Aggregated", "", use_response_times_cache=False)
        parts = {}
        for region, times in windows.items():
            own = StatsEntry(None, "Aggregated", "", use_response_times_cache=False)
            for ms in times:
                own.log(ms, 0)
                union.log(ms, 0)
            kind = rng.choice([verdict.HEALTHY, verdict.GENERATOR_BOUND, verdict.TARGET_BOUND])
            parts[region] = (sweep_record(len(times) / 15, len(times), len(times) // 10, kind),
                             {float(ms): float(n) for ms, n in own.response_times.items()},
                             verdict.Verdict(kind, f"{region} {kind}", None))
        whole, reason = judged.whole_step(1, 20, None, parts)
        assert whole.requests == sum(len(t) for t in windows.values())
        assert whole.step.rps == pytest.approx(sum(len(t) for t in windows.values()) / 15)
        assert whole.failures == sum(len(t) // 10 for t in windows.values())
        for got, fraction in ((whole.p50_ms, 0.5), (whole.step.p95_ms, 0.95), (whole.p99_ms, 0.99)):
            assert got == union.get_response_time_percentile(fraction), fraction
        kinds = {v.kind for _, _, v in parts.values()}
        assert whole.verdict == next(k for k in (verdict.GENERATOR_BOUND, verdict.TARGET_BOUND, verdict.HEALTHY)
                                     if k in kinds)
        assert whole.step.generator_saturated == (verdict.GENERATOR_BOUND in kinds)
        assert (whole.workers, whole.users, whole.target_cpus, whole.target_cpu_cores) == (2, 20, 4, 2.0)


def test_a_sweep_steps_whole_has_no_target_cores_where_a_region_did_not_measure_them():
    parts = {region: (sweep_record(100.0, 1500, 0, verdict.HEALTHY, cores), {3.0: 1500.0},
                      verdict.Verdict(verdict.HEALTHY, "fine", None)) for region, cores in (("a", 1.5), ("b", None))}
    whole, _ = judged.whole_step(0, 20, 200.0, parts)
    assert whole.target_cpu_cores is None and whole.step.p99_bound_ms == 200.0 and whole.p99_ms == 3.0
    # The sizing table sizes each region's target on its own: two 2-CPU targets are two c5n.large, not a 4-CPU one.
    row = sweepreport.sizing_table(sweepreport.Sweep({}, "users", [whole])).splitlines()[2]
    large = sweepreport.target_instance(2)
    assert row.startswith("| 2 x 2 | 20 |") and f"| 2 x {large.name} | {2 * large.monthly_usd:,.0f} |" in row, row


def test_the_wholes_rps_is_the_sum_of_each_regions_over_its_own_window():
    # Region b's statistics began 1 s after a's (each resets at its own steady moment); both ended together.
    by_region = {"a": [entry("/", {10: 900}, start=1000.0, seconds=10)],
                 "b": [entry("/", {10: 270}, start=1001.0, seconds=9)]}
    whole = checks.from_entries(judged.merged_entries(by_region))[checks.AGGREGATED]
    assert whole.requests == 1170 and whole.rps == pytest.approx(90 + 30)
    # One master's entries alone keep Locust's own rate: its requests over its span.
    assert checks.from_entries(by_region["a"])[checks.AGGREGATED].rps == pytest.approx(90)


def test_summary_shows_each_region_beside_the_whole_and_names_a_lost_one():
    report = results.RunReport({"regions": "a, b"}, 0, 60, incomplete="region b lost at 20 s of 60: not whole",
                               regions={
                                   "a": {"users": 10, "exit_code": 0, "verdict": "healthy", "lost": None,
                                         "figures": {"requests": 1200, "rps": 20.0, "p50_ms": 5, "p95_ms": 9,
                                                     "p99_ms": 12}},
                                   "b": {"users": 10, "exit_code": 4, "verdict": None, "figures": None,
                                         "lost": {"at_s": 20.0, "cost": "its last 40 s of 60 s of load"}}})
    text = results.summary(report)
    assert "| a | 10 | 1,200 | 20.0 | 5 | 9 | 12 | healthy | 0 |" in text
    assert "| b | 10 | - | - | - | - | - | none | 4 |" in text
    assert "LOST: region b at 20 s: its last 40 s of 60 s of load" in text
    assert json.loads(json.dumps(report.to_json()))["regions"]["b"]["lost"]["at_s"] == 20.0
    assert report.exit_code == checks.RUN_FAILED


@pytest.fixture
def kubeconfig(tmp_path):
    """A kubeconfig with two contexts, each with its namespace, of one (unreachable) cluster."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "us-east-1",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "us-east-1", "context": {"cluster": "c", "user": "u", "namespace": "east"}},
                     {"name": "eu-west-1", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_each_release_takes_its_own_namespace_else_the_option_else_its_contexts(kubeconfig):
    from loadtest.runtime import release
    named = regions.parse_all(["lt@us-east-1", "lt@eu-west-1", "mine/lt"])
    assert [(r.namespace, r.context) for r in release.resolve(named, None, kubeconfig)] == [
        ("east", "us-east-1"), ("default", "eu-west-1"), ("mine", None)]
    assert [r.namespace for r in release.resolve(named, "given", kubeconfig)] == ["given", "given", "mine"]


@pytest.mark.parametrize("argv, says", [
    (["--release", "lt@us-east-1", "--release", "lt@nowhere"],
     "--release lt@nowhere: no kube context 'nowhere' in .*; one of eu-west-1, us-east-1"),
    (["--release", "lt@us-east-1", "--release", "lt@eu-west-1", "--check", "ap-south-1:p99<1s"],
     "--check 'ap-south-1:p99<1s': no region 'ap-south-1' in this run"),
    (["--release", "lt@us-east-1", "--release", "lt@eu-west-1", "--check", "us-east-1:p99 under 1s"],
     "--check: check 'p99 under 1s' is not METRIC"),
    (["--release", "lt@us-east-1", "--release", "lt@us-east-1"], "the same release as --release lt@us-east-1"),
    (["--release", "lt@us-east-1", "--release", "lt@eu-west-1", "--share", "us-east-1=50%",
      "--share", "eu-west-1=40%"], "add up to 90.00%, not 100%"),
    (["--release", "lt@us-east-1", "--release", "lt@eu-west-1", "--arrival-rate", "1000", "--users", "10"],
     "--arrival-rate with --users: the open model's rate replaces a user count"),
    (["--release", "lt@us-east-1", "--chart", "."], "--chart without --arrival-rate: it is the chart the releases "
                                                    "are upgraded with"),
])
def test_a_several_release_run_is_refused_before_it_reaches_a_cluster(argv, says, kubeconfig, capsys, tmp_path,
                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, printed = cli(capsys, "run", *argv, "--kubeconfig", str(kubeconfig))
    assert code == 2 and "Traceback" not in printed.err, printed.err
    assert any(line.startswith("loadtest") for line in printed.err.splitlines())
    import re
    assert re.search(says.replace("(", r"\(").replace(")", r"\)"), printed.err), printed.err
    assert list(tmp_path.iterdir()) == [kubeconfig], "a refused run writes nothing"


@pytest.mark.parametrize("values, says", [
    ({"locust": {"autostart": {"users": 40}}},
     "region b: --arrival-rate with its locust.autostart.users 40: the open model's rate replaces a user count"),
    ({"locust": {"autostart": {"users": 40}}},
     "; helm upgrade lt --reuse-values --set locust.autostart.users=null, or drop --arrival-rate for the closed "
     "model's user count"),
    ({"locust": {"stepLoad": {"enabled": True}}},
     "region b: --arrival-rate with its locust.stepLoad.enabled true: step load is a schedule of user counts"),
    ({"locust": {"stepLoad": {"enabled": True}}}, "helm upgrade lt --reuse-values --set locust.stepLoad.enabled=false"),
])
def test_a_release_whose_values_a_rate_cannot_go_with_is_refused_before_any_upgrade(values, says):
    from loadtest.runtime import releaserates
    from loadtest.runtime.release import Release

    with pytest.raises(UsageError) as refused:
        releaserates.refuse_beside_a_rate("b", Release("lt", "loadtest"), values)
    assert says in str(refused.value)


def test_a_closed_model_release_without_a_user_count_or_step_load_takes_a_rate():
    from loadtest.runtime import releaserates
    from loadtest.runtime.release import Release

    for values in ({}, {"locust": {"autostart": {"users": None}, "stepLoad": {"enabled": False}}}):
        releaserates.refuse_beside_a_rate("b", Release("lt", "loadtest"), values)
