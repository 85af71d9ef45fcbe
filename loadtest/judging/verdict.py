"""The verdict as the CLI loads it. It is decided in plugin/loadtest_verdict.py, the one implementation, which the
chart's judged master imports in its pod: the samples, the steady window, the thresholds, the causes and the words.
"""
from __future__ import annotations

from .. import paths

_verdict = paths.pod_module("loadtest_verdict")

Sample, Window, Verdict, judge, CAUSES = (
    _verdict.Sample, _verdict.Window, _verdict.Verdict, _verdict.judge, _verdict.CAUSES)
THRESHOLDS = _verdict.THRESHOLDS
SATURATED_CPU, THROTTLED, SATURATED_SHARE, CONTENDED = (
    _verdict.SATURATED_CPU, _verdict.THROTTLED, _verdict.SATURATED_SHARE, _verdict.CONTENDED)
FAILURE_RATIO, LATE_STARTS, LATE_MS, ACHIEVED_SHARE = (
    _verdict.FAILURE_RATIO, _verdict.LATE_STARTS, _verdict.LATE_MS, _verdict.ACHIEVED_SHARE)
KINDS = _verdict.KINDS
GENERATOR_BOUND, TARGET_BOUND, HEALTHY, NOT_GENERATOR_BOUND = (
    _verdict.GENERATOR_BOUND, _verdict.TARGET_BOUND, _verdict.HEALTHY, _verdict.NOT_GENERATOR_BOUND)
gave_its_core, late_shares, describe_late_starts, loop_stalls = (
    _verdict.gave_its_core, _verdict.late_shares, _verdict.describe_late_starts, _verdict.loop_stalls)
