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
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from headwater.runtime.herder.base import Herder
from headwater.runtime.metrics import MetricsServer
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.rest.security import RestSecurity
from headwater.runtime.tasks.base import State
from headwater.runtime.transport.kafka import ClusterProbe, kafka_cluster_id
from headwater.runtime.transport.reachability import BOUND_KEY, BrokerReachability
from headwater.sdk.errors import ConfigError, ConnectError

log = logging.getLogger(__name__)

_STATE_WORDS = {State.RUNNING: "started", State.PAUSED: "paused", State.STOPPED: "stopped", State.FAILED: "failed"}


def log_state(connector: str, task: int | None, state: State, trace: str | None) -> None:
    """Worker listener: one log line per connector and task state change."""
    what = f"connector {connector}" if task is None else f"task {connector}-{task}"
    word = _STATE_WORDS.get(state, state.value)
    log.log(logging.ERROR if state is State.FAILED else logging.INFO, "%s %s", what, word)


def serve_rest(
    herder: Herder, listener: tuple[str, int], admin_config: Mapping[str, Any], security: RestSecurity
) -> tuple[RestServer, str]:
    """Start serving Kafka Connect's REST API of ``herder`` at ``listener`` (host, port) behind ``security``;
    return the server and the worker's id from then on, its REST address (as in Kafka Connect). Raises
    ConnectError when the address cannot be bound."""
    host, port = listener
    rest = RestServer(create_app(herder, kafka_cluster_id(admin_config)), host, port, security)
    rest.start()
    return rest, advertised_id(host, rest.port)


def serve_metrics(herder: Herder, config: Mapping[str, Any]) -> MetricsServer | None:
    """Start the metrics listener ``metrics.port`` asks for (``None`` when it is unset); raises ConnectError when its
    address cannot be bound."""
    server = MetricsServer.from_config(herder.worker, config)
    if server is not None:
        server.start()
    return server


def advertised_id(host: str, port: int) -> str:
    """A worker's id in statuses once its REST server listens: its REST address, as in Kafka Connect."""
    advertised = socket.gethostname() if host in ("0.0.0.0", "::") else host
    return f"{advertised}:{port}"


def initial_worker_id() -> str:
    """A worker's id in statuses until its REST server listens: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


# ---- waiting for Kafka -------------------------------------------------------------------------------------------


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


def broker_reachability(servers: str, config: Mapping[str, Any]) -> BrokerReachability:
    """Whether the cluster at ``servers`` answers, unreachable after the worker config's
    ``health.broker.unreachable.ms``; watched by :func:`watch_broker` once the worker has found the cluster."""
    return BrokerReachability(servers, int(config[BOUND_KEY]))


def watch_broker(reachability: BrokerReachability, admin_config: Mapping[str, Any]) -> None:
    """Ask the cluster whether it still answers, with an admin client of ``admin_config``, until
    ``reachability.stop()``."""
    probe = ClusterProbe(admin_config)
    reachability.watch(probe, probe.close)


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
    @property
    def config(self) -> Mapping[str, Any]:
        """The parsed worker config; ``task.shutdown.graceful.timeout.ms`` also bounds the process's exit."""

    def run(self, stop: threading.Event) -> int: ...


def exit_within(timeout_s: float, code: int) -> threading.Thread:
    """Make sure the process exits within ``timeout_s`` from now, with ``code``.

    Called once the worker has stopped. The interpreter's own exit then joins every non-daemon thread (a
    ``ThreadPoolExecutor``'s threads among them) and runs the atexit hooks, and either may never end: a task cancelled
    after the graceful timeout may have left a thread of its own in a call that does not return. A Kafka Connect
    worker's JVM exits once its shutdown hook has stopped the herder, whatever threads remain; this daemon thread
    does the same when the interpreter is not done by then, logging the threads it leaves behind."""

    def force_exit() -> None:
        if threading.Event().wait(timeout_s):
            return
        current = threading.current_thread()
        left = [t.name for t in threading.enumerate() if t is not current and t.is_alive()]
        log.error(
            "the worker stopped but the process did not exit within %.1f s; exiting now with %d, leaving threads: %s",
            timeout_s,
            code,
            ", ".join(left) or "none",
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    deadline = threading.Thread(target=force_exit, name="exit-deadline", daemon=True)
    deadline.start()
    return deadline


def run_worker_command(command: str, build: Callable[[], RunnableWorker]) -> int:
    """A worker command: build the worker from its files, run it until SIGTERM or SIGINT. 0 after a graceful stop,
    2 for a bad config file, 1 for other failures; errors are one line on stderr naming ``headwater <command>``.
    Once stopped by a signal, the process exits within ``task.shutdown.graceful.timeout.ms`` (:func:`exit_within`)."""
    try:
        worker = build()
    except ConfigError as error:
        print(f"headwater {command}: error: {error}", file=sys.stderr)
        return 2
    tune_garbage_collector()
    stop = threading.Event()
    with stop_on_signals(stop):
        try:
            code = worker.run(stop)
        except ConfigError as error:
            print(f"headwater {command}: error: {error}", file=sys.stderr)
            code = 2
        except ConnectError as error:
            print(f"headwater {command}: error: {error}", file=sys.stderr)
            code = 1
    if stop.is_set():  # stopped by a signal: the process is on its way out
        exit_within(int(worker.config["task.shutdown.graceful.timeout.ms"]) / 1000, code)
    return code
