"""`loadtest values`: regenerate values/*.yaml from the catalog, and what the chart lists from the registries."""
from __future__ import annotations

from ..generate import valuesgen
from .generated import check_or_write


def run(args) -> int:
    return check_or_write(args.check, valuesgen, "values", "values files, schema enums and the chart's registry "
                          "helpers match the catalog and registries")


def register(sub) -> None:
    p = sub.add_parser("values", help="regenerate values/*.yaml, the schemas' enums and the chart's registry helpers",
                       description=__doc__)
    p.add_argument("--check", action="store_true", help="only report files that differ (exit 1 if any)")
    p.set_defaults(func=run)
