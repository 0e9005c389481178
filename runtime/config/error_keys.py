"""A connector's error-handling keys (``errors.*``, KIP-298), parsed once for its tasks. The keys themselves are
defined with the connector keys (:data:`~headwater.runtime.config.connector.CONNECTOR_CONFIG`); what they do is
:mod:`headwater.runtime.error_handling`'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ErrorSettings:
    """The ``errors.*`` keys of one connector, parsed."""

    tolerate: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60_000
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    @classmethod
    def parse(cls, connector: Mapping[str, Any]) -> ErrorSettings:
        """From a parsed connector config (a source's has no dead-letter keys)."""

        def pick(key: str, default: Any) -> Any:
            value = connector.get(key)
            return default if value is None else value

        return cls(
            tolerate=str(pick("errors.tolerance", "none")).lower() == "all",
            retry_timeout_ms=int(pick("errors.retry.timeout", 0)),
            retry_delay_max_ms=int(pick("errors.retry.delay.max.ms", 60_000)),
            log_enable=bool(pick("errors.log.enable", False)),
            log_include_messages=bool(pick("errors.log.include.messages", False)),
            dlq_topic=str(pick("errors.deadletterqueue.topic.name", "")).strip(),
            dlq_replication_factor=int(pick("errors.deadletterqueue.topic.replication.factor", 3)),
            dlq_context_headers=bool(pick("errors.deadletterqueue.context.headers.enable", False)),
        )
