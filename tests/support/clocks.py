"""Two fake clocks that move together, for code that takes a monotonic and a wall clock (``time.monotonic`` and
``time.time``): a test moves both with :meth:`Clocks.advance`."""

from __future__ import annotations


class Clocks:
    def __init__(self) -> None:
        self.monotonic = 100.0
        self.wall = 1_800_000_000.0  # 2027-01-15T08:00:00+00:00

    def advance(self, seconds: float) -> None:
        self.monotonic += seconds
        self.wall += seconds
