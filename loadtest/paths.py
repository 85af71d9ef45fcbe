"""Where loadtest finds its chart, values files and locustfiles, and where it caches what it builds.

The first of these that holds `charts/loadtest/Chart.yaml` is loadtest's home:
1. $LOADTEST_HOME, a checkout of the repository named explicitly;
2. the checkout this package sits in (scripts/setup installs it editable, or it runs from the tree);
3. the copy a wheel carries as package data (`pip install .` puts it under loadtest/data/).
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import ResourcesNotFound, UsageError

HOME_ENV = "LOADTEST_HOME"
CHART_FILE = Path("charts", "loadtest", "Chart.yaml")
PACKAGE = Path(__file__).resolve().parent
PACKAGE_DATA = PACKAGE / "data"


def find_home() -> Path:
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        home = Path(explicit).expanduser().resolve()
        if not (home / CHART_FILE).is_file():
            raise ResourcesNotFound(f"{HOME_ENV}={explicit} holds no {CHART_FILE}: point it at a loadtest checkout, "
                                    f"or unset it to use the chart installed with the package")
        return home
    for home in (PACKAGE.parent, PACKAGE_DATA):
        if (home / CHART_FILE).is_file():
            return home
    raise ResourcesNotFound(f"no {CHART_FILE} in {PACKAGE.parent} or {PACKAGE_DATA}: reinstall loadtest "
                            f"(pip install .) or set {HOME_ENV} to a checkout of the repository")


HOME = find_home()
# A checkout has the parts a wheel leaves out: README, tests, scripts.
CHECKOUT = HOME if (HOME / "README.md").is_file() and (HOME / "scripts").is_dir() else None
CHART = HOME / "charts" / "loadtest"
VALUES = CHART / "values"  # the node-type files ship in the chart (`values/` at the top is a link)
LOCUSTFILES = CHART / "charts" / "locust" / "locustfiles"  # the scenarios, what a user reads and copies
# The product's own modules the pods load beside a scenario (metrics, checks, judge, results, the open model,
# LeanHttpUser): one ConfigMap mounts both folders' files in one place.
PLUGIN = CHART / "charts" / "locust" / "plugin"
SHARED = PLUGIN / "loadtest_shared"  # the package the pods and this CLI share
DASHBOARDS = CHART / "charts" / "monitoring" / "dashboards"
RULES_FILE = CHART / "charts" / "monitoring" / "rules" / "loadtest.rules.yaml"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "loadtest"
BIN = CACHE / "bin"


def checkout(what: str) -> Path:
    """The repository checkout, for commands that rewrite its files; `what` names the command in the error."""
    if CHECKOUT is None:
        raise ResourcesNotFound(f"{what} rewrites files of a loadtest checkout, and {HOME} is an installed copy: "
                                f"run it in a checkout, or set {HOME_ENV} to one")
    return CHECKOUT


def chart_version(chart: Path = CHART) -> str:
    for line in (chart / "Chart.yaml").read_text().splitlines():
        if line.startswith("version:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def shown(path: Path) -> Path:
    """A path as a message shows it: relative to loadtest's home when inside it."""
    return path.relative_to(HOME) if path.is_relative_to(HOME) else path


def write_text(path: Path, text: str) -> None:
    """Write a file an option named, making its folder first: check_output accepted a folder not there yet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def check_output(option: str, path: Path, folder: bool = True) -> None:
    """Refuse, before anything runs or is written, an output `path` that could not be written: a folder (or, with
    `folder` false, a file) whose nearest existing ancestor is not a folder this user may write in."""
    if path.exists() and path.is_dir() != folder:
        raise UsageError(f"{option} {path} is a {'file' if folder else 'folder'}: give "
                         f"{'a folder' if folder else 'a file name'}")
    ancestor = path if path.is_dir() else path.parent  # a file is written (or rewritten) in its folder
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"{option} {path}: {ancestor} is a file, so nothing can be written under it; give another "
                         "path")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: you may not write in {ancestor}; give a path you can write")
    # What the permissions do not tell: a file system that takes no new files (/proc, /sys, mounted read-only).
    probe = ancestor / f".loadtest-probe-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"{option} {path}: nothing can be written in {ancestor} ({e.strerror}); give another path") \
            from None
