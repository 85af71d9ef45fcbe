"""Packaging hook: a wheel carries the chart (with its node-type values files) as package data (loadtest/data/), so an installed
`loadtest` finds them without a checkout (loadtest.paths). Everything else is in pyproject.toml."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# What loadtest reads at run time: the umbrella chart (its locustfiles, rules, dashboards and node-type values files
# are inside it).
DATA = ("charts/loadtest",)
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.tgz")


class BuildWithData(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "loadtest" / "data"
        for part in DATA:
            shutil.copytree(HERE / part, target / part, ignore=SKIP, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithData})
