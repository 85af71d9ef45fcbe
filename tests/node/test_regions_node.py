"""Issue #57 on the real node: one `loadtest run` from two releases, each in its own kube context, as a user runs one
test from two regions.

What is honest here and what is not: the two "regions" are two namespaces of this machine's one cluster, reached
through two kube contexts of one kubeconfig (each context with its namespace, as `aws eks update-kubeconfig` gives
one a cluster). The command cannot tell them from two clusters: each release is opened through its own context
(helm, kubectl and the port-forwards), started at the barrier, watched, stopped, collected and judged on its own
Prometheus. What two real regions add, network distance to their API servers, is not here; the start skew
printed is this machine's.

The first run splits one open-model rate 75 % / 25 % (each release upgraded to its part before any load, and set
back after) and is whole: both began within a second; each region offered its part, by its own Prometheus, and the
whole is held to their sum; the whole's p99 is Locust's own over the union of both regions' requests (Locust's
StatsEntry merging the regions' own statistics, as their masters gave them); a check on one region and one on the
whole are judged. The second, in the closed model, is interrupted: each region keeps what it collected, and the
requests the workers sent, by their own never-reset count, are the backends' own counts. Then a sweep of both
regions (`loadtest sweep` with two --release): its first step's halves are swarmed together, each region's window is
read from its own Prometheus, and the whole step's percentiles are Locust's own over the union of both windows'
requests (each master's histogram at the window's edge scrapes, merged by Locust's StatsEntry); region-a's master
pod deleted in the second step's warm-up ends the sweep, naming the region, the first step kept. The last run loses
a region: its master's process is killed mid-run, and the run names that region lost, when, and what it cost, the
other region's part whole.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import Prometheus, container_processes, install, master, pod_ip, port_forwards, wait_ready
from helpers import wait_for_line
from interrupt import foreground_job, press_ctrl_c
from locust.stats import StatsEntry

from loadtest_shared import checks

from loadtest.runtime import http_client, releaserun, tools
from loadtest.runtime.locustweb import LocustWeb
from loadtest.runtime.release import Release
from loadtest.runtime.cluster import pods

REGIONS = ("region-a", "region-b")
USERS = 20  # 10 a region: split by the releases' workers, one each
WAIT_S = 0.05  # each user's pause between requests: about 200 RPS a region, light for a 300m worker
# A verdict in each region (and so its offered rate, from its Prometheus) needs 3 s of every user running (two 1 s
# scrapes and a second); what binds is the whole's > 1,000 requests at RATE: 12 s holds some 10 s of every user
# running, about 1,200.
RUN_S = 12
LOST_RUN_S = 12  # a region's master killed at its second live line, some 6 s in: 6 s of load are left to lose
RATE = 120  # the open model's requests/s over both regions, split 75 % / 25 %: light for one 300m worker each
SCRAPE_S = 1
FORWARDED_CONNECTIONS = 2600  # each "Handling connection for 8089" line is 29 bytes: the pipe holds 2,260
FORWARDING_THREADS = 8  # what fills the pipe is the connections' count, not their order: sent 8 at a time, 325 each
SWEEP_STEPS = (6, 12)  # users over both regions, split by their workers (one each): 3 and 6 a region


@pytest.fixture(scope="module")
def regions(cluster, helm, tmp_path_factory, module_namespace_pair):
    """Two releases, `lt` in two namespaces, and a kubeconfig whose two contexts each point at one of them."""
    for namespace in module_namespace_pair:
        # Small, so that two releases fit on the node's two CPUs beside each other.
        install(helm, namespace, "--set", "locust.worker.cpu=300m",
                "--set", "locust.master.resources.requests.cpu=50m",
                "--set", "monitoring.prometheus.resources.requests.cpu=50m",
                # A sweep's window holds whole scrapes and whole 3 s worker reports: 3 s at a 1 s scrape.
                "--set", f"monitoring.prometheus.scrapeInterval={SCRAPE_S}s",
                "--set", "locust.extraEnv[0].name=LOADTEST_WAIT", "--set-string", f"locust.extraEnv[0].value={WAIT_S}")
    for namespace in module_namespace_pair:
        wait_ready(cluster, namespace)
    kubeconfig = tmp_path_factory.mktemp("regions") / "kubeconfig"
    kubeconfig.write_text(cluster.kubeconfig.read_text())
    config = json.loads(tools.run("kubectl", "config", "view", "-o", "json", "--kubeconfig", str(kubeconfig)))
    (context,) = config["contexts"]
    for region, namespace in zip(REGIONS, module_namespace_pair):
        tools.run("kubectl", "config", "set-context", region, "--kubeconfig", str(kubeconfig),
                  f"--cluster={context['context']['cluster']}", f"--user={context['context']['user']}",
                  f"--namespace={namespace}")
    return {"kubeconfig": kubeconfig, "namespaces": dict(zip(REGIONS, module_namespace_pair))}


def loadtest_run(kubeconfig, out, *args: str, command: str = "run") -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LOADTEST_LOCUST_AUTH", None)  # each region's credentials come from its release's Secret
    return subprocess.Popen([sys.executable, "-m", "loadtest", command, "--release", f"lt@{REGIONS[0]}",
                             "--release", f"lt@{REGIONS[1]}", "--kubeconfig", str(kubeconfig), "--output", str(out),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=foreground_job)


def workers_sent(cluster, namespace: str) -> float:
    """What the release's workers sent over the run, by their own count, never reset (the master's
    locust_worker_requests_total, behind its web UI's password; the statistics Locust resets once every user runs
    are not)."""
    web = master(cluster, namespace)
    text = http_client.fetch(f"{web.url}/metrics", headers=web.headers, timeout=10).decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("locust_worker_requests_total"))


def backend_served(cluster, namespace: str) -> int:
    """nginx's own count of the requests it took (stub_status), the kubelet's probes and these reads included."""
    with urllib.request.urlopen(f"http://{pod_ip(cluster, namespace, 'backend')}:8080/stub_status",
                                timeout=10) as response:
        return int(response.read().decode().split("\n")[2].split()[2])


def probes_within(seconds: float) -> int:
    """The kubelet's readiness probes of the backend (every 5 s) and this test's reads over `seconds`: the most the
    backend's count can hold beside the workers' requests."""
    return int(seconds / 5) + 4


def union_p(folders, fraction: float) -> float:
    """Locust's own percentile over every request of the regions' statistics (their stats.json, Locust's
    --json-file entries as each master gave them), merged by Locust's StatsEntry."""
    union = StatsEntry(None, "Aggregated", "", use_response_times_cache=False)
    for folder in folders:
        for entry in json.loads((folder / "stats.json").read_text()):
            # JSON keeps no integer keys: Locust's response-time counts are by whole milliseconds.
            entry["response_times"] = {int(ms): n for ms, n in entry["response_times"].items()}
            union.extend(StatsEntry.unserialize(entry, None))
    return union.get_response_time_percentile(fraction)


