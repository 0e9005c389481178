"""The offset guarantees, checked on what a :class:`~headwater.harness.tap.ConnectorTap` recorded.

Each check raises :class:`GuaranteeViolation`, whose message starts with the guarantee that broke and goes on with
the records and offsets involved. The conformance suite and the stateful test both check through here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from headwater.harness.tap import Commit, ConnectorTap, Sent, canonical
from headwater.runtime.transport.base import Message
from headwater.sdk.records import SourceOffset, TopicPartition

Decode = Callable[[Message], Any]
"""How a test reads a Kafka record back into the value it compares."""


def json_value(message: Message) -> Any:
    """The record's value decoded as JSON (the simulated worker's default converters write schemaless JSON)."""
    return None if message.value is None else json.loads(message.value)


class GuaranteeViolation(AssertionError):
    """A guarantee of the offset contract did not hold; ``guarantee`` names it."""

    def __init__(self, guarantee: str, detail: str) -> None:
        self.guarantee = guarantee
        super().__init__(f"guarantee broken: {guarantee}\n{detail}")


def describe(items: Sequence[object], limit: int = 12) -> str:
    """Items one per line, indented; the last ``limit`` only, saying how many were left out. Records handed over
    are listed data first, then heartbeats, so heartbeats never bury the data records."""
    sent = [item for item in items if isinstance(item, Sent)]
    if sent and any(s.heartbeat for s in sent):
        data = [s for s in sent if not s.heartbeat]
        beats = [s for s in sent if s.heartbeat]
        others = [item for item in items if not isinstance(item, Sent)]
        parts = [f"  data records ({len(data)}):", _lines(data, limit), f"  heartbeats ({len(beats)}):"]
        parts.append(_lines(beats, min(limit, 4)))
        if others:
            parts.append(_lines(others, limit))
        return "\n".join(parts)
    return _lines(items, limit)


def _lines(items: Sequence[object], limit: int) -> str:
    shown = [f"    {item}" for item in items[-limit:]]
    if len(items) > limit:
        shown.insert(0, f"    ... {len(items) - limit} earlier")
    return "\n".join(shown) or "    (none)"


# ---- sources -----------------------------------------------------------------------------------------------------


def _source_commits(tap: ConnectorTap) -> Iterable[tuple[Commit, str, SourceOffset]]:
    for commit in tap.commits:
        for partition, offset in commit.source:
            if offset is not None:
                yield commit, canonical(partition), offset


def assert_committed_offsets_were_sent(tap: ConnectorTap) -> None:
    """Every committed source offset is the offset of a record (or heartbeat) the task handed over before."""
    for commit, partition, offset in _source_commits(tap):
        sent = tap.sent_by_partition(commit.seen).get(partition, [])
        if canonical(offset) not in {s.offset_key for s in sent}:
            raise GuaranteeViolation(
                "a committed source offset is the offset of a record the task handed over",
                f"partition {partition}: {commit.task} committed {canonical(offset)} at {commit.at_ms} ms, "
                f"but handed over only:\n{describe(sent)}",
            )


def assert_source_offsets_monotonic(tap: ConnectorTap, order: Callable[[SourceOffset], Any] | None = None) -> None:
    """Per source partition, each committed offset is at or after the one committed before it: by ``order`` when
    given, else by when the task first handed that offset over (a task that resumes never hands an old one again)."""
    previous: dict[str, tuple[Any, Commit, SourceOffset]] = {}
    for commit, partition, offset in _source_commits(tap):
        if order is not None:
            position = order(offset)
        else:
            firsts = list(dict.fromkeys(s.offset_key for s in tap.sent_by_partition(commit.seen)[partition]))
            position = firsts.index(canonical(offset))
        before = previous.get(partition)
        if before is not None and position < before[0]:
            raise GuaranteeViolation(
                "committed source offsets only move forward",
                f"partition {partition}: {before[1].task} committed {canonical(before[2])} at {before[1].at_ms} ms, "
                f"then {commit.task} committed {canonical(offset)} at {commit.at_ms} ms, which comes before it\n"
                f"records handed over for the partition:\n{describe(tap.sent_by_partition(commit.seen)[partition])}",
            )
        previous[partition] = (position, commit, offset)


HEARTBEAT_AHEAD = "a heartbeat reports only the position of records already handed over"


def assert_heartbeats_not_ahead(tap: ConnectorTap, order: Callable[[SourceOffset], Any] | None = None) -> None:
    """No record a task hands over after one of its heartbeats, for the heartbeat's source partition, is at or
    before the heartbeat's position: the heartbeat's offset (whose order is ``order``'s, when given; else only an
    equal offset is known to be at it) must cover only records already handed over. The runtime commits a heartbeat
    once it is acknowledged; on a real cluster the heartbeat topic's acknowledgement may come before the data's,
    so a commit in between followed by a crash resumes past records the task had read but not handed over."""
    by_offset: dict[tuple[str, str, int], dict[str, Sent]] = {}
    """Per partition and task instance: its heartbeats so far, by offset."""
    furthest: dict[tuple[str, str, int], tuple[Any, Sent]] = {}
    """Per partition and task instance: its heartbeat furthest by ``order``, and that position."""
    for sent in tap.sent:
        if sent.offset is None:
            continue
        key = (sent.partition_key, sent.task, sent.incarnation)
        if sent.heartbeat:
            by_offset.setdefault(key, {})[sent.offset_key] = sent
            if order is not None:
                at = order(sent.offset)
                if key not in furthest or furthest[key][0] < at:
                    furthest[key] = (at, sent)
            continue
        beat = by_offset.get(key, {}).get(sent.offset_key)
        if beat is None and key in furthest and order is not None and order(sent.offset) <= furthest[key][0]:
            beat = furthest[key][1]
        if beat is not None:
            raise GuaranteeViolation(
                HEARTBEAT_AHEAD,
                f"partition {sent.partition_key}: {sent.task}#{sent.incarnation} sent a heartbeat with offset "
                f"{beat.offset_key} at {beat.at_ms} ms, then handed over {sent} at {sent.at_ms} ms, which the "
                "heartbeat's position already covered: a heartbeat reports the position of the last record handed "
                "over (or of the source, when nothing is left to hand over), never of records read ahead\n"
                f"handed over for the partition:\n{describe(tap.sent_by_partition()[sent.partition_key])}",
            )


def assert_offsets_not_changed_after_handover(tap: ConnectorTap) -> None:
    """No task changes an offset map after handing it over: the runtime commits the map it was given once its
    record is acknowledged, so a map changed in place commits a position whose records may not be delivered."""
    if tap.mutated:
        before, after = tap.mutated[0]
        raise GuaranteeViolation(
            "a source offset handed over is never changed afterwards",
            f"partition {canonical(before.partition)}: {before} was handed over with offset "
            f"{canonical(before.offset)}, and the same offset map came back as {canonical(after.offset)} with "
            f"{after}: give each record an offset map of its own",
        )


def assert_partitions_read_by_one_task(tap: ConnectorTap) -> None:
    """Each source partition's records and heartbeats come from one task only (whatever its restarts)."""
    for partition, sent in tap.sent_by_partition().items():
        tasks = list(dict.fromkeys(s.task for s in sent))
        if len(tasks) > 1:
            first = {task: next(s for s in sent if s.task == task) for task in tasks}
            raise GuaranteeViolation(
                "every source partition is read by exactly one task",
                f"partition {partition} was handed over by {len(tasks)} tasks, {', '.join(tasks)}; the first of "
                f"each:\n{describe(list(first.values()))}",
            )


