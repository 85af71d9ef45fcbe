"""`loadtest docs`: regenerate the generated parts of the docs, and record the chart's version.

The chart's README (`helm show readme`): its header, node-type files and values table, from Chart.yaml, the profiles
and the `# --` comments of the charts' values.yaml; docs/ci.md's exit-code table, from the one map of exit codes;
CONTRIBUTING.md's table of the package's folders and modules, from the package itself; docs/sizing.md's defaults
per worker core, from the one list of scenarios;
charts/versions.lock, the chart's content digest for its version (a changed chart needs a new version: see
CONTRIBUTING.md). --check writes nothing and exits 1 when any of it is stale.
"""
from __future__ import annotations

import sys

from loadtest_shared import checks

from .. import paths
from ..generate import chartreadme, chartversion, committed, layout
from ..workload import scenarios


def expected() -> dict:
    home = paths.checkout("loadtest docs")
    readme, ci, contributing = paths.CHART / "README.md", home / "docs" / "ci.md", home / "CONTRIBUTING.md"
    sizing = home / "docs" / "sizing.md"
    return {readme: chartreadme.updated(readme),
            sizing: committed.replace_part(sizing.read_text(), "per-core-defaults", scenarios.per_core_markdown(),
                                           sizing),
            ci: committed.replace_part(ci.read_text(), "exit-codes", checks.exit_codes_markdown(), ci),
            contributing: committed.replace_part(contributing.read_text(), "modules", layout.table(), contributing)}


def run(args) -> int:
    files = expected()
    if args.check:
        stale = [f"{paths.shown(path)} is out of date" for path in committed.stale(files)]
        problems = stale or chartversion.problems()  # the chart's digest counts its README: judge it once current
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run `loadtest docs` and commit the result", file=sys.stderr)
            return 1
        print("docs are up to date, and the chart's version is recorded")
        return 0
    for path in committed.write(files):
        print(f"wrote {paths.shown(path)}")
    lock = chartversion.record()  # after the README, which is part of what the digest covers
    if committed.write({chartversion.LOCK: lock}):
        print(f"recorded chart version {paths.chart_version()} in {paths.shown(chartversion.LOCK)}")
    print("docs are up to date")
    return 0


def register(sub) -> None:
    p = sub.add_parser("docs", description=__doc__,
                       help="regenerate the chart's README, docs/ci.md's exit codes, docs/sizing.md's defaults per "
                            "core and CONTRIBUTING.md's modules; record the chart version")
    p.add_argument("--check", action="store_true", help="only report whether anything is stale (exit 1 if so)")
    p.set_defaults(func=run)
