"""Every value of the chart, set wrong as a new user would set it: a word for a number or a switch, a number below
its minimum or above its maximum, an unknown choice, a string its pattern refuses, a key the chart does not have.
Helm refuses each before anything is deployed, and its message names the value. The table is generated from the
schemas themselves (the umbrella's and each subchart's), so a new value joins it without anyone adding it by hand;
tests/chart/test_values_schema.py holds the hand-picked cases and the edge values that must render.

Below, the same walk finds each value of a class (a port, a quantity, an address, a CIDR, a label, a duration...)
and tries every wrong value of its class (#40)."""
from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import CHART

from loadtest.capacity.sizing import MAX_WORKERS_PER_MASTER as MAX_WORKERS
from loadtest.generate import valuesgen

# A subchart that is off by default validates its values only when it is on.
OFF_BY_DEFAULT = {"nginx", "haproxy", "monitoring"}
# Strings a pattern is tried with: the first one the pattern refuses is the case.
WRONG_STRINGS = (" two words ", "UPPER_case!", "-")
FORMATS = "$formats"  # where resolve() notes the shared formats (`$defs`) a value refers to
KEY = "key"  # the key a case gives a map (nodeSelector, matchLabels, a selector)


def schema_of(chart: Path) -> dict:
    return json.loads((chart / "values.schema.json").read_text())


def resolve(node: dict, root: dict) -> dict:
    """The schema a node refers to, with the names of the `$defs` it went through under FORMATS."""
    formats = ()
    while "$ref" in node:
        name = node["$ref"].split("/")[-1]
        formats += (name,)
        node = {**root["$defs"][name], **{k: v for k, v in node.items() if k != "$ref"}}
    return {**node, FORMATS: formats} if formats else node


def leaves(node: dict, root: dict, path: tuple = (), deep: bool = False):
    """(path, schema) of every value the schema describes, objects included (for their unknown keys); `deep` goes
    into the item of a list (index 0), the values of a map (key KEY) and each schema of an allOf as well."""
    node = resolve(node, root)
    yield path, node
    for key, child in node.get("properties", {}).items():
        yield from leaves(child, root, (*path, key), deep)
    if deep:
        for part in node.get("allOf", []):
            yield from leaves(part, root, path, deep)
        if isinstance(node.get("items"), dict):
            yield from leaves(node["items"], root, (*path, 0), deep)
        if isinstance(node.get("additionalProperties"), dict):
            yield from leaves(node["additionalProperties"], root, (*path, KEY), deep)


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


# Classes of values (#40), walked from every values.schema.json: each port, quantity, address, CIDR, label, duration,
# CPU set and object name the charts take is found, by the shared format its schema refers to
# (loadtest.generate.valuesgen FORMATS) or by its name, and must refuse every wrong value of its kind. A value added
# later is covered as soon as it refers to a format or is named like its kind. Python's jsonschema tries each value
# against the same schema files (cheap), and one `helm template` per wrong value proves that Helm refuses it at every
# place at once, naming each.
CHARTS = {"loadtest": CHART, **{p.parent.name: p.parent for p in sorted(CHART.glob("charts/*/values.schema.json"))}}


@dataclass(frozen=True)
class Kind:
    formats: tuple[str, ...]  # the shared formats of this kind (loadtest.generate.valuesgen.FORMATS)
    names: str  # a value whose dotted path matches this is of the kind whatever its schema says...
    bad: tuple  # ...and refuses each of these wrong values
    good: tuple = ()  # what every format of the kind takes
    type: str = "string"  # the JSON type a value must admit to be of the kind by its name
    keys: bool = False  # the wrong values are a map's keys, not its values


