"""vegeta, the open-model reference of issue #28 (loadtest.runtime.vegeta), against the chart's payload backend on
127.0.0.1: it holds a modest offered rate exactly, and its max-throughput mode gives a per-core rate."""
from __future__ import annotations

import pytest

from loadtest.runtime import vegeta
from loadtest.runtime.stack import Stack

RUN_S = 3


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    with Stack(tmp_path_factory.mktemp("vegeta")) as running:
        yield running.backend()


def test_holds_the_offered_rate(backend):
    result = vegeta.attack(f"{backend.http_url}/1kb", rate=1000, duration_s=RUN_S)
    assert result.success_ratio == 1.0, result.errors
    assert result.achieved_rps == pytest.approx(1000, rel=0.01), result
    assert result.requests == pytest.approx(1000 * RUN_S, rel=0.01), result
    assert 0 < result.p50_ms < 50, result


def test_max_rate_on_one_core(backend):
    result = vegeta.max_rate(f"{backend.http_url}/1kb", duration_s=RUN_S, cpus=1)
    assert result.success_ratio == 1.0, result.errors
    assert result.achieved_rps > 0, result
