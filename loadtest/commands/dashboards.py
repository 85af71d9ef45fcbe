"""`loadtest dashboards`: regenerate the Grafana dashboards (JSON) from loadtest/generate/dashboards.py."""
from __future__ import annotations

import importlib.util

from ..errors import UsageError
from .generated import check_or_write


def run(args) -> int:
    if importlib.util.find_spec("grafana_foundation_sdk") is None:
        raise UsageError("the dashboards are written with grafana-foundation-sdk: pip install 'loadtest[dev]' "
                         "(scripts/setup installs it)")
    from ..generate import dashboards  # only this command needs the SDK

    return check_or_write(args.check, dashboards, "dashboards",
                          f"dashboards match loadtest/generate/dashboards.py ({len(dashboards.DASHBOARDS)} files)")


def register(sub) -> None:
    p = sub.add_parser("dashboards", description=__doc__,
                       help="regenerate the Grafana dashboards (JSON) from loadtest/generate/dashboards.py")
    p.add_argument("--check", action="store_true", help="only report dashboards that differ (exit 1 if any)")
    p.set_defaults(func=run)
