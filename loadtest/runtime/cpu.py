"""CPU used by processes, measured from /proc (psutil): a run's own figures where no cAdvisor runs; and CPU quotas
(cgroups) that hold processes to a share of a core, as a pod's CPU limit does."""
from __future__ import annotations

import errno
import itertools
import os
import platform
import time
from pathlib import Path

import psutil
from loadtest_shared import cgroup  # the pods' cgroup reader: where the cpu controller is mounted

from ..capacity.machine import Machine
from ..errors import RunFailed


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


def this_machine() -> Machine:
    """This machine's cores and memory, what a local run may ask of it (capacity.machine)."""
    return Machine(os.cpu_count() or 1, psutil.virtual_memory().total // 2 ** 20)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class CpuQuotaError(RunFailed):
    """This machine cannot set a CPU quota: not root, no cgroup cpu controller, or one that refuses a new group."""


class CpuQuotas:
    """cgroups with a CFS quota on the cpu controller (cgroup v1 or v2), each holding the processes given to it;
    removed when the context exits (open it before the processes it limits, so they have stopped by then)."""

    numbers = itertools.count()
    REMOVE_TIMEOUT_S = 10

    def __init__(self):
        usable = [(mount, version) for _, mount, version in cgroup.cgroup_cpu_dirs(Path("/proc/self"))
                  if version == "v1" or "cpu" in self._controllers(mount)]
        if os.geteuid() != 0 or not usable:
            raise CpuQuotaError("CPU quotas need root and a cgroup cpu controller")
        self.mount, self.version = usable[0]
        self.created: list[Path] = []

    @staticmethod
    def _controllers(mount: Path) -> list[str]:
        try:
            return (mount / "cgroup.controllers").read_text().split()
        except OSError:
            return []

    def limit(self, pids: list[int], cores: float) -> None:
        """Hold the processes `pids` to `cores` of CPU together."""
        group = self.mount / f"loadtest-quota-{os.getpid()}-{next(self.numbers)}"
        period = 100_000
        try:
            if self.version == "v2":
                (self.mount / "cgroup.subtree_control").write_text("+cpu")
            group.mkdir()
            self.created.append(group)
            if self.version == "v2":
                (group / "cpu.max").write_text(f"{int(cores * period)} {period}")
            else:
                (group / "cpu.cfs_period_us").write_text(str(period))
                (group / "cpu.cfs_quota_us").write_text(str(int(cores * period)))
            for pid in pids:
                (group / "cgroup.procs").write_text(str(pid))
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EBUSY):
                raise
            raise CpuQuotaError(f"cannot set a CPU quota in {self.mount} ({e})") from None

    def __enter__(self) -> CpuQuotas:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def remove(self) -> None:
        """Remove the groups; a process that was just stopped may take a moment to leave its group."""
        for group in self.created:
            deadline = time.monotonic() + self.REMOVE_TIMEOUT_S
            while True:
                try:
                    group.rmdir()
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        self.created = []
