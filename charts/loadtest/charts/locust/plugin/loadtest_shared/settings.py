"""The settings that cross the CLI, the chart and the pods, each declared once: the environment variable the pods
read, the chart value and the CLI option it comes from, and the pairs a run cannot take together. The pods read
their environment through these declarations; the CLI sets a local run's environment from them; `loadtest values`
writes the chart's names, its reserved environment and its refusals from them (common/templates/_settings.tpl), so
the chart and the CLI refuse a pair in the same words.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One setting. `env`: what the pods read (None: a Locust option, not ours to read). `value`: the chart value it
    comes from, `off` the value that turns it off, `given` the Helm test that it is on (on the locust chart's
    .Values) and `shown` the Helm expression a refusal quotes. `flag`: the CLI option. `by_chart`: the chart sets it
    in the pods, so a user's locust.extraEnv may not."""
    name: str
    env: str | None = None
    value: str | None = None
    off: str | None = None
    given: str | None = None
    shown: str | None = None
    flag: str | None = None
    by_chart: bool = False

    def read(self, default: str | None = None) -> str | None:
        return os.environ.get(self.env, default)


# The open model's rate: the master splits it over the workers, each sends its share on a fixed schedule.
ARRIVAL_RATE = Setting("arrival_rate", "LOADTEST_ARRIVAL_RATE", "locust.load.arrivalRate", "0",
                       'include "common.locust.arrivalRate" .Values', 'include "common.locust.arrivalRate" .Values',
                       "--arrival-rate", by_chart=True)
# The closed model's user count (Locust's own --users, -u).
USERS = Setting("users", None, "locust.autostart.users", "null", 'not (kindIs "invalid" .Values.autostart.users)',
                ".Values.autostart.users", "--users")
# Step load: a schedule of user counts (loadtest_shapes).
STEP_LOAD = Setting("step_load", None, "locust.stepLoad.enabled", "false", ".Values.stepLoad.enabled",
                    ".Values.stepLoad.enabled")
STEP_USERS = Setting("step_users", "LOADTEST_STEP_USERS", "locust.stepLoad.users", by_chart=True)
STEP_TIME = Setting("step_time", "LOADTEST_STEP_TIME", "locust.stepLoad.stepTime", by_chart=True)
STEPS = Setting("steps", "LOADTEST_STEPS", "locust.stepLoad.steps", by_chart=True)
# The built-in scenarios' wait between a user's requests, in seconds, and the path they request.
WAIT = Setting("wait", "LOADTEST_WAIT", flag="--wait")
PATH = Setting("path", "LOADTEST_PATH")
# How many host names the users spread their requests over (r<i>.<target>).
ROUTES = Setting("routes", "LOADTEST_ROUTES", "locust.routes", by_chart=True)
# The judged run's checks and its early stop, in the checks' language, one a line.
CHECKS = Setting("checks", "LOADTEST_CHECKS", "locust.checks", flag="--check", by_chart=True)
ABORT_ON = Setting("abort_on", "LOADTEST_ABORT_ON", "locust.abortOn", flag="--abort-on", by_chart=True)
# Where the master writes the run's folder, its name, the Job it is named after, and the release it belongs to.
RESULTS_DIR = Setting("results_dir", "LOADTEST_RESULTS_DIR", "locust.results", by_chart=True)
RUN_NAME = Setting("run_name", "LOADTEST_RUN_NAME", by_chart=True)
JOB_NAME = Setting("job_name", "LOADTEST_JOB_NAME", by_chart=True)
JOB_UID = Setting("job_uid", "LOADTEST_JOB_UID", by_chart=True)
RELEASE = Setting("release", "LOADTEST_RELEASE", by_chart=True)
# The bucket the master uploads the run's folder to, and how often.
S3_URL = Setting("s3_url", "LOADTEST_RESULTS_S3_URL", "locust.results.s3", by_chart=True)
S3_ENDPOINT = Setting("s3_endpoint", "LOADTEST_RESULTS_S3_ENDPOINT", "locust.results.s3.endpoint", by_chart=True)
S3_REGION = Setting("s3_region", "LOADTEST_RESULTS_S3_REGION", "locust.results.s3.region", by_chart=True)
S3_SYNC_S = Setting("s3_sync_s", "LOADTEST_RESULTS_S3_SYNC_S")
# The Prometheus the master reads the run's series.csv from: the umbrella chart's ConfigMap names the release's own
# when it runs one; a user's locust.extraEnv may name another.
PROMETHEUS_URL = Setting("prometheus_url", "LOADTEST_PROMETHEUS_URL")
SCRAPE_INTERVAL_S = Setting("scrape_interval_s", "LOADTEST_SCRAPE_INTERVAL_S")
# The port of the master's Prometheus metrics.
METRICS_PORT = Setting("metrics_port", "LOADTEST_METRICS_PORT", by_chart=True)
# The web UI's "user:password": a file (the chart's Secret), or the value itself (a local run).
WEB_AUTH_FILE = Setting("web_auth_file", "LOADTEST_WEB_AUTH_FILE", "locust.webAuth", by_chart=True)
WEB_AUTH = Setting("web_auth", "LOADTEST_WEB_AUTH")
# The file a worker creates once the master accepted it (its readiness probe).
WORKER_READY_FILE = Setting("worker_ready_file", "LOADTEST_WORKER_READY_FILE", by_chart=True)
# The files a local run's master writes for the CLI: the open model's figures, the faults.
ARRIVAL_FILE = Setting("arrival_file", "LOADTEST_ARRIVAL_FILE")
FAULTS_FILE = Setting("faults_file", "LOADTEST_FAULTS_FILE")

