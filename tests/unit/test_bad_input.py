"""Bad input to every command: exit 2 with `loadtest: error:` and a message naming the option, never a traceback,
and nothing started (every case here would start processes, write files or reach a cluster if it got that far)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loadtest import commands, paths

# Files a user might wrongly give (a syntax error, a name that shadows one of ours, requirements without hashes).
BADTESTS = Path(__file__).parent / "badtests"
SHOP = str(paths.HOME / "examples" / "shop" / "locustfile.py")

BAD = {
    # id: (argv, what the message must name)
    "size-no-node-type": (["size"], "--node-type"),
    "size-nodes-words": (["size", "--node-type", "c5.large", "--nodes", "two"], "--nodes"),
    "size-zero-nodes": (["size", "--node-type", "c5.large", "--nodes", "0"], "node"),
    "size-memory-words": (["size", "--node-type", "c5.large", "--worker-memory", "lots"], "memory quantity 'lots'"),
    "plan-no-target": (["plan"], "--target-rps"),
    "plan-target-words": (["plan", "--target-rps", "many"], "--target-rps"),
    "plan-headroom-percent": (["plan", "--target-rps", "1000", "--headroom", "30%"], "--headroom"),
    "plan-headroom-huge": (["plan", "--target-rps", "1000", "--headroom", "30"], "argument --headroom: 30: give at most 4"),
    "plan-unknown-node-type": (["plan", "--target-rps", "1000", "--node-types", "c5.mega"], "unknown node type"),
    "plan-unknown-scenario": (["plan", "--target-rps", "1000", "--scenario", "ping"], "--scenario"),
    "plan-choose-missing": (["plan", "--target-rps", "1000", "--node-types", "c5.large", "--choose", "m5.large"],
                            "--choose m5.large"),
    "plan-calibration-not-json": (["plan", "--target-rps", "1000", "--calibration", "/etc/hostname"],
                                  "not a calibration file"),
    "local-unknown-target": (["local", "--target", "envoy"], "--target"),
    "local-tls-mode-for-backend": (["local", "--tls-mode", "passthrough"], "takes --tls-mode none / edge"),
    "local-tls-scenario-plain": (["local", "--scenario", "tls_handshake", "--tls-mode", "none"], "needs TLS"),
    "local-negative-users": (["local", "--users", "-5"], "argument --users: -5: give at least 1"),
    "local-no-users": (["local", "--users", "0"], "argument --users: 0: give at least 1"),
    "run-no-users": (["run", "--local", "--users", "0"], "argument --users: 0: give at least 1"),
    "local-run-time-zero": (["local", "--run-time", "0s"], "argument --run-time: 0s: give at least 1 s"),
    "local-run-time-words": (["local", "--run-time", "soon"], "argument --run-time: 'soon' is not like 20, 20s, 2m or 1h30m"),
    "local-f-missing": (["local", "-f", "/nonexistent/mine.py"], "-f /nonexistent/mine.py: no such file"),
    "local-f-not-python": (["local", "-f", "/etc/hostname"], "name it <module>.py"),
    "local-f-syntax-error": (["local", "-f", str(BADTESTS / "syntax_error.py")], "syntax_error.py: line 3:"),
    "local-f-shadows-ours": (["local", "-f", str(BADTESTS / "leanhttp.py")], "one of the project's own modules"),
    "local-requirements-unhashed": (["local", "-f", SHOP, "--requirements", str(BADTESTS / "unhashed-requirements.txt")],
                                    "unhashed-requirements.txt line 2 (requests==2.32.3): every requirement needs"),
    "local-requirements-missing": (["local", "-f", SHOP, "--requirements", "/nonexistent/req.txt"],
                                   "--requirements /nonexistent/req.txt"),
    "local-requirements-without-f": (["local", "--requirements", str(BADTESTS / "unhashed-requirements.txt")],
                                     "give it with -f"),
    "local-host-not-url": (["local", "--host", "127.0.0.1:8080"], "argument --host: '127.0.0.1:8080' is not like http://"),
    "calibrate-f-missing": (["calibrate", "-f", "/nonexistent/mine.py"], "-f /nonexistent/mine.py: no such file"),
    "calibrate-users-zero": (["calibrate", "--users", "0"], "argument --users: 0: give at least 1"),
    "calibrate-unknown": (["calibrate", "--scenarios", "ping"], "argument --scenarios: unknown scenario 'ping'"),
    "calibrate-run-time-words": (["calibrate", "--run-time", "a bit"], "argument --run-time: 'a bit' is not like 20"),
    "calibrate-from-missing-sweep": (["calibrate", "--from-sweep", "/nonexistent/sweep"], "not a sweep report"),
    "sweep-no-steps": (["sweep", "--local"], "--steps"),
    "sweep-hold-cuts-reports": (["sweep", "--local", "--steps", "10", "--hold", "7s"], "--hold 7s: use a multiple"),
    "sweep-url-with-password": (["sweep", "--release", "lt", "--steps", "10", "--prometheus", "http://127.0.0.1:9",
                                 "--locust", "http://admin:secret@127.0.0.1:9"], "leave the credentials out of the URL"),
    "sweep-auth-file-missing": (["sweep", "--release", "lt", "--steps", "10", "--prometheus", "http://127.0.0.1:9",
                                 "--locust", "http://127.0.0.1:9", "--locust-auth-file", "/nonexistent"],
                                "argument --locust-auth-file: /nonexistent: no such file"),
    "sweep-locust-not-a-url": (["sweep", "--release", "lt", "--steps", "10", "--prometheus", "http://127.0.0.1:9",
                                "--locust", "127.0.0.1:8089"], "is not like http://"),
    "sweep-output-holds-a-sweep": (["sweep", "--local", "--steps", "10", "--output", str(BADTESTS / "earlier-sweep")],
                                   "holds an earlier sweep: give another folder, or --force"),
    "sweep-workers-zero": (["sweep", "--local", "--steps", "10", "--workers", "0"], "argument --workers: 0: give at least 1"),
    "run-nowhere": (["run", "--users", "5"], "one of the arguments --local --release is required"),
    "run-local-and-release": (["run", "--local", "--release", "lt"], "not allowed with argument"),
    "run-release-with-local-options": (["run", "--release", "lt", "--workers", "3", "--scenario", "http_close"],
                                       "--scenario, --workers: what runs is the release's"),
    "run-release-run-time-zero": (["run", "--release", "lt", "--run-time", "0s"], "argument --run-time: 0s: give at least 1 s"),
    "run-release-bad-check": (["run", "--release", "lt", "--check", "p95<fast"], "--check"),
    # Issue #26: inputs that gave a traceback or were accepted silently.
    "plan-write-values-no-folder": (["plan", "--target-rps", "50000", "--write-values", "/etc/hostname/x.yaml"],
                                    "--write-values /etc/hostname/x.yaml: /etc/hostname is a file"),
    "plan-write-values-a-folder": (["plan", "--target-rps", "50000", "--write-values", "/etc"],
                                   "--write-values /etc is a folder"),
    "plan-calibration-missing": (["plan", "--target-rps", "1000", "--calibration", "/nonexistent/cal.json"],
                                 "--calibration /nonexistent/cal.json: no such file"),
    "plan-calibration-malformed": (["plan", "--target-rps", "1000", "--calibration",
                                    str(BADTESTS / "calibration-without-figures.json")], "not a calibration file"),
    "size-worker-fits-nowhere": (["size", "--node-type", "c5.large", "--worker-memory", "100Gi"],
                                 "no worker fits a c5.large"),
    "local-spawn-rate-nan": (["local", "--spawn-rate", "nan"], "argument --spawn-rate: nan: give a finite number"),
    "local-max-failure-ratio-percent": (["local", "--max-failure-ratio", "5"], "argument --max-failure-ratio: 5: give at most 1"),
    "local-output-under-a-file": (["local", "--output", "/etc/hostname/run"], "/etc/hostname is a file"),
    "run-output-under-a-file": (["run", "--local", "--output", "/etc/hostname/run"], "/etc/hostname is a file"),
    "run-release-output-under-a-file": (["run", "--release", "lt", "--output", "/etc/hostname/run"],
                                        "/etc/hostname is a file"),
    "run-empty-check": (["run", "--local", "--check", ""], "--check '': give a check"),
    "run-empty-release": (["run", "--release", ""], "argument --release: '' is not a Helm release name"),
    "run-spawn-slower-than-run": (["run", "--local", "--users", "100", "--spawn-rate", "5", "--run-time", "10s"],
                                  "only the time with every user running is judged"),
    "sweep-output-under-a-file": (["sweep", "--local", "--steps", "10", "--output", "/etc/hostname/sweep"],
                                  "/etc/hostname is a file"),
    "sweep-locust-port-out-of-range": (["sweep", "--release", "lt", "--steps", "10", "--prometheus",
                                        "http://127.0.0.1:9", "--locust", "http://127.0.0.1:99999"],
                                       "port is not a number from 1 to 65535"),
    "calibrate-output-under-a-file": (["calibrate", "--output", "/etc/hostname/cal.json"], "/etc/hostname is a file"),
    "calibrate-from-sweep-a-list": (["calibrate", "--from-sweep", str(BADTESTS / "sweep-a-list.json")],
                                    "not a sweep report"),
    "calibrate-from-sweep-no-requests": (["calibrate", "--from-sweep", str(BADTESTS / "sweep-step-no-requests.json")],
                                         "no step has the workers' CPU and requests measured"),
    "compare-result-without-figures": (["compare", str(BADTESTS / "run-without-figures"),
                                        str(BADTESTS / "run-without-figures")], "without what a comparison reads"),
    "compare-markdown-a-folder": (["compare", str(BADTESTS / "run-without-figures"),
                                   str(BADTESTS / "run-without-figures"), "--markdown", "/etc"],
                                  "--markdown /etc is a folder"),
    # Issue #40: the last tracebacks, and inputs accepted silently.
    "calibrate-from-sweep-output-a-list": (["calibrate", "--from-sweep", str(BADTESTS / "sweep-fine.json"), "--output",
                                            str(BADTESTS / "calibration-a-list.json")],
                                           "calibration-a-list.json is not a calibration file (a JSON list"),
    "calibrate-from-sweep-output-not-json": (["calibrate", "--from-sweep", str(BADTESTS / "sweep-fine.json"),
                                              "--output", str(BADTESTS / "syntax_error.py")],
                                             "syntax_error.py is not a calibration file (not JSON"),
    "calibrate-own-test-output-a-list": (["calibrate", "-f", SHOP, "--output",
                                          str(BADTESTS / "calibration-a-list.json")],
                                         "calibration-a-list.json is not a calibration file"),
    "calibrate-from-sweep-with-f-missing": (["calibrate", "--from-sweep", str(BADTESTS / "sweep-fine.json"), "-f",
                                             "/nonexistent/mine.py"], "-f with --from-sweep"),
    "local-output-under-proc": (["local", "--output", "/proc/run"],
                                "--output /proc/run: nothing can be written in /proc"),
    "run-output-under-proc": (["run", "--local", "--output", "/proc/run"], "nothing can be written in /proc"),
    "size-worker-memory-zero": (["size", "--node-type", "c5.large", "--worker-memory", "0Mi"],
                                "argument --worker-memory: memory quantity '0Mi': give at least 1Mi"),
    "size-worker-cpu-zero": (["size", "--node-type", "c5.large", "--worker-cpu", "0m"],
                             "argument --worker-cpu: CPU quantity '0m': give at least 1m"),
    "compare-drop-above-100": (["compare", "/nonexistent/a", "/nonexistent/b", "--max-rps-drop", "500%"],
                               "argument --max-rps-drop: '500%': give at most 100%"),
    "run-check-only-commas": (["run", "--local", "--check", ",,"], "--check: check ',,' holds no check"),
    "run-release-check-only-commas": (["run", "--release", "lt", "--check", ","], "holds no check"),
    "plan-regions-and-region": (["plan", "--target-rps", "1000", "--regions", "us-east-1,eu-west-1", "--region",
                                 "eu-west-1"], "--region eu-west-1 with --regions"),
    "plan-region-twice": (["plan", "--target-rps", "1000", "--regions", "us-east-1,us-east-1"],
                          "a region named twice"),
    "run-share-local": (["run", "--local", "--share", "a=50%"], "--share with --local"),
    "run-chart-local": (["run", "--local", "--chart", "."], "--chart with --local: it is the chart --arrival-rate upgrades"),
    "sweep-regions-workers": (["sweep", "--release", "a", "--release", "b", "--sweep", "workers", "--steps", "1,2"],
                              "--sweep workers with several --release: a sweep of several releases raises the users"),
    "sweep-regions-urls": (["sweep", "--release", "a", "--release", "b", "--steps", "10", "--prometheus",
                            "http://127.0.0.1:9090"], "--prometheus with several --release: the command opens each"),
    "sweep-same-release-twice": (["sweep", "--release", "a", "--release", "a", "--steps", "10"],
                                 "the same release as --release a"),
    "sweep-shares-short": (["sweep", "--release", "a", "--release", "b", "--share", "a=50%", "--share", "b=40%",
                            "--steps", "10"], "--share: the shares add up to 90.00%, not 100%"),
    "sweep-share-one-release": (["sweep", "--release", "a", "--share", "a=100%", "--steps", "10"],
                                "--share: the load of one release is all of it"),
    "sweep-share-local": (["sweep", "--local", "--share", "a=100%", "--steps", "10"], "--share with --local"),
    "tune-two-releases": (["tune", "--release", "a", "--release", "b"],
                          "argument --release: a and b: tune reads and changes one release"),
    "history-same-release-twice": (["history", "--release", "lt@us-east-1", "--release", "lt@us-east-1"],
                                   "the same release as --release lt@us-east-1"),
    "history-regions-baseline": (["history", "--release", "lt@us-east-1", "--release", "lt@eu-west-1", "--baseline",
                                  "20261125T101500Z-lt"], "--baseline with several --release"),
    "history-regions-output": (["history", "--release", "lt@us-east-1", "--release", "lt@eu-west-1", "--output",
                                "page.html"], "--output with several --release"),
    "cluster-no-action": (["cluster"], "action"),
    "unknown-command": (["deploy"], "invalid choice: 'deploy'"),
}


def refusal(argv: list[str], capsys, folder: Path, monkeypatch) -> str:
    """What `loadtest argv` says on stderr, once it exited 2 with no traceback, started no process and wrote
    nothing (into `folder`, its working directory)."""
    def refuse(self, args, *rest, **kwargs):
        raise AssertionError(f"bad input went ahead and started {args!r}")
    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)  # Locust, nginx, helm, kubectl...
    monkeypatch.chdir(folder)
    with pytest.raises(SystemExit) as exc:
        commands.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "loadtest" in err and "error" in err and "Traceback" not in err, err
    assert list(folder.iterdir()) == [], "bad input must be refused before anything is written"
    return err


@pytest.mark.parametrize("case", BAD)
def test_bad_input_exits_2_with_a_message_and_no_traceback(case, capsys, tmp_path, monkeypatch):
    argv, names = BAD[case]
    err = refusal(argv, capsys, tmp_path, monkeypatch)
    assert names in err, err
