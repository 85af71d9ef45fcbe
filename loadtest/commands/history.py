"""`loadtest history`: the runs kept in a store (`runs/` by default, where `loadtest run` writes each run's folder),
their figures in a table and in one self-contained HTML page with the trend of each (RPS, p95, failure ratio), each
run linked to its own reports; and the baseline they are held to.

    loadtest history                                   # the runs under runs/, and runs/history.html
    loadtest history --baseline 20261125T101500Z-lt    # pin that run as the baseline

Once a baseline is pinned, every `loadtest run` that writes into the store is compared with it by `loadtest
compare`'s limits (RPS down more than 5 %, p95 up more than 10 %): a regression fails the run (exit 1) and its
folder keeps the comparison (baseline.md). A run that was generator-bound, or incomplete, cannot be the baseline.

Exit codes: 0 the history was written; 2 bad input (no such store or run, a run that cannot be a baseline).
"""
from __future__ import annotations

from pathlib import Path

from .. import checks, history, paths
from ..errors import UsageError
from . import types
from .run import RUNS


def run(args) -> int:
    store = Path(args.store)
    out = Path(args.output) if args.output else store / history.PAGE
    paths.check_output("--output", out, folder=False)
    known = history.runs(store)
    if args.baseline:
        pinned = history.pin(store, args.baseline, known)
        print(f"baseline: {pinned.folder} ({pinned.when}, {pinned.rps:,.0f} RPS)")
    pinned = history.baseline(store)
    if not known:
        raise UsageError(f"--store {store}: no run folders (with a result.json) in it yet; `loadtest run` adds them")
    lines = history.table(known, pinned)
    print(lines[0] + "  vs baseline")
    for run_, line in zip(known, lines[1:]):
        print(f"{line}  {vs_baseline(store, run_, pinned)}".rstrip())
    paths.write_text(out, history.html_page(store, known, pinned))
    print(f"history page: {out}")
    return checks.PASSED


def vs_baseline(store: Path, run_: history.Run, pinned: str | None) -> str:
    if pinned is None or run_.folder == pinned or not run_.complete:
        return ""
    comparison = history.against_baseline(store, store / run_.folder)
    if comparison.invalid:
        return "invalid (generator-bound)"
    return "REGRESSED" if comparison.regressed else "ok"


def register(sub) -> None:
    p = sub.add_parser("history", help="the runs kept in a store: a table, an HTML page of their trends, a baseline",
                       description=__doc__)
    p.add_argument("--store", type=types.existing_folder, default=str(RUNS),
                   help=f"folder of run folders (default {RUNS}, where `loadtest run` writes them)")
    p.add_argument("--baseline", metavar="RUN", help="pin this run (its folder name in the store) as the baseline")
    p.add_argument("--output", help=f"the HTML page (default STORE/{history.PAGE})")
    p.set_defaults(func=run)
