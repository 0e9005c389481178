"""What one exported metric is: its Prometheus name, type, scope (what it is read from, which labels it carries)
and reader, and the readers most metrics are built from. The metrics themselves are defined by concept in
:mod:`.worker_metrics`, :mod:`.task_metrics` and :mod:`.error_metrics`; :mod:`.catalog` lists them all.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from headwater.runtime.tasks.base import State
from headwater.runtime.tasks.timing import BatchTimes


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


W, C, T, SO, SI = Scope.WORKER, Scope.CONNECTOR, Scope.TASK, Scope.SOURCE_TASK, Scope.SINK_TASK
COUNTER, GAUGE, HISTOGRAM = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM
WM, CM, TM = "connect-worker-metrics", "connector-metrics", "connector-task-metrics"
SOM, SIM, EM = "source-task-metrics", "sink-task-metrics", "task-error-metrics"
