"""The source suite's checks on a driver after a restart, a crash or an idle spell: each source partition resumes
after its committed offset, sends again what was handed over but not committed, and has its last offset committed
once idle (:mod:`headwater.harness.source_suite` runs them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.harness import guarantees as g
from headwater.harness.driver import ConnectorDriver
from headwater.harness.tap import Sent, canonical
from headwater.runtime.plugins import implements_hook
from headwater.sdk.records import SourceOffset


def implements_heartbeats(connector: type[Any]) -> bool:
    """Whether the connector's task implements KIP-910's ``produce_heartbeat_records``."""
    return implements_hook(connector().task_class()(), "produce_heartbeat_records")


def committed_offsets(driver: ConnectorDriver, sent: Sequence[Sent]) -> dict[str, SourceOffset | None]:
    """The stored offset of every source partition in ``sent``, by canonical partition."""
    partitions = {s.partition_key: s.partition for s in sent}
    return {key: driver.worker.source_offset(driver.name, p) for key, p in partitions.items()}


def assert_resumed(
    driver: ConnectorDriver, before: int, committed: Mapping[str, SourceOffset | None], event: str
) -> None:
    """After the restart (or crash) that happened once ``before`` records were handed over, each partition sent
    again no offset it had committed, and every offset it had sent after its committed one."""
    sent_before = driver.tap.sent_by_partition(before)
    after = [s for s in driver.tap.sent[before:] if not s.heartbeat]
    for partition, records in sent_before.items():
        offsets = [s.offset_key for s in records]
        mark = committed.get(partition)
        key = None if mark is None else canonical(mark)
        cut = len(offsets) - offsets[::-1].index(key) if key in offsets else 0
        done = set(offsets[:cut]) - set(offsets[cut:])
        again = [s for s in after if s.partition_key == partition]
        repeated = [s for s in again if s.offset_key in done]
        where = f"partition {partition}: committed {canonical(mark)} at the {event}"
        if repeated:
            raise g.GuaranteeViolation(
                f"a task resumes after its committed offset (after a {event})",
                f"{where}, yet after it the task sent again:\n{g.describe(repeated)}\n"
                f"before it:\n{g.describe(records)}",
            )
        resent = {s.offset_key for s in again}
        lost = [s for s in records[cut:] if s.offset_key not in resent and not s.heartbeat]
        if lost:
            raise g.GuaranteeViolation(
                f"records handed over but not committed are sent again after a {event} (at-least-once)",
                f"{where}; never sent again:\n{g.describe(lost)}\nsent after the {event}:\n{g.describe(again)}",
            )


def assert_idle_partitions_committed(driver: ConnectorDriver) -> None:
    """After an idle spell longer than the commit interval, each source partition's stored offset is the last
    offset handed over for it (by a record or a heartbeat)."""
    for partition, sent in sorted(driver.tap.sent_by_partition().items()):
        last = sent[-1]
        stored = driver.worker.source_offset(driver.name, last.partition)
        if canonical(stored) != canonical(last.offset):
            raise g.GuaranteeViolation(
                "heartbeat offsets are committed",
                f"partition {partition} holds {canonical(stored)} after an idle spell, not the last offset handed "
                f"over for it, {canonical(last.offset)}; handed over for the partition:\n{g.describe(sent)}",
            )
