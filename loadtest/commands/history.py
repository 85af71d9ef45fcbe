"""`loadtest history`: the runs kept in a store (`runs/` by default, where `loadtest run` writes each run's folder),
their figures in a table and in one self-contained HTML page with the trend of each (RPS, p95, failure ratio), each
run linked to its own reports; and the baseline they are held to.

    loadtest history                                   # the runs under runs/, and runs/history.html
    loadtest history --baseline 20261125T101500Z-lt    # pin that run as the baseline
    loadtest history --release lt --namespace lt       # a release's scheduled runs (its PVC or its bucket)
    loadtest history --release lt@us-east-1 --release lt@eu-west-1
                                                       # each region's, in its kube context: a table and a page each
    loadtest history --store s3://bucket/prefix        # a bucket (AWS_* credentials; AWS_ENDPOINT_URL_S3 for
                                                       # an S3-compatible store)

A release's store, or a bucket, is copied into history-<release>/ (or history-<bucket>/) first, runs already there
kept; the page is written beside the copy. --baseline then pins the run in the store itself, where the next
scheduled run reads it. Several releases (`[NAMESPACE/]NAME[@CONTEXT]`, as `loadtest run` takes them) are several
regions' schedules: each region's runs are held to its own baseline, so each is copied into history-<region>/ with
its own table and page, never mixed (a run of `loadtest run` from several releases is one run of the store it was
written to).

Once a baseline is pinned, every `loadtest run` that writes into the store is compared with it by `loadtest
compare`'s limits (RPS down more than 5 %, p95 up more than 10 %): a regression fails the run (exit 1) and its
folder keeps the comparison (baseline.md). A run that was generator-bound, or incomplete, cannot be the baseline.
"""
from __future__ import annotations

from pathlib import Path

from loadtest_shared import checks

from .. import paths
from ..errors import UsageError
from ..judging import history
from ..runtime import release, store
from ..workload import regions
from . import types
from .run import RUNS


def copied(kept, copy: Path) -> tuple[Path, object]:
    """(the local copy, the store it copies): the store's runs copied into `copy`, runs already there kept."""
    copy.mkdir(exist_ok=True)
    print(f"loadtest history: copying the runs of {kept.where} into {copy}/")
    incomplete = kept.copy_to(copy)
    if incomplete:
        print(f"  uploads that never finished (left out): {', '.join(incomplete)}")
    return copy, kept


def run(args) -> int:
    if args.release:
        named = regions.parse_all(args.release)
        if len(named) > 1 and (args.baseline or args.output):
            raise UsageError(f"--{'baseline' if args.baseline else 'output'} with several --release: it names one "
                             "store's run or page; give the one --release it is for")
        for region, found in zip(named, release.resolve(named, args.namespace, args.kubeconfig)):
            if len(named) > 1:
                print(f"== region {region.region}: {found}")
            # One release's copy keeps the name it had before releases had regions.
            folder = regions.folder_name(region.region) if len(named) > 1 else region.name
            show(args, copied(store.of_release(found), Path(f"history-{folder}")))
        return checks.PASSED
    if args.store.startswith("s3://"):
        kept = store.bucket(args.store)
        return show(args, copied(kept, Path(f"history-{kept.store.bucket}")))
    return show(args, None)


def show(args, copy: tuple[Path, object] | None) -> int:
    """The table and the page of one store (`copy`: a remote store's local copy and the store; None: --store)."""
    where = copy[0] if copy else Path(args.store)
    known = history.runs(where)
    out = Path(args.output) if args.output else where / history.PAGE
    paths.check_output("--output", out, folder=False)
    if args.baseline:
        pinned = history.pin(where, args.baseline, known)
        if copy:
            copy[1].pin(pinned.folder)
        print(f"baseline: {pinned.folder} ({pinned.when}, {pinned.rps:,.0f} RPS)")
    pinned = history.baseline(where)
    if not known:
        raise UsageError(f"{copy[1].where if copy else f'--store {where}'}: no run folders (with a result.json) "
                         "in it yet; `loadtest run`, or the release's scheduled runs, add them")
    lines = history.table(known, pinned)
    against = {r.folder: vs_baseline(where, r, pinned) for r in known}
    print(lines[0] + "  vs baseline")
    for run_, line in zip(known, lines[1:]):
        print(f"{line}  {against[run_.folder]}".rstrip())
    paths.write_text(out, history.html_page(where, known, pinned, against))
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
    where = p.add_mutually_exclusive_group()
    where.add_argument("--store", default=str(RUNS), metavar="PATH|s3://BUCKET/PREFIX",
                       help=f"folder of run folders (default {RUNS}, where `loadtest run` writes them), or a bucket")
    types.add_releases(where, p, "the store of this release's judged runs (locust.results: its PVC or its bucket); "
                       "repeat it for several regions: a copy, a table and a page each")
    p.add_argument("--kubeconfig", type=types.existing_file, help="kubeconfig of the release's cluster (default: kubectl's)")
    p.add_argument("--baseline", metavar="RUN", help="pin this run (its folder name in the store) as the baseline")
    p.add_argument("--output", help=f"the HTML page (default STORE/{history.PAGE})")
    p.set_defaults(func=run)
