"""What the kernel's cgroups say of this process: its CPU limit (the smallest CFS quota of its cgroup and their
ancestors), the share of periods it was throttled, its memory in use and its limit; cgroup v1 or v2, on a node, in a
container or on a laptop. The workers report them (loadtest_metrics); the CLI reads where the cpu controller is
mounted before it pins a local run's processes (loadtest.runtime.cpu).
"""
from __future__ import annotations

import os
from pathlib import Path


def cgroup_cpu_dirs(proc: Path) -> list[tuple[Path, Path, str]]:
    """(cgroup folder of this process, mount point, "v1" or "v2") for the cgroup v1 hierarchy of the cpu controller
    and every cgroup v2 hierarchy (whose cpu.max exists only where the cpu controller is enabled)."""
    return cgroup_dirs(proc, "cpu")


def cgroup_dirs(proc: Path, controller: str) -> list[tuple[Path, Path, str]]:
    """cgroup_cpu_dirs for any controller: its cgroup v1 hierarchy and every cgroup v2 hierarchy."""
    paths = {}
    for line in (proc / "cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["unified"]:
            paths[name] = path
    found = []
    for line in (proc / "mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, (fstype, _source, super_options) = before.split(), after.split()[:3]
        if fstype == "cgroup2" and "unified" in paths:
            version, path = "v2", paths["unified"]
        elif fstype == "cgroup" and controller in super_options.split(",") and controller in paths:
            version, path = "v1", paths[controller]
        else:
            continue
        root, mount = fields[3], Path(fields[4]).resolve()
        # Inside a container the mount's root is the container's own cgroup: the path is relative to it.
        relative = os.path.relpath(path, root) if path.startswith(root) else "."
        found.append(((mount / relative).resolve(), mount, version))
    return found


def _quota_cores(folder: Path, version: str) -> float | None:
    try:
        if version == "v2":
            quota, period = (folder / "cpu.max").read_text().split()
            return None if quota == "max" else int(quota) / int(period)
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        return None if quota < 0 else quota / int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None


def cpu_limit_cores(proc: Path = Path("/proc/self")) -> float | None:
    """This process's CPU limit in cores: the smallest CFS quota of its cgroup and the cgroup's ancestors (cgroup
    v1 or v2), None when there is none."""
    try:
        hierarchies = cgroup_cpu_dirs(proc)
    except (OSError, ValueError):
        return None
    limits = []
    for folder, mount, version in hierarchies:
        while True:
            quota = _quota_cores(folder, version)
            if quota is not None:
                limits.append(quota)
            if folder == mount or mount not in folder.parents:
                break
            folder = folder.parent
    return min(limits, default=None)


def memory_in_use(proc: Path = Path("/proc/self")) -> tuple[int | None, int | None]:
    """(bytes in use, limit in bytes) of this process's memory cgroup (v1's memory controller, or v2): what the
    kernel's out-of-memory killer holds it to. (None, None) where none is readable; the limit None where none is
    set."""
    try:
        hierarchies = cgroup_dirs(proc, "memory")
    except (OSError, ValueError):
        return None, None
    for folder, _mount, version in hierarchies:
        try:
            if version == "v2":
                limit = (folder / "memory.max").read_text().strip()
                return int((folder / "memory.current").read_text()), None if limit == "max" else int(limit)
            limit = int((folder / "memory.limit_in_bytes").read_text())
            return int((folder / "memory.usage_in_bytes").read_text()), None if limit >= 1 << 60 else limit
        except (OSError, ValueError):
            continue
    return None, None


def cpu_throttle_counts(proc: Path = Path("/proc/self")) -> tuple[int, int] | None:
    """(CFS periods, periods throttled) of this process's cgroup, from its cpu.stat (cgroup v1's cpu controller or
    v2): the counters cAdvisor reads for a container. None where none is readable."""
    try:
        hierarchies = cgroup_cpu_dirs(proc)
    except (OSError, ValueError):
        return None
    for folder, _mount, _version in hierarchies:
        try:
            stat = dict(line.split()[:2] for line in (folder / "cpu.stat").read_text().splitlines() if line.strip())
            return int(stat["nr_periods"]), int(stat["nr_throttled"])
        except (OSError, ValueError, KeyError):
            continue
    return None


class ThrottleClock:
    """The share of CFS periods in which this process's cgroup was throttled since the last reading: what the
    saturation rules read from cAdvisor for a worker container, measured by the worker itself. None without a CPU
    quota (no period passes) or without a readable cgroup."""

    def __init__(self, proc: Path = Path("/proc/self")):
        self.proc = proc
        self.start()

    def start(self) -> None:
        self.last = cpu_throttle_counts(self.proc)

    def share(self) -> float | None:
        before, self.last = self.last, cpu_throttle_counts(self.proc)
        if before is None or self.last is None or self.last[0] <= before[0]:
            return None
        return (self.last[1] - before[1]) / (self.last[0] - before[0])
