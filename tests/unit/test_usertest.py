"""A user's own test, checked before anything runs: requirement pinning, the locustfile's name and syntax."""
from __future__ import annotations

import pytest
from requirement_cases import HASH, REQUIREMENTS

from loadtest import paths
from loadtest.errors import UsageError
from loadtest.workload import usertest


@pytest.mark.parametrize("text", REQUIREMENTS)
def test_every_requirement_is_pinned_with_its_hash(text):
    if REQUIREMENTS[text]:
        assert usertest.check_requirements(text, "req.txt") == 1
    else:
        with pytest.raises(UsageError, match=r"req.txt line \d+ \(.*\): every requirement needs an exact pin"):
            usertest.check_requirements(text, "req.txt")


def test_requirement_lines_join_continuations_and_keep_the_first_line_number():
    text = f"# header\npyjwt==2.10.1 \\\n    {HASH}\n\nrequests==2.32.3\n"
    assert usertest.requirement_lines(text) == [(2, f"pyjwt==2.10.1 {HASH}"), (5, "requests==2.32.3")]


def test_the_example_requirements_pass():
    text = (paths.HOME / "examples" / "shop" / "requirements.txt").read_text()
    assert usertest.check_requirements(text, "examples/shop/requirements.txt") == 1


@pytest.mark.parametrize("name, source, message", [
    ("mine.txt", "x = 1\n", "name it <module>.py"),
    ("my-test.py", "x = 1\n", "name it <module>.py"),
    ("loadtest_lib.py", "x = 1\n", "one of the project's own modules"),
    ("mine.py", "class A(\n", "mine.py: line 1:"),
    ("big.py", "#" * (usertest.CONFIGMAP_LIMIT_BYTES + 1), "over the 1 MiB"),
])
def test_a_locustfile_python_could_not_load_is_refused_with_the_fix(tmp_path, name, source, message):
    path = tmp_path / name
    path.write_text(source)
    with pytest.raises(UsageError, match=message.replace(".", r"\.").replace("(", r"\(")):
        usertest.check_locustfile(path)


def test_a_good_locustfile_loads_with_the_plugin_beside_it(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from locust import HttpUser\n\n\nclass Mine(HttpUser):\n    pass\n")
    checked = usertest.check_locustfile(path)
    assert usertest.locustfiles(checked) == [checked, paths.PLUGIN / usertest.PLUGIN]
    assert usertest.PLUGIN.removesuffix(".py") in usertest.builtin_modules()
