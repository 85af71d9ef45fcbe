"""The one error the local cluster raises; it sits below the other cluster modules so each of them can raise it."""
from __future__ import annotations

from ...errors import RunFailed


class ClusterError(RunFailed):
    """The local cluster could not start, stop or reach a state in time. The message says which component and why."""
