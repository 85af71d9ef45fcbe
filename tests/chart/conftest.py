"""Shared helpers of the chart tests: the tools, and each chart rendered once per set of values."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

import schemas
from helpers import manifests
from loadtest import paths
from loadtest.runtime import tools

REPO, CHART = paths.HOME, paths.CHART
LOCUST_CHART = CHART / "charts" / "locust"
# Each values file (new ones are picked up as they are added), and None: the chart's defaults.
VALUE_CASES = [None, *sorted(paths.VALUES.glob("*.yaml"))]
RELEASE = "lt"
NAMESPACE = "loadtest"
K8S_VERSION = "1.33"


def find_tool(name: str) -> str:
    """A tool scripts/setup installs (loadtest.runtime.tools looks it up); a missing tool fails the test."""
    try:
        return tools.find(name)
    except tools.ToolMissing as e:
        pytest.fail(str(e), pytrace=False)


@dataclass
class Rendered:
    """The objects of one `helm template` run."""

    text: str
    docs: list[dict] = field(init=False)

    def __post_init__(self):
        self.docs = manifests(self.text)

    def of_kind(self, kind: str) -> list[dict]:
        return [d for d in self.docs if d["kind"] == kind]

    def get(self, kind: str, name: str) -> dict:
        found = [d for d in self.of_kind(kind) if d["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
        return found[0]

    def pod_specs(self) -> list[tuple[str, dict]]:
        """(kind/name, pod spec) of every object that runs pods, test hook pods included."""
        specs = []
        for d in self.docs:
            spec = d.get("spec") or {}
            if d["kind"] == "Pod":
                specs.append((f"Pod/{d['metadata']['name']}", spec))
            elif "template" in spec:
                specs.append((f"{d['kind']}/{d['metadata']['name']}", spec["template"]["spec"]))
            elif "jobTemplate" in spec:
                specs.append((f"{d['kind']}/{d['metadata']['name']}", spec["jobTemplate"]["spec"]["template"]["spec"]))
        return specs


class Helm:
    def __init__(self, path: str):
        self.path = path
        self._cache: dict[tuple, Rendered] = {}

    def run(self, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
        return subprocess.run([self.path, *args], cwd=cwd, capture_output=True, text=True, timeout=120)

    def template(self, *args: str, chart: Path = CHART) -> subprocess.CompletedProcess:
        return self.run("template", RELEASE, str(chart), "-n", NAMESPACE, *args)

    def refusal(self, *args: str) -> str:
        """What helm says when it refuses to render the umbrella chart with `args` (a render fails the test)."""
        result = self.template(*args)
        assert result.returncode != 0, f"{args} rendered"
        return result.stderr

    def assert_refused(self, args, says: str) -> None:
        """Helm refuses to render the umbrella chart with `args`, and its message holds `says` (the value, the fix)."""
        stderr = self.refusal(*args)
        assert says in stderr, stderr

    def notes(self, tmp_path: Path, *args: str) -> str:
        """NOTES.txt as `helm install` prints it: rendered through a probe template in a copy of the chart
        (`helm template` drops NOTES.txt, and `helm install --dry-run` needs a cluster)."""
        chart = tmp_path / "loadtest"
        shutil.copytree(CHART, chart)
        (chart / "templates" / "notes-probe.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n"
            '  notes: {{ include "loadtest/templates/NOTES.txt" . | toJson }}\n'
        )
        result = self.template("--show-only", "templates/notes-probe.yaml", *args, chart=chart)
        assert result.returncode == 0, result.stderr
        return yaml.safe_load(result.stdout)["data"]["notes"]

    def render(self, values_file: Path | None = None, *args: str) -> Rendered:
        """The umbrella chart rendered with a values file (None: defaults) and extra helm arguments; cached."""
        key = (values_file, args)
        if key not in self._cache:
            full = (*(["-f", str(values_file)] if values_file else []), *args)
            result = self.template(*full)
            assert result.returncode == 0, f"helm template {' '.join(full)} failed:\n{result.stderr}"
            self._cache[key] = Rendered(result.stdout)
        return self._cache[key]


def case_id(values_file: Path | None) -> str:
    return values_file.stem if values_file else "defaults"


@pytest.fixture(scope="session")
def helm() -> Helm:
    return Helm(find_tool("helm"))


@pytest.fixture(scope="session")
def kubeconform() -> str:
    return find_tool("kubeconform")


@pytest.fixture(scope="session")
def nginx() -> str:
    return find_tool("nginx")


@pytest.fixture(scope="session")
def schema_location() -> str:
    return schemas.schema_location(K8S_VERSION)


@pytest.fixture(scope="session")
def locust_defaults() -> dict:
    return yaml.safe_load((LOCUST_CHART / "values.yaml").read_text())


@pytest.fixture(scope="session", params=VALUE_CASES, ids=case_id)
def values_file(request) -> Path | None:
    """Each values file in values/, and the defaults."""
    return request.param


@pytest.fixture(scope="session")
def rendered(helm, values_file) -> Rendered:
    return helm.render(values_file)


@pytest.fixture(scope="session")
def case_values(values_file) -> dict:
    """The values the case sets ({} for the defaults)."""
    return yaml.safe_load(values_file.read_text()) if values_file else {}
