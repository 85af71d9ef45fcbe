"""Each benchmark answers `--help` as a user types it, `python benchmarks/<name>.py --help`: its usage and options,
exit 0, no traceback (a literal % in an option's help is argparse's format directive: `--help` of
benchmarks/arrival.py raised TypeError until 2026-12-02)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from loadtest import paths

BENCHMARKS = sorted((paths.HOME / "benchmarks").glob("*.py"))


def test_the_benchmarks_are_found():
    assert {"arrival.py", "generators.py", "master.py"} <= {script.name for script in BENCHMARKS}


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda script: script.name)
def test_a_benchmark_answers_help(script):
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stdout.startswith("usage:") and "--help" in result.stdout, result.stdout[:500]
