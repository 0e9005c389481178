"""The metrics of the worker and of its connectors (Kafka Connect's ``connect-worker-metrics`` and
``connector-metrics``)."""

from __future__ import annotations

from collections.abc import Iterable

from headwater.runtime.metrics.metric import (
    CM,
    COUNTER,
    GAUGE,
    WM,
    C,
    Metric,
    Sample,
    W,
    by_state,
    current_state,
    one,
)
from headwater.runtime.tasks.base import State, WorkerTask
from headwater.runtime.worker import Worker
from headwater.runtime.worker_connector import WorkerConnector


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


WORKER_METRICS: tuple[Metric, ...] = (
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
)
