"""The chart's README (`helm show readme`) in the helm-docs layout: its generated parts, between markers.

The hand-written text around them is the README's own; `loadtest docs` rewrites only what lies between a pair of
markers: the header (version, description, TL;DR with this version), the node-type files (from the profiles) and the
values table (Key, Type, Default, Description from the `# --` comments of every values.yaml). A test fails when a
part is stale, so the README, Chart.yaml, the profiles and the values.yaml comments never drift.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from .. import paths
from ..capacity import chartpods, profiles
from . import committed

_KEY = re.compile(r"^(\s*)([A-Za-z0-9_]+):")
_TYPE = re.compile(r"^\((\w+)\)\s*")  # `# -- (int) ...` names a type the default cannot show (null)
EXAMPLE_REGISTRY = "oci://registry.example.com/charts"  # reserved for documentation (RFC 2606)


def documented_keys(values_file: Path) -> list[tuple[str, str]]:
    """(dotted key, description) for every key preceded by a `# --` comment, in file order."""
    rows, stack, doc = [], [], None
    for line in values_file.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            doc = [stripped[4:].strip()]
            continue
        if stripped.startswith("#") and doc is not None:
            doc.append(stripped[1:].strip())
            continue
        m = _KEY.match(line)
        if not m:
            doc = None if not stripped else doc
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        if doc is not None:
            rows.append((".".join(k for _, k in stack), " ".join(doc)))
        doc = None
    return rows


def _lookup(values: dict, dotted: str):
    node = values
    for part in dotted.split("."):
        node = node[part]
    return node


def value_type(default) -> str:
    """helm-docs' names for a default's type."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, str):
        return "string"
    if isinstance(default, list):
        return "list"
    return "object"


def component_rows(values_file: Path, prefix: str, skip: tuple[str, ...] = ()) -> list[str]:
    values = yaml.safe_load(values_file.read_text()) or {}
    lines = []
    for key, doc in documented_keys(values_file):
        if f"{key}.".startswith(skip):
            continue
        default = _lookup(values, key)
        if isinstance(default, dict) and default:
            continue  # a section: its keys have rows of their own
        named = _TYPE.match(doc)
        kind, doc = (named.group(1), doc[named.end():]) if named else (value_type(default), doc)
        shown = json.dumps(default, separators=(",", ":")) if not isinstance(default, str) else f'"{default}"'
        lines.append(f"| {prefix}{key} | {kind} | `{shown}` | {doc.replace('|', '&#124;')} |")
    return lines


def values_table(chart: Path = paths.CHART) -> str:
    subs = chartpods.subcharts(chart)
    # The umbrella's own keys; its `<subchart>.enabled` switches are documented by the subcharts themselves.
    rows = component_rows(chart / "values.yaml", "", skip=tuple(f"{s.name}." for s in subs))
    for sub in subs:
        rows += component_rows(sub / "values.yaml", f"{sub.name}.")
    return "\n".join(["| Key | Type | Default | Description |", "|-----|------|---------|-------------|", *rows])


def chart_metadata(chart: Path = paths.CHART) -> dict:
    return yaml.safe_load((chart / "Chart.yaml").read_text())


def header(chart: Path = paths.CHART) -> str:
    meta = chart_metadata(chart)
    version = meta["version"]
    return "\n".join([
        f"# {meta['name']}", "",
        f"Version: {version} · Type: {meta['type']} · AppVersion: {meta['appVersion']} (Locust) · "
        f"Kubernetes: `{meta['kubeVersion']}`", "",
        " ".join(meta["description"].split()), "",
        "## TL;DR", "",
        "```sh",
        f"helm pull {EXAMPLE_REGISTRY}/{meta['name']} --version {version} --untar  # the chart, its node-type files",
        f"helm install lt {EXAMPLE_REGISTRY}/{meta['name']} --version {version} -f loadtest/values/c5-xlarge.yaml",
        "kubectl port-forward svc/lt-locust-master 8089   # the web UI: http://127.0.0.1:8089",
        "```",
    ])


def node_types_table() -> str:
    rows = ["| File | Instance type | Nodes | Workers (1 vCPU each) | What for |", "|---|---|---|---|---|"]
    for p in profiles.PROFILES:
        rows.append(f"| `values/{p.file}` | {p.node_type or 'any (no selector)'} | {p.nodes} | {p.plan.replicas} | "
                    f"{p.description} |")
    return "\n".join(rows)


PARTS = {"header": header, "node-types": lambda chart: node_types_table(), "values": values_table}


def updated(readme: Path, chart: Path = paths.CHART) -> str:
    text = readme.read_text()
    for part, render in PARTS.items():
        text = committed.replace_part(text, part, render(chart), readme)
    return text
