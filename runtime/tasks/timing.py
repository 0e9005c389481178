"""Durations of a task's batch operations (a source's ``poll``, a sink's ``put``, an offset commit), kept for the
metrics collector (:mod:`headwater.runtime.metrics`), which reads them when it is scraped.

Recording one costs a count, a sum, a bucket increment and a comparison: once per batch, never per record.
"""

from __future__ import annotations

from bisect import bisect_left

BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the histogram buckets; a source's ``poll`` of prebuilt records takes microseconds, a
commit to a remote store can take seconds."""

WINDOW_S = 30.0
"""Length of one window of the recent maximum: Kafka's ``metrics.sample.window.ms`` default (30 s), two windows
kept as its ``metrics.num.samples`` default (2) keeps."""


class BatchTimes:
    """How many batch operations of one kind a task did, their durations' sum and histogram, and the longest one
    in the current and previous :data:`WINDOW_S` windows (Kafka Connect's ``*-max-time-ms``: a windowed Max).

    Written by the task's thread only; the collector reads it from another thread, so :meth:`histogram` derives the
    count from one copy of the buckets (a scrape between two of :meth:`observe`'s writes is off by one batch at
    most, never inconsistent)."""

    __slots__ = ("_max_s", "_previous_max_s", "_window_start", "buckets", "sum_s")

    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKETS_S) + 1)
        """Operations per bucket (not cumulative); the last one is +Inf."""
        self.sum_s = 0.0
        self._max_s = 0.0
        self._previous_max_s = 0.0
        self._window_start: float | None = None

    def observe(self, seconds: float, now: float) -> None:
        """One operation took ``seconds`` and ended at ``now`` (``time.perf_counter()``)."""
        self.buckets[bisect_left(BUCKETS_S, seconds)] += 1
        self.sum_s += seconds
        start = self._window_start
        if start is None or now - start >= WINDOW_S:
            self._previous_max_s = self._max_s if start is not None and now - start < 2 * WINDOW_S else 0.0
            self._max_s = 0.0
            self._window_start = now
        if seconds > self._max_s:
            self._max_s = seconds

    @property
    def count(self) -> int:
        return sum(self.buckets)

    def histogram(self) -> tuple[list[tuple[str, int]], float]:
        """Cumulative ``(upper bound, count)`` pairs ending with ``+Inf``, and the sum, as Prometheus takes them."""
        counts = list(self.buckets)
        total = 0
        cumulative: list[tuple[str, int]] = []
        for bound, count in zip((*map(repr, BUCKETS_S), "+Inf"), counts, strict=True):
            total += count
            cumulative.append((bound, total))
        return cumulative, self.sum_s

    def recent_max(self, now: float) -> float:
        """The longest operation in the current and the previous window as of ``now``; 0 when none was."""
        start = self._window_start
        if start is None or now - start >= 2 * WINDOW_S:
            return 0.0
        if now - start >= WINDOW_S:
            return self._max_s
        return max(self._max_s, self._previous_max_s)

    def __repr__(self) -> str:
        return f"BatchTimes(count={self.count}, sum={self.sum_s:.6f}s)"