def test_two_regions_start_together_split_one_rate_and_are_judged_each_and_as_one(cluster, regions, tmp_path):
    namespaces = regions["namespaces"]
    out = tmp_path / "run"
    proc = loadtest_run(regions["kubeconfig"], out, "--arrival-rate", str(RATE), "--share", f"{REGIONS[0]}=75%",
                        "--share", f"{REGIONS[1]}=25%", "--run-time", f"{RUN_S}s", "--check", "fail_ratio<1%",
                        "--check", f"{REGIONS[0]}:p99<2s", "--check", f"{REGIONS[1]}:rps>=10")
    output, _ = proc.communicate(timeout=600)
    print(output)
    result = json.loads((out / "result.json").read_text())
    whole = result["figures"]["Aggregated"]
    by_region = result["regions"]
    # Each release set to its part of the rate before any load.
    parts = {REGIONS[0]: RATE * 3 // 4, REGIONS[1]: RATE // 4}
    for region, part in parts.items():
        assert f"[{region}] locust.load.arrivalRate {part} (its part of {RATE} requests/s): helm upgrade" in output
    assert result["conditions"]["arrival rate"] == f"{RATE} requests/s ({REGIONS[0]} 90, {REGIONS[1]} 30)"
    # Started together: every start sent after the barrier and answered within a second of the first.
    sent = [r["start_sent"] for r in by_region.values()]
    answered = [r["start_acknowledged"] for r in by_region.values()]
    skew = max(answered) - min(sent)
    print(f"start skew (first sent to last answered): {skew * 1000:.0f} ms")
    assert skew < 1.0
    assert float(result["conditions"]["start skew"].split()[0]) == pytest.approx(skew, abs=0.001)
    assert re.search(r"^all 2 regions started within \d+ ms", output, re.MULTILINE), output
    # Each region ran its part's pool (the chart's: rate x 0.5 s) and offered its part, by its own Prometheus;
    # every region's run whole.
    assert {r: v["users"] for r, v in by_region.items()} == {r: math.ceil(p * 0.5) for r, p in parts.items()}
    assert result["complete"] and all(v["lost"] is None for v in by_region.values()), result["incomplete"]
    folders = [out / v["folder"] for v in by_region.values()]
    for folder, part in zip(folders, parts.values()):
        region = json.loads((folder / "result.json").read_text())
        assert region["complete"] and region["verdict"] and region["offered_rps"] == part, region
        assert {"report.html", "stats.json", "series.csv", "checks.xml", "summary.md"} <= {
            p.name for p in folder.iterdir()}
    # The whole is held to the sum of what the regions offered, as a one-release run is held to its rate.
    assert result["offered_rps"] == RATE, result
    held = [c for c in result["checks"] if c["check"].startswith("rps>=") and ":" not in c["check"]]
    assert len(held) == 1 and held[0]["passed"], result["checks"]
    # The whole's percentiles are Locust's own over the union of both regions' requests.
    for name, fraction in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        assert whole["percentiles_ms"][str(fraction)] == union_p(folders, fraction), name
    regions_requests = [json.loads((f / "result.json").read_text())["figures"]["Aggregated"]["requests"]
                        for f in folders]
    assert whole["requests"] == sum(regions_requests) > 1000
    # A check on the whole and one on each region, each judged on its own figures.
    judged = {c["check"]: c for c in result["checks"]}
    assert {"fail_ratio<1%", f"{REGIONS[0]}:p99<2s", f"{REGIONS[1]}:rps>=10"} <= set(judged)
    region_a = json.loads((folders[0] / "result.json").read_text())["figures"]["Aggregated"]
    assert judged[f"{REGIONS[0]}:p99<2s"]["measured"] == region_a["percentiles_ms"]["0.99"]
    assert judged["fail_ratio<1%"]["measured"] == whole["failures"] / whole["requests"]
    # Each region's rate held is Locust's own (90.1 of 90 requests/s here), not the master's counters at two
    # scrapes, whose whole 3 s report batches read 60 % of it over one 5 s sample: a false generator-bound verdict.
    assert "of the offered rate was sent" not in json.dumps(result["verdict"]), result["verdict"]
    # The whole's verdict is a region's, the generator's limit wherever it was one.
    verdicts = [v["verdict"] for v in by_region.values()]
    generator_bound = "generator-bound" in verdicts
    assert result["verdict"]["kind"] in verdicts and (result["verdict"]["kind"] == "generator-bound") == generator_bound
    assert proc.returncode == (checks.INVALID if generator_bound else checks.PASSED), output
    assert f"region           {REGIONS[0]}:" in output and f"region           {REGIONS[1]}:" in output
    # Each release is set back to the closed model it was in, rolled out and ready for the next run (the rollouts'
    # times, and a stall found in them, in docs/regions.md).
    assert "setting back each release's rate: region-a 0, region-b 0" in output
    for namespace in namespaces.values():
        assert releaserun.rate_of(Release("lt", namespace, cluster.kubeconfig).values()["locust"]) == 0
        wait_ready(cluster, namespace)


def window_counts(cluster, namespace: str, record: dict) -> dict[int, float]:
    """A region's requests per response time (ms, as Locust rounds it) between a sweep step's edge scrapes, read
    from the master's histogram in the region's own Prometheus."""
    prometheus = Prometheus(cluster, namespace)

    def at(t: float) -> dict[int, float]:
        return {int(float(s["metric"]["response_time_ms"])): float(s["value"][1]) for s in prometheus.query(
            'sum by (response_time_ms) (locust_responses_total{release="lt"})', t)}

    before = at(record["start"])
    return {ms: n - before.get(ms, 0.0) for ms, n in at(record["end"]).items() if n > before.get(ms, 0.0)}


def test_a_port_forward_outlives_more_connections_than_its_output_pipe_holds(cluster, regions):
    """kubectl port-forward writes a line for every connection it forwards; a command that never read them filled
    the pipe (64 KiB, some 2,200 connections: a long run's or sweep's calls once a second) and kubectl stopped,
    its forward with it."""
    release = Release("lt", regions["namespaces"][REGIONS[0]], cluster.kubeconfig)
    with release.port_forward("locust-master", "web") as url:
        web = LocustWeb(url, release.web_credentials())
        # A thread stops at its first failed call (a stopped forward: its 10 s timeout), so a failure ends the test
        # within seconds rather than after every call left timed out.
        with ThreadPoolExecutor(FORWARDING_THREADS) as pool:
            batches = pool.map(lambda calls: [web.state()["state"] for _ in range(calls)],
                               [FORWARDED_CONNECTIONS // FORWARDING_THREADS] * FORWARDING_THREADS)
            states = [state for batch in batches for state in batch]
        assert len(states) == FORWARDED_CONNECTIONS and set(states) <= {"ready", "stopped"}, set(states)


def test_ctrl_c_stops_every_region_and_each_keeps_what_it_collected(cluster, regions, tmp_path):
    namespaces = regions["namespaces"]
    served_before = {r: backend_served(cluster, ns) for r, ns in namespaces.items()}
    sent_before = {r: workers_sent(cluster, ns) for r, ns in namespaces.items()}  # the runs before this one's
    began = time.monotonic()
    out = tmp_path / "run"
    proc = loadtest_run(regions["kubeconfig"], out, "--users", str(USERS), "--run-time", "5m")
    for region in REGIONS:  # each region's first live line: both swarms run
        wait_for_line(proc, f"[{region}]   ", 120)
    press_ctrl_c(proc)  # the command and the port-forwards it started, as a terminal's Ctrl-C reaches them
    output, _ = proc.communicate(timeout=120)
    print(output)
    assert proc.returncode == checks.INTERRUPTED, output
    result = json.loads((out / "result.json").read_text())
    assert not result["complete"] and result["incomplete"] == "interrupted"
    # The closed model's users split by the releases' workers, one each.
    assert {r: v["users"] for r, v in result["regions"].items()} == {REGIONS[0]: USERS // 2, REGIONS[1]: USERS // 2}
    parts = {region: json.loads((out / found["folder"] / "result.json").read_text())
             for region, found in result["regions"].items()}
    for region, part in parts.items():
        # As a one-release run interrupted: its figures so far, its Locust files, no verdict; its swarm stopped.
        assert part["incomplete"] == "interrupted" and part["figures"]["Aggregated"]["requests"] > 0, part
        assert {"stats.json", "report.html"} <= {p.name for p in (out / result["regions"][region]["folder"]).iterdir()}
        assert master(cluster, regions["namespaces"][region]).state()["state"] == "stopped", region
    assert result["figures"]["Aggregated"]["requests"] == sum(p["figures"]["Aggregated"]["requests"]
                                                              for p in parts.values())
    # What the workers sent, by their own count (never reset, and whole once stopped: each sends its last report
    # on the stop), is what the backends counted, their probes aside and a request a user at most (a user stopped
    # while its request was in flight: the backend served it, the user never logged it).
    sent_by_workers = sum(workers_sent(cluster, ns) - sent_before[r] for r, ns in namespaces.items())
    served = sum(backend_served(cluster, ns) - served_before[r] for r, ns in namespaces.items())
    print(f"the workers sent {sent_by_workers:.0f}, the backends served {served} (probes included)")
    assert sent_by_workers <= served <= sent_by_workers + USERS + 2 * probes_within(time.monotonic() - began)
    assert port_forwards(regions["kubeconfig"]) == []


def test_a_sweep_of_two_regions_steps_them_together_merges_each_window_and_ends_on_a_lost_one(cluster, regions,
                                                                                             tmp_path):
    """`loadtest sweep` with two --release: the first step's halves swarmed together, each region's window read
    from its own Prometheus and judged, the whole step merged; a region's master killed in the second step ends the
    sweep there, naming it, with the first step kept and every swarm stopped."""
    namespaces = regions["namespaces"]
    out = tmp_path / "sweep"
    proc = loadtest_run(regions["kubeconfig"], out, "--steps", ",".join(map(str, SWEEP_STEPS)), "--warmup", "6s",
                        "--hold", "3s", command="sweep")
    # Region-a's master pod deleted, as a node drained or a pod evicted: its master quits (its workers with it, to
    # join the next master), and the port-forward to it is lost.
    wait_for_line(proc, f"[{REGIONS[0]}]   step 2/2 warm-up", 180)
    cluster.kubectl("delete", "pod", "-n", namespaces[REGIONS[0]], "-l", "app.kubernetes.io/component=locust-master",
                    "--wait=false")
    output, _ = proc.communicate(timeout=300)
    print(output)
    assert proc.returncode == checks.RUN_FAILED, output
    whole = json.loads((out / "sweep.json").read_text())
    # Found lost in the warm-up (silent, or ready for a new run: a new master), not at the window's end.
    assert not whole["complete"] and whole["incomplete"].startswith(
        f"step 2 of 2 failed: region {REGIONS[0]}: step 2/2: the Locust master "), whole["incomplete"]
    assert "during the warm-up" in whole["incomplete"], whole["incomplete"]
    (step,) = whole["records"]
    assert step["start_skew_s"] < 1.0, step  # the first swarm request sent to the last answered
    own = {region: json.loads((out / found["folder"] / "sweep.json").read_text())
           for region, found in whole["regions"].items()}
    assert set(own) == set(REGIONS) and all(o["incomplete"] == whole["incomplete"] for o in own.values())
    parts = {region: sweep["records"][0] for region, sweep in own.items()}
    # Each region swarmed its half, measured a window of its own and gave a verdict.
    assert [p["users"] for p in parts.values()] == [SWEEP_STEPS[0] // 2] * 2 and step["users"] == SWEEP_STEPS[0]
    assert all(p["verdict"] and p["requests"] > 0 for p in parts.values()), parts
    # The whole adds the regions' requests and each one's rate over its own window.
    assert step["requests"] == sum(p["requests"] for p in parts.values())
    assert step["step"]["rps"] == pytest.approx(sum(p["step"]["rps"] for p in parts.values()))
    # Its percentiles are Locust's own over the union of both windows' requests, as each master's histogram counted
    # them (read here from each region's Prometheus at the edge scrapes, merged by Locust's StatsEntry).
    union = StatsEntry(None, "Aggregated", "", use_response_times_cache=False)
    for region, namespace in namespaces.items():
        for ms, n in window_counts(cluster, namespace, parts[region]).items():
            union.response_times[ms] = union.response_times.get(ms, 0) + int(n)
            union.num_requests += int(n)
    assert union.num_requests == step["requests"]
    assert (step["p50_ms"], step["step"]["p95_ms"], step["p99_ms"]) == tuple(
        union.get_response_time_percentile(q) for q in (0.5, 0.95, 0.99))
    assert step["verdict"] in {p["verdict"] for p in parts.values()}
    # The other region's swarm stopped; nothing of the sweep is left loading or forwarding.
    assert master(cluster, namespaces[REGIONS[1]]).state()["state"] == "stopped"
    assert not port_forwards(regions["kubeconfig"])
    wait_ready(cluster, namespaces[REGIONS[0]])


def test_a_region_whose_master_is_killed_is_named_lost_and_the_other_goes_on(cluster, regions, tmp_path):
    namespaces = regions["namespaces"]
    out = tmp_path / "run"
    proc = loadtest_run(regions["kubeconfig"], out, "--users", str(USERS), "--run-time", f"{LOST_RUN_S}s")
    for _ in range(2):  # region-b's second live line: its swarm has run some seconds
        wait_for_line(proc, f"[{REGIONS[1]}]   ", 120)
    [pod] = pods(cluster, namespaces[REGIONS[1]], "app.kubernetes.io/component=locust-master")
    [master] = container_processes(pod["metadata"]["uid"], "--master")
    master.kill()
    output, _ = proc.communicate(timeout=300)
    print(output)
    result = json.loads((out / "result.json").read_text())
    lost = result["regions"][REGIONS[1]]["lost"]
    assert proc.returncode == checks.RUN_FAILED, output
    assert not result["complete"] and f"region {REGIONS[1]} lost at" in result["incomplete"], result["incomplete"]
    assert lost and 3 <= lost["at_s"] <= LOST_RUN_S and f"of {LOST_RUN_S} s of load" in lost["cost"], lost
    assert f"LOST: region {REGIONS[1]}" in (out / "summary.md").read_text()
    # The other region ran to its end and was judged as any.
    other = json.loads((out / result["regions"][REGIONS[0]]["folder"] / "result.json").read_text())
    assert other["complete"] and other["figures"]["Aggregated"]["requests"] > 300, other
    assert result["figures"]["Aggregated"]["requests"] >= other["figures"]["Aggregated"]["requests"]
    # The lost region's master came back as a new one, idle: nothing of the run is left loading.
    wait_ready(cluster, namespaces[REGIONS[1]])
