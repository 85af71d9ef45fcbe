"""The options that run a test of the user's instead of a built-in scenario, shared by `local` and `calibrate`."""
from __future__ import annotations

from ..errors import UsageError


def add_arguments(p, what: str) -> None:
    p.add_argument("-f", "--locustfile", metavar="FILE", help=f"{what} (the modules beside it are importable)")
    p.add_argument("--requirements", metavar="FILE",
                   help="with -f: the packages your test needs, pip's format, each pinned with its hash")


def check(args) -> None:
    if args.requirements and not args.locustfile:
        raise UsageError("--requirements: the built-in scenarios need no packages; give it with -f yours.py")
