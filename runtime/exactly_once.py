"""The keys of exactly-once source delivery (KIP-618) and their validation, as Kafka Connect's ``DistributedHerder``
validates them; Headwater does not implement the delivery yet, so every value that asks for it is refused.

The worker key ``exactly.once.source.support`` (Kafka Connect's ``DistributedConfig``) takes only ``disabled``. The
source connector keys (Kafka Connect's ``SourceConnectorConfig``) are defined with Kafka's validators, and their
values that ask for nothing a worker without exactly-once support would do (``exactly.once.support=requested``,
``transaction.boundary=poll``, no per-connector offsets topic) are accepted. Every other value is refused naming its
key, so that no config is accepted and then ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
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

NOT_IMPLEMENTED = "exactly-once source support is not implemented yet in Headwater"
"""The refusal of every value that asks for exactly-once delivery, until the transactional machinery lands."""

GROUP = "Exactly Once Support"

log = logging.getLogger(__name__)


def worker_support(key: str, value: Any) -> None:
    """One of: disabled, preparing, enabled; only disabled until Headwater implements the delivery."""
    one_of("disabled", "preparing", "enabled")(key, value)
    if str(value).lower() != "disabled":
        raise ConfigError(
            key,
            value,
            f"{NOT_IMPLEMENTED} (and Kafka Connect offers it on distributed workers only); remove the key or set it "
            "to disabled",
        )


WORKER_CONFIG = ConfigDef().define(
    WORKER_SUPPORT,
    Type.STRING,
    "disabled",
    Importance.HIGH,
    "Whether the worker's source tasks deliver exactly once, in transactions (KIP-618): disabled, preparing or "
    "enabled, on distributed workers only. Headwater does not implement it yet and takes only disabled.",
    worker_support,
)
"""The worker key (Kafka Connect's ``DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG``)."""


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
        "exactly-once source support enabled. Headwater takes only requested for now.",
        one_of("requested", "required"),
        group=GROUP,
        display_name="Exactly once support",
    )
    .define(
        BOUNDARY,
        Type.STRING,
        "poll",
        Importance.MEDIUM,
        "Permitted values are: poll, interval, connector. poll: a transaction for every batch a task polls; "
        "connector: the connector's tasks define the transactions (only for connectors that can); interval: a "
        "transaction per transaction.boundary.interval.ms. Headwater takes only poll for now.",
        one_of("poll", "interval", "connector"),
        group=GROUP,
        display_name="Transaction Boundary",
    )
    .define(
        INTERVAL,
        Type.LONG,
        None,
        Importance.LOW,
        "With transaction.boundary=interval, how often tasks commit their transactions (default: the worker's "
        "offset.flush.interval.ms). Headwater does not take it yet.",
        _interval,
        group=GROUP,
        display_name="Transaction boundary interval",
    )
    .define(
        OFFSETS_TOPIC,
        Type.STRING,
        None,
        Importance.LOW,
        "The name of a separate offsets topic for this connector (distributed mode only). Headwater does not take "
        "it yet: a source's offsets go to the worker's offset store.",
        non_empty_string,
        group="offsets.topic",
        display_name="Offsets topic",
    )
)
"""The source connector keys (Kafka Connect's ``SourceConnectorConfig``)."""


def problems(
    props: Mapping[str, Any], connector: SourceConnector, worker_config: Mapping[str, Any], errors: Mapping[str, Any]
) -> dict[str, list[str]]:
    """The error messages by key of the source ``connector``'s config ``props``, beyond its keys' own validators:
    Kafka Connect's ``DistributedHerder`` checks, then Headwater's refusal of each value that asks for exactly-once
    delivery. ``errors`` are the errors found so far: a key with errors is not checked again (as in Kafka)."""
    found: dict[str, list[str]] = {}
    enabled = str(worker_config.get(WORKER_SUPPORT, "disabled")).lower() == "enabled"
    raw = {name: "" if value is None else str(value) for name, value in props.items()}
    support = _value(props, SUPPORT, errors)
    if support == "required":
        messages = found.setdefault(SUPPORT, [])
        if not enabled:
            messages.append("This worker does not have exactly-once source support enabled.")
        else:
            messages.extend(_asked(lambda: _support_problem(connector.exactly_once_support(raw))))
        messages.append(_refusal(SUPPORT, "set it to requested or remove it"))
    boundary = _value(props, BOUNDARY, errors)
    if boundary == "connector":
        found.setdefault(BOUNDARY, []).extend(
            _asked(lambda: _boundary_problem(connector.can_define_transaction_boundaries(raw)))
        )
    if boundary in ("interval", "connector"):
        found.setdefault(BOUNDARY, []).append(_refusal(BOUNDARY, "set it to poll or remove it"))
    for key, advice in (
        (INTERVAL, "remove it"),
        (OFFSETS_TOPIC, "remove it: the connector's offsets go to the worker's offset store"),
    ):
        if props.get(key) not in (None, "") and not errors.get(key):
            found.setdefault(key, []).append(_refusal(key, advice))
    return {key: messages for key, messages in found.items() if messages}


def _value(props: Mapping[str, Any], key: str, errors: Mapping[str, Any]) -> str | None:
    """The key's value in lower case, ``None`` when it is not set or already has errors."""
    value = props.get(key)
    return None if value is None or errors.get(key) else str(value).strip().lower()


def _refusal(key: str, advice: str) -> str:
    return f"{key}: {NOT_IMPLEMENTED}; {advice}"


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
