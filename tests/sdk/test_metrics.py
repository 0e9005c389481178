"""The SDK's plugin metrics (KIP-877): counters only grow, gauges are set or read, histograms count into
cumulative buckets; names are checked, one name keeps one kind, and a closed set refuses new metrics."""

from __future__ import annotations

import math

import pytest

from headwater.sdk import IllegalWorkerStateError, MetricKind, PluginMetrics


def test_a_counter_only_grows() -> None:
    rows = PluginMetrics().counter("rows", "Rows.")
    rows.inc()
    rows.inc(4)
    assert rows.value == 5
    for bad in (-1, math.nan, math.inf):
        with pytest.raises(ValueError, match="counter rows can only grow"):
            rows.inc(bad)
    assert rows.value == 5


def test_a_gauge_is_set_or_read() -> None:
    metrics = PluginMetrics()
    buffered = metrics.gauge("buffered")
    buffered.set(3)
    buffered.inc(2)
    buffered.dec()
    assert buffered.value == 4
    size = [7]
    read = metrics.gauge("size", read=lambda: size[0])
    size[0] = 9
    assert read.value == 9
    with pytest.raises(ValueError, match="gauge size is read from a function"):
        read.set(1)


def test_a_histogram_counts_into_cumulative_buckets() -> None:
    sizes = PluginMetrics().histogram("sizes", buckets=(1, 10))
    for value in (0.5, 1, 3, 100):
        sizes.observe(value)
    assert sizes.buckets() == [(1.0, 2), (10.0, 3), (math.inf, 4)]
    assert (sizes.count, sizes.sum) == (4, 104.5)
    with pytest.raises(ValueError, match="buckets must be increasing"):
        PluginMetrics().histogram("bad", buckets=(5, 1))


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("records-written", "not valid: use lower-case letters"),
        ("Rows", "not valid"),
        ("1rows", "not valid"),
        ("", "not valid"),
        ("rows_total", "ends in _total, a suffix Prometheus exposition adds"),
        ("batch_count", "ends in _count"),
    ],
)
def test_a_bad_name_is_refused(name: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        PluginMetrics().counter(name)


def test_one_name_one_kind() -> None:
    metrics = PluginMetrics()
    rows = metrics.counter("rows")
    assert metrics.counter("rows") is rows, "registered again with the same kind: the same counter"
    with pytest.raises(ValueError, match="plugin metric rows is registered already as a counter, not a gauge"):
        metrics.gauge("rows")
    metrics.histogram("sizes", buckets=(1, 2))
    with pytest.raises(ValueError, match="registered already with buckets"):
        metrics.histogram("sizes", buckets=(1, 3))
    assert dict(metrics) == {"rows": rows, "sizes": metrics["sizes"]}
    assert metrics["sizes"].kind is MetricKind.HISTOGRAM


def test_the_worker_check_is_asked_for_new_names_only() -> None:
    asked: list[tuple[str, MetricKind]] = []
    metrics = PluginMetrics(lambda name, kind: asked.append((name, kind)))
    metrics.counter("rows")
    metrics.counter("rows")
    assert asked == [("rows", MetricKind.COUNTER)]


def test_a_closed_set_is_empty_and_refuses_new_metrics() -> None:
    metrics = PluginMetrics()
    metrics.counter("rows").inc()
    metrics.close()
    assert len(metrics) == 0 and metrics.closed
    with pytest.raises(IllegalWorkerStateError, match="cannot register plugin metric rows: its connector or task"):
        metrics.counter("rows")
