"""The transaction watermark alone: ids are handed on in order, a gap holds back what follows until the
transactions that may hold it have ended, and a gap that never fills (a rollback) is passed then."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from headwater.reference_connectors.jdbc_cdc import Reading, Watermark


def at(moment: float, *in_flight: Hashable) -> Reading:
    """An atomic reading (PostgreSQL): the list is the snapshot's own."""
    return Reading(frozenset(in_flight), moment, moment)


def listed(snapshot_started: float, listed_by: float, *in_flight: Hashable) -> Reading:
    """A list read after the snapshot (MariaDB)."""
    return Reading(frozenset(in_flight), snapshot_started, listed_by)


def stale(snapshot_started: float) -> Reading:
    return Reading(None, snapshot_started, snapshot_started)


def test_contiguous_ids_are_all_accepted() -> None:
    mark = Watermark(0)
    assert mark.accept([1, 2, 3], at(1)) == 3
    assert mark.position == 3


def test_a_gap_held_by_a_transaction_in_flight_holds_back_later_ids_until_it_commits() -> None:
    mark = Watermark(4)
    assert mark.accept([6, 7], at(1, 100)) == 0  # id 5's transaction 100 is in flight
    assert mark.position == 4 and mark.needs_list
    assert mark.accept([6, 7], at(2, 100, 101)) == 0
    assert mark.accept([5, 6, 7], at(3, 101)) == 3  # 100 committed: 5 is visible
    assert mark.position == 7 and mark.gaps_passed == 0 and not mark.needs_list


def test_a_gap_whose_holders_ended_is_a_rollback_and_is_passed() -> None:
    mark = Watermark(0)
    assert mark.accept([2], at(1, 7)) == 0
    assert mark.accept([2, 3], at(2, 8)) == 2  # 7 ended and id 1 never appeared
    assert mark.position == 3 and mark.gaps_passed == 1


def test_an_atomic_snapshot_with_nothing_in_flight_passes_a_gap_at_once() -> None:
    assert Watermark(0).accept([3, 4], at(1)) == 2


def test_without_a_fresh_list_a_gap_waits() -> None:
    mark = Watermark(0)
    assert mark.accept([2], stale(1.0)) == 0
    assert mark.accept([2], stale(2.0)) == 0
    assert mark.accept([1, 2], stale(3.0)) == 2  # a later snapshot sees the committed id 1
    assert mark.gaps_passed == 0


def test_a_list_read_after_the_snapshot_settles_the_gap_only_for_later_snapshots() -> None:
    # an empty list read after snapshot 1: the holder may have committed between the snapshot and the list
    mark = Watermark(0)
    assert mark.accept([2], listed(1.0, 1.1)) == 0
    assert mark.accept([2], listed(1.05, 1.2)) == 0  # this snapshot began before the list was read
    assert mark.accept([2], listed(1.3, 1.4)) == 1


def test_holders_come_from_the_first_fresh_list_and_the_gap_passes_after_a_list_without_them() -> None:
    mark = Watermark(0)
    assert mark.accept([2], stale(1.0)) == 0
    assert mark.accept([2], listed(2.0, 2.1, "a")) == 0  # the holders: a
    assert mark.accept([2], listed(3.0, 3.1, "a", "b")) == 0
    assert mark.accept([2], listed(4.0, 4.1, "b")) == 0  # a ended by 4.1
    assert mark.accept([2, 3], stale(5.0)) == 2
    assert mark.gaps_passed == 1


def test_ids_at_or_below_the_position_are_refused() -> None:
    with pytest.raises(ValueError, match="not above the position"):
        Watermark(5).accept([5], at(1))
