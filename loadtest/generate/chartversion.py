"""The chart's version policy: SemVer, the version bumped on every change to what the chart packages, and
`appVersion` the Locust version its images run.

charts/versions.lock records, for every version, the digest of the files `helm package` puts in the chart
(.helmignore applied; Chart.yaml's own `version:` line and CHANGELOG.md left out, since a bump writes them). A
version, once recorded, is never recorded again: a change to the chart under it is refused until the version is
bumped, its CHANGELOG.md entry written and `loadtest docs` run.
"""
from __future__ import annotations

import fnmatch
import hashlib
import re
from pathlib import Path

from .. import paths
from ..errors import UsageError

LOCK = paths.HOME / "charts" / "versions.lock"
LOCK_HEADER = ("# The chart's content digest per version, written by `loadtest docs`\n"
               "# (loadtest/generate/chartversion.py).\n"
               "# A recorded version is never recorded again: a changed chart needs a new version.\n")
CHANGELOG = "CHANGELOG.md"
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
_VERSION_LINE = re.compile(r"^version:.*$", re.M)
BUMP = ("bump `version` in charts/loadtest/Chart.yaml (SemVer: patch for a fix, minor for a new value or feature, "
        "major for a renamed or removed value), add its `## <version>` entry to charts/loadtest/CHANGELOG.md and run "
        "`loadtest docs`")


def semver(version: str) -> tuple[int, int, int]:
    m = _SEMVER.match(version)
    if not m:
        raise UsageError(f"chart version {version!r} is not SemVer MAJOR.MINOR.PATCH: {BUMP}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _ignored(chart: Path) -> list[str]:
    ignore = chart / ".helmignore"
    lines = ignore.read_text().splitlines() if ignore.exists() else []
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def packaged_files(chart: Path = paths.CHART) -> list[Path]:
    """The files `helm package` takes, for the patterns this chart's .helmignore uses (a name glob; `name/` for a
    folder), in path order."""
    patterns = _ignored(chart)
    folders = [p.rstrip("/") for p in patterns if p.endswith("/")]
    names = [p for p in patterns if not p.endswith("/")]
    files = []
    for path in sorted(chart.rglob("*")):
        parts = path.relative_to(chart).parts
        if path.is_file() and not any(fnmatch.fnmatch(part, f) for part in parts[:-1] for f in folders) \
                and not any(fnmatch.fnmatch(parts[-1], n) for n in names):
            files.append(path)
    return files


def content_digest(chart: Path = paths.CHART) -> str:
    digest = hashlib.sha256()
    for path in packaged_files(chart):
        name = path.relative_to(chart).as_posix()
        if name == CHANGELOG:
            continue
        data = path.read_bytes()
        if name == "Chart.yaml":
            data = _VERSION_LINE.sub("version:", data.decode()).encode()
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    return "sha256:" + digest.hexdigest()


def recorded(lock: Path = LOCK) -> dict[str, str]:
    """version -> digest, in the file's order."""
    if not lock.exists():
        return {}
    pairs = [line.split() for line in lock.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return {version: digest for version, digest in pairs}


def problems(chart: Path = paths.CHART, lock: Path = LOCK) -> list[str]:
    """What breaks the policy, each with its fix; [] when the chart's version and its record agree."""
    version, versions = paths.chart_version(chart), recorded(lock)
    found = []
    try:
        semver(version)
        ordered = [semver(v) for v in versions]
    except UsageError as e:
        return [str(e)]
    if ordered != sorted(set(ordered)):
        found.append(f"{paths.shown(lock)} lists versions out of order or twice: {', '.join(versions)}")
    if version in versions and versions[version] != content_digest(chart):
        found.append(f"charts/loadtest changed since version {version} was recorded: {BUMP}")
    elif version not in versions:
        if ordered and semver(version) <= ordered[-1]:
            found.append(f"chart version {version} is not above the last recorded one, {list(versions)[-1]}: {BUMP}")
        else:
            found.append(f"chart version {version} is not recorded: run `loadtest docs` (after its CHANGELOG entry)")
    changelog = chart / CHANGELOG
    headings = set(re.findall(r"^## \[?([0-9.]+)\]?", changelog.read_text(), re.M)) if changelog.exists() else set()
    missing = [v for v in (*versions, version) if v not in headings]
    if missing:
        found.append(f"charts/loadtest/{CHANGELOG} has no `## {missing[0]}` entry: say what changed for users")
    return found


def record(chart: Path = paths.CHART, lock: Path = LOCK) -> str:
    """The lock file's text with the chart's current version recorded; a UsageError for a version recorded with
    other content, or not above the last."""
    version, versions = paths.chart_version(chart), recorded(lock)
    digest = content_digest(chart)
    if versions.get(version, digest) != digest:
        raise UsageError(f"charts/loadtest changed since version {version} was recorded: {BUMP}")
    if version not in versions and versions and semver(version) <= semver(list(versions)[-1]):
        raise UsageError(f"chart version {version} is not above the last recorded one, {list(versions)[-1]}: {BUMP}")
    versions[version] = digest
    return LOCK_HEADER + "".join(f"{v} {d}\n" for v, d in versions.items())
