"""argparse types: each option's value is checked as it is parsed, so the refusal names the option (argparse says
"argument --nodes: ...") and nothing starts with a wrong value. The rules themselves stay in the floors below
(units, catalog, compare): a type only runs one and hands argparse its message."""
from __future__ import annotations

import argparse
import math
import re
import urllib.parse
from pathlib import Path

from loadtest_shared import checks
from loadtest_shared import units as durations

from .. import units
from ..errors import UsageError
from ..workload import regions

# Helm's release names and Kubernetes namespaces: DNS-1123 (a release name at most 53 characters).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def once(why: str) -> type[argparse.Action]:
    """An option a command takes once (argparse keeps the last of a repeated one without a word): given again, it is
    refused, saying `why`."""
    class Once(argparse.Action):
        def __call__(self, parser, namespace, value, option_string=None):
            before = getattr(namespace, self.dest)
            if before is not None:
                parser.error(f"argument {option_string}: {before} and {value}: {why}")
            setattr(namespace, self.dest, value)
    return Once


def number(kind: type = int, minimum: float | None = None, maximum: float | None = None):
    """A finite int or float within [minimum, maximum]."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'a whole number' if kind is int else 'a number'}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text}: give a finite number")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{text}: give at least {minimum:g}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{text}: give at most {maximum:g}")
        return value
    return parse


def checked(check):
    """The text as given, once `check` (a validator of a lower floor, raising UsageError) accepted it."""
    def parse(text: str) -> str:
        try:
            check(text)
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    return parse


def each(check):
    """A comma-separated list whose every item `check` accepts."""
    def parse(text: str) -> str:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{text!r}: give at least one, comma-separated")
        for item in items:
            checked(check)(item)
        return text
    return parse


def given(args, options: dict[str, str]) -> list[str]:
    """Which of `options` (flag: argparse dest) the user gave, i.e. set to other than the parser's default (kept in
    `args.defaults` by with_defaults): options that apply elsewhere are refused, not ignored."""
    return [option for option, dest in options.items() if getattr(args, dest) != args.defaults[dest]]


def with_defaults(p, *options: dict[str, str]) -> None:
    """Keep the parser's defaults of `options` in args.defaults, for given()."""
    p.set_defaults(defaults={dest: p.get_default(dest) for group in options for dest in group.values()})


def parse_checks(texts: list[str], option: str = "--check") -> list[checks.Check]:
    """The checks given with `option` (the check language: `p95<200ms`), or a UsageError naming it and the fix."""
    try:
        return checks.parse_all(texts)
    except checks.CheckError as e:
        raise UsageError(f"{option}: {e}") from None


def latency_ms(text: str) -> float:
    """A latency like 200ms or 0.5s, in milliseconds: the check language's units (`p99<200ms`)."""
    try:
        milliseconds = checks.parse_all([f"p99<{text}"])[0].limit
    except checks.CheckError:
        milliseconds = 0.0
    if not milliseconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a latency above 0 like 200ms or 0.5s")
    return milliseconds


def duration(minimum_s: int = 1):
    """A duration like 20, 20s, 2m or 1h of at least `minimum_s` seconds, as given."""
    def parse(text: str) -> str:
        try:
            seconds = units.parse_duration_s(text)
        except UsageError:
            raise argparse.ArgumentTypeError(f"{text!r} is not like {durations.DURATION_FORMS}") from None
        if seconds < minimum_s:
            raise argparse.ArgumentTypeError(f"{text}: give at least {minimum_s} s")
        return text
    return parse


def kubernetes_name(what: str, longest: int):
    def parse(text: str) -> str:
        if len(text) > longest or not DNS_LABEL.match(text):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a {what}: lower-case letters, digits and '-', at most {longest} characters")
        return text
    return parse


release_name = kubernetes_name("Helm release name", 53)
region = checked(regions.parse)
namespace = kubernetes_name("Kubernetes namespace", 63)


def existing_file(text: str) -> str:
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return text


def existing_folder(text: str) -> str:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    return text


def url(text: str) -> str:
    """An http(s) URL with a host, and a port from 1 to 65535 if it names one."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not like http://127.0.0.1:8089")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: its port is not a number from 1 to 65535")
    return text


def add_releases(where, options, release_help: str, share_of: str | None = None) -> None:
    """--release (repeated: several releases, regions), --namespace and, where a load is split over them, --share
    (`share_of`: what is split), as run, sweep and history take them; --release goes in `where`, the others in
    `options`."""
    where.add_argument("--release", metavar="[NAMESPACE/]NAME[@CONTEXT]", action="append", type=region,
                       help=release_help)
    options.add_argument("--namespace", type=namespace,
                         help="the releases' namespace where --release names none (default: the context's, else "
                              "default)")
    if share_of:
        options.add_argument("--share", action="append", default=[], metavar="REGION=PERCENT",
                             help=f"a region's share of {share_of} (repeat it for every region, adding up to 100%%; "
                                  "default: split by each release's workers)")
