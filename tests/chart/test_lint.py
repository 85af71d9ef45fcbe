"""helm lint of the umbrella chart and of the repository-wide chart; values documentation; schema files."""
from __future__ import annotations

import json
import re
import tarfile

import jsonschema
import pytest

from loadtest import paths

REPO, CHART = paths.HOME, paths.CHART
LOCUST_CHART = CHART / "charts" / "locust"
SCHEMAS = sorted(CHART.rglob("values.schema.json"))
VALUES_YAMLS = [REPO / "values.yaml", *sorted(CHART.rglob("values.yaml"))]


def assert_lint_clean(result):
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "[WARNING]" not in output and "[ERROR]" not in output, output


def test_umbrella_lints_strict(helm, values_file):
    args = ["-f", str(values_file)] if values_file else []
    assert_lint_clean(helm.run("lint", "--strict", str(CHART), *args))


def test_repository_chart_lints_strict(helm):
    assert_lint_clean(helm.run("lint", "--strict", "."))


def test_repository_chart_renders_the_umbrella(helm):
    result = helm.run("template", "lt", ".")
    assert result.returncode == 0, result.stderr
    assert "name: lt-locust-worker" in result.stdout


def test_repository_chart_holds_only_chart_material(helm, tmp_path):
    result = helm.run("package", ".", "-d", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (package,) = tmp_path.glob("*.tgz")
    with tarfile.open(package) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames()]
    top = {n for n in names if "/" not in n}
    assert top <= {"Chart.yaml", "Chart.lock", "values.yaml", ".helmignore"}, top
    stray = [n for n in names if "/" in n and not n.startswith("charts/loadtest/")]
    assert not stray, f"not chart material: {stray}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def undocumented_keys(text: str) -> list[str]:
    """Keys of a values.yaml without a helm-docs `# --` comment right above (list items are values, not keys)."""
    missing, comments, list_indent = [], [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append(stripped)
            continue
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("- "):
            list_indent = indent if list_indent is None else min(list_indent, indent)
        elif (key := re.match(r"([A-Za-z0-9_.-]+):", stripped)) and (list_indent is None or indent <= list_indent):
            list_indent = None
            if not any(c.startswith("# --") for c in comments):
                missing.append(f"line {number}: {key.group(1)}")
        comments = []
    return missing


@pytest.mark.parametrize("path", VALUES_YAMLS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_value_is_documented(path):
    assert undocumented_keys(path.read_text()) == []


def test_values_keys_are_camel_case():
    for path in VALUES_YAMLS:
        for line in path.read_text().splitlines():
            key = re.match(r"\s*([A-Za-z0-9_-]+):", line)
            if key and not line.lstrip().startswith("#"):
                assert re.fullmatch(r"[a-z][A-Za-z0-9]*", key.group(1)), f"{path}: {key.group(1)}"


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: str(p.relative_to(REPO)))
def test_schema_is_valid_draft7(path):
    schema = json.loads(path.read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)


def test_node_type_enum_sits_where_the_generator_rewrites_it():
    """loadtest.generate.valuesgen rewrites `$defs.nodeType.enum` from the instance catalog in every chart that has
    it."""
    enums = {}
    for path in SCHEMAS:
        schema = json.loads(path.read_text())
        if "nodeType" in schema.get("properties", {}):
            assert schema["properties"]["nodeType"] == {"$ref": "#/$defs/nodeType"}, path
            enums[path.parent.name] = schema["$defs"]["nodeType"]["enum"]
    assert set(enums) == {"locust", "backend", "nginx", "haproxy", "monitoring"}
    assert all(enum == enums["locust"] for enum in enums.values())
    assert enums["locust"][0] == "" and "c5.xlarge" in enums["locust"]


def test_every_scenario_has_a_locustfile():
    scenarios = json.loads((LOCUST_CHART / "values.schema.json").read_text())["$defs"]["scenario"]["enum"]
    for scenario in scenarios:
        assert (LOCUST_CHART / "locustfiles" / f"{scenario}.py").is_file(), scenario


DEFINE = re.compile(r'\{\{-?\s*define\s+"([^"]+)"')


@pytest.mark.parametrize("chart", sorted(p.parent for p in CHART.rglob("Chart.yaml")), ids=lambda p: p.name)
def test_each_named_template_sits_in_its_concerns_helper_file_named_after_it(chart):
    """Bitnami's layout: a chart's named templates live in templates/_<concern>.tpl, each named
    <chart>.<concern>.<what>, so a reader finds a define from its name; none is defined inside a manifest."""
    templates = chart / "templates"
    misplaced = [f"{path.relative_to(CHART)}: {name}" for path in sorted(templates.rglob("*")) if path.is_file()
                 for name in DEFINE.findall(path.read_text())
                 if not (path.name.startswith("_") and path.suffix == ".tpl"
                         and name.startswith(f"{chart.name}.{path.stem[1:]}."))]
    assert not misplaced, misplaced
