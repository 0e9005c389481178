"""Built-in predicates, with Kafka Connect's semantics: TopicNameMatches, HasHeaderKey, RecordIsTombstone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.routing import compiled
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import Predicate, R


def _regex(key: str, value: Any) -> None:
    _non_empty(key, value)
    compiled(key, value)


def _non_empty(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "String must be non-empty")


class TopicNameMatches(Predicate[R]):
    """Matches records whose topic matches ``pattern`` (all of it)."""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(
            "pattern", Type.STRING, REQUIRED, Importance.MEDIUM, "Regular expression the topic must match.", _regex
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.pattern = compiled("pattern", config["pattern"])

    def test(self, record: R) -> bool:
        return self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Predicate[R]):
    """Matches records with at least one header named ``name``."""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define("name", Type.STRING, REQUIRED, Importance.MEDIUM, "The header name.", _non_empty)

    def configure(self, config: Mapping[str, Any]) -> None:
        self.name = config["name"]

    def test(self, record: R) -> bool:
        return any(header[0] == self.name for header in record.headers)


class RecordIsTombstone(Predicate[R]):
    """Matches tombstones: records whose value is null."""

    def test(self, record: R) -> bool:
        return record.value is None
