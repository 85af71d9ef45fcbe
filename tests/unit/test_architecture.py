"""The package's three floors: `loadtest.commands` (the command line) on top, `loadtest.runtime` (processes, tools,
clusters) below it, the pure core (every other module) at the bottom. Imports go only downward, and no two modules
import each other, directly or around a loop."""
from __future__ import annotations

import ast
from pathlib import Path

import loadtest
from loadtest.generate.layout import floor

PACKAGE = Path(loadtest.__file__).parent


def module_name(path: Path) -> str:
    parts = ["loadtest", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "data" not in p.relative_to(PACKAGE).parts}


def imports(module: str) -> set[str]:
    """The package's modules `module` imports anywhere in its file (functions included)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            stem = ".".join([*base, *([node.module] if node.module else [])])
            names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names]
        else:
            continue
        found |= {n for n in names if n in MODULES and n != module}
    return found


GRAPH = {m: imports(m) for m in MODULES}


def test_imports_only_go_down_the_floors():
    upward = [f"{m} (floor {floor(m)}) imports {i} (floor {floor(i)})"
              for m, found in GRAPH.items() for i in sorted(found)
              if floor(i) > floor(m) and not (m == "loadtest.__main__")]
    assert not upward, "\n".join(upward)


def cycles_of(graph: dict[str, set[str]]) -> list[str]:
    """Every import circle of a graph (module: the modules it imports), as "a -> b -> a"."""
    cycles, state = [], {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = "open"
        for i in sorted(graph[m]):
            if state.get(i) == "open":
                cycles.append(" -> ".join(stack[stack.index(i):] + [i]))
            elif i not in state:
                visit(i, stack + [i])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_import_cycles():
    cycles = cycles_of(GRAPH)
    assert not cycles, "\n".join(cycles)


def test_argparse_lives_only_in_the_commands():
    users = [m for m, path in MODULES.items() if floor(m) < 2 and "argparse" in path.read_text()]
    assert not users, users


def test_the_graph_sees_imports():
    """A guard for the two tests above: the walker must find known edges, or they pass vacuously."""
    assert "loadtest.runtime.stack" in GRAPH["loadtest.runtime.localrun"]
    assert "loadtest.judging.verdict" in GRAPH["loadtest.runtime.sweeper"]
    assert {"loadtest.commands.local", "loadtest.commands.sweep"} <= set(MODULES)


def test_the_pods_modules_import_each_other_without_a_circle():
    """plugin/: the modules the pods load import each other by name, anywhere in their files (an import inside a
    function that breaks a circle at import time is still a circle)."""
    from loadtest import paths

    plugin = {p.stem: p for p in paths.PLUGIN.glob("*.py")}
    graph = {}
    for name, path in plugin.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
        graph[name] = {m for m in found if m in plugin and m != name}
    assert graph["loadtest_metrics"] >= {"loadtest_faults", "loadtest_arrival"}  # the walker sees imports
    cycles = cycles_of(graph)
    assert not cycles, "\n".join(cycles)
