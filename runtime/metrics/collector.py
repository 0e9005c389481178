"""The Prometheus collector of one worker: it reads the counters the worker, its connectors and its task loops keep
(plain integers, incremented where things happen) when it is scraped, and turns them into the metric families
:data:`~headwater.runtime.metrics.catalog.METRICS` defines, then the metrics connectors and tasks registered of their
own (:mod:`.plugin_metrics`). Nothing is recorded per record for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from headwater.runtime.metrics.catalog import METRICS
from headwater.runtime.metrics.metric import Histogram, Kind, Scope
from headwater.runtime.metrics.metric import Metric as Definition
from headwater.runtime.metrics.plugin_metrics import plugin_families
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.worker import Worker

log = logging.getLogger(__name__)

READ_ERRORS = "headwater_metrics_read_errors"
"""Counts the metric reads that raised (each is also logged): a scrape goes on without that one sample."""


class WorkerCollector(Collector):
    """Collects :data:`METRICS` from ``worker`` at each scrape; safe to call from any thread."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.read_errors = 0

    def collect(self) -> Iterator[Metric]:
        worker = self.worker
        connectors = list(worker.connectors.values())
        tasks = list(worker.tasks.values())
        labelled: list[tuple[tuple[str, ...], Any]] = [((t.id.connector, str(t.id.task)), t) for t in tasks]
        subjects: dict[Scope, list[tuple[tuple[str, ...], Any]]] = {
            Scope.WORKER: [((), worker)],
            Scope.CONNECTOR: [((c.name,), c) for c in connectors],
            Scope.TASK: labelled,
            Scope.SOURCE_TASK: [(labels, t) for labels, t in labelled if isinstance(t, WorkerSourceTask)],
            Scope.SINK_TASK: [(labels, t) for labels, t in labelled if isinstance(t, WorkerSinkTask)],
        }
        for definition in METRICS:
            family = _family(definition)
            for base, subject in subjects[definition.scope]:
                try:
                    samples = list(definition.read(subject))
                except Exception as error:
                    self.read_errors += 1
                    log.error("metric %s could not be read for %s: %r", definition.name, subject, error)
                    continue
                for labels, value in samples:
                    _add(family, definition.kind, [*base, *labels], value)
            yield family
        yield from plugin_families(worker, self._plugin_read_failed)
        errors = CounterMetricFamily(READ_ERRORS, "Metric reads that raised (each is logged as an error).")
        errors.add_metric([], self.read_errors)
        yield errors

    def _plugin_read_failed(self, name: str, labels: dict[str, str], error: Exception) -> None:
        self.read_errors += 1
        log.error("plugin metric %s could not be read for %s: %r", name, labels, error)


def _family(definition: Definition) -> Metric:
    labels = list(definition.all_labels)
    if definition.kind is Kind.COUNTER:
        return CounterMetricFamily(definition.name, definition.help, labels=labels)
    if definition.kind is Kind.HISTOGRAM:
        return HistogramMetricFamily(definition.name, definition.help, labels=labels)
    return GaugeMetricFamily(definition.name, definition.help, labels=labels)


def _add(family: Metric, kind: Kind, labels: list[str], value: float | Histogram) -> None:
    if kind is Kind.HISTOGRAM:
        assert isinstance(family, HistogramMetricFamily) and isinstance(value, tuple)
        buckets, total = value
        family.add_metric(labels, buckets, total)
    else:
        assert isinstance(family, CounterMetricFamily | GaugeMetricFamily) and not isinstance(value, tuple)
        family.add_metric(labels, value)


def worker_registry(worker: Worker) -> CollectorRegistry:
    """A registry with ``worker``'s metrics and the process's own (CPU, memory, open files, garbage collections,
    Python version), as ``prometheus_client``'s default registry has them."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkerCollector(worker))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry
