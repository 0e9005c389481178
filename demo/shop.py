"""The demo's source database: a small shop in SQLite (WAL mode), written by plain ``sqlite3`` the way an
application would, which counts the changes it makes so the demo can check that every one reached the table."""

from __future__ import annotations

import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

ITEMS = ("apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey")


class Shop:
    """``orders`` and ``customers`` tables in ``path``; ``order_events`` counts the change events the orders should
    give, by operation (``r`` for the snapshot's rows, then ``c``, ``u``, ``d``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.order_events: Counter[str] = Counter()
        self.customer_events: Counter[str] = Counter()
        self.next_order = 1
        self.customers = 0

    @property
    def url(self) -> str:
        """The SQLAlchemy URL the connector reads."""
        return f"sqlite:///{self.path}"

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def create(self, orders: int = 20, customers: int = 5) -> None:
        """A new database with ``orders`` orders and ``customers`` customers (the rows a snapshot reads)."""
        self.path.unlink(missing_ok=True)
        with closing(self._connect()) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, visits INTEGER)")
            db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, item TEXT, qty INTEGER)")
            db.executemany("INSERT INTO customers VALUES (?, ?, 0)", [(n, f"customer {n}") for n in range(customers)])
            for _ in range(orders):
                self._insert(db)
        self.customers = customers
        self.order_events["r"] = orders
        self.customer_events["r"] = customers

    def _insert(self, db: sqlite3.Connection) -> None:
        n = self.next_order
        db.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (n, n % 5, ITEMS[n % len(ITEMS)], 1 + n % 4))
        self.next_order += 1

    def change_orders(self, inserts: int, updates: int, deletes: int) -> None:
        """New orders, then quantity changes and deletions of the oldest ones, one statement per change."""
        with closing(self._connect()) as db:
            for _ in range(inserts):
                self._insert(db)
            ids = [row[0] for row in db.execute("SELECT id FROM orders ORDER BY id")]
            for order in ids[:updates]:
                db.execute("UPDATE orders SET qty = qty + 1 WHERE id = ?", (order,))
            for order in ids[updates : updates + deletes]:
                db.execute("DELETE FROM orders WHERE id = ?", (order,))
        self.order_events.update(c=inserts, u=updates, d=deletes)

    def visit(self, visits: int) -> None:
        """``visits`` updates of the customers table, round robin."""
        with closing(self._connect()) as db:
            for n in range(visits):
                db.execute("UPDATE customers SET visits = visits + 1 WHERE id = ?", (n % self.customers,))
        self.customer_events.update(u=visits)

    def last_change(self) -> int:
        """The newest change id of the connector's audit table (0 before any)."""
        with closing(self._connect()) as db:
            found = db.execute("SELECT max(seq) FROM sqlite_sequence WHERE name LIKE 'headwater_cdc_%'").fetchone()
        return int(found[0] or 0)

    def triggers(self) -> list[str]:
        """The triggers and tables the connector provisioned that are still in the database."""
        with closing(self._connect()) as db:
            rows = db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'headwater_cdc_%' ORDER BY name")
            found = [str(row[0]) for row in rows]
        return found

    def __repr__(self) -> str:
        return f"Shop({str(self.path)!r}, orders={dict(self.order_events)}, customers={dict(self.customer_events)})"