SETTINGS = (ARRIVAL_RATE, USERS, STEP_LOAD, STEP_USERS, STEP_TIME, STEPS, WAIT, PATH, ROUTES, CHECKS, ABORT_ON,
            RESULTS_DIR, RUN_NAME, JOB_NAME, JOB_UID, RELEASE, S3_URL, S3_ENDPOINT, S3_REGION, S3_SYNC_S,
            PROMETHEUS_URL, SCRAPE_INTERVAL_S, METRICS_PORT, WEB_AUTH_FILE, WEB_AUTH, WORKER_READY_FILE, ARRIVAL_FILE,
            FAULTS_FILE)
BY_NAME = {s.name: s for s in SETTINGS}
# A test's own settings (loadtest_lib.setting("catalog_path")) are LOADTEST_<NAME>, as the declared ones are.
PREFIX = "LOADTEST_"


def env_name(name: str) -> str:
    """The variable a scenario's setting is read from: a declared setting's own, else LOADTEST_<NAME>."""
    declared = BY_NAME.get(name)
    return declared.env if declared and declared.env else PREFIX + name.upper()


@dataclass(frozen=True)
class Exclusive:
    """Two settings one run cannot take together: `first` replaces `second` (`why`), and dropping `first` gives
    `otherwise`. Refused in the same words by the CLI (with its options) and the chart (with its values)."""
    first: Setting
    second: Setting
    why: str
    otherwise: str

    def message(self, first: str, second: str, drop_first: str, drop_second: str) -> str:
        """The refusal, each setting named (and how to drop it) as the one refusing knows it."""
        return f"{first} with {second}: {self.why}; {drop_second}, or {drop_first} {self.otherwise}"

    def cli_message(self, first: str | None = None, second: str | None = None) -> str:
        first, second = first or self.first.flag, second or self.second.flag
        return self.message(first, second, f"drop {first}", f"drop {second}")

    def chart_message(self) -> str:
        """The chart's words, each value shown as given (printf's verbs, the `shown` expressions in order)."""
        a, b = self.first, self.second
        return self.message(f"{a.value} %v", f"{b.value} %v", f"{a.value}={a.off}", f"--set {b.value}={b.off}")


def refusal(given: dict[Setting, object], names: dict[Setting, str] | None = None) -> str | None:
    """The CLI's words for the first pair of EXCLUSIVE that `given` (each setting: its value, falsy when not given)
    holds, each setting named as `names` says (by default its option); None when it holds none."""
    names = names or {}
    for rule in EXCLUSIVE:
        if given.get(rule.first) and given.get(rule.second):
            return rule.cli_message(names.get(rule.first), names.get(rule.second))
    return None


def exclusive(first: Setting, second: Setting) -> Exclusive:
    """The rule that refuses `first` with `second`."""
    return next(rule for rule in EXCLUSIVE if (rule.first, rule.second) == (first, second))


EXCLUSIVE = (
    Exclusive(ARRIVAL_RATE, USERS, "the open model's rate replaces a user count (its pool of users, sized from the "
              "rate, holds it whatever the latency)", "for the closed model's user count"),
    Exclusive(ARRIVAL_RATE, STEP_LOAD, "step load is a schedule of user counts, the open model holds one rate",
              "for the step load"),
    Exclusive(ARRIVAL_RATE, WAIT, "the rate sets when each request goes, not a wait between a user's requests",
              "for the closed model's wait"),
)
