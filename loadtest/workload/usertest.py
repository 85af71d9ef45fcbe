"""Your own test: a locustfile of yours (with the modules beside it) and the packages it needs, run with the same
sizing, metrics and verdict as the built-in scenarios.

The project's plugin file (plugin/loadtest_plugin.py) loads beside it, locally and in the chart, so the
Prometheus metrics, the web UI's authentication and the worker CPU-ceiling reports need nothing from the user's
file. What can be checked without running it is checked here, before anything starts: the file, its syntax, its
module name, and that every requirement is pinned with a hash. Whether it has a User class is Locust's own answer
(runtime.locust.user_classes).
"""
from __future__ import annotations

import re
from pathlib import Path

from .. import paths
from ..errors import UsageError

PLUGIN = "loadtest_plugin.py"
# Kubernetes refuses a ConfigMap whose data is over 1 MiB.
CONFIGMAP_LIMIT_BYTES = 1024 * 1024
# A requirement line once its continuations are joined and its comment dropped: a name (and extras) pinned with ==,
# an optional environment marker, and at least one sha256 hash. The chart checks locust.packages.requirements with
# the same pattern (common.pinnedRequirement, written by `loadtest values`).
PINNED_REQUIREMENT = (r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._, -]*\])? *===? *[^ ;]+"
                      r"( *;[^-]*)?( +--hash=sha256:[0-9a-f]{64})+$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def builtin_modules() -> list[str]:
    """The modules and packages the project's locustfiles and plugin folders provide (on the pods' Python path): a
    test module of the same name would shadow one."""
    return sorted([*(p.stem for folder in (paths.LOCUSTFILES, paths.PLUGIN) for p in folder.glob("*.py")),
                   *(p.parent.name for p in paths.PLUGIN.glob("*/__init__.py"))])


def requirement_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, requirement) for each requirement in pip's format: continuations joined, comments and
    blank lines dropped."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        joined = " ".join((pending + line.strip()).split())
        pending = ""
        if joined:
            out.append((start, joined))
    if pending.strip():
        out.append((start, " ".join(pending.split())))
    return out


def check_requirements(text: str, source: str) -> int:
    """Refuse a requirement that is not pinned with its hash, naming `source` and the line; the number of
    requirements when all are."""
    lines = requirement_lines(text)
    for number, line in lines:
        if not re.match(PINNED_REQUIREMENT, line):
            raise UsageError(
                f"{source} line {number} ({line.split()[0]}): every requirement needs an exact pin and its hash, "
                "e.g. `pyjwt==2.10.1 --hash=sha256:<64 hex digits>`, dependencies included (`pip-compile "
                "--generate-hashes` or `pip hash <wheel>` gives them); options like --index-url are not taken")
    return len(lines)


def check_locustfile(path: Path, option: str = "-f") -> Path:
    """The user's locustfile, refused (with the option, the reason and the fix) when Python could not import it as a
    Locust module: missing, not a .py file, a syntax error, or a name that would shadow one of the project's
    modules."""
    if not path.is_file():
        raise UsageError(f"{option} {path}: no such file; give the path of your locustfile")
    if path.suffix != ".py" or not _MODULE.match(path.stem):
        raise UsageError(f"{option} {path}: name it <module>.py, a Python module name (letters, digits, _)")
    if path.stem in builtin_modules():
        raise UsageError(f"{option} {path}: {path.stem} is one of the project's own modules "
                         f"({', '.join(builtin_modules())}); rename your file")
    try:
        source = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{option} {path}: {e.strerror}") from None
    if len(source) > CONFIGMAP_LIMIT_BYTES:
        raise UsageError(f"{option} {path}: {len(source):,} bytes, over the 1 MiB a Kubernetes ConfigMap holds; "
                         "move data out of the file (a package, or a file it reads)")
    try:
        compile(source, str(path), "exec")
    except SyntaxError as e:
        raise UsageError(f"{option} {path}: line {e.lineno}: {e.msg}; fix the file") from None
    return path.resolve()


def locustfiles(path: Path) -> list[Path]:
    """What Locust loads for a user's test: the file, then the project's plugin beside it."""
    return [path, paths.PLUGIN / PLUGIN]
