"""Metrics a connector or task publishes of its own (Kafka Connect's plugin metrics, KIP-877): counters, gauges and
histograms registered through its context's :attr:`~headwater.sdk.context.SourceTaskContext.metrics`.

The worker serves them on ``GET /metrics`` as ``headwater_connect_plugin_<name>`` with the labels ``connector`` and,
for a task's, ``task``: the tags Kafka Connect gives them in its ``plugins`` metric group
(``ConnectMetrics.connectorPluginMetrics`` and ``taskPluginMetrics``). They go away when their connector or task
stops, as KIP-877's ``PluginMetrics`` are removed when their plugin is closed.
"""

from __future__ import annotations

import enum
import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

from headwater.sdk.errors import IllegalWorkerStateError


class MetricKind(enum.Enum):
    """What a plugin metric is, as Prometheus types it."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


DEFAULT_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""A histogram's upper bounds when none are given: ``prometheus_client``'s defaults, for durations in seconds."""

NAME = re.compile(r"[a-z][a-z0-9_]*")
RESERVED_SUFFIXES = ("_total", "_created", "_bucket", "_count", "_sum")
"""Suffixes the Prometheus exposition adds to a counter's or a histogram's samples: a name ending in one could
collide with another metric's samples, so it is refused."""


class Counter:
    """A value that only goes up (records written, calls made); safe to increment from any thread."""

    kind = MetricKind.COUNTER

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description
        self._value = 0.0
        self._lock = threading.Lock()

    def inc(self, amount: float = 1) -> None:
        """Add ``amount`` (1 by default); a negative or non-finite amount raises ``ValueError``."""
        if not amount >= 0 or math.isinf(amount):
            raise ValueError(f"counter {self.name} can only grow by a finite amount >= 0, not {amount}")
        with self._lock:
            self._value += amount

    @property
    def value(self) -> float:
        """The total so far."""
        return self._value

    def __repr__(self) -> str:
        return f"Counter({self.name}={self._value:g})"


class Gauge:
    """A value that goes up and down (rows buffered, lag): set it, or give ``read`` at registration to have it
    read when the metrics are scraped."""

    kind = MetricKind.GAUGE

    def __init__(self, name: str, description: str, read: Callable[[], float] | None = None) -> None:
        self.name = name
        self.description = description
        self.read = read
        self._value = 0.0
        self._lock = threading.Lock()

    def set(self, value: float) -> None:
        """Set the value; a gauge registered with ``read`` raises ``ValueError``."""
        self._settable()
        self._value = float(value)

    def inc(self, amount: float = 1) -> None:
        """Add ``amount`` (may be negative)."""
        self._settable()
        with self._lock:
            self._value += amount

    def dec(self, amount: float = 1) -> None:
        """Subtract ``amount``."""
        self.inc(-amount)

    @property
    def value(self) -> float:
        """The value set, or what ``read`` returns now."""
        return float(self.read()) if self.read is not None else self._value

    def _settable(self) -> None:
        if self.read is not None:
            raise ValueError(f"gauge {self.name} is read from a function given at registration: it cannot be set")

    def __repr__(self) -> str:
        return f"Gauge({self.name})" if self.read is not None else f"Gauge({self.name}={self._value:g})"


