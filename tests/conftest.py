"""Marks every test with the layer its folder names, so `pytest -m unit` (or chart, cluster, dataplane, node) runs one layer."""
import pathlib

import pytest

LAYERS = ("unit", "chart", "cluster", "dataplane", "node")


def pytest_collection_modifyitems(items):
    for item in items:
        layer = pathlib.Path(str(item.fspath)).relative_to(pathlib.Path(__file__).parent).parts[0]
        if layer in LAYERS:
            item.add_marker(getattr(pytest.mark, layer))
