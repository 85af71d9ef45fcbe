"""`loadtest docs`: regenerate README's values reference from the `# --` comments of the charts' values.yaml."""
from __future__ import annotations

import sys

from .. import paths, valuesdoc


def run(args) -> int:
    readme = paths.checkout("loadtest docs") / "README.md"
    text = valuesdoc.updated_readme(readme)
    if text == readme.read_text():
        print("README values reference is up to date")
        return 0
    if args.check:
        print("README values reference is out of date: run `loadtest docs` and commit the result", file=sys.stderr)
        return 1
    readme.write_text(text)
    print("wrote README.md values reference")
    return 0


def register(sub) -> None:
    p = sub.add_parser("docs", help="regenerate README's values reference from the values.yaml comments",
                       description=__doc__)
    p.add_argument("--check", action="store_true", help="only report whether README is stale (exit 1 if so)")
    p.set_defaults(func=run)
