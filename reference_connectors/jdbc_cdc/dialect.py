"""What trigger mode asks of a database: its audit table and triggers, a consistent read with the transactions in
flight around it, and the JSON image of a row. One subclass per database (:mod:`.sqlite`, :mod:`.postgres`,
:mod:`.mariadb`); everything they share is here.

The audit table (``audit.table.name``) has one row per row change: ``id`` (increasing, never reused), ``txid`` (the
writing transaction where the database tells it), ``table_name`` (qualified), ``op`` (``c``/``u``/``d``),
``before`` and ``after`` (JSON images) and ``ts_ms`` (when the trigger ran). Every trigger's name starts with the
audit table's name, so the connector finds its own triggers again, including those of tables it no longer captures.

With ``decimal.handling.mode=string`` the images hold a NUMERIC/DECIMAL column's value as the database's text of it
(the triggers and the snapshot's select cast those columns to text); with ``double`` as the JSON number the
database writes.
"""

from __future__ import annotations

import hashlib
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine

from headwater.reference_connectors.jdbc_cdc.config import DOUBLE, STRING
from headwater.reference_connectors.jdbc_cdc.json_rows import beyond_double
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.reference_connectors.jdbc_cdc.watermark import Reading

OPS = (("c", "INSERT"), ("u", "UPDATE"), ("d", "DELETE"))
MAX_NAME = 60
SNAPSHOT_BATCH = 1000


def object_name(*parts: str) -> str:
    """``parts`` joined by ``_``; names longer than any database allows end in a hash of the whole instead."""
    name = "_".join(parts)
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11]}_{digest}"


def literal(text: str, backslashes: bool = False) -> str:
    """``text`` as an SQL string literal (``backslashes``: the database reads ``\\`` as an escape, as MariaDB does)."""
    if backslashes:
        text = text.replace("\\", "\\\\")
    return "'" + text.replace("'", "''") + "'"


def parse_image(value: Any) -> Mapping[str, Any] | None:
    """A JSON image as the driver returned it (text or already decoded) as a mapping."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        value = value.decode()
    if isinstance(value, str):
        decoded = json.loads(value)
        return decoded if isinstance(decoded, dict) else None
    return value if isinstance(value, Mapping) else None


class TriggerDialect(ABC):
    """One database's SQL for trigger mode; ``decimals`` is the ``decimal.handling.mode``."""

    def __init__(self, engine: Engine, audit: str, decimals: str = STRING) -> None:
        self.engine = engine
        self.audit = audit
        self.decimals = decimals
        self._quote = engine.dialect.identifier_preparer.quote

    def text_columns(self, table: CapturedTable) -> list[str]:
        """The columns of ``table`` whose images hold their text: its decimals, in ``string`` mode."""
        return [c for c in table.columns if c in table.decimals] if self.decimals != DOUBLE else []

    def parse(self, table: CapturedTable, value: Any) -> Mapping[str, Any] | None:
        """:func:`parse_image` of an image of ``table``; in ``double`` mode a decimal beyond a double's range (the
        JSON parser made it infinite) fails, naming the column."""
        image = parse_image(value)
        if image is not None and self.decimals == DOUBLE and table.decimals:
            for column in table.decimals:
                found = image.get(column)
                if isinstance(found, float) and math.isinf(found):
                    raise beyond_double(f"{table.qualified}.{column}", None)
        return image

    def q(self, name: str) -> str:
        """``name`` quoted as an identifier."""
        return self._quote(name)

    def table_ref(self, table: CapturedTable) -> str:
        return self.q(table.name) if table.schema is None else f"{self.q(table.schema)}.{self.q(table.name)}"

    @property
    def audit_ref(self) -> str:
        return self.q(self.audit)

    def trigger_name(self, table: CapturedTable, op: str) -> str:
        return object_name(self.audit, op, table.qualified.replace(".", "_"))

    # ---- provisioning ---------------------------------------------------------------------------------------

    @abstractmethod
    def create_audit(self, connection: Connection) -> None:
        """Create the audit table (and anything the triggers share) unless it exists."""

    @abstractmethod
    def install(self, connection: Connection, table: CapturedTable) -> None:
        """Create (or replace) the row triggers of ``table``."""

    @abstractmethod
    def installed(self, connection: Connection) -> list[tuple[str, str]]:
        """This connector's triggers: (trigger name, qualified table name)."""

    @abstractmethod
    def drop_trigger(self, connection: Connection, trigger: str, table: str) -> None:
        """Drop one trigger found by :meth:`installed`."""

    def audit_exists(self, connection: Connection) -> bool:
        from sqlalchemy import inspect

        return bool(inspect(connection).has_table(self.audit))

    def drop_audit(self, connection: Connection) -> None:
        """Drop the audit table and what the triggers shared."""
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {self.audit_ref}")

    # ---- reading --------------------------------------------------------------------------------------------

    @abstractmethod
    def begin_read(self, connection: Connection, need_list: bool = False) -> Reading:
        """Start a read-only transaction with a consistent snapshot and say which transactions were in flight
        (see :class:`Reading`); ``need_list``: the watermark waits for such a list (a database where the list
        costs something reads it only then)."""

    def end_read(self, connection: Connection) -> None:
        connection.exec_driver_sql("COMMIT")

    def changes(self, connection: Connection, after: int, limit: int) -> Sequence[Any]:
        """Audit rows above ``after`` in id order: (id, txid, table_name, op, before, after, ts_ms)."""
        query = (
            f"SELECT id, txid, table_name, op, {self.q('before')}, {self.q('after')}, ts_ms FROM {self.audit_ref} "
            f"WHERE id > {int(after)} ORDER BY id LIMIT {int(limit)}"
        )
        return connection.exec_driver_sql(query).fetchall()

    def change_ids(self, connection: Connection, after: int) -> list[int]:
        query = f"SELECT id FROM {self.audit_ref} WHERE id > {int(after)} ORDER BY id"
        return [int(row[0]) for row in connection.exec_driver_sql(query)]

    def purge(self, connection: Connection, up_to: int) -> int:
        """Delete the audit rows up to ``up_to``; returns how many."""
        done = connection.exec_driver_sql(f"DELETE FROM {self.audit_ref} WHERE id <= {int(up_to)}")
        return int(done.rowcount or 0)

    def stream_rows(self, connection: Connection, query: str) -> Iterator[Any]:
        """The rows of ``query``, fetched a batch at a time inside the current transaction."""
        yield from connection.execution_options(stream_results=True, yield_per=SNAPSHOT_BATCH).exec_driver_sql(query)

    def row_json(self, table: CapturedTable) -> str:
        """A select expression giving the JSON image of a row of ``table``, as the triggers write it."""
        return self.image(table, "")

    def image(self, table: CapturedTable, row: str) -> str:
        """The JSON image expression of ``row`` (``OLD``, ``NEW``, or ``""`` for a plain select) of ``table``."""
        raise NotImplementedError(f"{type(self).__name__} builds no per-column images")

    def row_triggers(self, table: CapturedTable) -> list[tuple[str, str, str, str, str]]:
        """(op, event, quoted trigger name, before image, after image) of the three row triggers of ``table``."""
        return [
            (
                op,
                event,
                self.q(self.trigger_name(table, op)),
                self.image(table, "OLD") if op != "c" else "NULL",
                self.image(table, "NEW") if op != "d" else "NULL",
            )
            for op, event in OPS
        ]

    def permission_error(self, error: Exception) -> bool:
        """Whether ``error`` says the user lacks a privilege."""
        text = str(getattr(error, "orig", error)).lower()
        return any(word in text for word in ("permission denied", "denied", "must be owner", "privilege"))
