"""Every metric a worker exports: its Prometheus name, type, labels and meaning, the Kafka Connect metrics it stands
for, and how it is read from the worker at scrape time. This is the one home of each definition; the collector
(:mod:`.collector`) walks :data:`METRICS`, and the docs page lists it (``tools/gen_docs.py``).

Names follow Prometheus conventions: ``headwater_connect_<group>_<what>``, base units (seconds, not Kafka's
milliseconds), counters ending in ``_total``. Kafka Connect's rates (``*-rate``), averages and percentages are not
exported: Prometheus derives them from the totals (``rate(...)``, a histogram's ``_sum`` over its ``_count``), as
its own ``*-max``/``*-avg`` over time from a gauge (``max_over_time``). Names and meanings come from Kafka Connect's
``ConnectMetricsRegistry`` (``connect/runtime/.../ConnectMetricsRegistry.java``) and ``ErrorHandlingMetrics``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from headwater.runtime.tasks.base import State, WorkerTask
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.tasks.timing import BatchTimes
from headwater.runtime.worker import Worker
from headwater.runtime.worker_connector import WorkerConnector


class Kind(enum.Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class Scope(enum.Enum):
    """What one metric is read from, and the labels every sample of it carries first."""

    WORKER = "worker"
    CONNECTOR = "connector"
    TASK = "task"
    SOURCE_TASK = "source task"
    SINK_TASK = "sink task"

    @property
    def labels(self) -> tuple[str, ...]:
        if self is Scope.WORKER:
            return ()
        if self is Scope.CONNECTOR:
            return ("connector",)
        return ("connector", "task")


Histogram = tuple[list[tuple[str, int]], float]
"""Cumulative ``(upper bound, count)`` pairs ending with ``+Inf``, and the sum."""

Sample = tuple[tuple[str, ...], float | Histogram]
"""The values of the labels beyond the scope's, and the value."""


@dataclass(frozen=True)
class Metric:
    """One exported metric. ``read`` takes the scope's subject (the :class:`Worker`, a :class:`WorkerConnector`, a
    task) and returns its samples; ``kafka`` names the Kafka Connect metrics it stands for (``group/name``), empty
    for Headwater's own."""

    name: str
    kind: Kind
    scope: Scope
    help: str
    read: Callable[[Any], Iterable[Sample]]
    labels: tuple[str, ...] = ()
    kafka: tuple[str, ...] = ()

    @property
    def all_labels(self) -> tuple[str, ...]:
        return self.scope.labels + self.labels

    @property
    def exposed_name(self) -> str:
        """The name as scraped: a counter's samples end in ``_total``."""
        return f"{self.name}_total" if self.kind is Kind.COUNTER else self.name


def one(read: Callable[[Any], float]) -> Callable[[Any], Iterable[Sample]]:
    """A reader of one unlabelled sample."""
    return lambda subject: [((), read(subject))]


def by_state(states: Callable[[Any], Iterable[State]]) -> Callable[[Any], Iterable[Sample]]:
    """A reader counting the states ``states`` gives, one sample per :class:`State` (zero ones included, so that a
    series does not vanish when its last member changes state)."""

    def read(subject: Any) -> Iterable[Sample]:
        counts = dict.fromkeys(State, 0)
        for state in states(subject):
            counts[state] += 1
        return [((state.value.lower(),), count) for state, count in counts.items()]

    return read


def current_state(state: Callable[[Any], State]) -> Callable[[Any], Iterable[Sample]]:
    """A reader of an enum-style gauge: 1 for the subject's current state, 0 for the others."""

    def read(subject: Any) -> Iterable[Sample]:
        now = state(subject)
        return [((s.value.lower(),), 1 if s is now else 0) for s in State]

    return read


def histogram(times: Callable[[Any], BatchTimes]) -> Callable[[Any], Iterable[Sample]]:
    return lambda subject: [((), times(subject).histogram())]


def recent_max(times: Callable[[Any], BatchTimes]) -> Callable[[Any], Iterable[Sample]]:
    return lambda subject: [((), times(subject).recent_max(perf_counter()))]


def _tasks(worker: Worker) -> list[WorkerTask]:
    return list(worker.tasks.values())


