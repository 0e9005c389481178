"""The metrics every task, source task and sink task has (Kafka Connect's ``connector-task-metrics``,
``source-task-metrics`` and ``sink-task-metrics``); their error handling's are in :mod:`.error_metrics`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from headwater.runtime.metrics.metric import (
    COUNTER,
    GAUGE,
    HISTOGRAM,
    SI,
    SIM,
    SO,
    SOM,
    TM,
    Metric,
    Sample,
    T,
    current_state,
    histogram,
    one,
    recent_max,
)
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask


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


def transactional(read: Callable[[Any], float | None]) -> Callable[[Any], Iterable[Sample]]:
    """A reader of one sample of an exactly-once source task; absent for other tasks and while ``read`` answers
    ``None``."""

    def samples(task: Any) -> Iterable[Sample]:
        if not isinstance(task, ExactlyOnceWorkerSourceTask):
            return []
        found = read(task)
        return [] if found is None else [((), found)]

    return samples


TASK_METRICS: tuple[Metric, ...] = (
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
)

SOURCE_TASK_METRICS: tuple[Metric, ...] = (
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
)

SINK_TASK_METRICS: tuple[Metric, ...] = (
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
)