def data_topics(tap: ConnectorTap) -> list[str]:
    """The topics the connector's tasks sent data (not heartbeat) records to."""
    return list(dict.fromkeys(s.topic for s in tap.sent if not s.heartbeat))


# ---- sinks -------------------------------------------------------------------------------------------------------


def assert_pre_commit_contract(tap: ConnectorTap) -> None:
    """``pre_commit`` returns no offset beyond what it was given, and every commit stays within what ``pre_commit``
    returned and what was consumed."""
    for call in tap.pre_commits:
        for tp, offset in (call.returned or {}).items():
            if tp in call.current and offset > call.current[tp]:
                raise GuaranteeViolation(
                    "pre_commit returns no offset beyond what was consumed",
                    f"{call.task} at {call.at_ms} ms: pre_commit was given {_offsets(call.current)} and returned "
                    f"{_offsets(call.returned or {})}: {offset} for {tp}, where only {call.current[tp]} was consumed",
                )
    for commit in tap.commits:
        asked = commit.pre_commit
        for tp, offset in commit.sink.items():
            consumed = None if asked is None else asked.current.get(tp)
            returned = None if asked is None or asked.returned is None else asked.returned.get(tp)
            if (consumed is not None and offset > consumed) or (returned is not None and offset > returned):
                given = "no pre_commit" if asked is None else f"pre_commit given {_offsets(asked.current)}"
                raise GuaranteeViolation(
                    "committed sink offsets never exceed what pre_commit returned or what was consumed",
                    f"{commit.task} committed {offset} for {tp} at {commit.at_ms} ms after {given}, returning "
                    f"{'nothing' if asked is None or asked.returned is None else _offsets(asked.returned)}",
                )


