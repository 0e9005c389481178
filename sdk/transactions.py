"""What a source connector says about exactly-once delivery, and how its tasks define transactions (KIP-618).

Kafka Connect's ``ExactlyOnceSupport``, ``ConnectorTransactionBoundaries`` and ``TransactionContext``. The runtime
asks a connector through :meth:`~headwater.sdk.SourceConnector.exactly_once_support` and
:meth:`~headwater.sdk.SourceConnector.can_define_transaction_boundaries` when it validates a config.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod

from headwater.sdk.records import SourceRecord


class ExactlyOnceSupport(enum.Enum):
    """Whether a source connector can deliver exactly once with a given config; a connector that does not know
    answers ``None`` (Kafka Connect's ``null``)."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class ConnectorTransactionBoundaries(enum.Enum):
    """Whether a source connector's tasks can define their own transaction boundaries with a given config
    (``transaction.boundary=connector``)."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class TransactionContext(ABC):
    """Lets a source task commit or abort the transaction its records are sent in, when its connector runs with
    ``transaction.boundary=connector`` on a worker with exactly-once source support (Kafka Connect's
    ``TransactionContext``). Each call is a request, carried out once the records before it are sent."""

    @abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit the current transaction after the next batch of records (with ``record``: right after that
        record, one the task has returned or will return from ``poll``)."""

    @abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort the current transaction after the next batch of records (with ``record``: right after that
        record, which is aborted with the transaction); the aborted records are not sent again."""
