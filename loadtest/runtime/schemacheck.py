"""The files `loadtest plan --write-cluster/--write-karpenter` writes, checked offline against their tools' own
schemas as the set-up scripts fetched them: eksctl's ClusterConfig JSON schema (with jsonschema, in
loadtest.capacity.clusterfiles) and Karpenter's NodePool and EC2NodeClass CRDs (with kubeconform, here)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..capacity import clusterfiles
from ..errors import RunFailed
from ..generate import crdschemas
from . import tools


class SchemaMissing(FileNotFoundError):
    pass


def eksctl_schema() -> tuple[dict, str]:
    """eksctl's ClusterConfig JSON schema as scripts/install-cluster-tools fetched it, and its eksctl version."""
    path = crdschemas.eksctl_schema_file()
    version = crdschemas.fetched_version(path.parent)
    if version is None or not path.is_file():
        raise SchemaMissing(f"no eksctl schema in {path.parent}: run scripts/install-cluster-tools")
    return json.loads(path.read_text()), version


def check_cluster_config(path: Path) -> str:
    """What the ClusterConfig was checked against, or why it was not; RunFailed when the schema refuses it."""
    try:
        schema, version = eksctl_schema()
    except SchemaMissing:
        return "not checked: scripts/install-cluster-tools fetches eksctl's schema"
    if errors := clusterfiles.cluster_config_errors(path.read_text(), schema):
        raise RunFailed(f"{path}: eksctl {version}'s schema refuses the ClusterConfig: {'; '.join(errors)} (a "
                        "loadtest bug: please report it)")
    return f"checked against eksctl {version}'s ClusterConfig schema"


def check_karpenter(path: Path) -> str:
    """What the NodePools and EC2NodeClass were checked against, or why they were not; RunFailed when refused."""
    crds = crdschemas.crd_dir(crdschemas.KARPENTER)
    version = crdschemas.fetched_version(crds)
    try:
        kubeconform = tools.find("kubeconform")
    except tools.ToolMissing:
        kubeconform = None
    if version is None or kubeconform is None:
        return "not checked: scripts/setup installs kubeconform and Karpenter's CRDs"
    location = crdschemas.crd_schema_location(crds, crdschemas.KARPENTER)
    result = subprocess.run([kubeconform, "-strict", "-summary", "-schema-location", location, str(path)],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RunFailed(f"{path}: Karpenter {version}'s CRDs refuse it (a loadtest bug: please report it):\n"
                        f"{result.stdout}{result.stderr}")
    return f"checked against Karpenter {version}'s CRDs (kubeconform)"
