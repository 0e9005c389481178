"""Every metric a worker exports: its Prometheus name, type, labels and meaning, the Kafka Connect metrics it stands
for, and how it is read from the worker at scrape time. Each is defined with its concept's metrics
(:mod:`.worker_metrics`, :mod:`.task_metrics`, :mod:`.error_metrics`, built from :mod:`.metric`'s parts);
:data:`METRICS` lists them all for the collector (:mod:`.collector`) and the docs page (``tools/gen_docs.py``).

Names follow Prometheus conventions: ``headwater_connect_<group>_<what>``, base units (seconds, not Kafka's
milliseconds), counters ending in ``_total``. Kafka Connect's rates (``*-rate``), averages and percentages are not
exported: Prometheus derives them from the totals (``rate(...)``, a histogram's ``_sum`` over its ``_count``), as
its own ``*-max``/``*-avg`` over time from a gauge (``max_over_time``). Names and meanings come from Kafka Connect's
``ConnectMetricsRegistry`` (``connect/runtime/.../ConnectMetricsRegistry.java``) and ``ErrorHandlingMetrics``.
"""

from __future__ import annotations

from headwater.runtime.metrics.error_metrics import ERROR_METRICS
from headwater.runtime.metrics.metric import TM, WM, Metric
from headwater.runtime.metrics.task_metrics import SINK_TASK_METRICS, SOURCE_TASK_METRICS, TASK_METRICS
from headwater.runtime.metrics.worker_metrics import WORKER_METRICS

METRICS: tuple[Metric, ...] = (
    *WORKER_METRICS,
    *TASK_METRICS,
    *SOURCE_TASK_METRICS,
    *SINK_TASK_METRICS,
    *ERROR_METRICS,
)
"""Every metric, in the docs page's order: the worker's, its connectors', then its tasks'."""

NOT_EXPORTED: tuple[tuple[str, str], ...] = (
    (f"{TM}/batch-size-max", "not measured; batch-size-avg is the poll total's rate over the batch count's"),
    (f"{WM}/connector-destroyed-task-count, {WM}/connector-restarting-task-count", "no such task states here"),
    ("connect-worker-rebalance-metrics/*", "not exported yet"),
)
"""Kafka Connect metrics with no counterpart here, and why."""
