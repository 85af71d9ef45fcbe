"""`loadtest`: size Locust workers for a node type, plan and calibrate, run the local stack, sweep, keep the chart's
generated files in step. Every command ends its --help with the exit codes, one table for all (EXIT_CODES in
loadtest_shared/checks.py).
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys

from loadtest_shared import checks

from ..errors import RunFailed, UsageError

# One module per command, each with register(subparsers); in the order `loadtest --help` lists them.
COMMANDS = ("catalog", "size", "plan", "calibrate", "local", "run", "sweep", "tune", "compare", "history", "values", "docs", "dashboards", "cluster", "images")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loadtest", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=version_text(),
                        help="print the CLI's version, the chart's it ships with and Locust's, then exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    for command in (parser, *sub.choices.values()):
        command.epilog = checks.exit_codes_text()
        command.formatter_class = argparse.RawDescriptionHelpFormatter  # the docstrings' and the table's lines
    return parser


def version_text() -> str:
    """`loadtest --version`: this CLI's, the chart's beside it (what `helm install` deploys from this checkout) and
    the Locust its images run and this machine runs."""
    from importlib import metadata

    import yaml

    from .. import paths
    from ..runtime import locust

    chart = yaml.safe_load((paths.CHART / "Chart.yaml").read_text())
    try:
        cli = metadata.version("loadtest")
    except metadata.PackageNotFoundError:  # run from the checkout without `pip install` (PYTHONPATH)
        cli = "(not installed)"
    return (f"loadtest {cli}, chart {chart['name']} {chart['version']} (its images run Locust "
            f"{chart['appVersion']}; Locust here: {locust.version()}), from {paths.HOME}")


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()  # imports the floors below, which find the chart (loadtest.paths)
    except UsageError as e:
        print(f"loadtest: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    # A CI job cancelled (SIGTERM) stops as Ctrl-C does: processes stopped, what was measured kept and marked.
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        return args.func(args)
    except UsageError as e:
        parser.exit(2, f"loadtest: error: {e}\n")
    except RunFailed as e:
        print(f"loadtest {args.command}: {e}", file=sys.stderr)
        return checks.RUN_FAILED
    except KeyboardInterrupt:
        return checks.INTERRUPTED
    except BrokenPipeError:  # the reader went away (`loadtest plan … | head`): nothing left to say
        sys.stderr.close()
        return 0
