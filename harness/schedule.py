"""Faults and fault schedules: what goes wrong, and when, while a connector runs on a simulated worker.

A :class:`Fault` is applied to a :class:`~headwater.harness.driver.ConnectorDriver`; a schedule is a list of
``(at_ms, fault)`` played by :func:`play_schedule` on the driver's virtual clock. The Hypothesis strategy
:func:`~headwater.harness.strategies.fault_schedules` draws schedules; the stateful test draws the same faults one
rule at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from headwater.harness.driver import ConnectorDriver

FaultKind = Literal[
    "crash_worker",
    "crash_tasks",
    "restart",
    "restart_task",
    "rebalance",
    "commit_failures",
    "send_failures",
    "put_failures",
    "slow_acks",
]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
SOURCE_FAULTS: tuple[FaultKind, ...] = tuple(k for k in FAULT_KINDS if k != "put_failures")
"""The faults that apply to a source connector."""
SINK_FAULTS: tuple[FaultKind, ...] = tuple(k for k in FAULT_KINDS if k not in ("send_failures", "slow_acks"))
"""The faults that apply to a sink connector (it sends nothing, so no send failures or slow acks)."""


@dataclass(frozen=True)
class Fault:
    """One fault. ``count`` is how many commits, sends or puts fail; ``ms`` how long acks are held."""

    kind: FaultKind
    count: int = 1
    ms: int = 0

    def apply(self, driver: ConnectorDriver) -> None:
        """Make the fault happen now (``slow_acks`` holds acks; :func:`play_schedule` releases them)."""
        kind = self.kind
        if kind == "crash_worker":
            driver.crash_worker()
        elif kind == "crash_tasks":
            driver.crash_tasks()
        elif kind == "restart":
            driver.restart()
        elif kind == "restart_task":
            driver.restart_task(0)
        elif kind == "rebalance":
            driver.rebalance()
        elif kind == "commit_failures":
            driver.fail_commits(self.count)
        elif kind == "send_failures":
            driver.fail_sends(self.count)
        elif kind == "put_failures":
            driver.fail_puts(self.count)
        elif kind == "slow_acks":
            driver.hold_acks()
        else:  # pragma: no cover - FaultKind is closed
            raise ValueError(f"unknown fault {kind!r}")

    def __str__(self) -> str:
        if self.kind in ("commit_failures", "send_failures", "put_failures"):
            return f"{self.kind}({self.count})"
        return f"slow_acks({self.ms} ms)" if self.kind == "slow_acks" else self.kind


FaultSchedule = Sequence[tuple[int, Fault]]
"""Faults and the virtual time (ms after the schedule starts) each happens at, in time order."""


def play_schedule(driver: ConnectorDriver, schedule: FaultSchedule, until_ms: int) -> list[str]:
    """Advance the driver's clock through ``schedule``, applying each fault at its time, up to ``until_ms`` after
    the start; return what happened, one line per fault (for failure messages)."""
    start = driver.worker.clock.now_ms()
    releases: list[int] = []
    log: list[str] = []
    events = sorted(schedule, key=lambda event: event[0])
    for at, fault in events:
        _advance_to(driver, start + at, releases)
        fault.apply(driver)
        log.append(f"{at} ms: {fault}")
        if fault.kind == "slow_acks":
            releases.append(driver.worker.clock.now_ms() + fault.ms)
    _advance_to(driver, start + max([until_ms, *(at for at, _ in events)]), releases)
    if releases:
        driver.release_acks()
    return log


def _advance_to(driver: ConnectorDriver, target: int, releases: list[int]) -> None:
    """Advance to ``target``, releasing held acks when their time comes."""
    while (now := driver.worker.clock.now_ms()) < target:
        due = [at for at in releases if at <= now]
        if due:
            releases[:] = [at for at in releases if at > now]
            if not releases:
                driver.release_acks()
        upcoming = min([at for at in releases if at > now] + [target])
        driver.advance(upcoming - now)
