"""`loadtest tune`'s steady window as Prometheus' engine reads it, under promtool: how long every user has run, from
the release's loadtest:steady:bool evaluations. A window whose evaluations were all steady is whole even when some
are missing (a scrape of a busy master lost, marked stale); a ramp-up or a respawn inside it makes it short by what
it took; a swarm stopped now has run for nothing.

Each case's queries are the ones tune asks (recorded from `tune.steady_seconds`), and promtool checks that
Prometheus answers each with the value tune was given for it."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass

import yaml

from loadtest.runtime import tools, tune

SCRAPE_S = 15  # a cluster's scrape interval: Prometheus 2 and 3 count a range's samples alike at 15 s
SPAN_S = 60  # the rules' default window


@dataclass(frozen=True)
class Case:
    release: str
    values: str  # loadtest:steady:bool, one sample every SCRAPE_S from 0 s ("_" missing, "stale" a lost scrape)
    at: int  # when tune reads it, in s
    last: float | None  # the last sample in the window, or None without one
    last_unsteady: float | None  # the last evaluation that was not steady the subquery sees, or None
    ran_s: float  # what tune makes of it


CASES = [
    # Ramped up until 30 s: the window (30, 90] is all steady; 15 s earlier it held 15 s of the ramp-up.
    Case("ramped", "0 0 0 1 1 1 1 1 1 1", 90, 1, 30, 60),
    Case("ramped", "0 0 0 1 1 1 1 1 1 1", 75, 1, 30, 45),
    # Steady since 30 s, its scrapes lost at 75-105 s: three samples of the window's four, still a whole window.
    Case("gaps", "0 0 1 1 1 stale _ _ 1 1 1", 150, 1, None, 60),
    # Users respawned at 75 s (a worker replaced): the window must start after it.
    Case("respawned", "1 1 1 1 1 0 1 1 1 1", 120, 1, 75, 45),
    Case("respawned", "1 1 1 1 1 0 1 1 1 1", 135, 1, 75, 60),
    # Stopped at 60 s: nothing runs now.
    Case("stopped", "1 1 1 1 0 0", 75, 0, None, 0),
    # No swarm ever scraped.
    Case("absent", "", 60, None, None, 0),
]


class Recorded:
    """Answers tune's queries with a case's values, in the order tune asks them, and keeps each query."""

    def __init__(self, answers: list[float | None]):
        self.answers, self.queries = list(answers), []

    def scalar(self, expr: str, at: float | None = None) -> float | None:
        answer = self.answers.pop(0)
        self.queries.append((expr, at, answer))
        return answer


def test_tune_reads_how_long_every_user_ran_as_prometheus_answers(tmp_path):
    tests, series = [], {}
    for case in CASES:
        prometheus = Recorded([case.last, case.last_unsteady])
        assert tune.steady_seconds(prometheus, case.release, SPAN_S, SCRAPE_S, float(case.at)) == case.ran_s, case
        assert len(prometheus.queries) == (2 if case.last else 1), case
        if case.values:
            series[case.release] = case.values
        tests += [{"expr": expr, "eval_time": f"{at:g}s",
                   "exp_samples": [] if answer is None else [{"labels": "{}", "value": answer}]}
                  for expr, at, answer in prometheus.queries]
    test_file = tmp_path / "tune-window.test.yaml"
    test_file.write_text(yaml.safe_dump({
        "rule_files": [], "evaluation_interval": f"{SCRAPE_S}s",
        "tests": [{"interval": f"{SCRAPE_S}s",
                   "input_series": [{"series": f'loadtest:steady:bool{{release="{release}"}}', "values": values}
                                    for release, values in series.items()],
                   "promql_expr_test": tests}]}, sort_keys=False))
    result = subprocess.run([tools.find("promtool"), "test", "rules", str(test_file)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr + test_file.read_text()
