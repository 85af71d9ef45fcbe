"""The suite's own table (tests/layers.py): a background layer's wall time is stamped when its session ends, not when
the suite comes to wait for it."""
from __future__ import annotations

import subprocess
import sys
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
