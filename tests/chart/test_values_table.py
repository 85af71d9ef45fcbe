"""Every value of the chart, set wrong as a new user would set it: a word for a number or a switch, a number below
its minimum or above its maximum, an unknown choice, a string its pattern refuses, a key the chart does not have.
Helm refuses each before anything is deployed, and its message names the value. The table is generated from the
schemas themselves (the umbrella's and each subchart's), so a new value joins it without anyone adding it by hand;
tests/chart/test_values_schema.py holds the hand-picked cases and the edge values that must render."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CHART

# A subchart that is off by default validates its values only when it is on.
OFF_BY_DEFAULT = {"nginx", "haproxy", "monitoring"}
# Strings a pattern is tried with: the first one the pattern refuses is the case.
WRONG_STRINGS = (" two words ", "UPPER_case!", "-")


def schema_of(chart: Path) -> dict:
    return json.loads((chart / "values.schema.json").read_text())


def resolve(node: dict, root: dict) -> dict:
    while "$ref" in node:
        node = {**root["$defs"][node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def leaves(node: dict, root: dict, path: tuple[str, ...] = ()):
    """(path, schema) of every value the schema describes, objects included (for their unknown keys)."""
    node = resolve(node, root)
    yield path, node
    for key, child in node.get("properties", {}).items():
        yield from leaves(child, root, (*path, key))


def wrong_values(node: dict) -> list[tuple[str, str, str]]:
    """(helm flag, value, label) of each way to set this value wrong."""
    kind = node.get("type")
    found = []
    if kind == "boolean":
        found.append(("--set", "maybe", "maybe"))
    if kind in ("integer", "number"):
        found.append(("--set", "many", "many"))
        if "minimum" in node:
            found.append(("--set", f"{node['minimum'] - 1:g}", "below-minimum"))
        if "exclusiveMinimum" in node:
            found.append(("--set", f"{node['exclusiveMinimum']:g}", "at-exclusive-minimum"))
        if "maximum" in node:
            found.append(("--set", f"{node['maximum'] + 1:g}", "above-maximum"))
    if kind == "string" and "enum" in node:
        found.append(("--set-string", "bogus-choice", "bogus-choice"))
    elif kind == "string" and "pattern" in node:
        refused = [s for s in WRONG_STRINGS if not re.search(node["pattern"], s)]
        if refused:
            found.append(("--set-string", refused[0], "refused-by-pattern"))
    if kind == "object" and node.get("additionalProperties") is False and "patternProperties" not in node:
        found.append(("--set", None, "unknown-key"))
    return found


def cases() -> dict[str, tuple[list[str], str]]:
    table = {}
    umbrella = schema_of(CHART)
    subcharts = {p.name: schema_of(p) for p in sorted((CHART / "charts").iterdir())
                 if (p / "values.schema.json").is_file() and p.name in umbrella["properties"]}
    for name, root in [("loadtest", umbrella), *subcharts.items()]:
        prefix = () if name == "loadtest" else (name,)
        turn_on = ["--set", f"{name}.enabled=true"] if name in OFF_BY_DEFAULT else []
        for path, node in leaves(root, root):
            if name == "loadtest" and path and path[0] in subcharts:
                continue  # the subchart's own schema is the one that says it
            if any(not re.match(r"^[A-Za-z0-9_]+$", key) for key in path):
                continue
            for flag, value, label in wrong_values(node):
                full = ".".join((*prefix, *path))
                if value is None:
                    args, says = ["--set", f"{full + '.' if full else ''}bogusKey=1"], "Additional property bogusKey"
                else:
                    args, says = [flag, f"{full}={value}"], ".".join(path) or name
                on = [] if full == f"{name}.enabled" else turn_on
                table[f"{full or name}:{label}"] = ([*on, *args], says)
    return table


CASES = cases()


def test_the_table_covers_every_chart():
    charts = {case.split(".")[0].split(":")[0] for case in CASES}
    assert {"locust", "backend", "nginx", "haproxy", "monitoring"} <= charts, charts
    assert len(CASES) >= 100, len(CASES)


@pytest.mark.parametrize("case", CASES)
def test_every_wrong_value_is_refused_naming_it(helm, case):
    args, says = CASES[case]
    stderr = helm.refusal(*args)
    assert "Error:" in stderr and "panic" not in stderr, stderr
    assert says in stderr, f"the refusal does not name {says}: {stderr}"
