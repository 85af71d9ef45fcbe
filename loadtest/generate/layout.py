"""The package's layout as CONTRIBUTING.md shows it, made from the package itself: each folder with its floor and
what its docstring says, and each module with the first sentence of its own (`loadtest docs` writes it, so a module
added or moved is in the table at once). The floors are defined here; tests/unit/test_architecture.py holds every
import to them."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from .. import paths

# The floors, top down: a module imports only from its own floor or below. Every other folder is the core, floor 0;
# under it the package the chart's pods share with the CLI (loadtest_shared: the standard library only), floor -1.
FLOORS = {"commands": 2, "runtime": 1}
SHARED = "loadtest_shared"
FLOOR_NAMES = {2: "command line", 1: "runtime", 0: "core", -1: "shared with the pods"}
# The core's concerns, top down: one imports only from those below it and from the package's top-level modules
# (paths, units, errors), level 0.
CORE_CONCERNS = ("generate", "judging", "capacity", "workload")


def floor(module: str) -> int:
    """A module's floor, by its dotted name (loadtest.runtime.localrun: 1; loadtest_shared.verdict: -1)."""
    parts = module.split(".")
    if parts[0] == SHARED:
        return -1
    return FLOORS.get(parts[1], 0) if len(parts) > 1 else 0


def level(module: str) -> int:
    """A core module's level among the core's concerns (loadtest.judging.knee: 3; loadtest.units: 0)."""
    parts = module.split(".")
    concern = parts[1] if len(parts) > 1 else None
    return len(CORE_CONCERNS) - CORE_CONCERNS.index(concern) if concern in CORE_CONCERNS else 0


def may_import(module: str, imported: str) -> bool:
    """Whether `module` may import `imported`: from a lower floor, or, on its own floor, from anywhere in the command
    line and the runtime, and in the core from its own concern or one below."""
    if floor(imported) != floor(module):
        return floor(imported) < floor(module)
    return floor(module) != 0 or level(imported) <= level(module)


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line ("" without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    return re.split(r"(?<=[a-z0-9)`'\"])\. ", text, maxsplit=1)[0].rstrip(".")


def table(package: Path = paths.PACKAGE) -> str:
    """The Markdown table: a row per folder of the package (the top-level modules last), its modules in it."""
    folders = sorted({p.parent for p in package.rglob("*.py") if "data" not in p.relative_to(package).parts},
                     key=lambda d: (-floor(".".join(["loadtest", *d.relative_to(package).parts])),
                                    d == package, d.relative_to(package).parts))
    rows = ["| folder | floor | what | modules |", "|---|---|---|---|"]
    for folder in folders:
        parts = folder.relative_to(package).parts
        name = f"loadtest/{'/'.join(parts)}/" if parts else "loadtest/*.py"
        what = first_sentence(folder / "__init__.py") if parts else "what every floor shares"
        modules = "; ".join(f"`{p.stem}`: {first_sentence(p)}" for p in sorted(folder.glob("*.py"))
                            if p.name not in ("__init__.py", "__main__.py"))
        rows.append(f"| `{name}` | {FLOOR_NAMES[floor('.'.join(['loadtest', *parts]))]} | {what} | {modules} |")
    shared = "; ".join(f"`{p.stem}`: {first_sentence(p)}" for p in sorted(paths.SHARED.glob("*.py"))
                       if p.name != "__init__.py")
    rows.append(f"| `plugin/{SHARED}/` | {FLOOR_NAMES[-1]} | {first_sentence(paths.SHARED / '__init__.py')} (its "
                f"own ConfigMap in the pods, an installed package for the CLI) | {shared} |")
    plugin = "; ".join(f"`{p.stem}`: {first_sentence(p)}" for p in sorted(paths.PLUGIN.glob("*.py")))
    rows.append(f"| `plugin/` | pods | what the chart's Locust pods load beside a scenario (one ConfigMap with "
                f"`locustfiles/`), on Locust and `{SHARED}` | {plugin} |")
    return "\n".join(rows)
