"""The package's three floors: `loadtest.commands` (the command line) on top, `loadtest.runtime` (processes, tools,
clusters) below it, the pure core (every other module) below that, its concerns in their order (generate, judging,
capacity, workload, then the top-level modules), and under all of them `loadtest_shared`, the standard-library
package the chart's pods run too. Imports go only downward, no two modules import each other, directly or around a
loop, and every module is imported by name: none is loaded from a file path, none re-exports another's names."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import loadtest
import loadtest_shared
from loadtest import paths
from loadtest.generate.layout import floor, may_import

ROOTS = {"loadtest": Path(loadtest.__file__).parent, "loadtest_shared": Path(loadtest_shared.__file__).parent}


def module_name(root: str, path: Path) -> str:
    parts = [root, *path.relative_to(ROOTS[root]).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(root, p): p for root, folder in ROOTS.items() for p in sorted(folder.rglob("*.py"))
           if "data" not in p.relative_to(folder).parts}


def imported_names(module: str, tree: ast.AST) -> set[str]:
    """Every dotted name `module` imports anywhere in its file (functions included), relative imports resolved."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            stem = ".".join([*base, *([node.module] if node.module else [])])
            found |= {f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names}
    return found


TREES = {m: ast.parse(p.read_text()) for m, p in MODULES.items()}
GRAPH = {m: {n for n in imported_names(m, TREES[m]) if n in MODULES and n != m} for m in MODULES}


def test_imports_only_go_down_the_floors_and_the_cores_concerns():
    upward = [f"{m} imports {i}, above it" for m, found in GRAPH.items() for i in sorted(found)
              if not may_import(m, i) and m != "loadtest.__main__"]
    assert not upward, "\n".join(upward)


def test_the_floors_and_concerns_refuse_a_back_arrow():
    """A guard for the test above: the edges the layout forbids are refused."""
    assert may_import("loadtest.judging.knee", "loadtest_shared.verdict")
    assert may_import("loadtest.judging.tuning", "loadtest.capacity.catalog")
    assert may_import("loadtest.runtime.localrun", "loadtest.runtime.cluster.pods")
    assert not may_import("loadtest.workload.arrival", "loadtest.judging.knee")  # a concern climbing back up
    assert not may_import("loadtest.capacity.profiles", "loadtest.generate.images")
    assert not may_import("loadtest.judging.compare", "loadtest.runtime.prom")  # a floor climbing
    assert not may_import("loadtest_shared.verdict", "loadtest.units")


def test_the_shared_package_needs_only_the_standard_library():
    """It runs in the Locust pods, where Python, Locust and nothing of this project is installed."""
    outside = {f"{m}: {n}" for m in MODULES if floor(m) == -1 for n in imported_names(m, TREES[m])
               if n.split(".")[0] not in (*sys.stdlib_module_names, "loadtest_shared")}
    assert not outside, sorted(outside)


# What loads a module from a file rather than by its name, or puts a folder on this process's path to do so.
PATH_LOADERS = ("spec_from_file_location", "SourceFileLoader", "run_path", "load_source")


def loads_by_path(tree: ast.AST) -> list[str]:
    """The places a module's code loads a module by path: a path loader named, or sys.path changed."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)) and (node.attr if isinstance(node, ast.Attribute)
                                                             else node.id) in PATH_LOADERS:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and any(a.name in PATH_LOADERS for a in node.names):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and ast.unparse(node.func.value) == "sys.path"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_is_loaded_by_path():
    loaders = {m: found for m, tree in TREES.items() if (found := loads_by_path(tree))}
    assert not loaders, loaders


@pytest.mark.parametrize("code", [
    "spec = importlib.util.spec_from_file_location('x', '/x.py')",
    "from importlib.util import spec_from_file_location",
    "sys.path.insert(0, str(PLUGIN))",
    "import runpy; runpy.run_path('x.py')",
])
def test_a_module_loaded_by_path_is_seen(code):
    assert loads_by_path(ast.parse(code))


def reexports(module: str) -> dict[str, str]:
    """The names `module` binds at its top level to another module's names (`X = verdict.X`): name -> source."""
    aliases = {}
    for node in TREES[module].body:
        if isinstance(node, ast.Assign):
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            targets = [t for target in node.targets
                       for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
            for target, value in zip(targets, values):
                if (isinstance(target, ast.Name) and isinstance(value, ast.Attribute)
                        and isinstance(value.value, ast.Name)):
                    aliases[target.id] = ast.unparse(value)
    return aliases


def test_no_module_passes_on_another_modules_names():
    """A module may name another's constant for itself; the names others read through it are a shim's: they read
    the module that defines them instead."""
    passed = []
    for module, found in GRAPH.items():
        for imported in found:
            stem = imported.rpartition(".")[2]
            aliases = reexports(imported)
            for node in ast.walk(TREES[module]):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == stem
                        and node.attr in aliases):
                    passed.append(f"{module} reads {stem}.{node.attr}, which is {aliases[node.attr]}")
                elif isinstance(node, ast.ImportFrom) and any(a.name in aliases for a in node.names) and \
                        (node.module or "").endswith(stem):
                    passed += [f"{module} imports {a.name} from {imported}, which is {aliases[a.name]}"
                               for a in node.names if a.name in aliases]
    assert not passed, "\n".join(sorted(set(passed)))


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


def test_no_module_imports_locust_or_gevent():
    """Importing Locust patches the process with gevent (threads become greenlets, and Ctrl-C is raised in whichever
    one runs: a several-release run's Ctrl-C hung in a region's thread): the CLI starts Locust, never imports it. A
    fresh interpreter, every module imported, neither in sys.modules."""
    code = ("import importlib, sys\n"
            f"for name in {sorted(m for m in MODULES if not m.endswith('__main__'))!r}:\n"
            "    importlib.import_module(name)\n"
            "print(sorted(m for m in ('locust', 'gevent') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]", f"imported by the package: {found.stdout}"


def test_argparse_lives_only_in_the_commands():
    users = [m for m, path in MODULES.items() if floor(m) < 2 and "argparse" in path.read_text()]
    assert not users, users


def test_the_graph_sees_imports():
    """A guard for the two tests above: the walker must find known edges, or they pass vacuously."""
    assert "loadtest.runtime.stack" in GRAPH["loadtest.runtime.localrun"]
    assert "loadtest_shared.verdict" in GRAPH["loadtest.runtime.sweeper"]
    assert "loadtest_shared.verdict" in GRAPH["loadtest_shared.checks"]
    assert {"loadtest.commands.local", "loadtest.commands.sweep"} <= set(MODULES)


def test_the_pods_modules_import_each_other_without_a_circle():
    """plugin/: the modules the pods load import each other by name, anywhere in their files (an import inside a
    function that breaks a circle at import time is still a circle)."""
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