def _connector_tasks(worker: Worker) -> Iterable[Sample]:
    """Per connector with a connector instance or a task here, its tasks here by state."""
    tasks = _tasks(worker)
    names = sorted({*list(worker.connectors), *(task.id.connector for task in tasks)})
    for name in names:
        counts = dict.fromkeys(State, 0)
        for task in tasks:
            if task.id.connector == name:
                counts[task.state] += 1
        for state, count in counts.items():
            yield (name, state.value.lower()), count


def _connector_info(connector: WorkerConnector) -> Iterable[Sample]:
    instance = connector.instance
    cls = type(instance)
    try:
        version = str(instance.version())
    except Exception as error:  # a connector's own code: its failure shows as the version, not a failed scrape
        version = f"unknown ({type(error).__name__})"
    return [((connector.kind, f"{cls.__module__}.{cls.__qualname__}", version), 1)]


def _partition_label(partition: Any) -> str:
    return json.dumps(partition, sort_keys=True, separators=(",", ":"), default=str)


def _offset_unchanged(task: WorkerSourceTask) -> Iterable[Sample]:
    now = task.clock.now_ms()
    return [
        ((_partition_label(partition),), max(now - moved, 0) / 1000)
        for partition, _, moved in list(task.partition_offsets.values())
    ]


def _lag(task: WorkerSinkTask) -> Iterable[Sample]:
    return [((tp.topic, str(tp.partition)), lag) for tp, lag in sorted(task.lag().items())]


def _last_error(task: WorkerTask) -> Iterable[Sample]:
    last = task.errors.counters.last_error_ms
    return [] if last is None else [((), last / 1000)]


def transactional(read: Callable[[Any], float | None]) -> Callable[[Any], Iterable[Sample]]:
    """A reader of one sample of an exactly-once source task; absent for other tasks and while ``read`` answers
    ``None``."""

    def samples(task: Any) -> Iterable[Sample]:
        if not isinstance(task, ExactlyOnceWorkerSourceTask):
            return []
        found = read(task)
        return [] if found is None else [((), found)]

    return samples


W, C, T, SO, SI = Scope.WORKER, Scope.CONNECTOR, Scope.TASK, Scope.SOURCE_TASK, Scope.SINK_TASK
COUNTER, GAUGE, HISTOGRAM = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM
WM, CM, TM = "connect-worker-metrics", "connector-metrics", "connector-task-metrics"
SOM, SIM, EM = "source-task-metrics", "sink-task-metrics", "task-error-metrics"

