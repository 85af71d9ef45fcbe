"""`loadtest docs`: regenerate the generated parts of the docs, and record the chart's version.

The chart's README (`helm show readme`): its header, node-type files and values table, from Chart.yaml, the profiles
and the `# --` comments of the charts' values.yaml; docs/ci.md's exit-code table, from the one map of exit codes;
charts/versions.lock, the chart's content digest for its version (a changed chart needs a new version: see
CONTRIBUTING.md). --check writes nothing and exits 1 when any of it is stale.
"""
from __future__ import annotations

import sys

from .. import chartreadme, chartversion, checks, generated, paths


def expected() -> dict:
    home = paths.checkout("loadtest docs")
    readme, ci = paths.CHART / "README.md", home / "docs" / "ci.md"
    return {readme: chartreadme.updated(readme),
            ci: generated.replace_part(ci.read_text(), "exit-codes", checks.exit_codes_markdown(), ci)}


def run(args) -> int:
    files = expected()
    if args.check:
        stale = [f"{paths.shown(path)} is out of date" for path in generated.stale(files)]
        problems = stale or chartversion.problems()  # the chart's digest counts its README: judge it once current
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run `loadtest docs` and commit the result", file=sys.stderr)
            return 1
        print("docs are up to date, and the chart's version is recorded")
        return 0
    for path in generated.write(files):
        print(f"wrote {paths.shown(path)}")
    lock = chartversion.record()  # after the README, which is part of what the digest covers
    if generated.write({chartversion.LOCK: lock}):
        print(f"recorded chart version {paths.chart_version()} in {paths.shown(chartversion.LOCK)}")
    print("docs are up to date")
    return 0


def register(sub) -> None:
    p = sub.add_parser("docs", help="regenerate the chart's README and docs/ci.md's exit codes; record the chart version",
                       description=__doc__)
    p.add_argument("--check", action="store_true", help="only report whether anything is stale (exit 1 if so)")
    p.set_defaults(func=run)
