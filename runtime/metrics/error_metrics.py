"""The metrics of a task's error handling (Kafka Connect's ``task-error-metrics``, KIP-298)."""

from __future__ import annotations

from collections.abc import Iterable

from headwater.runtime.error_handling.all_skipped import ALL_SKIPPED_AFTER
from headwater.runtime.metrics.metric import COUNTER, EM, GAUGE, Metric, Sample, T, one
from headwater.runtime.tasks.base import WorkerTask


def _last_error(task: WorkerTask) -> Iterable[Sample]:
    last = task.errors.counters.last_error_ms
    return [] if last is None else [((), last / 1000)]


ERROR_METRICS: tuple[Metric, ...] = (
    # ---- errors (KIP-298) --------------------------------------------------------------------------------------
    Metric(
        "headwater_connect_task_error_record_failures",
        COUNTER,
        T,
        "Failed record operations (conversion, transformation, put, produce), retried ones included.",
        one(lambda t: t.errors.counters.record_failures),
        kafka=(f"{EM}/total-record-failures",),
    ),
    Metric(
        "headwater_connect_task_error_record_errors",
        COUNTER,
        T,
        "Records whose operation failed for good (not retried again).",
        one(lambda t: t.errors.counters.record_errors),
        kafka=(f"{EM}/total-record-errors",),
    ),
    Metric(
        "headwater_connect_task_error_records_skipped",
        COUNTER,
        T,
        "Records skipped under errors.tolerance=all.",
        one(lambda t: t.errors.counters.records_skipped),
        kafka=(f"{EM}/total-records-skipped",),
    ),
    Metric(
        "headwater_connect_task_error_retries",
        COUNTER,
        T,
        "Retries of operations that failed with a retriable error.",
        one(lambda t: t.errors.counters.retries),
        kafka=(f"{EM}/total-retries",),
    ),
    Metric(
        "headwater_connect_task_error_errors_logged",
        COUNTER,
        T,
        "Failures written to the log (errors.log.enable=true).",
        one(lambda t: t.errors.counters.errors_logged),
        kafka=(f"{EM}/total-errors-logged",),
    ),
    Metric(
        "headwater_connect_task_error_deadletterqueue_produce_requests",
        COUNTER,
        T,
        "Records sent to the dead-letter topic.",
        one(lambda t: t.errors.counters.dlq_produce_requests),
        kafka=(f"{EM}/deadletterqueue-produce-requests",),
    ),
    Metric(
        "headwater_connect_task_error_deadletterqueue_produce_failures",
        COUNTER,
        T,
        "Dead-letter writes the broker refused.",
        one(lambda t: t.errors.counters.dlq_produce_failures),
        kafka=(f"{EM}/deadletterqueue-produce-failures",),
    ),
    Metric(
        "headwater_connect_task_error_last_error_timestamp_seconds",
        GAUGE,
        T,
        "When the task last met a failed record operation (Unix time); absent until it has.",
        _last_error,
        kafka=(f"{EM}/last-error-timestamp",),
    ),
    Metric(
        "headwater_connect_task_error_all_records_skipped",
        GAUGE,
        T,
        f"1 while the task skips every record it sees: at least {ALL_SKIPPED_AFTER} in a row under "
        "errors.tolerance=all, none getting through since it started or since the last one that did (a "
        "misconfiguration, logged once as an ERROR naming the stage and the last error); 0 again once a record gets "
        "through.",
        one(lambda t: int(t.all_skipped.on)),
    ),
)
