"""kubeconform schemas for the prometheus-operator objects the monitoring chart renders in operator mode, offline.

scripts/install-monitoring-tools copies the PodMonitor, ServiceMonitor and PrometheusRule CRDs of the pinned
prometheus-operator Go module (checksummed by the go command) into ${XDG_CACHE_HOME:-~/.cache}/loadtest/
prometheus-operator-crds/. Each CRD version's openAPIV3Schema becomes one JSON schema named the way kubeconform's
`{{ .ResourceKind }}{{ .KindSuffix }}.json` asks for it (`podmonitor-monitoring-v1.json`). Objects that list their
properties get `additionalProperties: false` unless Kubernetes keeps unknown fields there, so a misspelt field
fails, like kubeconform's -strict does for the built-in kinds.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from . import kubeschemas

STAMP = ".crd-version"


def cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "loadtest"


def crd_dir() -> Path:
    return cache() / "prometheus-operator-crds"


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


def ensure_schemas(crds: Path | None = None) -> Path:
    """The converted schemas of the installed CRDs, written on first use; returns their folder."""
    crds = crds or crd_dir()
    version_file = crds / ".version"
    if not version_file.is_file():
        raise FileNotFoundError(f"no prometheus-operator CRDs in {crds}: run scripts/install-monitoring-tools")
    version = version_file.read_text().strip()
    dest = cache() / "kubeconform-schemas" / f"prometheus-operator-{version}"

    def fill(staging: Path) -> None:
        for path in sorted(crds.glob("*.yaml")):
            for name, schema in schema_files(yaml.safe_load(path.read_text())).items():
                (staging / name).write_text(json.dumps(schema, indent=1))

    return kubeschemas.build_once(dest, STAMP, version, fill)


def schema_location(crds: Path | None = None) -> str:
    """kubeconform's -schema-location template for the converted CRD schemas."""
    return str(ensure_schemas(crds) / "{{ .ResourceKind }}{{ .KindSuffix }}.json")
