"""`loadtest compare BASELINE CURRENT`: did the service get slower? Two `loadtest run` folders, or two sweep
reports, against limits; a Markdown summary (stdout, and --markdown FILE for a CI job to post).
A regression exits 1; a side whose figures are the generator's ceiling makes the comparison invalid (3).
"""
from __future__ import annotations

from pathlib import Path

from loadtest_shared import results

from .. import paths
from ..judging import compare
from . import types


def run(args) -> int:
    if args.markdown:
        paths.check_output("--markdown", Path(args.markdown), folder=False)
    limits = results.Limits(compare.parse_share(args.max_rps_drop, "--max-rps-drop", at_most=1),
                            compare.parse_share(args.max_p95_rise, "--max-p95-rise"))
    comparison = compare.compare(Path(args.baseline), Path(args.current), limits)
    text = compare.markdown(comparison)
    print(text, end="")
    if args.markdown:
        paths.write_text(Path(args.markdown), text)
    return comparison.exit_code


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare two runs or two sweeps; exit 1 on a regression", description=__doc__)
    p.add_argument("baseline", help="results folder (or result.json / sweep.json) of the baseline")
    p.add_argument("current", help="results folder (or result.json / sweep.json) to judge against it")
    p.add_argument("--max-rps-drop", type=types.checked(lambda text: compare.parse_share(text, "", at_most=1)), default=f"{results.DEFAULT_LIMITS.max_rps_drop:.0%}",
                   help="largest RPS drop that is no regression (default %(default)s)")
    p.add_argument("--max-p95-rise", type=types.checked(lambda text: compare.parse_share(text, "")), default=f"{results.DEFAULT_LIMITS.max_p95_rise:.0%}",
                   help="largest p95 rise that is no regression (default %(default)s)")
    p.add_argument("--markdown", metavar="FILE", help="also write the Markdown summary to FILE")
    p.set_defaults(func=run)
