"""Offline schemas for kubeconform, built once into the cache: the chart tests' helper.

Kubernetes kinds. The PyPI package kubernetes-validate ships the schemas of each Kubernetes minor version, one file
per kind (`deployment-apps-v1.json`, `pod-v1.json`: the names kubeconform builds from `{{ .ResourceKind }}{{ .KindSuffix }}`),
in two variants, `local` and `local-strict` (no additional properties). Their shared definitions sit in
`_definitions.json`, referenced as "/api/_definitions.json#/...": a path kubeconform cannot resolve. The converted
copy rewrites those references to the absolute file:// URI of the copied `_definitions.json`, and is written once
per version into ${XDG_CACHE_HOME:-~/.cache}/loadtest/kubeconform-schemas/<version>/{local,local-strict}/.

The prometheus-operator kinds the monitoring chart renders in operator mode. scripts/install-monitoring-tools copies
the PodMonitor, ServiceMonitor and PrometheusRule CRDs of the pinned prometheus-operator Go module (checksummed by the go command) into ${XDG_CACHE_HOME:-~/.cache}/loadtest/
prometheus-operator-crds/. Each CRD version's openAPIV3Schema becomes one JSON schema named the way kubeconform's
`{{ .ResourceKind }}{{ .KindSuffix }}.json` asks for it (`podmonitor-monitoring-v1.json`). Objects that list their
properties get `additionalProperties: false` unless Kubernetes keeps unknown fields there, so a misspelt field
fails, like kubeconform's -strict does for the built-in kinds.
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import shutil
import tempfile
from pathlib import Path

import yaml

from loadtest import paths

PACKAGE = "kubernetes_validate"
PACKAGE_REF = '"/api/_definitions.json#'
VARIANTS = ("local", "local-strict")
STAMP = ".kubernetes-validate-version"


def cache_dir() -> Path:
    """Root of the converted schema trees."""
    return paths.CACHE / "kubeconform-schemas"


def build_once(dest: Path, stamp_file: str, version: str, fill) -> Path:
    """dest, filled by fill(staging_folder) unless it already holds `version`; published by one rename, so a run that
    dies half-way never leaves a tree that looks complete."""
    if (dest / stamp_file).is_file() and (dest / stamp_file).read_text() == version:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        fill(staging)
        (staging / stamp_file).write_text(version)
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def ensure_schemas(k8s_version: str = "1.33") -> Path:
    """The converted schema tree of a Kubernetes minor version ("1.33"), written on first use; returns its folder."""
    package_version = importlib.metadata.version("kubernetes-validate")
    dest = cache_dir() / k8s_version
    source = importlib.resources.files(PACKAGE) / "kubernetes-json-schema"

    def fill(staging: Path) -> None:
        for variant in VARIANTS:
            folder = source / f"v{k8s_version}.0-{variant}"
            if not folder.is_dir():
                raise ValueError(f"kubernetes-validate {package_version} has no schemas for Kubernetes {k8s_version}")
            out = staging / variant
            out.mkdir()
            # The URI the finished tree will have (staging is renamed to dest).
            definitions = f'"{(dest / variant / "_definitions.json").as_uri()}#'
            for schema in folder.iterdir():
                if schema.name.endswith(".json"):
                    (out / schema.name).write_text(schema.read_text().replace(PACKAGE_REF, definitions))

    return build_once(dest, STAMP, package_version, fill)


def schema_location(k8s_version: str = "1.33") -> str:
    """kubeconform's -schema-location template for the converted tree (strict with -strict, else not)."""
    return str(ensure_schemas(k8s_version) / "local{{ .StrictSuffix }}" / "{{ .ResourceKind }}{{ .KindSuffix }}.json")




CRD_STAMP = ".crd-version"


def crd_dir() -> Path:
    return paths.CACHE / "prometheus-operator-crds"


def strict(schema):
    """A copy of a structural schema in which objects with listed properties accept no other property."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def schema_files(crd: dict) -> dict[str, dict]:
    """kubeconform file name -> JSON schema, for each served version of a CRD."""
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    files = {}
    for version in crd["spec"]["versions"]:
        if version.get("served"):
            schema = strict(version["schema"]["openAPIV3Schema"])
            files[f"{kind.lower()}-{group.split('.')[0]}-{version['name']}.json"] = schema
    return files


def ensure_crd_schemas(crds: Path | None = None) -> Path:
    """The converted schemas of the installed CRDs, written on first use; returns their folder."""
    crds = crds or crd_dir()
    version_file = crds / ".version"
    if not version_file.is_file():
        raise FileNotFoundError(f"no prometheus-operator CRDs in {crds}: run scripts/install-monitoring-tools")
    version = version_file.read_text().strip()
    dest = cache_dir() / f"prometheus-operator-{version}"

    def fill(staging: Path) -> None:
        for path in sorted(crds.glob("*.yaml")):
            for name, schema in schema_files(yaml.safe_load(path.read_text())).items():
                (staging / name).write_text(json.dumps(schema, indent=1))

    return build_once(dest, CRD_STAMP, version, fill)


def crd_schema_location(crds: Path | None = None) -> str:
    """kubeconform's -schema-location template for the converted CRD schemas."""
    return str(ensure_crd_schemas(crds) / "{{ .ResourceKind }}{{ .KindSuffix }}.json")