METRICS: tuple[Metric, ...] = (
    # ---- the worker ------------------------------------------------------------------------------------------
    Metric(
        "headwater_connect_worker_connector_count",
        GAUGE,
        W,
        "Connectors run in this worker, by state; their sum is Kafka Connect's connector-count.",
        by_state(lambda w: [c.state for c in list(w.connectors.values())]),
        ("state",),
        (f"{WM}/connector-count",),
    ),
    Metric(
        "headwater_connect_worker_task_count",
        GAUGE,
        W,
        "Tasks run in this worker, by state; their sum is Kafka Connect's task-count.",
        by_state(lambda w: [t.state for t in _tasks(w)]),
        ("state",),
        (f"{WM}/task-count",),
    ),
    Metric(
        "headwater_connect_worker_connector_task_count",
        GAUGE,
        W,
        "Tasks of each connector run in this worker, by state; their sum is connector-total-task-count.",
        _connector_tasks,
        ("connector", "state"),
        (
            f"{WM}/connector-total-task-count",
            f"{WM}/connector-running-task-count",
            f"{WM}/connector-paused-task-count",
            f"{WM}/connector-failed-task-count",
            f"{WM}/connector-unassigned-task-count",
        ),
    ),
    Metric(
        "headwater_connect_worker_connector_startup_attempts",
        COUNTER,
        W,
        "Connector starts this worker attempted.",
        one(lambda w: w.startups.connector_attempts),
        kafka=(f"{WM}/connector-startup-attempts-total",),
    ),
    Metric(
        "headwater_connect_worker_connector_startup_success",
        COUNTER,
        W,
        "Connector starts that succeeded (the connector's start returned).",
        one(lambda w: w.startups.connector_successes),
        kafka=(f"{WM}/connector-startup-success-total", f"{WM}/connector-startup-success-percentage"),
    ),
    Metric(
        "headwater_connect_worker_connector_startup_failure",
        COUNTER,
        W,
        "Connector starts that failed (its config did not resolve, or its start raised).",
        one(lambda w: w.startups.connector_failures),
        kafka=(f"{WM}/connector-startup-failure-total", f"{WM}/connector-startup-failure-percentage"),
    ),
    Metric(
        "headwater_connect_worker_task_startup_attempts",
        COUNTER,
        W,
        "Task starts this worker attempted.",
        one(lambda w: w.startups.task_attempts),
        kafka=(f"{WM}/task-startup-attempts-total",),
    ),
    Metric(
        "headwater_connect_worker_task_startup_success",
        COUNTER,
        W,
        "Task starts that succeeded (the task was created and handed to its thread).",
        one(lambda w: w.startups.task_successes),
        kafka=(f"{WM}/task-startup-success-total", f"{WM}/task-startup-success-percentage"),
    ),
    Metric(
        "headwater_connect_worker_task_startup_failure",
        COUNTER,
        W,
        "Task starts that failed (the task could not be created).",
        one(lambda w: w.startups.task_failures),
        kafka=(f"{WM}/task-startup-failure-total", f"{WM}/task-startup-failure-percentage"),
    ),
    Metric(
        "headwater_connect_worker_broker_reachable",
        GAUGE,
        W,
        "1 while the Kafka cluster answers the worker, 0 once it has not for longer than "
        "health.broker.unreachable.ms (GET /health then answers 500).",
        one(lambda w: 1 if w.reachability.reachable else 0),
    ),
    Metric(
        "headwater_connect_worker_broker_unreachable_seconds",
        GAUGE,
        W,
        "Seconds since the Kafka cluster last answered the worker, while its requests fail; 0 while it answers.",
        one(lambda w: w.reachability.unreachable_s()),
    ),
    # ---- connectors ------------------------------------------------------------------------------------------
    Metric(
        "headwater_connect_connector_status",
        GAUGE,
        C,
        "1 for the connector's current state, 0 for the others.",
        current_state(lambda c: c.state),
        ("state",),
        (f"{CM}/status",),
    ),
    Metric(
        "headwater_connect_connector_info",
        GAUGE,
        C,
        "Always 1; the labels say the connector's type (source or sink), class and version.",
        _connector_info,
        ("type", "class", "version"),
        (f"{CM}/connector-type", f"{CM}/connector-class", f"{CM}/connector-version"),
    ),
    # ---- every task ------------------------------------------------------------------------------------------
    Metric(
        "headwater_connect_task_status",
        GAUGE,
        T,
        "1 for the task's current state, 0 for the others.",
        current_state(lambda t: t.state),
        ("state",),
        (f"{TM}/status",),
    ),
    Metric(
        "headwater_connect_task_state_seconds",
        COUNTER,
        T,
        "Seconds the task has spent in each state; rate() of the running and paused ones are Kafka Connect's "
        "running-ratio and pause-ratio.",
        lambda t: [((s.value.lower(),), seconds) for s, seconds in sorted(t.seconds_in_states().items(), key=str)],
        ("state",),
        (f"{TM}/running-ratio", f"{TM}/pause-ratio"),
    ),
    Metric(
        "headwater_connect_task_offset_commit_success",
        COUNTER,
        T,
        "Offset commits that succeeded (a source's with nothing new to commit included, as in Kafka Connect).",
        one(lambda t: t.commits),
        kafka=(f"{TM}/offset-commit-success-percentage", f"{SIM}/offset-commit-completion-total"),
    ),
    Metric(
        "headwater_connect_task_offset_commit_failure",
        COUNTER,
        T,
        "Offset commits that failed (the store refused them, pre_commit raised, or they timed out).",
        one(lambda t: t.commit_failures),
        kafka=(f"{TM}/offset-commit-failure-percentage",),
    ),
    Metric(
        "headwater_connect_task_offset_commit_seconds",
        HISTOGRAM,
        T,
        "How long offset commits took, failed ones included (a sink's from pre_commit to the commit's completion).",
        histogram(lambda t: t.commit_times),
        kafka=(f"{TM}/offset-commit-avg-time-ms",),
    ),
    Metric(
        "headwater_connect_task_offset_commit_max_seconds",
        GAUGE,
        T,
        "The longest offset commit within the last 30 to 60 seconds.",
        recent_max(lambda t: t.commit_times),
        kafka=(f"{TM}/offset-commit-max-time-ms",),
    ),
    # ---- source tasks ----------------------------------------------------------------------------------------
    Metric(
        "headwater_connect_source_task_record_poll",
        COUNTER,
        SO,
        "Records poll returned, before transformation (heartbeat records not included).",
        one(lambda t: t.records_polled),
        kafka=(f"{SOM}/source-record-poll-total", f"{SOM}/source-record-poll-rate"),
    ),
    Metric(
        "headwater_connect_source_task_record_write",
        COUNTER,
        SO,
        "Records the broker acknowledged, after transformation (records a transform dropped and failed records "
        "skipped not included; heartbeat records included).",
        one(lambda t: t.records_acked),
        kafka=(f"{SOM}/source-record-write-total", f"{SOM}/source-record-write-rate"),
    ),
    Metric(
        "headwater_connect_source_task_poll_batch_seconds",
        HISTOGRAM,
        SO,
        "How long poll took, per call that returned a batch (an empty one included).",
        histogram(lambda t: t.poll_times),
        kafka=(f"{SOM}/poll-batch-avg-time-ms", f"{TM}/batch-size-avg"),
    ),
    Metric(
        "headwater_connect_source_task_poll_batch_max_seconds",
        GAUGE,
        SO,
        "The longest poll within the last 30 to 60 seconds.",
        recent_max(lambda t: t.poll_times),
        kafka=(f"{SOM}/poll-batch-max-time-ms",),
    ),
    Metric(
        "headwater_connect_source_task_transactions",
        COUNTER,
        SO,
        "Transactions the task committed (exactly-once source support only).",
        transactional(lambda t: t.commits),
    ),
    Metric(
        "headwater_connect_source_task_transaction_aborts",
        COUNTER,
        SO,
        "Transactions the task aborted because it asked to (exactly-once source support only).",
        transactional(lambda t: t.aborts),
    ),
    Metric(
        "headwater_connect_source_task_transaction_records",
        COUNTER,
        SO,
        "Records in the transactions the task committed, heartbeat records included; over the transactions "
        "counter, the average transaction size (exactly-once source support only).",
        transactional(lambda t: t.transaction_records),
        kafka=(f"{SOM}/transaction-size-avg",),
    ),
    Metric(
        "headwater_connect_source_task_transaction_size_max",
        GAUGE,
        SO,
        "Records in the largest of the task's last 500 to 1000 committed transactions; absent before the first.",
        transactional(lambda t: max(t.transaction_sizes, default=None)),
        kafka=(f"{SOM}/transaction-size-max",),
    ),
    Metric(
        "headwater_connect_source_task_transaction_size_min",
        GAUGE,
        SO,
        "Records in the smallest of the task's last 500 to 1000 committed transactions; absent before the first.",
        transactional(lambda t: min(t.transaction_sizes, default=None)),
        kafka=(f"{SOM}/transaction-size-min",),
    ),
    Metric(
        "headwater_connect_source_task_record_active_count",
        GAUGE,
        SO,
        "Records handed to the producer (or waiting to be) and not yet acknowledged by the broker.",
        one(lambda t: t.submitted.in_flight()),
        kafka=(
            f"{SOM}/source-record-active-count",
            f"{SOM}/source-record-active-count-max",
            f"{SOM}/source-record-active-count-avg",
        ),
    ),
    Metric(
        "headwater_connect_source_task_heartbeat_records",
        COUNTER,
        SO,
        "Heartbeat records the task's produce_heartbeat_records hook returned (KIP-910), each sent like data.",
        one(lambda t: t.heartbeat_records),
    ),
    Metric(
        "headwater_connect_source_task_heartbeat_calls",
        COUNTER,
        SO,
        "Calls of the produce_heartbeat_records hook (KIP-910), one per heartbeat.interval.ms while the task runs.",
        one(lambda t: t.heartbeat_calls),
    ),
    Metric(
        "headwater_connect_source_task_offset_unchanged_seconds",
        GAUGE,
        SO,
        "Per source partition (as JSON), time since an offset commit last moved its offset; a source that is "
        "stuck, or idle without heartbeats, shows as a growing value.",
        _offset_unchanged,
        ("partition",),
    ),
    # ---- sink tasks ------------------------------------------------------------------------------------------
    Metric(
        "headwater_connect_sink_task_record_read",
        COUNTER,
        SI,
        "Records read from Kafka, before conversion and transformation.",
        one(lambda t: t.records_read),
        kafka=(f"{SIM}/sink-record-read-total", f"{SIM}/sink-record-read-rate"),
    ),
    Metric(
        "headwater_connect_sink_task_record_send",
        COUNTER,
        SI,
        "Records given to put, after transformation (records a transform dropped and failed records skipped "
        "not included).",
        one(lambda t: t.records_put),
        kafka=(f"{SIM}/sink-record-send-total", f"{SIM}/sink-record-send-rate"),
    ),
    Metric(
        "headwater_connect_sink_task_put_batch_seconds",
        HISTOGRAM,
        SI,
        "How long put took, per call that returned (an empty batch included).",
        histogram(lambda t: t.put_times),
        kafka=(f"{SIM}/put-batch-avg-time-ms",),
    ),
    Metric(
        "headwater_connect_sink_task_put_batch_max_seconds",
        GAUGE,
        SI,
        "The longest put within the last 30 to 60 seconds.",
        recent_max(lambda t: t.put_times),
        kafka=(f"{SIM}/put-batch-max-time-ms",),
    ),
    Metric(
        "headwater_connect_sink_task_record_active_count",
        GAUGE,
        SI,
        "Records read from Kafka and not yet committed: those not yet put, plus those put past the committed offset.",
        one(lambda t: t.active_records()),
        kafka=(
            f"{SIM}/sink-record-active-count",
            f"{SIM}/sink-record-active-count-max",
            f"{SIM}/sink-record-active-count-avg",
        ),
    ),
    Metric(
        "headwater_connect_sink_task_offset_commit_skip",
        COUNTER,
        SI,
        "Offset commits skipped: nothing new to commit, pre_commit returned nothing, a dead-letter write not yet "
        "acknowledged, or a completion that arrived after a newer commit started.",
        one(lambda t: t.commits_skipped),
        kafka=(f"{SIM}/offset-commit-skip-total", f"{SIM}/offset-commit-skip-rate"),
    ),
    Metric(
        "headwater_connect_sink_task_offset_commit_seq_no",
        GAUGE,
        SI,
        "The sequence number of the latest offset commit.",
        one(lambda t: t.commit_seqno),
        kafka=(f"{SIM}/offset-commit-seq-no",),
    ),
    Metric(
        "headwater_connect_sink_task_partition_count",
        GAUGE,
        SI,
        "Topic partitions assigned to the task.",
        one(lambda t: len(dict(t.current_offsets))),
        kafka=(f"{SIM}/partition-count",),
    ),
    Metric(
        "headwater_connect_sink_task_partition_lag_records",
        GAUGE,
        SI,
        "Per assigned partition, records the task has not been given yet: the high watermark the consumer last "
        "fetched minus the next offset to put (0 once the task has caught up); max by task is close to Kafka "
        "Connect's sink-record-lag-max.",
        _lag,
        ("topic", "partition"),
        (f"{SIM}/sink-record-lag-max",),
    ),
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
)

NOT_EXPORTED: tuple[tuple[str, str], ...] = (
    (f"{TM}/batch-size-max", "not measured; batch-size-avg is the poll total's rate over the batch count's"),
    (f"{WM}/connector-destroyed-task-count, {WM}/connector-restarting-task-count", "no such task states here"),
    ("connect-worker-rebalance-metrics/*", "not exported yet"),
)
"""Kafka Connect metrics with no counterpart here, and why."""
