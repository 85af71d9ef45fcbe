import pytest
from helpers import cli

from loadtest import commands
from loadtest.generate import valuesgen
from loadtest.workload import scenarios


def test_size_prints_the_replicas_and_the_helm_command(capsys):
    assert commands.main(["size", "--node-type", "c5.xlarge", "--nodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "6 workers at 1000m" in out
    assert "--set locust.worker.replicas=6" in out


def test_size_with_unknown_node_type_exits_2_naming_it(capsys):
    code, io = cli(capsys, "size", "--node-type", "c5.mega")
    assert code == 2
    assert "unknown node type 'c5.mega'" in io.err


def test_size_with_bad_cpu_quantity_exits_2(capsys):
    code, io = cli(capsys, "size", "--node-type", "c5.large", "--worker-cpu", "lots")
    assert code == 2 and "CPU quantity 'lots'" in io.err


def test_version_names_the_cli_the_chart_and_locust(capsys):
    import yaml

    from loadtest import paths

    chart = yaml.safe_load((paths.CHART / "Chart.yaml").read_text())
    code, io = cli(capsys, "--version")
    assert code == 0 and io.out.startswith("loadtest ")
    assert f"chart loadtest {chart['version']} (its images run Locust {chart['appVersion']}" in io.out


def test_local_refuses_zero_workers(capsys):
    code, io = cli(capsys, "local", "--workers", "0")
    assert code == 2 and "argument --workers: 0: give at least 1" in io.err


def test_local_refuses_a_bad_run_time(capsys):
    code, io = cli(capsys, "local", "--run-time", "ten minutes")
    assert code == 2 and "argument --run-time: 'ten minutes' is not like" in io.err


def test_committed_values_files_and_schema_enums_match_the_generator():
    stale = valuesgen.stale_files()
    assert not stale, f"regenerate with `loadtest values` and commit: {[str(p) for p in stale]}"


def test_values_check_reports_a_stale_file(tmp_path, capsys, monkeypatch):
    real = valuesgen.stale_files
    monkeypatch.setattr(valuesgen, "stale_files", lambda: real(values_dir=tmp_path))
    assert commands.main(["values", "--check"]) == 1
    assert "out of date" in capsys.readouterr().out


def test_unknown_scenario_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown scenario 'nope'.*keepalive_1kb"):
        scenarios.get("nope")


def test_the_generated_docs_are_current_and_the_chart_version_recorded():
    assert commands.main(["docs", "--check"]) == 0, "run `loadtest docs` and commit what it wrote"


def test_every_documented_key_has_a_type_and_a_default_in_the_chart_readme():
    from loadtest.generate import chartreadme
    text = chartreadme.values_table()
    assert "| locust.worker.replicas | int | `2` |" in text
    assert "| backend.port | int | `8080` |" in text
    assert '| locust.mode | string | `"interactive"` |' in text


def test_every_command_ends_its_help_with_the_one_exit_code_table():
    from loadtest_shared import checks
    parser = commands.build_parser()
    subcommands = parser._subparsers._group_actions[0].choices
    assert set(subcommands) == set(commands.COMMANDS)
    for name, command in {"loadtest": parser, **subcommands}.items():
        text = command.format_help()
        assert text.rstrip().endswith(checks.exit_codes_text()), name
        assert "Exit codes:" not in text, f"{name}: a hand-written exit-code list beside the table"
    assert [line.split()[0] for line in checks.exit_codes_text().splitlines()[1:] if line[2] != " "] == \
        ["0", "1", "2", "3", "4", "130"]


def test_size_warns_about_thin_workers_with_the_fields_numbers(capsys):
    assert commands.main(["size", "--node-type", "m5.large", "--nodes", "2", "--worker-cpu", "500m"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: workers at 500m CPU" in out and "5 workers at 100m gave ~230 RPS" in out
    assert commands.main(["size", "--node-type", "m5.large", "--nodes", "2"]) == 0
    assert "WARNING" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (("local", "--users", "100000000"), "--users 100,000,000: at least 17 KiB a Locust user needs"),
    (("run", "--local", "--workers", "100000"), "--workers 100,000: this machine has"),
    (("local", "--arrival-rate", "400000000"), "--arrival-rate's pool 200,000,000"),
    (("sweep", "--local", "--steps", "10,200000000"), "--steps 200,000,000: at least 17 KiB"),
    (("sweep", "--local", "--sweep", "workers", "--steps", "1,100000"), "--steps 100,000: this machine has"),
    (("local", "--host", "http://127.0.0.1:9", "--target", "nginx"), "--target with --host"),
    (("run", "--local", "--host", "http://127.0.0.1:9", "--tls-mode", "edge"), "--tls-mode with --host"),
    (("local", "--host", "http://127.0.0.1:9", "--scenario", "tls_handshake"), "is plain HTTP: give an https://"),
    (("local", "-f", "mine.py", "--scenario", "http_close"), "--scenario with -f: your test mine.py is what runs"),
    (("sweep", "--local", "--steps", "1,2", "--prometheus", "http://127.0.0.1:9090"), "--prometheus with --local"),
    (("sweep", "--release", "lt", "--steps", "1,2", "--workers", "3", "--set", "a=b"),
     "--workers, --set with --release"),
])
def test_a_size_no_machine_holds_or_options_that_contradict_are_refused_naming_them(capsys, argv, says):
    """Issue #56: each was accepted without a word (one of two contradicting options silently ignored, or a size
    that would swap the machine for an hour): now exit 2 naming the option and the fix, before anything starts."""
    code, io = cli(capsys, *argv)
    assert code == 2 and says in io.err, io.err
    assert "Traceback" not in io.err


def test_a_size_the_machine_holds_but_measures_the_generator_is_a_warning():
    from loadtest.capacity import machine

    two_cores = machine.Machine(2, 8192)
    assert machine.check(two_cores, 2, 100) == []
    [warning] = machine.check(two_cores, 3, 100)
    assert "more workers than this machine's 2 core(s)" in warning
    assert machine.check_rate(two_cores, 20_000, 8_000.0, "keepalive_1kb") == []
    [warning] = machine.check_rate(two_cores, 40_000, 8_000.0, "keepalive_1kb")
    assert "2 core(s) send about 16,000 requests/s" in warning
    assert machine.check_rate(two_cores, 1e9, None, "mine") == []  # a test of the user's has no calibrated figure
