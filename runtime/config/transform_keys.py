"""The two keys of every connector config that name its Single Message Transforms and predicates (KIP-66,
KIP-585): ``transforms`` and ``predicates``, each a list of aliases. What each alias configures is read by
:mod:`headwater.runtime.transforms.stages`, which turns the aliases' own keys into keys of the connector's
definition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError

TRANSFORMS, PREDICATES = "transforms", "predicates"


def _unique(key: str, aliases: Any) -> None:
    duplicated = sorted({alias for alias in aliases if aliases.count(alias) > 1})
    if duplicated:
        raise ConfigError(key, ",".join(aliases), f"Duplicate alias provided: {', '.join(duplicated)}")


CHAIN_CONFIG = (
    ConfigDef()
    .define(
        TRANSFORMS,
        Type.LIST,
        "",
        Importance.LOW,
        "Aliases of the transformations applied to each record, in order (transforms.<alias>.type says each one's "
        "class).",
        _unique,
        group="Transforms",
        display_name="Transforms",
    )
    .define(
        PREDICATES,
        Type.LIST,
        "",
        Importance.LOW,
        "Aliases of the predicates transformations may be guarded by (predicates.<alias>.type says each one's class).",
        _unique,
        group="Predicates",
        display_name="Predicates",
    )
)
"""The two keys every connector has: the runtime's connector definitions include them."""


def aliases(props: Mapping[str, Any], key: str) -> list[str]:
    """The aliases ``transforms`` or ``predicates`` lists (none when it is unset or not a list)."""
    try:
        found = CHAIN_CONFIG.keys[key].parse(props.get(key) or "")
    except ConfigError:
        return []
    return list(dict.fromkeys(found or []))
