"""One parser per unit (loadtest_shared.units): the CLI's options, the checks, the step load and Prometheus' durations
read `2m`, `1h30m`, `500ms` and `5%` alike."""
from __future__ import annotations

import pytest
from loadtest_shared import checks
from loadtest_shared import units as durations

from loadtest import units
from loadtest.errors import UsageError
from loadtest.runtime import prom


@pytest.mark.parametrize("text, seconds", [("20", 20), ("2.5", 2.5), ("20s", 20), ("500ms", 0.5), ("2m", 120),
                                           ("1h30m", 5400), ("1m30s", 90), ("1d", 86400), (" 15s ", 15)])
def test_durations_in_every_form_the_tools_write(text, seconds):
    assert durations.seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "20x", "s", "1h 30m", "-5s", "30s1"])
def test_what_is_no_duration_is_refused_with_the_forms(text):
    with pytest.raises(ValueError, match="is not a duration like 20, 20s, 2m or 1h30m"):
        durations.seconds(text)


@pytest.mark.parametrize("text, share", [("5%", 0.05), ("0.05", 0.05), ("0%", 0.0), ("12.5%", 0.125), ("150%", 1.5)])
def test_shares_as_percentages_or_fractions(text, share):
    assert durations.share(text) == pytest.approx(share)


@pytest.mark.parametrize("text", ["x", "%", "-5%", "nan%", "inf"])
def test_what_is_no_share_is_refused(text):
    with pytest.raises(ValueError, match="is not a share"):
        durations.share(text)


def test_every_reader_takes_the_same_forms():
    assert units.parse_duration_s("1h30m") == 5400 == prom.duration_s("1h30m")
    assert checks.parse_all(["p95<1.5s"])[0].limit == 1500 == durations.seconds("1500ms") * 1000
    assert checks.parse_all(["fail_ratio<5%"])[0].limit == pytest.approx(0.05)
    with pytest.raises(UsageError, match="--hold: '1500ms' is not like .* in whole seconds"):
        units.parse_duration_s("1500ms", "--hold")


@pytest.mark.parametrize("text, mib", [("512Mi", 512), ("1Gi", 1024), ("1G", 953), ("536870912", 512), (536870912, 512),
                                       ("1e9", 953), ("2048Ki", 2), ("16266452Ki", 15885), ("0.5Gi", 512),
                                       ("1Ti", 1024 ** 2), ("1500M", 1430)])
def test_memory_in_every_form_kubernetes_writes_one_parser(text, mib):
    """The CLI's --worker-memory, a node's capacity and a pod's requests as the API server writes them (bytes and
    exponents included): one parser, where tune once had its own for bytes."""
    assert units.parse_memory_mi(text) == mib


@pytest.mark.parametrize("text", ["lots", "512MB", "1.5.2Gi", "-1Gi", "Gi", ""])
def test_what_is_no_memory_quantity_is_refused_with_the_forms(text):
    with pytest.raises(UsageError, match="is not like '512Mi' or '1Gi'"):
        units.parse_memory_mi(text)
