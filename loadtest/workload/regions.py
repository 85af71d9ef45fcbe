"""One run from several releases (regions): how they are named on the command line and how the load is split.

    --release lt@us-east-1 --release lt@eu-west-1            each release in its kube context
    --release loadtest/lt@us-east-1                          with its namespace (default: the context's, or --namespace)
    --share us-east-1=60% --share eu-west-1=40%              the load split by these shares (default: by workers)

A region is named by its context, or by the release (with its namespace when given) where no context is; the
region's name is how checks (`us-east-1:p99<300ms`), progress lines and the results' sub-folders name it.

Pure: the runtime (loadtest.runtime.releaserun) opens the releases, starts them together and merges their results.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError

# Helm's release names and Kubernetes namespaces (DNS-1123); a kube context's name is any text without '@', '=' or
# a space (EKS's own are ARNs, "arn:aws:eks:us-east-1:123456789012:cluster/lt").
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
FORM = re.compile(rf"^(?:(?P<namespace>{_LABEL})/)?(?P<name>{_LABEL})(?:@(?P<context>[^@=\s\[\]]+))?$")
FORM_TEXT = "[NAMESPACE/]NAME[@CONTEXT], e.g. lt@us-east-1 or loadtest/lt@us-east-1"
# A region's share of the load, in percent (all regions' add up to 100).
SHARE_TOLERANCE = 0.01
RATE_STEPS = 1000  # a region's part of an arrival rate is a whole number of thousandths of a request a second


@dataclass(frozen=True)
class Region:
    """One release of a run, as the user named it."""

    name: str  # a Helm release
    namespace: str | None  # None: the context's namespace, or --namespace
    context: str | None  # a kube context; None: kubectl's current one

    def __str__(self) -> str:  # as the user names it: [NAMESPACE/]NAME[@CONTEXT]
        return f"{self.namespace + '/' if self.namespace else ''}{self.name}{'@' + self.context if self.context else ''}"

    @property
    def region(self) -> str:
        if self.context:
            return self.context
        return f"{self.namespace}/{self.name}" if self.namespace else self.name



def folder_name(region: str) -> str:
    """A region's sub-folder of the run's results."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", region)


def parse(text: str) -> Region:
    found = FORM.match(text.strip())
    if not found:
        raise UsageError(f"{text!r} is not a Helm release name, as {FORM_TEXT} (lower-case letters, digits and '-')")
    if len(found.group("name")) > 53:
        raise UsageError(f"{text!r}: a Helm release name is at most 53 characters")
    return Region(found.group("name"), found.group("namespace"), found.group("context"))


def parse_all(texts: list[str]) -> list[Region]:
    """The releases of one run, each once, each region named once."""
    regions = [parse(text) for text in texts]
    seen: dict[tuple, str] = {}
    for region, text in zip(regions, texts):
        key = (region.context, region.namespace, region.name)
        if key in seen:
            raise UsageError(f"--release {text}: the same release as --release {seen[key]}; give each release once")
        seen[key] = text
    names = [r.region for r in regions]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--release: two releases are both region {twice[0]!r}; name each with its own context "
                         "(NAME@CONTEXT) or namespace (NAMESPACE/NAME)")
    return regions


def parse_shares(texts: list[str], regions: list[Region]) -> dict[str, float] | None:
    """--share REGION=PERCENT for every region, as fractions adding up to 1; None when no share is given (the load
    is then split by each release's workers)."""
    if not texts:
        return None
    if len(regions) < 2:
        raise UsageError("--share: the load of one release is all of it; give --share with two --release or more")
    known = [r.region for r in regions]
    shares: dict[str, float] = {}
    for text in texts:
        if "=" not in text:
            raise UsageError(f"--share {text!r}: give REGION=PERCENT, e.g. {known[0]}=50%")
        region, _, amount = text.rpartition("=")
        region, amount = region.strip(), amount.strip()
        if region not in known:
            raise UsageError(f"--share {text!r}: no region {region!r} in this run; one of {', '.join(known)}")
        if region in shares:
            raise UsageError(f"--share {text!r}: region {region} has a share already; give each region one")
        try:
            percent = float(amount.removesuffix("%"))
        except ValueError:
            percent = float("nan")
        if not 0 < percent <= 100:
            raise UsageError(f"--share {text!r}: give REGION=PERCENT with a percentage above 0, e.g. {region}=50%")
        shares[region] = percent / 100
    missing = [r for r in known if r not in shares]
    if missing:
        raise UsageError(f"--share: no share for {', '.join(missing)}; give every region one, adding up to 100%")
    total = sum(shares.values())
    if abs(total - 1) > SHARE_TOLERANCE / 100:
        raise UsageError(f"--share: the shares add up to {total:.2%}, not 100%; "
                         + ", ".join(f"{r}={p:.4g}%" for r, p in ((r, 100 * s / total) for r, s in shares.items()))
                         + " would")
    return shares


def split(total: int, weights: dict[str, float]) -> dict[str, int]:
    """`total` whole units (users) split in proportion to `weights`, each region's part rounded so that the parts add
    up to the total (largest remainder first; ties to the region named first)."""
    whole = sum(weights.values())
    exact = {name: total * w / whole for name, w in weights.items()}
    parts = {name: int(x) for name, x in exact.items()}
    for name in sorted(exact, key=lambda n: -(exact[n] - parts[n]))[:total - sum(parts.values())]:
        parts[name] += 1
    return parts


def weights(shares: dict[str, float] | None, workers: dict[str, int]) -> dict[str, float]:
    """What the load is split by: the shares given, or each region's workers (its capacity)."""
    return dict(shares) if shares else {name: float(n) for name, n in workers.items()}


def split_rate(rate: float, weights: dict[str, float]) -> dict[str, float]:
    """An arrival rate (requests/s) split in proportion to `weights`, the parts adding up to `rate` (as split()'s
    users do, in RATE_STEPS)."""
    return {name: part / RATE_STEPS for name, part in split(round(rate * RATE_STEPS), weights).items()}
