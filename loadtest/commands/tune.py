"""`loadtest tune --release NAME`: read a running release, say which side limits it and make the one change the
field would make next, with the figures behind it.

    loadtest tune --release lt --namespace lt              # the diagnosis and the helm upgrade it would run
    loadtest tune --release lt --namespace lt --apply      # run it (asks first), then show before and after

It reads the release's values (helm), its worker pods and the nodes they may run on (kubectl), and the last window
of steady samples in the release's Prometheus (every user running; the window is the release's rules window,
monitoring.rules.windowSeconds, a minute by default), through port-forwards it opens and closes itself. The
diagnosis, in this order: worker pods Pending (ask for the workers that fit, or add nodes); the
generator saturated with workers below a core or throttled (give each a whole core, as many as the nodes hold);
whole workers saturated (more workers where the nodes have room, else how many nodes to add and their cost); the
target saturated (the generator is fine: sweep the target's CPUs); neither (raise the users, from the RPS each
user gives). The same diagnosis is the rule `loadtest:advice`, shown beside the verdict in Grafana.

--apply runs the `helm upgrade --reuse-values` it printed, waits for the rollout without stopping the swarm, watches
the next steady window and prints before and after (RPS, p95, failures, worker CPU, verdict). If the change made
things worse (RPS down by more than 5 %, or failures above 1 %), it says so and prints the rollback;
--rollback-on-regression runs it.
An applied change that made things worse exits 1; a release that cannot be tuned is bad input (2), the fix named;
an applied change whose next steady window did not come (the swarm stopped or kept respawning) exits 4: nothing was
judged.
"""
from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from pathlib import Path

from loadtest_shared import checks

from .. import paths
from ..errors import UsageError
from ..judging import tuning
from ..runtime import tune
from ..runtime.prom import Prometheus
from ..runtime.release import Release
from . import types


def print_snapshot(s: tuning.Snapshot, advice: tuning.Advice, out=print) -> None:
    out(f"Release {s.release}: {s.replicas} worker(s) at {s.worker_cpu_m}m ({s.pending} Pending), "
        f"locust.mode {s.mode}")
    out(f"Diagnosis        {advice.diagnosis}: {advice.summary}")
    for line in advice.figures:
        out(f"  {line}")
    if advice.changes:
        out("Change           " + ", ".join(f"{key} {advice.current.get(key, '?')} -> {value}"
                                            for key, value in advice.changes.items()))
    if advice.nodes_to_add:
        out(f"Nodes            add {advice.nodes_to_add}"
            + (f" (+{advice.usd_per_hour:.3f} USD/h)" if advice.usd_per_hour is not None else ""))
    if advice.next_step:
        out(f"Next             {advice.next_step}")


def confirm(command: list[str]) -> bool:
    answer = input(f"Run `{shlex.join(command)}`? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def run(args) -> int:
    if args.rollback_on_regression and not args.apply:
        raise UsageError("--rollback-on-regression: it undoes an applied change; add --apply")
    if args.apply and not args.yes and not sys.stdin.isatty():
        raise UsageError("--apply asks before it upgrades the release, and stdin is no terminal: add --yes to "
                         "upgrade without asking")
    target = Release(args.release, args.namespace, Path(args.kubeconfig) if args.kubeconfig else None)
    tune.check_release(target)
    chart = str(paths.shown(Path(args.chart)))
    with contextlib.ExitStack() as stack:
        print(f"port-forwarding to release {args.release}'s Prometheus; reading its pods and nodes")
        prometheus = Prometheus(stack.enter_context(target.port_forward("prometheus", "http")))
        before = tune.snapshot(target, prometheus)
        advice = tuning.advise(before)
        print_snapshot(before, advice)
        if not advice.changes:
            if args.apply:
                print("Nothing to apply: no values change does this (see Next)")
            return checks.PASSED
        command = tuning.upgrade_command(args.release, args.namespace, chart, advice.changes)
        print(f"  {shlex.join(command)}")
        if not args.apply:
            print(f"Run it, or `loadtest tune --release {args.release} --namespace {args.namespace} --apply`")
            return checks.PASSED
        if not args.yes and not confirm(command):
            print("Not applied")
            return checks.PASSED
        previous = tune.revision(target)
        tune.upgrade(target, args.chart, advice.changes)
        web = stack.enter_context(target.port_forward("locust-master", "web"))
        after = tune.after_change(target, prometheus, web, target.web_credentials())
        outcome = tuning.Outcome(before, after)
        print(f"Before and after (steady windows of {before.window_s} s)")
        for line in outcome.table():
            print(line)
        if after.window is None:
            print(f"After            unmeasured: {after.no_window} (the change stays applied)")
            return checks.RUN_FAILED
        if worse := outcome.worse:
            back = ["helm", "rollback", args.release, str(previous), "-n", args.namespace]
            print(f"Worse: {'; '.join(worse)}")
            if args.rollback_on_regression:
                tune.rollback(target, previous)
                print(f"Rolled back to revision {previous}")
            else:
                print(f"  undo it: {shlex.join(back)}")
            return checks.CHECK_FAILED
        now = tuning.advise(after)
        print(f"Now              {now.diagnosis}: {now.summary}")
    return checks.PASSED


def register(sub) -> None:
    p = sub.add_parser("tune", help="read a running release: the diagnosis and the one change to make next",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--release", required=True, metavar="NAME", type=types.release_name, help="the installed release",
                   action=types.once("tune reads and changes one release: tune each on its own"))
    p.add_argument("--namespace", type=types.namespace, default="default", help="the release's namespace (default: default)")
    p.add_argument("--kubeconfig", type=types.existing_file, help="kubeconfig of the release's cluster (default: kubectl's)")
    p.add_argument("--chart", type=types.existing_folder, default=str(paths.CHART),
                   help="chart to upgrade with (default: loadtest's own)")
    p.add_argument("--apply", action="store_true", help="run the upgrade (asks first), then show before and after")
    p.add_argument("--yes", action="store_true", help="with --apply: upgrade without asking")
    p.add_argument("--rollback-on-regression", action="store_true",
                   help="with --apply: roll back when the change made things worse")
    p.set_defaults(func=run)
