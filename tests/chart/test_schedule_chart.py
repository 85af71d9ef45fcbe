"""Issue #29, the chart side: locust.schedule turns the judged run (mode run) into two CronJobs whose jobTemplate is
the very Job of an unscheduled run, and locust.results gives that run a results folder, a claim mounted on the master
alone or a bucket, with its name and place in the master's env and Locust's file arguments."""
from __future__ import annotations

import copy
import subprocess

import pytest
from helpers import manifests
from test_render import assert_restricted  # the chart layer's Pod Security Standard "restricted" check

from loadtest import paths

MASTER, WORKER, CLAIM = "lt-locust-master", "lt-locust-worker", "lt-locust-results"
RUN = ("--set", "locust.mode=run", "--set", "locust.autostart.runTime=2m")
CRON = "0 2 * * *"
SCHEDULED = (*RUN, "--set", f"locust.schedule.cron={CRON}")
S3 = ("--set", "locust.results.store=s3", "--set", "locust.results.s3.endpoint=http://minio.storage:9000",
      "--set", "locust.results.s3.bucket=load-runs", "--set", "locust.results.s3.existingSecret=runs-bucket")
RESULTS_ARGS = ["--csv=/results/$(LOADTEST_RUN_NAME)/stats", "--json-file=/results/$(LOADTEST_RUN_NAME)/stats",
                "--html=/results/$(LOADTEST_RUN_NAME)/report.html"]


def job_spec(rendered, name: str) -> dict:
    """The Job spec of a run: the Job's, or the jobTemplate's of the CronJob."""
    kinds = {d["kind"] for d in rendered.docs if d["metadata"]["name"] == name}
    if "CronJob" in kinds:
        return rendered.get("CronJob", name)["spec"]["jobTemplate"]["spec"]
    return rendered.get("Job", name)["spec"]


def master(rendered) -> dict:
    return job_spec(rendered, MASTER)["template"]["spec"]["containers"][0]


