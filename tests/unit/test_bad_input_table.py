"""Every option of every command, given wrong as a new user would give it: a missing value, a word for a number,
a number out of its range, NaN, an unknown choice, a path that is missing or cannot be written, a malformed URL or
duration, an option the command does not have. Each exits 2 with `loadtest: error:` and a message that names the
option, writes nothing and starts nothing. The table is generated from the parser itself, so a new option joins it
without anyone remembering to add it (tests/unit/test_bad_input.py holds the hand-picked cases)."""
from __future__ import annotations

import argparse

import pytest
from test_bad_input import refusal

from loadtest import commands

# What a command needs besides the wrong option to get as far as checking it.
REQUIRED = {
    "size": ["--node-type", "c5.large"],
    "plan": ["--target-rps", "1000"],
    "run": ["--local"],
    "sweep": ["--local", "--steps", "10"],
    "tune": ["--release", "lt"],
    "history": ["--store", "/"],
    "compare": ["/nonexistent/baseline", "/nonexistent/current"],
    "cluster": ["status"],
    "images": ["list"],
}
# sweep --release reads the release through these two port-forwards.
SWEEP_RELEASE = {"--prometheus": "http://127.0.0.1:9", "--locust": "http://127.0.0.1:9"}
# Options whose value is a number that cannot be negative (every count, rate, ratio, time and size here).
NUMBERS = {"--nodes", "--target-rps", "--headroom", "--max-nodes", "--users", "--workers", "--spawn-rate", "--wait",
           "--max-failure-ratio", "--users-per-worker", "--arrival-rate"}
WHOLE_NUMBERS = {"--nodes", "--max-nodes", "--users", "--workers", "--users-per-worker"}
DURATIONS = {"--run-time", "--warmup", "--hold"}
LATENCIES = {"--max-p99"}
SHARES = {"--max-rps-drop", "--max-p95-rise"}
QUANTITIES = {"--worker-cpu": ["1000 cores", "0m", "0"], "--worker-memory": ["-512Mi", "0Mi", "512"]}
DROPS = {"--max-rps-drop"}  # a share of something that cannot fall by more than all of it
FILES_READ = {"--calibration", "--locustfile", "--requirements", "--from-sweep", "--locust-auth-file", "--kubeconfig",
              "--chart", "--store"}
FILES_WRITTEN = {"--output", "--write-values", "--write-cluster", "--write-karpenter", "--markdown"}
URLS = {"--prometheus", "--locust", "--host"}
NAMES = {"--node-type": "c5.mega", "--node-types": "c5.large,t9.huge", "--scenario": "ping", "--scenarios": "ping",
         "--choose": "c5.mega", "--release": "Not_A_Release", "--namespace": "Not A Namespace",
         "--set": "no-equals-sign", "--steps": "10,x,30", "--check": "p95 under 200ms", "--sweep": "cores",
         "--abort-on": "fail_ratio above 5%",
         "--target": "envoy", "--tls-mode": "mtls", "--baseline": "no-such-run", "--region": "Virginia",
         "--cluster-name": "load_test", "--share": "Virginia=60%", "--regions": "us-east-1,Virginia"}
# Options of run and sweep that belong to --release: tried there, on a release named lt.
RELEASE_ONLY = {"--release", "--share", "--namespace", "--kubeconfig", "--prometheus", "--locust", "--locust-auth-file", "--chart"}
PARSER = commands.build_parser()


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def long_name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def wrong_values(option: str, action: argparse.Action) -> list[str]:
    if option in NUMBERS:
        return ["many", "-1", "nan", "inf"] + (["1.5"] if option in WHOLE_NUMBERS else [])
    if option in DURATIONS:
        return ["soon", "-5s", "0s", "5 parsecs"]
    if option in LATENCIES:
        return ["fast", "200", "-5ms", "0ms", "nan ms"]
    if option in SHARES:
        return ["a lot", "-5%", "nan%"] + (["101%", "1.5"] if option in DROPS else [])
    if option in QUANTITIES:
        return ["lots", *QUANTITIES[option]]
    if option in FILES_READ:
        return ["/nonexistent/file", "/etc/hostname/below-a-file"]
    if option in FILES_WRITTEN:
        return ["/etc/hostname/below-a-file"]
    if option in URLS:
        return ["127.0.0.1:8089", "http://127.0.0.1:99999", "ftp://127.0.0.1/", "http://"]
    if option in NAMES:
        return [NAMES[option]]
    raise AssertionError(f"{option}: the table does not know what a wrong value of it is; add it above")


def cases() -> dict[str, tuple[list[str], tuple[str, ...]]]:
    table = {}
    for command, parser in subcommands().items():
        required = REQUIRED.get(command, [])
        table[f"{command}-unknown-option"] = ([command, *required, "--bogus"], ("--bogus",))
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0 or isinstance(action, argparse._HelpAction):
                continue
            option = long_name(action)
            base = [command, *required]
            if option in ("--target-rps", "--node-type"):
                base = [command]
            elif command in ("run", "sweep") and option in RELEASE_ONLY:
                base = [command, *required[1:]] + ([] if option == "--release" else ["--release", "lt"])
                if command == "sweep":
                    base += [a for name, value in SWEEP_RELEASE.items() if name != option for a in (name, value)]
            names = tuple(action.option_strings)
            table[f"{command}{option}-without-value"] = ([*base, option], names)
            for value in wrong_values(option, action):
                table[f"{command}{option}={value}"] = ([*base, option, value], names)
            if action.choices and option not in NAMES:
                table[f"{command}{option}=bogus"] = ([*base, option, "bogus"], names)
    return table


CASES = cases()


def test_the_table_is_as_big_as_the_issue_asks():
    assert len(CASES) >= 250, len(CASES)


@pytest.mark.parametrize("case", CASES)
def test_every_wrong_option_exits_2_naming_it(case, capsys, tmp_path, monkeypatch):
    argv, names = CASES[case]
    err = refusal(argv, capsys, tmp_path, monkeypatch)
    assert any(name in err for name in names), f"the message does not name {' or '.join(names)}: {err}"