KINDS = {
    "port": Kind(("port", "unprivilegedPort"), r"([pP]ort|(^|\.)ports\.\w+)$", (0, 65536, "http", 8080.5, -1, 70000),
                 (1024, 8080, 65535), type="integer"),
    "upstream": Kind(("upstream",), r"(^|\.)upstream(\.https?)?$",
                     ("backend:0", "backend:65536", "backend", "back end:80", "backend:99999", ":80", "backend:80:80"),
                     ("", "lt-backend:80", "10.0.0.1:8443", "backend.loadtest.svc.cluster.local:65535")),
    "url": Kind(("url", "endpoint"), r"(^|\.)(host|endpoint)$",
                ("http://backend:0", "http://backend:65536", "backend:80", "ftp://backend", "http://", "http://a b"),
                ("", "http://198.18.0.1", "https://s3.eu-west-1.amazonaws.com:443")),
    "bind address": Kind(("bindAddress",), r"bindAddress$",
                         ("999.1.1.1:", "127.0.0.1", "localhost:", "[zz::1]:", "1.2.3:", "127.0.0.1:80", "256.0.0.1:"),
                         ("", "127.0.0.1:", "0.0.0.0:", "[::1]:", "[::]:", "[fd00::1]:")),
    "CIDR": Kind(("cidr",), r"(cidr|SourceRanges\.0|except\.0)$",
                 ("999.1.1.1/99", "10.0.0.0/33", "10.0.0.0", "::1/129", "office", "10.0.0/8", "1.2.3.4/-1"),
                 ("203.0.113.0/24", "0.0.0.0/0", "10.1.2.3/32", "::/0", "fd00::/8", "2001:db8::1/128")),
    "CPU": Kind(("cpu",), r"(^|\.)cpu$", ("0", "0m", 0, "lots", "0.0", "-1", "-500m", "1.5 cores", "100Mi"),
                ("100m", "0.1", "1", 2, 1.5, "1500m")),
    "memory": Kind(("memory",), r"(^|\.)memory$",
                   ("512", "0Mi", 512, "512m", "0", "0.0Gi", "lots", "-1Gi", "512mi", "1.5 Gi", "Mi"),
                   ("512Mi", "1Gi", "0.5Gi", "1.5G", "64Mi", "1Ti")),
    "volume size": Kind(("storage",), r"([sS]torageSize|\.size)$", ("0Gi", "10", 10, "lots", "-1Gi", "10 Gi"),
                        ("10Gi", "500Mi", "1Ti")),
    "duration": Kind(("locustDuration", "optionalLocustDuration", "nginxDuration", "haproxyDuration",
                      "prometheusDuration"), r"(Time|[tT]imeout|[rR]etention|Interval)$",
                     ("0s", "soon", "1s1h", "-5s", "0", "1.5s", "5 parsecs", "s"), ("30s", "5m", "1h")),
    "CPU set": Kind(("cpuSet",), r"cpuSet$", ("a", "1,2", "1--2", -1, "-1", "1-", " 1"), ("", "0", "2-3", "0 2", 3)),
    "label value": Kind(("labelValue",), r"(tolerations\.0\.value|[lL]abelValue)$",
                        ("a b", "-lead", "x" * 64, "a/b", "trail-", "é"),
                        ("", "prometheus", "c5.xlarge", "a_b-c.d", "x" * 63)),
    "label key": Kind(("labelName",), r"(tolerations\.0\.key|topologyKey)$",
                      ("a b", "Example.com/x", "a/b/c", "x" * 64, "-a", "/x"),
                      ("app", "app.kubernetes.io/name", "topology.kubernetes.io/zone")),
    "label key of a map": Kind((), r"(nodeSelector|matchLabels|selector)$", ("a b", "-a", "Example.com/x", "a/b/c"),
                               type="object", keys=True),
    "object name": Kind(("optionalObjectName", "optionalNamespaceName"),
                        r"(existing[A-Z]\w*|[sS]ecretName|ingressClass|storageClass|secretNamespace|Account\.name)$",
                        ("My_Secret", "a b", "x" * 254, "-x", "x."), ("", "my-secret", "a1")),
    # One master's measured ceiling (loadtest/capacity/sizing.py, benchmarks/master.py).
    "worker count": Kind(("workerReplicas",), r"worker\.replicas$",
                         (-1, MAX_WORKERS + 1, "many", 2.5), (0, 1, MAX_WORKERS), type="integer"),
}


def dotted(path: tuple) -> str:
    return ".".join(map(str, path))


def admits(node: dict, kind: str) -> bool:
    types = node.get("type", "object" if "properties" in node or "additionalProperties" in node else None)
    return kind in (types if isinstance(types, list) else [types])


def members() -> dict[str, list[tuple[str, tuple]]]:
    """Kind -> (chart, path) of each value of that kind in the charts' schemas."""
    found = {kind: set() for kind in KINDS}
    for chart, folder in CHARTS.items():
        schema = schema_of(folder)
        for path, node in leaves(schema, schema, deep=True):
            for kind, k in KINDS.items():
                if set(node.get(FORMATS, ())) & set(k.formats) or (re.search(k.names, dotted(path))
                                                                     and admits(node, k.type)):
                    found[kind].add((chart, path))
    return {kind: sorted(found[kind], key=str) for kind in KINDS}