def env(container: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_a_schedule_makes_master_and_workers_cronjobs_that_never_overlap(helm):
    rendered = helm.render(None, *SCHEDULED, "--set", "locust.schedule.timeZone=Europe/Paris",
                           "--set", "locust.schedule.historyLimit=5", "--set",
                           "locust.schedule.startingDeadlineSeconds=120")
    assert not rendered.of_kind("Job")
    for name in (MASTER, WORKER):
        cronjob = rendered.get("CronJob", name)
        assert cronjob["apiVersion"] == "batch/v1"
        spec = cronjob["spec"]
        assert {k: v for k, v in spec.items() if k != "jobTemplate"} == {
            "schedule": CRON, "timeZone": "Europe/Paris", "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 120, "successfulJobsHistoryLimit": 5, "failedJobsHistoryLimit": 5}, name
        # Each run's Job carries the release's labels, so `kubectl get jobs -l` finds the runs.
        assert spec["jobTemplate"]["metadata"]["labels"]["app.kubernetes.io/component"] == name.removeprefix("lt-")


def test_no_time_zone_leaves_the_controllers(helm):
    assert "timeZone" not in helm.render(None, *SCHEDULED).get("CronJob", MASTER)["spec"]


@pytest.mark.parametrize("extra", [(), S3, ("--set", "locust.results.store=none")], ids=["pvc", "s3", "none"])
def test_the_scheduled_job_is_the_unscheduled_runs_job(helm, extra):
    """The same Job but for the run's name: a scheduled run's is its Job's, a run at install adds its Job's uid."""
    once, scheduled = helm.render(None, *RUN, *extra), helm.render(None, *SCHEDULED, *extra)

    def named_alike(spec: dict) -> dict:
        spec = copy.deepcopy(spec)  # renders are cached: leave them as rendered
        spec["template"]["metadata"].get("annotations", {}).pop("checksum/master", None)  # the master's spec's hash
        for container in spec["template"]["spec"]["containers"]:
            container["env"] = [e for e in container.get("env", []) if e["name"] not in ("LOADTEST_JOB_UID",
                                                                                         "LOADTEST_RUN_NAME")]
        return spec

    for name in (MASTER, WORKER):
        assert named_alike(scheduled.get("CronJob", name)["spec"]["jobTemplate"]["spec"]) == named_alike(
            once.get("Job", name)["spec"]), name


def test_every_judged_job_has_the_same_deadline_so_no_worker_outlives_its_run(helm):
    """runTime plus the master's autoquit (a minute by default) plus 14 minutes to start and stop, the same for master
    and workers (a worker whose master is gone quits by itself after Locust's 60 s heartbeat timeout; this bounds one
    that never found it); the step load's length instead of runTime."""
    for args, seconds in ((RUN, 120 + 60 + 840), (SCHEDULED, 120 + 60 + 840),
                          ((*RUN, "--set", "locust.autostart.runTime=1h30m"), 5400 + 60 + 840),
                          ((*RUN, "--set", "locust.autostart.autoquitSeconds=600"), 120 + 600 + 840),
                          ((*RUN, "--set", "locust.stepLoad.enabled=true", "--set", "locust.stepLoad.stepTime=2m",
                            "--set", "locust.stepLoad.steps=4"), 480 + 60 + 840)):
        rendered = helm.render(None, *args)
        for name in (MASTER, WORKER):
            assert job_spec(rendered, name)["activeDeadlineSeconds"] == seconds, (args, name)


def test_only_exit_code_1_is_left_to_the_backoff_limit(helm):
    """LoadTestRegression reads exit code 1 as the master Job failing with reason BackoffLimitExceeded: every other
    end (a disruption, the packages' install, codes 2, 3, 4, a signal) fails the Job by its podFailurePolicy."""
    spec = job_spec(helm.render(None, *SCHEDULED), MASTER)
    assert spec["backoffLimit"] == 0
    rules = spec["podFailurePolicy"]["rules"]
    assert all(r["action"] == "FailJob" for r in rules)
    assert {"type": "DisruptionTarget", "status": "True"} in [c for r in rules for c in r.get("onPodConditions", [])]
    exits = {r["onExitCodes"]["containerName"]: r["onExitCodes"] for r in rules if "onExitCodes" in r}
    assert exits["master"] == {"containerName": "master", "operator": "NotIn", "values": [0, 1]}
    assert exits["packages"]["values"] == [0]
    baked = job_spec(helm.render(None, *SCHEDULED, "--set", "locust.packages.image=registry.example/locust:1"),
                     MASTER)
    assert "packages" not in [r["onExitCodes"]["containerName"] for r in baked["podFailurePolicy"]["rules"]
                              if "onExitCodes" in r]


def test_the_results_claim_is_kept_and_mounted_on_the_master_alone(helm):
    rendered = helm.render(None, *SCHEDULED)
    claim = rendered.get("PersistentVolumeClaim", CLAIM)
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    pod = job_spec(rendered, MASTER)["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "results"]
    assert volume == {"name": "results", "persistentVolumeClaim": {"claimName": CLAIM}}
    assert {"name": "results", "mountPath": "/results"} in master(rendered)["volumeMounts"]
    workers = job_spec(rendered, WORKER)["template"]["spec"]
    assert "results" not in [v["name"] for v in workers["volumes"]]
    assert "LOADTEST_RESULTS_DIR" not in env(workers["containers"][0])
    # uid 1000 writes there: the pod's fsGroup makes the volume its group's.
    assert pod["securityContext"]["fsGroup"] == 1000
    assert_restricted(f"CronJob/{MASTER}", pod)


def test_a_claim_of_yours_or_a_storage_class(helm):
    sized = helm.render(None, *RUN, "--set", "locust.results.pvc.size=20Gi",
                        "--set", "locust.results.pvc.storageClass=gp3")
    spec = sized.get("PersistentVolumeClaim", CLAIM)["spec"]
    assert (spec["storageClassName"], spec["resources"]["requests"]["storage"]) == ("gp3", "20Gi")
    own = helm.render(None, *RUN, "--set", "locust.results.pvc.existingClaim=my-runs")
    assert own.of_kind("PersistentVolumeClaim") == []
    (volume,) = [v for v in job_spec(own, MASTER)["template"]["spec"]["volumes"] if v["name"] == "results"]
    assert volume["persistentVolumeClaim"] == {"claimName": "my-runs"}


def test_the_master_is_told_its_results_folder_and_writes_locusts_files_there(helm):
    container = master(helm.render(None, *SCHEDULED))
    variables = env(container)
    assert variables["LOADTEST_RESULTS_DIR"] == "/results"
    # The Job's name, which the Job controller labels each pod with (Kubernetes 1.27+): a scheduled run's is its
    # minute's, so each run has its own folder.
    assert variables["LOADTEST_JOB_NAME"] == {
        "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}}
    assert variables["LOADTEST_RUN_NAME"] == "$(LOADTEST_JOB_NAME)"
    assert container["args"][-3:] == RESULTS_ARGS
    # A run at install has the same Job name each time: its Job's uid makes its folder its own.
    once = env(master(helm.render(None, *RUN)))
    assert once["LOADTEST_JOB_UID"] == {
        "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']"}}
    assert once["LOADTEST_RUN_NAME"] == "$(LOADTEST_JOB_NAME)-$(LOADTEST_JOB_UID)"
    assert not {"LOADTEST_RESULTS_S3_URL", "AWS_ACCESS_KEY_ID"} & set(variables)


def test_an_s3_store_writes_to_an_emptydir_and_names_the_bucket(helm):
    rendered = helm.render(None, *SCHEDULED, *S3, "--set", "locust.results.s3.prefix=team/nightly",
                           "--set", "locust.results.s3.region=eu-west-1")
    assert rendered.of_kind("PersistentVolumeClaim") == []
    pod = job_spec(rendered, MASTER)["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "results"]
    assert volume == {"name": "results", "emptyDir": {}}
    variables = env(master(rendered))
    assert {k: variables[k] for k in ("LOADTEST_RESULTS_DIR", "LOADTEST_RESULTS_S3_URL", "LOADTEST_RESULTS_S3_ENDPOINT",
                                      "LOADTEST_RESULTS_S3_REGION")} == {
        "LOADTEST_RESULTS_DIR": "/results", "LOADTEST_RESULTS_S3_URL": "s3://load-runs/team/nightly",
        "LOADTEST_RESULTS_S3_ENDPOINT": "http://minio.storage:9000", "LOADTEST_RESULTS_S3_REGION": "eu-west-1"}
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert variables[key] == {"secretKeyRef": {"name": "runs-bucket", "key": key}}
    assert master(rendered)["args"][-3:] == RESULTS_ARGS
    assert env(master(helm.render(None, *RUN, *S3, "--set", "locust.results.s3.prefix=")))[
        "LOADTEST_RESULTS_S3_URL"] == "s3://load-runs"
    assert_restricted(f"CronJob/{MASTER}", pod)


def test_no_store_and_the_other_modes_keep_no_results(helm):
    for args in ((*RUN, "--set", "locust.results.store=none"), ("--set", "locust.mode=autostart"), (), S3):
        rendered = helm.render(None, *args)
        assert rendered.of_kind("PersistentVolumeClaim") == [], args
        for _, pod in rendered.pod_specs():
            assert "results" not in [v["name"] for v in pod.get("volumes", [])], args
            for container in pod["containers"]:
                assert not {"LOADTEST_RESULTS_DIR", "LOADTEST_RUN_NAME"} & set(env(container) if "env" in container
                                                                                else {}), args


@pytest.mark.parametrize("extra", [(), S3], ids=["pvc", "s3"])
def test_scheduled_render_validates_offline(helm, kubeconform, schema_location, tmp_path, extra):
    rendered = helm.render(None, *SCHEDULED, "--set", "locust.schedule.timeZone=Europe/Paris", *extra)
    manifest = tmp_path / "scheduled.yaml"
    manifest.write_text(rendered.text)
    result = subprocess.run([kubeconform, "-strict", "-summary", "-kubernetes-version", "1.33.0",
                             "-schema-location", schema_location, str(manifest)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_notes_say_how_runs_are_skipped_and_where_results_go(helm, tmp_path):
    text = helm.notes(tmp_path, *SCHEDULED)
    assert "concurrencyPolicy Forbid" in text and "reason=JobAlreadyActive" in text
    assert "kubectl -n loadtest get jobs -l app.kubernetes.io/instance=lt,app.kubernetes.io/component=locust-master" \
        in text
    assert f"claim {CLAIM}, which helm uninstall leaves" in text and "loadtest history --release lt" in text
    assert "s3://load-runs/loadtest/<run>/" in helm.notes(tmp_path / "s3", *RUN, *S3)


@pytest.mark.parametrize("args, says", [
    (("--set", f"locust.schedule.cron={CRON}"),
     f'locust.schedule.cron "{CRON}" schedules the judged run of locust.mode=run, and mode is interactive: set '
     "locust.mode=run, or drop locust.schedule.cron"),
    ((*RUN, "--set", "locust.results.store=s3"), "locust.results.store s3 needs locust.results.s3.endpoint"),
    ((*RUN, *S3[:4], "--set", "locust.results.s3.existingSecret=x"),
     "locust.results.store s3 needs locust.results.s3.bucket"),
    ((*RUN, *S3[:6]), "locust.results.store s3 needs locust.results.s3.existingSecret (endpoint, bucket and "
                      "existingSecret, a Secret with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"),
    ((*RUN, "--set", "locust.extraEnv[0].name=LOADTEST_RUN_NAME", "--set", "locust.extraEnv[0].value=x"),
     "locust.extraEnv[0].name LOADTEST_RUN_NAME: the chart sets it"),
    ((*RUN, *S3, "--set", "locust.extraEnv[0].name=AWS_ACCESS_KEY_ID", "--set", "locust.extraEnv[0].value=x"),
     "locust.extraEnv[0].name AWS_ACCESS_KEY_ID: the chart sets it"),
])
def test_values_that_cannot_make_a_scheduled_run_are_refused(helm, args, says):
    helm.assert_refused(args, says)


def test_your_own_aws_keys_stay_yours_without_the_bucket(helm):
    rendered = helm.render(None, *RUN, "--set", "locust.extraEnv[0].name=AWS_ACCESS_KEY_ID",
                           "--set", "locust.extraEnv[0].value=AKIA")
    assert env(master(rendered))["AWS_ACCESS_KEY_ID"] == "AKIA"


def test_cronjob_names_past_52_characters_are_refused_with_the_longest_release_that_fits(helm):
    fits, too_long = "r" * 38, "r" * 39
    result = helm.run("template", fits, str(paths.CHART), *SCHEDULED)
    assert result.returncode == 0, result.stderr
    names = [d["metadata"]["name"] for d in manifests(result.stdout) if d["kind"] == "CronJob"]
    assert sorted(len(n) for n in names) == [52, 52]
    refused = helm.run("template", too_long, str(paths.CHART), *SCHEDULED)
    assert refused.returncode != 0
    assert "has 53 characters, and Kubernetes takes 52 at most" in refused.stderr
    assert "install with a release name of at most 38 characters" in refused.stderr
    # Unscheduled, the same release name makes its Jobs.
    assert helm.run("template", too_long, str(paths.CHART), *RUN).returncode == 0


def test_with_the_in_chart_prometheus_the_master_is_told_where_to_read_its_series(helm):
    monitored = ("--set", "monitoring.enabled=true", "--set", "monitoring.prometheus.scrapeInterval=5s")
    rendered = helm.render(None, *RUN, *monitored)
    endpoint = rendered.get("ConfigMap", "lt-prometheus-endpoint")["data"]
    assert endpoint == {"LOADTEST_PROMETHEUS_URL": "http://lt-prometheus:9090", "LOADTEST_SCRAPE_INTERVAL_S": "5"}
    container = master(rendered)
    assert {"configMapRef": {"name": "lt-prometheus-endpoint", "optional": True}} in container["envFrom"]
    assert env(container)["LOADTEST_RELEASE"] == "lt"
    # Prometheus admits the master's queries, beside Grafana's.
    (rule,) = rendered.get("NetworkPolicy", "lt-prometheus")["spec"]["ingress"]
    assert {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "lt",
                                            "app.kubernetes.io/component": "locust-master"}}} in rule["from"]
    # No in-chart Prometheus: no ConfigMap, and the optional reference is harmless.
    assert "lt-prometheus-endpoint" not in [c["metadata"]["name"] for c in helm.render(None, *RUN).of_kind("ConfigMap")]
