"""Hypothesis strategies for connector tests: record values, source partitions and offsets, source records,
records to feed a sink, and fault schedules.

Use them with ``@given`` in your own tests, or let the stateful test (:mod:`headwater.harness.stateful`) draw them::

    @given(schedule=fault_schedules(SOURCE_FAULTS))
    def test_no_record_lost(schedule): ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from headwater.harness.schedule import FAULT_KINDS, Fault, FaultKind
from headwater.sdk.records import SourceRecord

_COUNTED = ("commit_failures", "send_failures", "put_failures")


def _finite_floats() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False)


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Values the JSON converter round-trips: null, booleans, integers, finite floats, text, lists and objects."""
    scalars: st.SearchStrategy[Any] = st.one_of(
        st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=12), _finite_floats()
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=max_leaves,
    )


def _primitive_maps() -> st.SearchStrategy[dict[str, Any]]:
    primitives: st.SearchStrategy[Any] = st.one_of(
        st.text(max_size=10), st.integers(-(2**53), 2**53), st.booleans(), _finite_floats()
    )
    return st.dictionaries(st.text(min_size=1, max_size=8), primitives, min_size=1, max_size=3)


def source_partitions() -> st.SearchStrategy[dict[str, Any]]:
    """Source partition maps: string keys, primitive values (what Kafka Connect can store)."""
    return _primitive_maps()


def source_offsets() -> st.SearchStrategy[dict[str, Any]]:
    """Source offset maps, same shape rules as partitions."""
    return _primitive_maps()


def increasing_offsets(key: str = "position", max_size: int = 20) -> st.SearchStrategy[list[dict[str, int]]]:
    """A run of offsets one source partition hands over, strictly increasing: ``[{key: 3}, {key: 7}, ...]``."""
    steps = st.lists(st.integers(1, 1000), max_size=max_size)
    return steps.map(lambda gaps: [{key: sum(gaps[: i + 1])} for i in range(len(gaps))])


def source_records(
    topics: st.SearchStrategy[str] | None = None,
    partitions: st.SearchStrategy[dict[str, Any]] | None = None,
    offsets: st.SearchStrategy[dict[str, Any]] | None = None,
    values: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[SourceRecord]:
    """Source records with drawn partition, offset, topic and value (keys are left ``None``)."""
    return st.builds(
        SourceRecord,
        source_partition=source_partitions() if partitions is None else partitions,
        source_offset=source_offsets() if offsets is None else offsets,
        topic=st.just("topic") if topics is None else topics,
        value=json_values() if values is None else values,
    )


@dataclass(frozen=True)
class TopicRecord:
    """A record to write into a topic a sink reads: the simulated worker's ``produce(topic, value, key, partition)``."""

    value: Any
    key: Any = None
    partition: int | None = None


def topic_records(partitions: int = 1, values: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[TopicRecord]:
    """Records for a topic of ``partitions`` partitions, each with a drawn value, key and partition."""
    return st.builds(
        TopicRecord,
        value=json_values() if values is None else values,
        key=st.none() | st.text(max_size=6),
        partition=st.none() | st.integers(0, partitions - 1),
    )


def faults(
    kinds: Sequence[FaultKind] = FAULT_KINDS, max_count: int = 3, max_ms: int = 2_000
) -> st.SearchStrategy[Fault]:
    """One fault of ``kinds``: failures come ``1..max_count`` at a time, slow acks last ``1..max_ms`` ms."""

    def build(kind: FaultKind) -> st.SearchStrategy[Fault]:
        if kind in _COUNTED:
            return st.builds(Fault, st.just(kind), count=st.integers(1, max_count))
        if kind == "slow_acks":
            return st.builds(Fault, st.just(kind), ms=st.integers(1, max_ms))
        return st.just(Fault(kind))

    return st.sampled_from(list(kinds)).flatmap(build)


def fault_schedules(
    kinds: Sequence[FaultKind] = FAULT_KINDS, max_faults: int = 5, horizon_ms: int = 10_000
) -> st.SearchStrategy[list[tuple[int, Fault]]]:
    """Up to ``max_faults`` faults of ``kinds`` at virtual times in ``[0, horizon_ms]``, in time order; play one
    with :func:`~headwater.harness.schedule.play_schedule`."""
    events = st.lists(st.tuples(st.integers(0, horizon_ms), faults(kinds)), max_size=max_faults)
    return events.map(lambda found: sorted(found, key=lambda event: event[0]))
