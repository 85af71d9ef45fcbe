"""Every image the real node runs, built here, keeps the official image's contract that the chart relies on."""
from __future__ import annotations

import tarfile

import pytest
import yaml

from loadtest import paths
from loadtest.generate import images
from loadtest.runtime import images as builder

# The chart's images with no stand-in: their Go modules are refused by the module proxy this machine can reach,
# so their pods cannot run on the real node (the cluster layer keeps testing their objects on KWOK nodes).
NOT_BUILDABLE = {"docker.io/grafana/grafana:11.6.0", "docker.io/nginx/nginx-ingress:5.6.2"}


def chart_images() -> set[str]:
    """Every repository:tag the chart's values name."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            if "repository" in node and "tag" in node:
                found.add(images.normalise(f"{node['repository']}:{node['tag']}"))
            for value in node.values():
                walk(value)

    for values in paths.CHART.glob("charts/*/values.yaml"):
        walk(yaml.safe_load(values.read_text()))
    return found


def test_every_chart_image_is_built_here_or_named_as_not_buildable():
    built = {i.reference for i in images.IMAGES.values()}
    assert chart_images() - built == NOT_BUILDABLE


def layers(archive) -> list[tarfile.TarFile]:
    outer = tarfile.open(archive)
    config = builder.read_config(archive)
    manifest_layers = [outer.extractfile("blobs/sha256/" + d.removeprefix("sha256:"))
                       for d in config["rootfs"]["diff_ids"]]
    return [tarfile.open(fileobj=f) for f in manifest_layers]


@pytest.mark.parametrize("image", images.IMAGES.values(), ids=lambda i: i.name)
def test_image_keeps_the_official_contract(image):
    archive = builder.archive_path(image)
    assert archive.exists(), f"{image.reference} is not built: run scripts/install-node-tools"
    config = builder.read_config(archive)["config"]
    contract = image.contract
    assert config["User"] == contract.user
    assert config["WorkingDir"] == contract.workdir
    assert config["Entrypoint"] == list(contract.entrypoint)
    assert config.get("Cmd", []) == list(contract.cmd)
    assert sorted(config.get("ExposedPorts", {})) == sorted(contract.ports)
    assert config.get("StopSignal", "") == contract.stop_signal
    for key, value in contract.env:
        assert f"{key}={value}" in config["Env"]
    names = {m.name.removeprefix("./").rstrip("/") for layer in layers(archive) for m in layer.getmembers()}
    missing = [p for p in contract.paths if p.lstrip("/") not in names]
    assert not missing, f"{image.reference} lacks {missing}"
    assert not any(n.startswith(builder.SETUP_DIR.lstrip("/")) for n in names), "the setup folder stays behind"
