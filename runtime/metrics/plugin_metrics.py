"""The metrics connectors and tasks register of their own (KIP-877's plugin metrics, :mod:`headwater.sdk.metrics`),
as Prometheus families: ``headwater_connect_plugin_<name>``, each sample labelled ``connector`` and, for a task's,
``task`` (Kafka Connect's ``ConnectMetrics.connectorPluginMetrics`` and ``taskPluginMetrics`` tags). The runtime's
own metrics have no ``plugin`` group (:mod:`.catalog`), so the two never collide. Read at scrape time, from the
connectors and tasks running then: a stopped one's metrics are closed and gone."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from prometheus_client.core import Metric

from headwater.runtime.worker import Worker
from headwater.sdk.metrics import Counter, Gauge, Histogram, PluginMetric, PluginMetrics

PREFIX = "headwater_connect_plugin_"
"""What every plugin metric's name starts with."""

Owner = tuple[dict[str, str], PluginMetrics]


def owners(worker: Worker) -> list[Owner]:
    """The plugin metrics of ``worker``'s connectors and tasks, each with its labels, connectors first."""
    found: list[Owner] = [({"connector": c.name}, c.plugin_metrics) for c in list(worker.connectors.values())]
    found += [
        ({"connector": t.id.connector, "task": str(t.id.task)}, t.plugin_metrics) for t in list(worker.tasks.values())
    ]
    return found


def plugin_families(worker: Worker, failed: Callable[[str, dict[str, str], Exception], None]) -> Iterator[Metric]:
    """One family per plugin metric name on ``worker``; ``failed`` is told of a gauge whose ``read`` raised (its
    sample is left out) and of a name registered as two kinds at once (the later owner's samples are left out)."""
    families: dict[str, Metric] = {}
    for labels, metrics in owners(worker):
        for name, metric in list(metrics.items()):
            family = families.get(name)
            if family is None:
                family = families[name] = Metric(PREFIX + name, metric.description or name, metric.kind.value)
            elif family.type != metric.kind.value:
                failed(name, labels, ValueError(f"registered as a {metric.kind.value} and as a {family.type}"))
                continue
            try:
                _add(family, metric, labels)
            except Exception as error:  # a gauge's read function: the author's code
                failed(name, labels, error)
    yield from families.values()


def _add(family: Metric, metric: PluginMetric, labels: dict[str, str]) -> None:
    name = family.name
    if isinstance(metric, Counter):
        family.add_sample(f"{name}_total", labels, metric.value)
    elif isinstance(metric, Gauge):
        family.add_sample(name, labels, metric.value)
    else:
        assert isinstance(metric, Histogram)
        buckets = metric.buckets()
        for bound, count in buckets:
            family.add_sample(f"{name}_bucket", {**labels, "le": _bound(bound)}, count)
        family.add_sample(f"{name}_count", labels, buckets[-1][1])
        family.add_sample(f"{name}_sum", labels, metric.sum)


def _bound(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(float(bound))
