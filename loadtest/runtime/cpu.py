"""CPU used by processes, measured from /proc (psutil): a run's own figures where no cAdvisor runs."""
from __future__ import annotations

import platform
from pathlib import Path

import psutil


def process_tree(pid: int) -> list[psutil.Process]:
    """A process and its children (nginx's and HAProxy's workers; Locust's greenlets run in-process)."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """User + system CPU time the processes used so far; ones that have exited count nothing."""
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


class CpuMeter:
    """CPU of a process and its children, in cores, averaged over the samples kept."""

    def __init__(self, pid: int):
        self.procs = process_tree(pid)
        for p in self.procs:
            p.cpu_percent(None)
        self.samples: list[float] = []

    def sample(self, keep: bool) -> float:
        total = 0.0
        for p in self.procs:
            try:
                total += p.cpu_percent(None) / 100
            except psutil.NoSuchProcess:
                pass
        if keep:
            self.samples.append(total)
        return total

    @property
    def mean(self) -> float | None:
        return sum(self.samples) / len(self.samples) if self.samples else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
