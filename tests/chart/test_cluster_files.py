"""The files `loadtest plan --write-cluster/--write-karpenter` writes, checked offline against their own tools'
schemas as scripts/install-cluster-tools fetched them: every node type's ClusterConfig against eksctl's JSON schema
(jsonschema), its NodePools and EC2NodeClass against Karpenter's CRDs (kubeconform); each check refuses a misspelt
field, so a pass means something; and the 200,000 RPS plan a new user would type, checked as it is written."""
from __future__ import annotations

import pytest
import yaml

from loadtest import commands
from loadtest.capacity import clusterfiles, profiles
from loadtest.generate import crdschemas
from loadtest.runtime import schemacheck

EKS_PROFILES = [p for p in profiles.PROFILES if p.target_node_type]


@pytest.fixture(scope="module")
def eksctl_schema() -> tuple[dict, str]:
    try:
        return schemacheck.eksctl_schema()
    except schemacheck.SchemaMissing as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module")
def karpenter_version(kubeconform) -> str:
    version = crdschemas.fetched_version(crdschemas.crd_dir(crdschemas.KARPENTER))
    if version is None:
        pytest.fail("no Karpenter CRDs: run scripts/install-cluster-tools", pytrace=False)
    return version


@pytest.mark.parametrize("profile", EKS_PROFILES, ids=lambda p: p.file)
def test_cluster_config_is_valid_for_eksctl(profile, eksctl_schema):
    schema, version = eksctl_schema
    assert clusterfiles.cluster_config_errors(clusterfiles.cluster_config(profile), schema) == [], version


def test_eksctl_schema_refuses_a_misspelt_node_group_field(eksctl_schema):
    schema, _ = eksctl_schema
    text = clusterfiles.cluster_config(profiles.by_file("c5-xlarge.yaml"))
    text = text.replace("desiredCapacity:", "desiredCapcity:")
    errors = clusterfiles.cluster_config_errors(text, schema)
    assert errors and all("desiredCapcity" in e for e in errors), errors


@pytest.mark.parametrize("profile", EKS_PROFILES, ids=lambda p: p.file)
def test_karpenter_files_are_valid_for_karpenters_crds(profile, karpenter_version, tmp_path):
    path = tmp_path / "karpenter.yaml"
    path.write_text(clusterfiles.karpenter(profile))
    assert schemacheck.check_karpenter(path) == f"checked against Karpenter {karpenter_version}'s CRDs (kubeconform)"


@pytest.mark.parametrize("wrong", [("consolidateAfter:", "consolidateAftr:"), ("cpu: '8'", "cpu: eight")])
def test_karpenter_crds_refuse_a_misspelt_field_or_a_bad_quantity(wrong, karpenter_version, tmp_path):
    path = tmp_path / "karpenter.yaml"
    path.write_text(clusterfiles.karpenter(profiles.by_file("c5-xlarge.yaml")).replace(*wrong))
    with pytest.raises(schemacheck.RunFailed, match="refuse it"):
        schemacheck.check_karpenter(path)


def test_a_plan_for_200000_rps_is_written_as_a_valid_cluster_config(eksctl_schema, karpenter_version, tmp_path,
                                                                     capsys):
    _, version = eksctl_schema
    eks, karpenter = tmp_path / "eks.yaml", tmp_path / "karpenter.yaml"
    assert commands.main(["plan", "--target-rps", "200000", "--write-cluster", str(eks),
                          "--write-karpenter", str(karpenter)]) == 0
    out = capsys.readouterr().out
    assert f"checked against eksctl {version}'s ClusterConfig schema" in out
    assert f"checked against Karpenter {karpenter_version}'s CRDs" in out
    assert yaml.safe_load(eks.read_text())["managedNodeGroups"]
