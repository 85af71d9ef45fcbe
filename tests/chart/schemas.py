"""Offline schemas for kubeconform, built once into the cache: the chart tests' helper.

Kubernetes kinds. The PyPI package kubernetes-validate ships the schemas of each Kubernetes minor version, one file
per kind (`deployment-apps-v1.json`, `pod-v1.json`: the names kubeconform builds from
`{{ .ResourceKind }}{{ .KindSuffix }}`), in two variants, `local` and `local-strict` (no additional properties).
Their shared definitions sit in `_definitions.json`, referenced as "/api/_definitions.json#/$defs/...": a path
kubeconform cannot resolve. The converted copy gives each kind the definitions it reaches, under its own "$defs"
(the references made local), and is written once per version into
${XDG_CACHE_HOME:-~/.cache}/loadtest/kubeconform-schemas/<version>/{local,local-strict}/. (With one shared 1.4 MB
`_definitions.json` instead, kubeconform parsed it again for every kind: 4.7 s of CPU to check one release's 67
objects, 0.24 s with each kind's own.)

The prometheus-operator kinds the monitoring chart renders in operator mode: loadtest/generate/crdschemas.py converts
the CRDs scripts/install-monitoring-tools fetched (crd_schema_location, imported here for the chart tests).
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
from pathlib import Path

from loadtest.generate.crdschemas import build_once, cache_dir, crd_schema_location  # noqa: F401 (the chart tests' API)

PACKAGE = "kubernetes_validate"
SHARED_REF = "/api/_definitions.json#/$defs/"  # how a kind's file refers to a shared definition
LOCAL_REF = "#/$defs/"  # how the shared definitions refer to each other, and the converted files to their own
VARIANTS = ("local", "local-strict")
STAMP = ".kubernetes-validate-version"
LAYOUT = "each kind with its own $defs"  # in the stamp: a tree of an older layout is built again


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
            shared = json.loads((folder / "_definitions.json").read_text())["$defs"]
            for schema in folder.iterdir():
                if schema.name.endswith(".json") and schema.name != "_definitions.json":
                    (out / schema.name).write_text(json.dumps(with_own_definitions(json.loads(schema.read_text()),
                                                                                   shared)))

    return build_once(dest, STAMP, f"{package_version}, {LAYOUT}", fill)


def with_own_definitions(schema: dict, shared: dict) -> dict:
    """A kind's schema whose references to the shared definitions point into its own "$defs", holding every shared
    definition it reaches."""
    own: dict = {}

    def localize(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and value.startswith((SHARED_REF, LOCAL_REF)):
                    name = value.rpartition("/")[2]
                    node[key] = LOCAL_REF + name
                    if name not in own:
                        own[name] = shared[name]  # rewritten in place: its references are local already
                        localize(own[name])
                else:
                    localize(value)
        elif isinstance(node, list):
            for item in node:
                localize(item)

    localize(schema)
    schema["$defs"] = own
    return schema


def schema_location(k8s_version: str = "1.33") -> str:
    """kubeconform's -schema-location template for the converted tree (strict with -strict, else not)."""
    return str(ensure_schemas(k8s_version) / "local{{ .StrictSuffix }}" / "{{ .ResourceKind }}{{ .KindSuffix }}.json")
