import csv
import dataclasses
import json
import xml.etree.ElementTree as ET

import pytest

from loadtest.judging import sweepreport
from loadtest.judging.knee import Step
from loadtest.runtime.sweeper import Sweeper
from loadtest.workload.sweep import MIN_WARMUP_S, Spec


def sweep(saturated_at=None, of="users", scenario="keepalive_1kb"):
    s = sweepreport.Sweep({"scenario": scenario, "target": "haproxy", "node types": "local"}, of)
    for i, (load, rps, p95, cpu) in enumerate([(1, 1000, 5, 0.4), (2, 1900, 5, 0.6), (4, 1950, 12, 0.7)]):
        s.records.append(sweepreport.StepRecord(
            Step(i, load, rps, p95, 0.0, i == saturated_at), start=100.0 * i, end=100.0 * i + 10, p50_ms=p95 / 2,
            p99_ms=p95 * 2, requests=int(rps * 10), failures=0, users=10 * load, workers=2, worker_cpu_max=cpu, worker_cpu_cores=2 * cpu,
            target_cpus=load if of == "target CPUs" else 1, target_cpu_cores=cpu,
            verdict="generator-bound" if i == saturated_at else "healthy"))
    return s


def test_report_files_carry_the_steps_conditions_and_knee(tmp_path):
    files = sweepreport.write(sweep(), tmp_path)
    rows = list(csv.DictReader(files["csv"].open()))
    assert [float(r["rps"]) for r in rows] == [1000, 1900, 1950]
    data = json.loads(files["json"].read_text())
    assert data["knee_step"] == 3 and data["capacity_step"] == 2
    assert data["conditions"]["target"] == "haproxy"
    assert "Knee at step 3" in files["markdown"].read_text()


def test_html_report_is_self_contained_with_three_plots(tmp_path):
    page = sweepreport.write(sweep(), tmp_path)["html"].read_text()
    assert page.count("<svg") == 3
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched from elsewhere
    for svg in page.split("<svg")[1:]:
        ET.fromstring("<svg" + svg.split("</svg>")[0] + "</svg>")  # well-formed


def test_generator_bound_steps_are_marked_everywhere(tmp_path):
    files = sweepreport.write(sweep(saturated_at=1), tmp_path)
    assert "generator saturated at step 2" in files["markdown"].read_text()
    assert "generator-bound: not the target's capacity" in files["markdown"].read_text()
    assert 'class="bound"' in files["html"].read_text()
    assert json.loads(files["json"].read_text())["generator_bound_step"] == 2


def test_sizing_table_maps_target_cpus_to_c5n_sizes_and_cost():
    table = sweepreport.sizing_table(sweep(of="target CPUs", scenario="tls_handshake"))
    assert "| 1 | 10 | - | 1,000 | 5 | c5n.large | " in table
    assert "| 2 | 20 | - | 1,900 | 5 | c5n.large | 79 | capacity |" in table
    assert "| 4 | 40 | - | 1,950 | 12 | c5n.xlarge | " in table and table.endswith("| knee |")


def test_a_failing_step_is_the_knee_and_says_so():
    s = sweep()
    last = s.records[-1]
    s.records[-1] = dataclasses.replace(last, step=dataclasses.replace(last.step, rps=2500, failure_ratio=0.2),
                                        failures=int(last.requests * 0.2))
    assert sweepreport.verdict_line(s).startswith("Knee at step 3: 20.0% of the requests failed. Capacity: 1,900 RPS")
    assert sweepreport.sizing_table(s).endswith("| knee: 20.0% failed |")


def test_an_incomplete_sweep_says_so_everywhere_and_rewrites_whole_files(tmp_path):
    s = sweep()
    sweepreport.write(s, tmp_path)
    assert json.loads((tmp_path / "sweep.json").read_text())["complete"] is True
    s.incomplete = "interrupted during step 4 of 5"
    files = sweepreport.write(s, tmp_path)
    data = json.loads(files["json"].read_text())
    assert data["complete"] is False and data["incomplete"] == "interrupted during step 4 of 5"
    assert data["verdict"].startswith("INCOMPLETE after 3 step(s): interrupted during step 4 of 5. Knee at step 3")
    for kind in ("markdown", "html"):
        assert "INCOMPLETE after 3 step(s)" in files[kind].read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "sizing.md", "steps.csv", "sweep.json"]


class Driver:
    """What Sweeper.run asks of its driver outside its steps (the steps are the test's)."""

    class prometheus:
        scrape_interval_s = staticmethod(lambda: 1.0)
        version = staticmethod(lambda: "test")

    class locust:
        stop = staticmethod(lambda: None)

    conditions = staticmethod(dict)


@pytest.mark.parametrize("interrupted_in, incomplete", [("step", "interrupted during step 2 of 4"),
                                                        ("save", "interrupted after step 2 of 4")])
def test_a_sweep_interrupted_between_its_steps_is_marked_incomplete_too(tmp_path, monkeypatch, interrupted_in,
                                                                        incomplete):
    # Ctrl-C while a step's report is written, not only during a step: the steps after it never ran.
    records = iter(sweep().records)

    def step(self, index, load, scrape_s):
        if interrupted_in == "step" and index == 1:
            raise KeyboardInterrupt
        return next(records)

    saved = []

    def save(self, s):
        saved.append(s.incomplete)
        sweepreport.write(s, tmp_path)
        if interrupted_in == "save" and len(saved) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(Sweeper, "step", step)
    monkeypatch.setattr(Sweeper, "save", save)
    spec = Spec("users", [1, 2, 4, 8], MIN_WARMUP_S, 6, 10, 0)
    with pytest.raises(KeyboardInterrupt):
        Sweeper(Driver(), spec, progress=lambda _: None, report_dir=tmp_path).run()
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert data["complete"] is False and data["incomplete"] == incomplete
    assert len(data["steps"]) == (1 if interrupted_in == "step" else 2)
