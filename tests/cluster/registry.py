"""A real OCI registry on 127.0.0.1 (CNCF distribution, Debian's docker-registry) holding the chart as
scripts/publish-chart pushes it, and a folder with nothing from the checkout where the chart was pulled."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadtest import paths
from loadtest.runtime import tools
from loadtest.runtime.processes import LOCAL_HOST, Processes, free_port


@dataclass(frozen=True)
class PublishedChart:
    reference: str  # oci://127.0.0.1:<port>/charts/loadtest
    version: str
    pulled: Path  # `helm pull --untar` of it: the chart's files, its node-type values files among them

    def install_args(self) -> list[str]:
        """What `helm install|upgrade RELEASE` takes after the release name to install it from the registry."""
        return [self.reference, "--version", self.version, "--plain-http"]


def publish(folder: Path):
    """Start the registry, publish the chart with scripts/publish-chart, pull it into a folder of its own; yields a
    PublishedChart, and stops the registry after."""
    registry = shutil.which("docker-registry")
    if not registry:
        pytest.fail("docker-registry is not installed: run scripts/setup", pytrace=False)
    address = f"{LOCAL_HOST}:{free_port()}"
    config = folder / "registry.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: warn\n"
                      f"storage:\n  filesystem:\n    rootdirectory: {folder / 'blobs'}\nhttp:\n  addr: {address}\n")
    with Processes(folder / "logs") as processes:
        processes.start("registry", [registry, "serve", str(config)])
        processes.wait_http("registry", f"http://{address}/v2/")
        pushed = subprocess.run(["bash", str(paths.HOME / "scripts" / "publish-chart"), f"oci://{address}/charts",
                                 "--plain-http"], capture_output=True, text=True, timeout=120)
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
        version = paths.chart_version()
        assert f"Pushed: {address}/charts/loadtest:{version}" in pushed.stdout + pushed.stderr, pushed.stderr
        pulled = folder / "pulled"
        pulled.mkdir()
        reference = f"oci://{address}/charts/loadtest"
        subprocess.run([tools.find("helm"), "pull", reference, "--version", version, "--untar", "--plain-http"],
                       cwd=pulled, check=True, capture_output=True, timeout=60)
        yield PublishedChart(reference, version, pulled / "loadtest")
