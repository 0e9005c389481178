"""The keys of exactly-once source delivery (KIP-618) and their validation, as Kafka Connect's ``DistributedHerder``
validates them.

The worker key ``exactly.once.source.support`` (Kafka Connect's ``DistributedConfig``) takes ``disabled``,
``preparing`` or ``enabled``; only a distributed worker may set it to anything but ``disabled`` (Kafka Connect offers
exactly-once sources in distributed mode only): :class:`~headwater.runtime.worker.Worker` refuses it otherwise. With
``enabled``, every source task of the worker runs in transactions
(:class:`~headwater.runtime.tasks.exactly_once_source.ExactlyOnceWorkerSourceTask`).

The source connector keys (Kafka Connect's ``SourceConnectorConfig``) are defined with Kafka's validators. Kafka
Connect accepts ``transaction.boundary`` and its interval on a worker without the support and ignores them; Headwater
refuses them there, naming the key, so that no config is accepted and then ignored.

``offsets.storage.topic`` (KIP-618) gives a source connector an offsets topic of its own, on distributed workers
(Kafka Connect's ``DistributedConfig.connectorOffsetsTopicsPermitted``; a standalone worker ignores it, Headwater
refuses it there), with or without exactly-once support: its tasks write their offsets there, and read them from
there first, falling back to the worker's offsets topic
(:mod:`~headwater.runtime.storage.connector_offsets`). Kafka Connect keeps that topic on the cluster the
connector's producer writes to, so ``producer.override.bootstrap.servers`` moves it; Headwater keeps it on the
worker's cluster only and refuses the pair when they name different servers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.sdk.config import ConfigDef, Importance, Type, at_least, non_empty_string, one_of
from headwater.sdk.connector import SourceConnector
from headwater.sdk.errors import ConfigError
from headwater.sdk.transactions import ConnectorTransactionBoundaries, ExactlyOnceSupport

WORKER_SUPPORT = "exactly.once.source.support"
SUPPORT = "exactly.once.support"
BOUNDARY = "transaction.boundary"
INTERVAL = "transaction.boundary.interval.ms"
OFFSETS_TOPIC = "offsets.storage.topic"
SERVERS = "bootstrap.servers"
PRODUCER_SERVERS = f"producer.override.{SERVERS}"

POLL, INTERVAL_BOUNDARY, CONNECTOR = "poll", "interval", "connector"

NOT_DISTRIBUTED = (
    "exactly-once source support needs a distributed worker (Kafka Connect offers it in distributed mode only); "
    "remove the key or set it to disabled"
)

GROUP = "Exactly Once Support"

log = logging.getLogger(__name__)


WORKER_CONFIG = ConfigDef().define(
    WORKER_SUPPORT,
    Type.STRING,
    "disabled",
    Importance.HIGH,
    "Whether the worker's source tasks deliver exactly once, in transactions (KIP-618), on distributed workers "
    "only. disabled: at least once; preparing: at least once, on the way to enabled (set it on every worker of the "
    "cluster first, then enabled, one worker after the other); enabled: every source task writes its records and "
    "offsets in transactions, and a task of an older generation is fenced before a newer one starts.",
    one_of("disabled", "preparing", "enabled"),
)
"""The worker key (Kafka Connect's ``DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG``)."""


def worker_support(worker_config: Mapping[str, Any]) -> str:
    """The parsed worker config's support, in lower case."""
    return str(worker_config.get(WORKER_SUPPORT, "disabled")).strip().lower()


def check_distributed(worker_config: Mapping[str, Any], distributed: bool) -> None:
    """Refuse exactly-once support on a worker that is not distributed."""
    if not distributed and worker_support(worker_config) != "disabled":
        raise ConfigError(WORKER_SUPPORT, worker_config.get(WORKER_SUPPORT), NOT_DISTRIBUTED)


def _interval(key: str, value: Any) -> None:
    """At least 0, when set."""
    if value is not None:
        at_least(0)(key, value)


SOURCE_CONFIG = (
    ConfigDef()
    .define(
        SUPPORT,
        Type.STRING,
        "requested",
        Importance.MEDIUM,
        'Permitted values are requested, required. If set to "required", forces a preflight check that the '
        "connector can provide exactly-once semantics with the given configuration; the worker must have "
        "exactly-once source support enabled.",
        one_of("requested", "required"),
        group=GROUP,
        display_name="Exactly once support",
    )
    .define(
        BOUNDARY,
        Type.STRING,
        POLL,
        Importance.MEDIUM,
        "Permitted values are: poll, interval, connector. poll: a transaction for every batch a task polls; "
        "connector: the connector's tasks define the transactions (only for connectors that can); interval: a "
        "transaction per transaction.boundary.interval.ms. Only on a worker with exactly.once.source.support "
        "enabled or preparing.",
        one_of(POLL, INTERVAL_BOUNDARY, CONNECTOR),
        group=GROUP,
        display_name="Transaction Boundary",
    )
    .define(
        INTERVAL,
        Type.LONG,
        None,
        Importance.LOW,
        "With transaction.boundary=interval, how often tasks commit their transactions (default: the worker's "
        "offset.flush.interval.ms); only with that boundary.",
        _interval,
        group=GROUP,
        display_name="Transaction boundary interval",
    )
    .define(
        OFFSETS_TOPIC,
        Type.STRING,
        None,
        Importance.LOW,
        "The name of a separate offsets topic for this connector, on distributed workers only (refused on a "
        "standalone worker). It is created when missing, with the worker's offsets topic partitions and "
        "replication factor; the connector's tasks write their offsets there (in their transactions with "
        "exactly-once support) and copy them to the worker's offsets topic, and read them from it first, falling "
        "back to the worker's offsets topic for partitions it has none of.",
        non_empty_string,
        group="offsets.topic",
        display_name="Offsets topic",
    )
)
"""The source connector keys (Kafka Connect's ``SourceConnectorConfig``)."""


@dataclass(frozen=True)
class Transactions:
    """How a source task of a worker with exactly-once support enabled delimits its transactions."""

    boundary: str
    """poll, interval or connector."""
    interval_ms: int
    """With the interval boundary: how often the task commits."""
    transactional_id: str
    """The task's ``transactional.id``: ``<group.id>-<connector>-<task>``, as Kafka Connect names it, the same for
    every generation of the task, so each new one fences the one before."""

    @classmethod
    def of(cls, connector: Mapping[str, Any], worker: Mapping[str, Any], group_id: str, task: str) -> Transactions:
        """From the parsed connector and worker configs; ``task`` is ``<connector>-<number>``."""
        interval = connector.get(INTERVAL)
        return cls(
            str(connector.get(BOUNDARY) or POLL).strip().lower(),
            int(worker["offset.flush.interval.ms"] if interval is None else interval),
            transactional_id(group_id, task),
        )


def transactional_id(group_id: str, task: str) -> str:
    """Kafka Connect's ``taskTransactionalId``: ``<group.id>-<connector>-<task number>``."""
    return f"{group_id}-{task}"


def problems(
    props: Mapping[str, Any],
    connector: SourceConnector,
    worker_config: Mapping[str, Any],
    errors: Mapping[str, Any],
    distributed: bool = False,
) -> dict[str, list[str]]:
    """The error messages by key of the source ``connector``'s config ``props``, beyond its keys' own validators:
    Kafka Connect's ``DistributedHerder`` checks, then Headwater's refusal of each key that would be ignored on this
    worker (``distributed`` says whether it is a distributed worker) or that Headwater cannot honour. ``errors`` are
    the errors found so far: a key with errors is not checked again (as in Kafka)."""
    found: dict[str, list[str]] = {}
    support = worker_support(worker_config)
    raw = {name: "" if value is None else str(value) for name, value in props.items()}
    if _value(props, SUPPORT, errors) == "required":
        messages = found.setdefault(SUPPORT, [])
        if support != "enabled":
            messages.append("This worker does not have exactly-once source support enabled.")
        messages.extend(_asked(lambda: _support_problem(connector.exactly_once_support(raw))))
    boundary = _value(props, BOUNDARY, errors)
    if boundary == CONNECTOR:
        found.setdefault(BOUNDARY, []).extend(
            _asked(lambda: _boundary_problem(connector.can_define_transaction_boundaries(raw)))
        )
    if support == "disabled":
        for key, asked in ((BOUNDARY, boundary not in (None, POLL)), (INTERVAL, _set(props, INTERVAL, errors))):
            if asked:
                found.setdefault(key, []).append(
                    f"{key} takes effect only on a worker with {WORKER_SUPPORT}=enabled, and this worker has it "
                    "disabled: remove it, or enable the support on every worker of the cluster"
                )
    if _set(props, INTERVAL, errors) and boundary != INTERVAL_BOUNDARY and not errors.get(BOUNDARY):
        found.setdefault(INTERVAL, []).append(
            f"{INTERVAL} takes effect only with {BOUNDARY}=interval: set that, or remove it"
        )
    if _set(props, OFFSETS_TOPIC, errors):
        found.setdefault(OFFSETS_TOPIC, []).extend(_offsets_topic_problems(props, worker_config, distributed))
    return {key: messages for key, messages in found.items() if messages}


def _offsets_topic_problems(props: Mapping[str, Any], worker_config: Mapping[str, Any], distributed: bool) -> list[str]:
    """Why a connector's own offsets topic cannot be kept here: Kafka Connect ignores it on a standalone worker, and
    keeps it on the producer's cluster, which Headwater does not."""
    if not distributed:
        return [
            f"{OFFSETS_TOPIC} takes effect only on a distributed worker (Kafka Connect ignores it in standalone "
            "mode), and this worker is a standalone one: remove it; the connector's offsets go to the worker's "
            "offset.storage.file.filename"
        ]
    override = props.get(PRODUCER_SERVERS)
    if override not in (None, "") and _servers(override) != _servers(worker_config.get(SERVERS)):
        return [
            f"{OFFSETS_TOPIC} with {PRODUCER_SERVERS} naming other servers than the worker's {SERVERS}: Kafka "
            "Connect keeps the connector's offsets topic on the cluster its producer writes to, and Headwater keeps "
            f"it on the worker's cluster only; remove one of the two"
        ]
    return []


def _servers(value: Any) -> set[str]:
    """A ``bootstrap.servers`` value (a list, or a comma-separated string) as a set, as Kafka Connect compares
    them."""
    items = value if isinstance(value, list | tuple) else str(value or "").split(",")
    return {str(item).strip() for item in items if str(item).strip()}


def _set(props: Mapping[str, Any], key: str, errors: Mapping[str, Any]) -> bool:
    return props.get(key) not in (None, "") and not errors.get(key)


def _value(props: Mapping[str, Any], key: str, errors: Mapping[str, Any]) -> str | None:
    """The key's value in lower case, ``None`` when it is not set or already has errors."""
    value = props.get(key)
    return None if value is None or errors.get(key) else str(value).strip().lower()


def _support_problem(answer: ExactlyOnceSupport | None) -> str | None:
    if answer is None:
        return (
            "The connector does not implement the API required for preflight validation of exactly-once source "
            "support. Please consult the documentation for the connector to determine whether it supports "
            'exactly-once semantics, and then consider reconfiguring the connector to use the value "requested" for '
            "this property (which will disable this preflight check and allow the connector to be created)."
        )
    if answer is ExactlyOnceSupport.UNSUPPORTED:
        return "The connector does not support exactly-once semantics with the provided configuration."
    if answer is not ExactlyOnceSupport.SUPPORTED:
        raise ValueError(f"Unexpected value returned from SourceConnector.exactly_once_support: {answer!r}")
    return None


def _boundary_problem(answer: ConnectorTransactionBoundaries | None) -> str | None:
    if answer is None:
        return (
            "This connector has returned a null value from its can_define_transaction_boundaries method, which is "
            "not permitted. The connector will be treated as if it cannot define its own transaction boundaries, and "
            "cannot be configured with 'transaction.boundary' set to 'connector'."
        )
    if answer is not ConnectorTransactionBoundaries.SUPPORTED:
        return (
            "The connector does not support connector-defined transaction boundaries with the given configuration. "
            "Please reconfigure it to use a different transaction boundary definition."
        )
    return None


def _asked(ask: Callable[[], str | None]) -> list[str]:
    """The problem ``ask`` finds, as Kafka Connect reports a connector that raises while it is asked."""
    try:
        problem = ask()
    except Exception as error:
        log.error("Failed while validating the connector's support for exactly-once semantics", exc_info=True)
        message = str(error).strip()
        detail = f": {message}" if message else "; please see the worker logs for more details."
        return [f"An unexpected error occurred during validation{detail}"]
    return [] if problem is None else [problem]
