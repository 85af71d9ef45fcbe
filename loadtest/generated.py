"""Files loadtest generates and commits (values files, schema enums, registry helpers, dashboards): which differ from
what the generator writes now, and writing those."""
from __future__ import annotations

from pathlib import Path


def stale(files: dict[Path, str]) -> list[Path]:
    return [path for path, text in files.items() if not path.exists() or path.read_text() != text]


def write(files: dict[Path, str]) -> list[Path]:
    """Write the files that differ; the files written."""
    written = stale(files)
    for path in written:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
    return written
