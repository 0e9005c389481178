"""Runs moto's server (``moto_server``, every AWS service moto has on one port) with one bug of its DynamoDB fixed:
an ``UpdateItem`` whose legacy ``AttributeUpdates`` PUTs a ``BOOL`` stores it as the string ``"True"`` (moto 5.2.5's
``Item.update_with_attribute_updates`` has no BOOL case and falls through to ``S``). Delta's DynamoDB commit
coordinator writes ``hasAcceptedCommits`` that way and reads it back with ``getBOOL()``, which then fails every
commit after the first. DynamoDB itself keeps the type, so the fix makes moto answer as DynamoDB does.

Usage: ``python moto_server.py [moto_server's arguments]``.
"""

from __future__ import annotations

import sys
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.server import main

_update_with_attribute_updates = Item.update_with_attribute_updates


def update_with_attribute_updates(self: Item, attribute_updates: dict[str, Any]) -> None:
    """moto's own update, except that a PUT of a BOOL value stores a BOOL."""
    rest = {}
    for name, update in attribute_updates.items():
        value = update.get("Value")
        if update.get("Action", "PUT") == "PUT" and isinstance(value, dict) and set(value) == {"BOOL"}:
            self.attrs[name] = DynamoType({"BOOL": value["BOOL"]})
        else:
            rest[name] = update
    _update_with_attribute_updates(self, rest)


if __name__ == "__main__":
    Item.update_with_attribute_updates = update_with_attribute_updates  # type: ignore[method-assign]
    sys.exit(main())
