"""Which tables a connector captures: the database's tables, filtered by the include and exclude lists."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from sqlalchemy import Engine, Inspector, inspect
from sqlalchemy.types import Float, Numeric

from headwater.reference_connectors.jdbc_cdc.column_types import ColumnType, from_inspector
from headwater.sdk import ConnectError

SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys"})


@dataclass(frozen=True)
class CapturedTable:
    """A captured table: where it is, its columns in order, its primary key columns (maybe none), its
    NUMERIC/DECIMAL columns (``decimal.handling.mode`` says how their values are written), and its columns' types
    as record schemas see them (``record.schemas=connect``; one object per version of the table)."""

    schema: str | None
    name: str
    columns: tuple[str, ...]
    primary_key: tuple[str, ...]
    decimals: frozenset[str] = frozenset()
    types: tuple[ColumnType, ...] = field(default=(), compare=False, repr=False)

    @functools.cached_property
    def qualified(self) -> str:
        """``schema.table``, or ``table`` where the database has no schemas (SQLite's main database)."""
        return self.name if self.schema is None else f"{self.schema}.{self.name}"

    def matches(self, patterns: Iterable[re.Pattern[str]]) -> bool:
        """Whether a pattern matches the whole qualified name or the whole bare name."""
        return any(p.fullmatch(self.qualified) or p.fullmatch(self.name) for p in patterns)


def is_decimal(column_type: object) -> bool:
    """Whether a column of SQLAlchemy type ``column_type`` is NUMERIC/DECIMAL (a float type is not)."""
    return isinstance(column_type, Numeric) and not isinstance(column_type, Float)


def _schemas(engine: Engine) -> list[str | None]:
    dialect = engine.dialect.name
    if dialect == "sqlite":
        return [None]
    if dialect in ("mysql", "mariadb"):
        with engine.connect() as connection:
            database = connection.exec_driver_sql("SELECT DATABASE()").scalar()
        if database is None:
            raise ConnectError("connection.url names no database: add /<database> to the URL")
        return [str(database)]
    names = inspect(engine).get_schema_names()
    return [s for s in names if s not in SYSTEM_SCHEMAS and not s.startswith("pg_")]


def discover(
    engine: Engine,
    include: Sequence[re.Pattern[str]],
    exclude: Sequence[re.Pattern[str]],
    internal: Iterable[str] = (),
) -> list[CapturedTable]:
    """The tables to capture, sorted by qualified name. ``internal`` names tables never captured (the audit table).

    Raises :class:`ConnectError` when an include expression matches no table, or nothing is left to capture."""
    inspector = inspect(engine)
    skipped = set(internal)
    found: list[CapturedTable] = []
    for schema in _schemas(engine):
        for name in inspector.get_table_names(schema=schema):
            if name in skipped or name.startswith("sqlite_"):
                continue
            display_schema = None if engine.dialect.name == "sqlite" else schema
            found.append(_described(engine, inspector, display_schema, schema, name))
    for pattern in include:
        if not any(table.matches([pattern]) for table in found):
            names = ", ".join(t.qualified for t in found) or "none"
            raise ConnectError(f"table.include.list: no table matches {pattern.pattern!r} (tables: {names})")
    chosen = [t for t in found if (not include or t.matches(include)) and not t.matches(exclude)]
    if not chosen:
        raise ConnectError("no table to capture: the include and exclude lists leave none")
    return sorted(chosen, key=lambda t: t.qualified)


def _described(
    engine: Engine, inspector: Inspector, display_schema: str | None, schema: str | None, name: str
) -> CapturedTable:
    described = inspector.get_columns(name, schema=schema)
    columns = tuple(str(c["name"]) for c in described)
    decimals = frozenset(str(c["name"]) for c in described if is_decimal(c["type"]))
    key = tuple(inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or ())
    types = from_inspector(described, key, engine.dialect.name)
    return CapturedTable(display_schema, name, columns, key, decimals, types)


def inspect_again(engine: Engine, table: CapturedTable) -> CapturedTable:
    """``table`` as the database describes it now (a new inspector: SQLAlchemy's caches what it read); its primary
    key stays the one captured."""
    schema = table.schema if engine.dialect.name != "sqlite" else None
    fresh = _described(engine, inspect(engine), table.schema, schema, table.name)
    return replace(fresh, primary_key=table.primary_key)
