"""Faults to inject into the in-memory broker's producers: acks held back, sends and deliveries that fail."""

from __future__ import annotations

from headwater.sdk.errors import ConnectError, RetriableError


class ProducerFaults:
    """Faults to inject into producers: held acks, failing sends and failing deliveries.

    A producer consults its own faults and then its broker's, which apply to every producer of that broker.
    The owner (producer or broker) calls these methods under the broker lock.
    """

    def __init__(self) -> None:
        self.hold_all = False
        self.held_topics: set[str] = set()
        self.send_failures = 0
        self.send_failures_retriable = True
        self.delivery_failures = 0
        self.delivery_error: Exception | None = None
        self.armed = False
        """True while a send or delivery failure is pending; lets ``produce`` skip the checks otherwise."""

    def hold_acks(self, topic: str | None = None) -> None:
        """From now on, keep acks for ``topic`` (every topic when ``None``) queued until :meth:`release_acks`."""
        if topic is None:
            self.hold_all = True
        else:
            self.held_topics.add(topic)

    def release_acks(self, topic: str | None = None) -> None:
        """Stop holding ``topic``'s acks, or every hold when ``None``; the next ``poll``/``flush`` delivers them."""
        if topic is None:
            self.hold_all = False
            self.held_topics.clear()
        else:
            self.held_topics.discard(topic)

    def holds(self, topic: str) -> bool:
        return self.hold_all or topic in self.held_topics

    @property
    def holding(self) -> bool:
        return self.hold_all or bool(self.held_topics)

    def fail_next_sends(self, n: int, retriable: bool = True) -> None:
        """Make the next ``n`` ``produce`` calls raise (:class:`RetriableError` or :class:`ConnectError`)."""
        self.send_failures = n
        self.send_failures_retriable = retriable
        self._arm()

    def fail_next_deliveries(self, n: int, error: Exception | None = None) -> None:
        """Make the next ``n`` produced records fail: not stored, delivery callback gets ``(error, None)``."""
        self.delivery_failures = n
        self.delivery_error = error
        self._arm()

    def take_send_failure(self) -> ConnectError | None:
        if self.send_failures <= 0:
            return None
        self.send_failures -= 1
        self._arm()
        if self.send_failures_retriable:
            return RetriableError("injected send failure")
        return ConnectError("injected send failure")

    def take_delivery_failure(self) -> Exception | None:
        if self.delivery_failures <= 0:
            return None
        self.delivery_failures -= 1
        self._arm()
        return self.delivery_error or ConnectError("delivery failed")

    def _arm(self) -> None:
        self.armed = self.send_failures > 0 or self.delivery_failures > 0

    def __repr__(self) -> str:
        held = "all" if self.hold_all else sorted(self.held_topics)
        failing = f"send_failures={self.send_failures}, delivery_failures={self.delivery_failures}"
        return f"ProducerFaults(held={held}, {failing})"
