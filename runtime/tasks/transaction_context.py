"""What an exactly-once source task asked of its transactions, with ``transaction.boundary=connector``
(Kafka Connect's ``WorkerTransactionContext``, KIP-618)."""

from __future__ import annotations

from headwater.sdk.errors import ConnectError
from headwater.sdk.records import SourceRecord
from headwater.sdk.transactions import TransactionContext


class WorkerTransactionContext(TransactionContext):
    """What the task asked of its transactions (Kafka Connect's ``WorkerTransactionContext``). A record is matched
    by identity: the very object ``poll`` returns in a list (records of a :class:`~headwater.sdk.SourceBatch` are
    made on the fly, so a batch takes batch-level requests only)."""

    def __init__(self) -> None:
        self.commit_batch = False
        self.abort_batch = False
        self.commit_on: set[int] = set()
        self.abort_on: set[int] = set()

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        if record is None:
            self.commit_batch = True
        else:
            self.commit_on.add(id(record))

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        if record is None:
            self.abort_batch = True
        else:
            self.abort_on.add(id(record))

    def batch_request(self) -> str | None:
        """``commit``, ``abort`` or ``None``, for the batch just sent; the request is cleared."""
        commit, abort = self.commit_batch, self.abort_batch
        self.commit_batch = self.abort_batch = False
        if commit and abort:
            raise ConnectError("the task asked both to commit and to abort the same transaction")
        return "commit" if commit else "abort" if abort else None

    def record_request(self, record: SourceRecord) -> str | None:
        """``commit``, ``abort`` or ``None``: what the task asked to happen right after ``record``."""
        key = id(record)
        commit, abort = key in self.commit_on, key in self.abort_on
        if not (commit or abort):
            return None
        self.commit_on.discard(key)
        self.abort_on.discard(key)
        if commit and abort:
            raise ConnectError(f"the task asked both to commit and to abort the transaction of record {record!r}")
        return "commit" if commit else "abort"
