"""The installable CLI: a wheel of this repository carries the chart and the values files, and the `loadtest` it
installs finds them outside any checkout (loadtest.paths), or in the checkout LOADTEST_HOME names."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from loadtest import paths


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel's files unpacked into a folder, as `pip install` lays them out: (folder, environment that runs them
    ahead of the checkout's editable install, from a folder outside the checkout)."""
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools builds in the source folder, and the checkout stays as it is.
    source = out / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(paths.HOME, source, symlinks=True, ignore=lambda folder, names: {
        *skip(folder, names), *({".git", "tests", "build"} & set(names) if folder == str(paths.HOME) else ())})
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = out.glob("loadtest-*.whl")
    site = out / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("LOADTEST_HOME", None)
    return site, env


def loadtest(env, *args, cwd):
    return subprocess.run([sys.executable, "-m", "loadtest", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def test_the_wheel_carries_the_chart_values_and_locustfiles(installed):
    site, _ = installed
    data = site / "loadtest" / "data"
    assert (data / "charts" / "loadtest" / "Chart.yaml").is_file()
    assert {p.name for p in (data / "charts" / "loadtest" / "values").glob("*.yaml")} == {p.name for p in paths.VALUES.glob("*.yaml")}
    assert (data / "charts" / "loadtest" / "charts" / "locust" / "locustfiles" / "keepalive_1kb.py").is_file()
    assert not list(data.rglob("__pycache__")) and not (data / "README.md").exists()


def test_installed_cli_plans_from_any_folder(installed, tmp_path):
    site, env = installed
    where = loadtest(env, "plan", "--target-rps", "50000", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert "Cheapest:" in where.stdout
    found = subprocess.run([sys.executable, "-c", "from loadtest import paths; print(paths.HOME, paths.CHECKOUT)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert found.stdout.split() == [str(site / "loadtest" / "data"), "None"], found.stderr


def test_installed_chart_renders_like_the_checkout(installed, helm):
    site, _ = installed
    fixed = ("--set", "locust.webAuth.existingSecret=ui")  # no generated password: two renders compare equal
    packaged = helm.template(*fixed, chart=site / "loadtest" / "data" / "charts" / "loadtest")
    assert packaged.returncode == 0, packaged.stderr
    assert packaged.stdout == helm.template(*fixed).stdout


def test_commands_that_rewrite_the_checkout_need_one(installed, tmp_path):
    _, env = installed
    out = loadtest(env, "values", "--check", cwd=tmp_path)
    assert out.returncode == 2 and "LOADTEST_HOME" in out.stderr, out.stderr


def test_a_wrong_loadtest_home_is_named_with_the_fix(installed, tmp_path):
    _, env = installed
    out = loadtest({**env, "LOADTEST_HOME": str(tmp_path)}, "--help", cwd=tmp_path)
    assert out.returncode == 2 and f"LOADTEST_HOME={tmp_path} holds no charts/loadtest/Chart.yaml" in out.stderr
    assert "Traceback" not in out.stderr
    home = loadtest({**env, "LOADTEST_HOME": str(paths.HOME)}, "values", "--check", cwd=tmp_path)
    assert home.returncode == 0, home.stderr
