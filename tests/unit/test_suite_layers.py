"""The suite's own table (tests/layers.py): a background layer's wall time is stamped when its session ends, not when
the suite comes to wait for it."""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import layers


def test_a_background_layer_waited_for_late_is_timed_to_its_own_end():
    quick, slow = layers.Layer("quick"), layers.Layer("slow")
    quick.seconds = slow.seconds = time.monotonic()
    ended_at_once = subprocess.Popen([sys.executable, "-c", "pass"])
    ends_later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    stamped = {layer.name: layers.stamp_the_end(layer, process)
               for layer, process in ((quick, ended_at_once), (slow, ends_later))}
    # Waited for in the other order, as the suite waits for its background layers in a fixed one.
    stamped["slow"].join()
    stamped["quick"].join()
    assert quick.exit_code == slow.exit_code == 0
    assert quick.seconds < slow.seconds, (quick.seconds, slow.seconds)


def test_a_layers_modules_run_beside_the_first_phase_once_and_the_layer_leaves_them_out():
    for layer, modules in layers.BESIDE.items():
        beside = layers.session_arguments(f"{layer}{layers.BESIDE_SUFFIX}")
        own = layers.session_arguments(layer)
        for module in modules:
            path = layers.TESTS / layer / module
            assert path.is_file(), path
            assert str(path) in beside and f"--ignore={path}" in own
        assert beside[:2] == own[:2] == ["-m", layer] and own[-1] == str(layers.TESTS / layer)


def test_the_end_of_the_output_names_each_failed_test_and_its_message(tmp_path):
    """A real pytest session's report, one test failing and one erring in its set-up: both are listed after the table,
    with the layer they ran in and their messages' first lines; a passing test is not."""
    (tmp_path / "test_some.py").write_text(
        "import pytest\n"
        "@pytest.fixture\n"
        "def broken():\n"
        "    raise RuntimeError('the fixture broke')\n"
        "def test_passes():\n"
        "    pass\n"
        "def test_fails():\n"
        "    assert 1 == 2, 'one is not two'\n"
        "def test_errs(broken):\n"
        "    pass\n")
    junit = tmp_path / "report.xml"
    session = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}",
                              str(tmp_path / "test_some.py")], cwd=tmp_path, capture_output=True, text=True)
    assert session.returncode == 1, session.stdout
    layer = layers.Layer("dataplane, beside")
    ended = threading.Thread(target=lambda: None)
    ended.start()
    layers.finish(layer, ended, junit)
    assert (layer.tests, layer.failed) == (3, 2)
    listed = layers.failures([layers.Layer("unit"), layer])
    assert listed.splitlines()[1] == f"2 failed (the first {layers.FAILURE_LINES} lines of each message):"
    assert "[dataplane, beside] test_some::test_fails" in listed and "one is not two" in listed
    assert "[dataplane, beside] test_some::test_errs" in listed and "the fixture broke" in listed
    assert "test_passes" not in listed
    assert layers.failures([layers.Layer("unit")]) == ""
