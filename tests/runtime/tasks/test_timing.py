"""Batch durations for the metrics: a histogram whose count is its +Inf bucket, and a recent maximum over the current
and the previous 30-second window, as Kafka Connect's windowed Max."""

from __future__ import annotations

from headwater.runtime.tasks.timing import BUCKETS_S, WINDOW_S, BatchTimes


def test_histogram_is_cumulative_and_counts_every_batch() -> None:
    times = BatchTimes()
    for seconds in (0.00005, 0.0003, 0.0003, 2.0, 60.0):
        times.observe(seconds, 100.0)
    buckets, total = times.histogram()
    assert [bound for bound, _ in buckets] == [*map(repr, BUCKETS_S), "+Inf"]
    counts = dict(buckets)
    assert counts["0.0001"] == 1 and counts["0.0005"] == 3 and counts["2.5"] == 4 and counts["10.0"] == 4
    assert counts["+Inf"] == 5 == times.count
    assert total == 0.00005 + 0.0003 + 0.0003 + 2.0 + 60.0


def test_a_boundary_value_falls_in_its_own_bucket() -> None:
    times = BatchTimes()
    times.observe(0.001, 1.0)
    assert dict(times.histogram()[0])["0.001"] == 1, "le means less than or equal"


def test_recent_max_keeps_two_windows() -> None:
    times = BatchTimes()
    assert times.recent_max(0.0) == 0.0
    times.observe(3.0, 10.0)
    times.observe(1.0, 20.0)
    assert times.recent_max(20.0) == 3.0
    times.observe(0.5, 10.0 + WINDOW_S + 1)  # a new window: the previous one's maximum still counts
    assert times.recent_max(10.0 + WINDOW_S + 1) == 3.0
    assert times.recent_max(10.0 + 2 * WINDOW_S + 2) == 0.5, "the first window has expired"
    assert times.recent_max(10.0 + 3 * WINDOW_S + 2) == 0.0, "both have"
    times.observe(0.2, 10.0 + 4 * WINDOW_S)  # long after: nothing carries over
    assert times.recent_max(10.0 + 4 * WINDOW_S) == 0.2
