"""Prometheus metrics of a worker: Kafka Connect's worker, connector and task metrics under Prometheus names, and
Headwater's own (heartbeats, source offset age, sink lag). :mod:`.catalog` lists them all (each defined
by concept in :mod:`.worker_metrics`, :mod:`.task_metrics` and :mod:`.error_metrics`); :mod:`.collector` reads them
at scrape time; :mod:`.server` serves them."""

from headwater.runtime.metrics.catalog import METRICS, NOT_EXPORTED
from headwater.runtime.metrics.collector import WorkerCollector, worker_registry
from headwater.runtime.metrics.metric import Kind, Metric, Scope
from headwater.runtime.metrics.server import MetricsServer, exposition

__all__ = [
    "METRICS",
    "NOT_EXPORTED",
    "Kind",
    "Metric",
    "MetricsServer",
    "Scope",
    "WorkerCollector",
    "exposition",
    "worker_registry",
]