class Histogram:
    """Observations counted in buckets (batch sizes, call durations in seconds), with their count and sum."""

    kind = MetricKind.HISTOGRAM

    def __init__(self, name: str, description: str, buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        bounds = [float(b) for b in buckets if not math.isinf(b)]
        if not bounds or bounds != sorted(set(bounds)):
            raise ValueError(f"histogram {name}: buckets must be increasing upper bounds, got {list(buckets)}")
        self.name = name
        self.description = description
        self.bounds = (*bounds, math.inf)
        """The upper bounds, ending with infinity."""
        self._counts = [0] * len(self.bounds)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        """Count one observation."""
        index = next(i for i, bound in enumerate(self.bounds) if value <= bound)
        with self._lock:
            self._counts[index] += 1
            self._sum += value

    @property
    def count(self) -> int:
        """Observations so far."""
        return sum(self._counts)

    @property
    def sum(self) -> float:
        """The sum of the observations."""
        return self._sum

    def buckets(self) -> list[tuple[float, int]]:
        """Cumulative ``(upper bound, observations <= it)`` pairs, ending with infinity and :attr:`count`."""
        with self._lock:
            counts, found, total = list(self._counts), [], 0
        for bound, count in zip(self.bounds, counts, strict=True):
            total += count
            found.append((bound, total))
        return found

    def __repr__(self) -> str:
        return f"Histogram({self.name}, count={self.count}, sum={self._sum:g})"


PluginMetric = Counter | Gauge | Histogram
"""One registered metric."""

NameCheck = Callable[[str, MetricKind], None]
"""Told of each new name and kind before it is registered; raises ``ValueError`` when the worker already has that
name as another kind (another connector's, say: they share ``/metrics``)."""


class PluginMetrics(Mapping[str, PluginMetric]):
    """The metrics one connector or task registered (KIP-877's ``PluginMetrics``), by name.

    Registering a name again with the same kind returns the metric already registered; with another kind, or with
    other buckets or another ``read``, it raises ``ValueError``, as does a name that is not lower-case letters,
    digits and ``_`` starting with a letter, or that ends in a suffix the exposition adds (``_total``, ``_count``,
    ``_sum``, ``_bucket``, ``_created``; the worker adds ``_total`` to counters itself). The worker closes it when
    the connector or task stops; registering on a closed one raises
    :class:`~headwater.sdk.errors.IllegalWorkerStateError`."""

    def __init__(self, check: NameCheck | None = None) -> None:
        self._metrics: dict[str, PluginMetric] = {}
        self._check = check
        self._lock = threading.Lock()
        self.closed = False
        """Whether the worker closed it: its connector or task stopped, and its metrics are no longer served."""

    def counter(self, name: str, description: str = "") -> Counter:
        """Register (or get) the counter ``name``."""
        found = self._register(name, MetricKind.COUNTER, lambda: Counter(name, description))
        assert isinstance(found, Counter)
        return found

    def gauge(self, name: str, description: str = "", read: Callable[[], float] | None = None) -> Gauge:
        """Register (or get) the gauge ``name``; with ``read``, its value is ``read()`` at each scrape (a ``read``
        that raises is logged and its sample left out)."""
        found = self._register(name, MetricKind.GAUGE, lambda: Gauge(name, description, read))
        assert isinstance(found, Gauge)
        if read is not None and found.read is not read:
            raise ValueError(f"plugin metric {name} is registered already with another read function")
        return found

    def histogram(self, name: str, description: str = "", buckets: Sequence[float] = DEFAULT_BUCKETS) -> Histogram:
        """Register (or get) the histogram ``name`` with upper bounds ``buckets`` (seconds-sized by default)."""
        made = Histogram(name, description, buckets)
        found = self._register(name, MetricKind.HISTOGRAM, lambda: made)
        assert isinstance(found, Histogram)
        if found.bounds != made.bounds:
            raise ValueError(f"plugin metric {name} is registered already with buckets {list(found.bounds[:-1])}")
        return found

    def close(self) -> None:
        """Forget every metric (they are no longer served) and refuse new ones; idempotent."""
        with self._lock:
            self.closed = True
            self._metrics = {}

    def _register(self, name: str, kind: MetricKind, make: Callable[[], PluginMetric]) -> PluginMetric:
        check_name(name)
        with self._lock:
            if self.closed:
                raise IllegalWorkerStateError(f"cannot register plugin metric {name}: its connector or task stopped")
            found = self._metrics.get(name)
            if found is not None:
                if found.kind is not kind:
                    raise ValueError(
                        f"plugin metric {name} is registered already as a {found.kind.value}, not a {kind.value}"
                    )
                return found
            if self._check is not None:
                self._check(name, kind)
            made = self._metrics[name] = make()
            return made

    def __getitem__(self, name: str) -> PluginMetric:
        return self._metrics[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._metrics))

    def __len__(self) -> int:
        return len(self._metrics)

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return f"PluginMetrics({list(self._metrics.values())}{state})"


def check_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` can be a plugin metric's name (see :class:`PluginMetrics`)."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(
            f"plugin metric name {name!r} is not valid: use lower-case letters, digits and _, starting with a letter "
            "(records_written, not records-written)"
        )
    if name.endswith(RESERVED_SUFFIXES):
        raise ValueError(
            f"plugin metric name {name!r} ends in {name[name.rfind('_') :]}, a suffix Prometheus exposition adds "
            "(a counter's _total is added for you): choose another name"
        )
