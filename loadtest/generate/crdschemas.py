"""kubeconform schemas made from CRDs, and eksctl's schema, as the set-up scripts fetched them into the cache.

The set-up scripts copy pinned CRD YAMLs out of Go modules (checksummed by the go command), each folder stamped with
its version in `.version`: scripts/install-monitoring-tools the prometheus-operator's PodMonitor, ServiceMonitor and
PrometheusRule (prometheus-operator-crds/), scripts/install-cluster-tools Karpenter's NodePool and EC2NodeClass
(karpenter-crds/) and eksctl's ClusterConfig JSON schema (eksctl-schema/schema.json).

Each served version of a CRD becomes one JSON schema named the way kubeconform's
`{{ .ResourceKind }}{{ .KindSuffix }}.json` asks for it (`podmonitor-monitoring-v1.json`, `nodepool-karpenter-v1.json`),
written once per CRD version into kubeconform-schemas/<name>-<version>/. Objects that list their properties get
`additionalProperties: false` unless Kubernetes keeps unknown fields there, so a misspelt field fails, like
kubeconform's -strict does for the built-in kinds.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import yaml

from .. import paths

CRD_STAMP = ".crd-version"
PROMETHEUS_OPERATOR = "prometheus-operator"
KARPENTER = "karpenter"
# Which script fetches each set of CRDs, for the message when they are missing.
FETCHED_BY = {PROMETHEUS_OPERATOR: "scripts/install-monitoring-tools", KARPENTER: "scripts/install-cluster-tools"}


def cache_dir() -> Path:
    """Root of the converted schema trees."""
    return paths.CACHE / "kubeconform-schemas"


def crd_dir(name: str = PROMETHEUS_OPERATOR) -> Path:
    """Where the set-up script put the CRDs of `name` (prometheus-operator, karpenter)."""
    return paths.CACHE / f"{name}-crds"


def eksctl_schema_file() -> Path:
    return paths.CACHE / "eksctl-schema" / "schema.json"


def fetched_version(folder: Path) -> str | None:
    """The version the set-up script stamped on a folder it filled, None if it has not."""
    stamp = folder / ".version"
    return stamp.read_text().strip() if stamp.is_file() else None


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


def ensure_crd_schemas(crds: Path | None = None, name: str = PROMETHEUS_OPERATOR) -> Path:
    """The converted schemas of the CRDs of `name` in `crds` (default: where its set-up script put them), written on
    first use; returns their folder."""
    crds = crds or crd_dir(name)
    version = fetched_version(crds)
    if version is None:
        raise FileNotFoundError(f"no {name} CRDs in {crds}: run {FETCHED_BY[name]}")
    dest = cache_dir() / f"{name}-{version}"

    def fill(staging: Path) -> None:
        for path in sorted(crds.glob("*.yaml")):
            for file, schema in schema_files(yaml.safe_load(path.read_text())).items():
                (staging / file).write_text(json.dumps(schema, indent=1))

    return build_once(dest, CRD_STAMP, version, fill)


def crd_schema_location(crds: Path | None = None, name: str = PROMETHEUS_OPERATOR) -> str:
    """kubeconform's -schema-location template for the converted CRD schemas."""
    return str(ensure_crd_schemas(crds, name) / "{{ .ResourceKind }}{{ .KindSuffix }}.json")
