"""Offline schemas for kubeconform, built once into the cache: the chart tests' helper.

Kubernetes kinds. The PyPI package kubernetes-validate ships the schemas of each Kubernetes minor version, one file
per kind (`deployment-apps-v1.json`, `pod-v1.json`: the names kubeconform builds from `{{ .ResourceKind }}{{ .KindSuffix }}`),
in two variants, `local` and `local-strict` (no additional properties). Their shared definitions sit in
`_definitions.json`, referenced as "/api/_definitions.json#/...": a path kubeconform cannot resolve. The converted
copy rewrites those references to the absolute file:// URI of the copied `_definitions.json`, and is written once
per version into ${XDG_CACHE_HOME:-~/.cache}/loadtest/kubeconform-schemas/<version>/{local,local-strict}/.

The prometheus-operator kinds the monitoring chart renders in operator mode: loadtest/generate/crdschemas.py converts
the CRDs scripts/install-monitoring-tools fetched (crd_schema_location, imported here for the chart tests).
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
from pathlib import Path

from loadtest.generate.crdschemas import build_once, cache_dir, crd_schema_location  # noqa: F401 (the chart tests' API)

PACKAGE = "kubernetes_validate"
PACKAGE_REF = '"/api/_definitions.json#'
VARIANTS = ("local", "local-strict")
STAMP = ".kubernetes-validate-version"


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
