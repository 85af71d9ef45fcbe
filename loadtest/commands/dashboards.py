"""`loadtest dashboards`: regenerate the Grafana dashboards (JSON) from loadtest/dashboards.py."""
from __future__ import annotations

import importlib.util
import sys

from .. import paths
from ..errors import UsageError


def run(args) -> int:
    paths.checkout("loadtest dashboards")
    if importlib.util.find_spec("grafana_foundation_sdk") is None:
        raise UsageError("the dashboards are written with grafana-foundation-sdk: pip install 'loadtest[dev]' "
                         "(scripts/setup installs it)")
    from .. import dashboards  # only this command needs the SDK

    if args.check:
        stale = dashboards.stale_files()
        for path in stale:
            print(f"out of date: {paths.shown(path)}")
        if stale:
            print("run `loadtest dashboards` and commit the result", file=sys.stderr)
            return 1
        print(f"dashboards match loadtest/dashboards.py ({len(dashboards.DASHBOARDS)} files)")
        return 0
    written = dashboards.write()
    for path in written:
        print(f"wrote {paths.shown(path)}")
    if not written:
        print("dashboards already up to date")
    return 0


def register(sub) -> None:
    p = sub.add_parser("dashboards", help="regenerate the Grafana dashboards (JSON) from loadtest/dashboards.py",
                       description=__doc__)
    p.add_argument("--check", action="store_true", help="only report dashboards that differ (exit 1 if any)")
    p.set_defaults(func=run)
