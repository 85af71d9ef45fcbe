"""What the loadtest CLI and the chart's Locust pods both run, standard library only (the pods have Locust and
nothing of this project installed): the check language and exit codes, the verdict, a run's results folder, the
units, the Prometheus and S3 clients and the cgroup reader. The chart ships this folder to the pods in a ConfigMap;
the CLI installs it as a package. One implementation, so a run is judged the same wherever it is judged.
"""