MEMBERS = members()


def with_value(values: dict, path: tuple, value, keys: bool = False) -> dict:
    """A copy of `values` with `value` at `path` (its containers made as needed); with `keys`, the map at `path`
    holds `value` as its one key."""
    values = copy.deepcopy(values)
    node, parts = values, list(path)
    for part, after in zip(parts, [*parts[1:], None]):
        if part == parts[-1] and after is None:
            break
        empty = [] if isinstance(after, int) else {}
        if isinstance(part, int):
            if not node:
                node.append(empty)
            node = node[part]
        else:
            if not isinstance(node.get(part), (dict, list)):
                node[part] = empty
            node = node[part]
    last = parts[-1]
    value = {value: "x"} if keys else value
    if isinstance(last, int):
        node[:1] = [value]
    else:
        node[last] = value
    return values


@functools.cache
def validator(chart: str) -> tuple[jsonschema.Draft7Validator, dict]:
    folder = CHARTS[chart]
    return (jsonschema.Draft7Validator(schema_of(folder)),
            yaml.safe_load((folder / "values.yaml").read_text()))


def refused_at(chart: str, path: tuple, value, keys: bool = False) -> bool:
    check, defaults = validator(chart)
    return tuple(path) in {tuple(e.absolute_path) for e in check.iter_errors(with_value(defaults, path, value, keys))}


def test_every_shared_format_has_a_kind_and_every_kind_has_values():
    kinds = {f for k in KINDS.values() for f in k.formats}
    leaves = {name for name, d in valuesgen.FORMATS.items() if d.get("type") not in ("object", "array")}
    assert leaves <= kinds, f"give the formats {sorted(leaves - kinds)} a kind above, with their wrong values"
    assert all(MEMBERS.values()), [kind for kind, found in MEMBERS.items() if not found]


@pytest.mark.parametrize("kind", KINDS)
def test_every_format_of_a_kind_takes_its_good_values(kind):
    for name in KINDS[kind].formats:
        check = jsonschema.Draft7Validator({"$defs": valuesgen.FORMATS, "$ref": f"#/$defs/{name}"})
        refused = [v for v in KINDS[kind].good if not check.is_valid(v)]
        assert not refused, f"{name} refuses {refused}"


@pytest.mark.parametrize("kind,chart,path", [(kind, chart, path) for kind, found in MEMBERS.items()
                                             for chart, path in found],
                         ids=lambda v: dotted(v) if isinstance(v, tuple) else v)
def test_every_value_of_a_kind_refuses_its_wrong_values(kind, chart, path):
    accepted = [v for v in KINDS[kind].bad if not refused_at(chart, path, v, KINDS[kind].keys)]
    assert not accepted, f"{chart}: {dotted(path)} accepts {accepted}: refer to a {kind} format of " \
                         f"loadtest/generate/valuesgen.py FORMATS"


def helm_says(stderr: str) -> set[tuple[str, str]]:
    """(chart, dotted path) of each value Helm's schema check names."""
    named, chart = set(), None
    for line in stderr.splitlines():
        if re.fullmatch(r"[a-z]+:", line):
            chart = line[:-1]
        elif line.startswith("- ") and chart:
            named.add((chart, line[2:].split(": ", 1)[0]))
    return named


HELM_PROOFS = 4  # wrong values of each kind tried with Helm as well, the first of its list


@pytest.mark.parametrize("kind,bad", [(kind, bad) for kind, k in KINDS.items() for bad in k.bad[:HELM_PROOFS]],
                         ids=lambda v: repr(v)[:20] if not isinstance(v, str) or v not in KINDS else v)
def test_helm_refuses_a_wrong_value_at_every_place_of_its_kind(helm, tmp_path, kind, bad):
    values = {"nginx": {"enabled": True}, "haproxy": {"enabled": True}, "monitoring": {"enabled": True}}
    for chart, path in MEMBERS[kind]:
        if chart == "loadtest":
            values = with_value(values, path, bad, KINDS[kind].keys)
        else:
            values[chart] = with_value(values[chart] if chart in values else {}, path, bad, KINDS[kind].keys)
    (tmp_path / "values.json").write_text(json.dumps(values))
    result = helm.template("-f", str(tmp_path / "values.json"))
    assert result.returncode != 0, f"{kind} {bad!r} rendered"
    missing = {(c, dotted(p)) for c, p in MEMBERS[kind]} - helm_says(result.stderr)
    assert not missing, f"helm named no {sorted(missing)}:\n{result.stderr}"
