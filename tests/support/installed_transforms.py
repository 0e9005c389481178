"""A transformation and a predicate installed by the test suite's own distribution
(``tests/headwater_test_connectors.dist-info``: ``upper-topic`` under ``headwater.transforms``, ``topic-is-upper``
under ``headwater.predicates``), as a plugin package would install them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.sdk import ConfigDef, Importance, Predicate, Transformation, Type


class UpperTopic(Transformation[Any]):
    """Upper-cases the record's topic, with a ``suffix`` appended."""

    def __init__(self) -> None:
        self.suffix = ""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define("suffix", Type.STRING, "", Importance.LOW, "Appended to the upper-cased topic.")

    def configure(self, config: Mapping[str, Any]) -> None:
        self.suffix = config["suffix"]

    def apply(self, record: Any) -> Any:
        return replace(record, topic=record.topic.upper() + self.suffix)


class TopicIsUpper(Predicate[Any]):
    """Whether the record's topic is upper case."""

    def test(self, record: Any) -> bool:
        return bool(record.topic.isupper())
