"""Where the repository's parts are. The package runs from a checkout (installed editable by scripts/setup)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "charts" / "loadtest"
VALUES = REPO / "values"
LOCUSTFILES = REPO / "locustfiles"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "loadtest"
BIN = CACHE / "bin"


def tool(name: str) -> str:
    """A tool installed by scripts/setup (cache bin first), else whatever PATH has."""
    cached = BIN / name
    return str(cached) if cached.exists() else name
