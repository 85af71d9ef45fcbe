"""`loadtest calibrate` measures per-core RPS on the local stack and the planner takes it up."""
import json

import pytest

from loadtest import commands
from loadtest.capacity import calibration


def test_calibration_measures_a_worker_core_and_feeds_the_planner(tmp_path, capsys):
    out = tmp_path / "calibration.json"
    code = commands.main(["calibrate", "--scenarios", "keepalive_1kb", "--run-time", "5s", "--output", str(out)])
    assert code == 0, capsys.readouterr()
    figure = json.loads(out.read_text())["scenarios"]["keepalive_1kb"]
    assert figure["rps_per_core"] > 0 and figure["failures"] == 0
    assert figure["user_class"] == "LeanHttpUser"
    loaded = calibration.load_calibration(out)
    assert loaded.rps_per_core["keepalive_1kb"] == figure["rps_per_core"]
    assert "calibration" in loaded.source and "Locust 2.47.0" in loaded.source


def test_calibrate_refuses_an_unknown_scenario(capsys):
    with pytest.raises(SystemExit) as exc:
        commands.main(["calibrate", "--scenarios", "nope"])
    assert exc.value.code == 2
    assert "--scenarios: unknown scenario 'nope'; scenarios: keepalive_1kb" in capsys.readouterr().err
