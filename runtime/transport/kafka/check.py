"""Questions a worker asks a Kafka cluster with an admin client: before it starts, does it answer and what is its
id; while it runs, does it still answer (:class:`ClusterProbe`, which feeds
:class:`~headwater.runtime.transport.reachability.BrokerReachability`). Each keeps librdkafka's log lines of its
client to itself, to explain a failure in one line.

A cluster that answers but refuses the worker's client (its SASL credentials or mechanism, or a TLS handshake: a
broker certificate the client cannot verify) is not worth waiting for: :func:`check_broker` raises
:class:`BrokerRefused` at once rather than retrying, as Kafka's Java clients treat authentication failures as
final."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from headwater.sdk.errors import ConfigError, ConnectError

REFUSALS = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL})
"""librdkafka's error codes for a broker that refused the client: SASL authentication and the TLS handshake."""


class BrokerRefused(ConnectError):
    """The cluster answered and refused the client's security settings (which retrying does not change)."""


def kafka_cluster_id(config: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """The id of the Kafka cluster (``GET /`` shows it), ``None`` when the cluster does not say."""
    settings: dict[str, Any] = {**config, "logger": _CollectedLog()}
    try:
        found = AdminClient(settings).list_topics(timeout=timeout_s).cluster_id
    except KafkaException:
        return None
    return str(found) if found else None


class _CollectedLog(logging.Logger):
    """librdkafka's log lines of one client, kept to explain a failed check rather than printed."""

    def __init__(self) -> None:
        super().__init__("headwater.runtime.transport.kafka.check.librdkafka")
        self.lines: list[str] = []

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if level >= logging.WARNING and len(args) == 3:
            text = str(args[2])
            self.lines.append(text.split("]: ", 1)[-1])


def check_broker(config: Mapping[str, Any], timeout_ms: int, stop: threading.Event | None = None) -> str | None:
    """None when the cluster answers an admin metadata request within ``timeout_ms``, else the reason. Returns
    early (with a reason) when ``stop`` is set. Raises ConfigError when librdkafka rejects ``config``."""
    collected = _CollectedLog()
    refusals: list[KafkaError] = []
    settings: dict[str, Any] = {**config, "logger": collected, "error_cb": _collect_refusals(refusals)}
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
        admin.poll(0)  # serves error_cb
        if refusals:
            raise BrokerRefused(f"the Kafka cluster refused the worker's client: {_describe_refusal(refusals[-1])}")
    admin.poll(0)
    return collected.lines[-1] if collected.lines else reason


PROBED_TOPIC = "__consumer_offsets"
"""The topic a probe asks the metadata of: Kafka's own, so a request for it never creates a topic of a user's."""


class ClusterProbe:
    """Asks the cluster whether it answers, again and again, with one admin client kept open: a metadata request for
    one internal topic (``__consumer_offsets``; no topic list, however many topics the cluster has, and nothing
    created: librdkafka asks without auto-creation). It is answered on the calling thread: an admin request's future
    (DescribeCluster, say) completes on librdkafka's background thread, which then runs Python code, and a Kafka
    client that Python's garbage collector frees there makes librdkafka abort the process (a client must not be
    destroyed from one of librdkafka's threads). A probe is a :data:`~headwater.runtime.transport.reachability.Probe`;
    :meth:`close` lets the client go."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._log = _CollectedLog()
        self._errors: list[KafkaError] = []
        settings: dict[str, Any] = {**config, "logger": self._log, "error_cb": self._errors.append}
        self._admin = AdminClient(settings)

    def __call__(self, timeout_s: float) -> str | None:
        """None when the cluster answered within ``timeout_s``, else why not, with librdkafka's last word on a
        broker connection since the previous probe (``Connect to ... failed: Connection refused``, say)."""
        try:
            reason = self._ask(timeout_s)
            if reason is None:
                return None
            self._admin.poll(0)  # serves the client's log lines and error_cb
            said = [e.str() for e in self._errors if e.code() != KafkaError._ALL_BROKERS_DOWN] + self._log.lines
            return f"{reason} ({said[-1]})" if said else reason
        finally:
            self._admin.poll(0)
            self._log.lines.clear()
            self._errors.clear()

    def _ask(self, timeout_s: float) -> str | None:
        try:
            self._admin.list_topics(topic=PROBED_TOPIC, timeout=timeout_s)
            return None
        except KafkaException as error:
            found = error.args[0] if error.args else None
            code = found.code() if isinstance(found, KafkaError) else None
            silent = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
            return f"no answer within {timeout_s:g} s" if code in silent else _describe(error)

    def close(self) -> None:
        self._admin.poll(0)

    def __repr__(self) -> str:
        return f"ClusterProbe({self._admin})"


def _collect_refusals(found: list[KafkaError]) -> Any:
    def collect(error: KafkaError) -> None:
        if error.code() in REFUSALS:
            found.append(error)

    return collect


def _describe_refusal(error: KafkaError) -> str:
    """librdkafka's text without the broker's address and state timing: ``SASL authentication error: ...``."""
    text = error.str().split("/bootstrap: ", 1)[-1]
    return text.split(" (after ", 1)[0]


def _describe(error: KafkaException) -> str:
    found = error.args[0] if error.args else error
    return found.str() if isinstance(found, KafkaError) else str(found)
