"""`loadtest values`: regenerate values/*.yaml from the catalog, and what the chart lists from the registries."""
from __future__ import annotations

import sys

from .. import paths, valuesgen


def run(args) -> int:
    paths.checkout("loadtest values")
    if args.check:
        stale = valuesgen.stale_files()
        for p in stale:
            print(f"out of date: {paths.shown(p)}")
        if stale:
            print("run `loadtest values` and commit the result", file=sys.stderr)
            return 1
        print("values files, schema enums and the chart's registry helpers match the catalog and registries")
        return 0
    written = valuesgen.write()
    for p in written:
        print(f"wrote {paths.shown(p)}")
    if not written:
        print("everything already up to date")
    return 0


def register(sub) -> None:
    p = sub.add_parser("values", help="regenerate values/*.yaml, the schemas' enums and the chart's registry helpers",
                       description=__doc__)
    p.add_argument("--check", action="store_true", help="only report files that differ (exit 1 if any)")
    p.set_defaults(func=run)
