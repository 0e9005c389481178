"""Clocks the task loops read: the system clock, and a virtual one that only tests move."""

from __future__ import annotations

import time


class SystemClock:
    """Wall-clock milliseconds."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class VirtualClock:
    """A clock that moves only when :meth:`advance` or :meth:`set` is called."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"a clock cannot go back: advance({ms})")
        self._now += ms

    def set(self, now_ms: int) -> None:
        if now_ms < self._now:
            raise ValueError(f"a clock cannot go back: set({now_ms}) at {self._now}")
        self._now = now_ms

    def __repr__(self) -> str:
        return f"VirtualClock(now_ms={self._now})"