def assert_committed_records_written(tap: ConnectorTap, written: Collection[Any], decode: Decode = json_value) -> None:
    """Every record below a committed sink offset is in ``written`` (what the sink's external system holds)."""
    assert tap.worker is not None, "the tap is not attached to a worker"
    have = Counter(canonical_value(v) for v in written)
    for tp, committed in sorted(tap.worker.group_offsets(tap.connector).items()):
        below = [m for m in tap.worker.messages(tp.topic) if m.partition == tp.partition and m.offset < committed]
        missing = [m for m in below if have[canonical_value(decode(m))] == 0]
        if missing:
            last = next((c for c in reversed(tap.commits) if tp in c.sink), None)
            asked = None if last is None else last.pre_commit
            told = "" if asked is None else f", after pre_commit returned {_offsets(asked.returned or {})}"
            raise GuaranteeViolation(
                "a committed sink offset covers only records the sink has written",
                f"{tp} is committed up to offset {committed}{told}, but the sink never wrote:\n"
                + describe([f"offset {m.offset}: {decode(m)!r}" for m in missing])
                + f"\nthe sink holds {len(written)} values:\n{describe(list(written))}",
            )


Below = Callable[[TopicPartition, int], Sequence[tuple[int, Any]]]
"""``below(tp, offset)``: the records of ``tp`` before ``offset``, as (offset, value) pairs."""


def assert_commit_written(commit: Commit, written: Collection[Any], below: Below) -> None:
    """At ``commit`` (checked as it happens): every record below each committed sink offset is in ``written``,
    what the sink's external system holds at that moment."""
    held = {canonical_value(v) for v in written}
    for tp, committed in sorted(commit.sink.items()):
        missing = [(offset, value) for offset, value in below(tp, committed) if canonical_value(value) not in held]
        if missing:
            asked = commit.pre_commit
            told = (
                ""
                if asked is None
                else f" (pre_commit was given {_offsets(asked.current)}, returned {_offsets(asked.returned or {})})"
            )
            raise GuaranteeViolation(
                "a committed sink offset covers only records the sink has written",
                f"{commit.task} committed {tp} up to offset {committed} at {commit.at_ms} ms{told}, but the sink "
                f"held none of these records then (the first is offset {missing[0][0]}):\n"
                + describe([f"{tp}@{offset}: {value!r}" for offset, value in missing])
                + f"\nit held {len(held)} values",
            )


# ---- both --------------------------------------------------------------------------------------------------------


def assert_at_least_once(expected: Sequence[Any], delivered: Sequence[Any], where: str, tap: ConnectorTap) -> None:
    """Every value of ``expected`` is among ``delivered`` (as often as it was expected)."""
    missing = Counter(canonical_value(v) for v in expected) - Counter(canonical_value(v) for v in delivered)
    if missing:
        lost = [v for v in expected if canonical_value(v) in missing]
        commits = [f"{c.task} at {c.at_ms} ms: {_commit_text(c)}" for c in tap.commits]
        moved: list[object] = list(tap.sent) or [
            f"{r.topic_partition}@{r.offset}: {r.value!r}" for r in tap.put_records()
        ]
        raise GuaranteeViolation(
            f"every record is delivered at least once ({where})",
            f"{sum(missing.values())} of {len(expected)} never arrived:\n{describe(lost)}\n"
            f"commits:\n{describe(commits)}\n{'handed over' if tap.sent else 'put'}:\n{describe(moved)}",
        )


def assert_stop_hooks_clean(tap: ConnectorTap) -> None:
    """No ``stop`` hook of the connector or its tasks raised."""
    if tap.stop_errors:
        raise GuaranteeViolation(
            "stop(connector_deleted) returns without raising",
            f"stop raised:\n{describe([f'{who}: {error}' for who, error in tap.stop_errors])}",
        )


def canonical_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _offsets(offsets: dict[Any, int]) -> str:
    return "{" + ", ".join(f"{tp}: {offset}" for tp, offset in sorted(offsets.items())) + "}"


def _commit_text(commit: Commit) -> str:
    if commit.sink:
        return _offsets(commit.sink)
    return ", ".join(f"{canonical(p)} -> {canonical(o)}" for p, o in commit.source)
