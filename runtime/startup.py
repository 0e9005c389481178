"""What both worker commands (``headwater standalone`` and ``headwater distributed``) do around their herder: wait
until Kafka answers, name the worker, log state changes, stop on signals, and map failures to exit codes."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from headwater.runtime.tasks.base import State
from headwater.sdk.errors import ConfigError, ConnectError

log = logging.getLogger(__name__)

_STATE_WORDS = {State.RUNNING: "started", State.PAUSED: "paused", State.STOPPED: "stopped", State.FAILED: "failed"}


def log_state(connector: str, task: int | None, state: State, trace: str | None) -> None:
    """Worker listener: one log line per connector and task state change."""
    what = f"connector {connector}" if task is None else f"task {connector}-{task}"
    word = _STATE_WORDS.get(state, state.value)
    log.log(logging.ERROR if state is State.FAILED else logging.INFO, "%s %s", what, word)


def kafka_cluster_id(config: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """The id of the Kafka cluster (``GET /`` shows it), ``None`` when the cluster does not say."""
    settings: dict[str, Any] = {**config, "logger": _CollectedLog()}
    try:
        found = AdminClient(settings).list_topics(timeout=timeout_s).cluster_id
    except KafkaException:
        return None
    return str(found) if found else None


def advertised_id(host: str, port: int) -> str:
    """A worker's id in statuses once its REST server listens: its REST address, as in Kafka Connect."""
    advertised = socket.gethostname() if host in ("0.0.0.0", "::") else host
    return f"{advertised}:{port}"


def initial_worker_id() -> str:
    """A worker's id in statuses until its REST server listens: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


# ---- waiting for Kafka -------------------------------------------------------------------------------------------


class _CollectedLog(logging.Logger):
    """librdkafka's log lines of one client, kept to explain a failed check rather than printed."""

    def __init__(self) -> None:
        super().__init__("headwater.runtime.startup.librdkafka")
        self.lines: list[str] = []

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if level >= logging.WARNING and len(args) == 3:
            text = str(args[2])
            self.lines.append(text.split("]: ", 1)[-1])


def check_broker(config: Mapping[str, Any], timeout_ms: int, stop: threading.Event | None = None) -> str | None:
    """None when the cluster answers an admin metadata request within ``timeout_ms``, else the reason. Returns
    early (with a reason) when ``stop`` is set. Raises ConfigError when librdkafka rejects ``config``."""
    collected = _CollectedLog()
    settings: dict[str, Any] = {**config, "logger": collected}
    try:
        admin = AdminClient(settings)
    except KafkaException as error:
        raise ConfigError("bootstrap.servers", None, f"invalid Kafka client settings: {_describe(error)}") from None
    deadline = time.monotonic() + timeout_ms / 1000
    reason = f"no answer within {timeout_ms} ms"
    while stop is None or not stop.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            admin.list_topics(timeout=min(remaining, 0.25))
            return None
        except KafkaException as error:
            reason = _describe(error)
    admin.poll(0)
    return collected.lines[-1] if collected.lines else reason


def _describe(error: KafkaException) -> str:
    found = error.args[0] if error.args else error
    return found.str() if isinstance(found, KafkaError) else str(found)


def wait_for_broker(
    check: Callable[[], str | None], servers: str, backoff_ms: int, max_backoff_ms: int, stop: threading.Event
) -> bool:
    """Call ``check`` until it returns None (True) or ``stop`` is set (False), waiting ``backoff_ms`` after the
    first failure and doubling the wait after each further one, up to ``max_backoff_ms``. Each failure is logged
    as an error naming ``servers``."""
    delay = backoff_ms
    attempt = 0
    while not stop.is_set():
        attempt += 1
        reason = check()
        if reason is None:
            if attempt > 1:
                log.info("Kafka at %s answered at check %d", servers, attempt)
            return True
        if stop.is_set():
            break
        log.error(
            "cannot reach Kafka at %s: %s; check %d failed, retrying in %.1f s", servers, reason, attempt, delay / 1000
        )
        if stop.wait(delay / 1000):
            break
        delay = min(delay * 2, max_backoff_ms)
    return False


# ---- the command ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGTERM and SIGINT while in the block (main thread only)."""

    def handle(signum: int, frame: object) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


GC_THRESHOLDS = (100_000, 50, 100)
"""The garbage collector's thresholds in a worker process. CPython's default first threshold (2,000 container
allocations in 3.13, 700 before) makes the collector run every few batches when a task moves a few hundred
thousand records a second, although records hold no reference cycles and reference counting frees them."""


def tune_garbage_collector() -> None:
    """Collect less often, and move what start-up allocated out of the collector's way (``gc.freeze``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class RunnableWorker(Protocol):
    def run(self, stop: threading.Event) -> int: ...


def run_worker_command(command: str, build: Callable[[], RunnableWorker]) -> int:
    """A worker command: build the worker from its files, run it until SIGTERM or SIGINT. 0 after a graceful stop,
    2 for a bad config file, 1 for other failures; errors are one line on stderr naming ``headwater <command>``."""
    try:
        worker = build()
    except ConfigError as error:
        print(f"headwater {command}: error: {error}", file=sys.stderr)
        return 2
    tune_garbage_collector()
    stop = threading.Event()
    with stop_on_signals(stop):
        try:
            return worker.run(stop)
        except ConfigError as error:
            print(f"headwater {command}: error: {error}", file=sys.stderr)
            return 2
        except ConnectError as error:
            print(f"headwater {command}: error: {error}", file=sys.stderr)
            return 1
