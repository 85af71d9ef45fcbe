"""What the commands that regenerate committed files (`values`, `dashboards`) print and return."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import paths


def check_or_write(check: bool, generator, command: str, up_to_date: str) -> int:
    """--check: list the files that differ, exit 1 if any; else write them. `generator` is the core module that
    generates them (its stale_files() and write() return the files)."""
    paths.checkout(f"loadtest {command}")
    if check:
        found: list[Path] = generator.stale_files()
        for path in found:
            print(f"out of date: {paths.shown(path)}")
        if found:
            print(f"run `loadtest {command}` and commit the result", file=sys.stderr)
            return 1
        print(up_to_date)
        return 0
    written = generator.write()
    for path in written:
        print(f"wrote {paths.shown(path)}")
    if not written:
        print("everything already up to date")
    return 0
