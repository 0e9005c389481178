"""The transaction watermark of trigger mode: which audit rows may be emitted without ever skipping one.

An audit row's id is taken when its transaction writes it, but the row becomes visible only when that transaction
commits, so two transactions can commit in the opposite order of their ids. Reading ``WHERE id > max(seen)`` would
then skip the lower id for good. The watermark instead emits ids in order and stops at the first *gap* (an id not
visible yet): the gap's holder took its id before the visible id after it was taken, so it was in flight when the
reading snapshot was taken. The gap is *settled* (its id either visible now or never to be) once every transaction
that was in flight then has ended; only then is it passed.

The database says which transactions are in flight. PostgreSQL's snapshot lists them atomically with the snapshot
itself (``xip``). MariaDB lists them in ``information_schema.INNODB_TRX``, read just after the snapshot was taken
from a cache InnoDB refreshes only when nobody has read it for 0.1 s; the list counts only when it shows the reading
query itself (so it was filled after the snapshot). A gap's holders are the first such list at or after the poll
that found it; once a later list shows none of them, they had all ended by the time it was read, and the gap is
settled for every snapshot taken after that. SQLite serialises writers: its ids become visible in id order and it
reports no transaction in flight.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

InFlight = frozenset[Hashable]
"""Identifiers of the transactions in flight at some moment (xids, InnoDB trx ids)."""


@dataclass(frozen=True)
class Reading:
    """What one poll's read tells about transactions, with ``time.monotonic()`` moments."""

    in_flight: InFlight | None
    """Transactions in flight, in a list filled at (atomic database) or after the snapshot; ``None``: no such list."""
    snapshot_started: float
    """A moment no later than the snapshot."""
    listed_by: float
    """A moment no earlier than the list's filling."""


@dataclass
class Gap:
    """The first id not visible after the position, the transactions that may hold it, and a moment by which they
    had all ended."""

    start: int
    holders: InFlight | None = None
    ended_by: float | None = None


class Watermark:
    """``position``: every change id up to it has been handed on or will never commit."""

    def __init__(self, position: int) -> None:
        self.position = position
        self.gap: Gap | None = None
        self.polls = 0
        self.gaps_passed = 0

    def accept(self, ids: Sequence[int], reading: Reading) -> int:
        """How many of ``ids`` (visible in this poll's snapshot, ascending, all above the position) may be handed on
        now; the position moves to the last of them. ``reading``: what this poll's read tells about transactions."""
        self.polls += 1
        expected = self.position + 1
        count = 0
        for change_id in ids:
            if change_id < expected:
                raise ValueError(f"change id {change_id} is not above the position {self.position}")
            if change_id > expected and not self._settled(expected, reading):
                break
            count += 1
            expected = change_id + 1
            self.position = change_id
        if self.gap is not None and self.gap.start <= self.position:
            self.gap = None  # filled by its commit
        return count

    @property
    def needs_list(self) -> bool:
        """Whether a gap waits for a list of transactions in flight."""
        return self.gap is not None and self.gap.ended_by is None

    def _settled(self, start: int, reading: Reading) -> bool:
        gap = self.gap
        if gap is None or gap.start != start:
            gap = self.gap = Gap(start)
        if gap.ended_by is None and reading.in_flight is not None:
            if gap.holders is None:
                gap.holders = reading.in_flight
            if not gap.holders & reading.in_flight:
                gap.ended_by = reading.listed_by
        if gap.ended_by is None or reading.snapshot_started < gap.ended_by:
            return False
        self.gap = None
        self.gaps_passed += 1
        return True

    def __repr__(self) -> str:
        return f"Watermark(position={self.position}, gap={self.gap}, gaps_passed={self.gaps_passed})"
