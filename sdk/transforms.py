"""Single Message Transforms (KIP-66) and their predicates (KIP-585): what changes or drops one record at a time
between a connector and Kafka.

A connector config names a chain of transformations, ``transforms=a,b`` with ``transforms.a.type`` and
``transforms.a.<setting>``; a transformation applies only to the records its predicate matches
(``transforms.a.predicate=p``, ``transforms.a.negate``, with ``predicates=p`` and ``predicates.p.type``). A source
task's records go through the chain before the converters; a sink task's after them.

A transformation or predicate is a class the worker makes once per task (no arguments), configures with its own
settings (those keys without their ``transforms.<alias>.``/``predicates.<alias>.`` prefix, parsed by its
:meth:`~Transformation.config_def`), calls on the task's thread, and closes when the task stops. An installed one
registers its class under :data:`TRANSFORMATION_ENTRY_POINT_GROUP` or :data:`PREDICATE_ENTRY_POINT_GROUP`; the entry
point's name is what ``type`` may say.

Records are dataclasses: a transformation returns a new record (``dataclasses.replace(record, topic=...)``, which
keeps what the runtime attached to a sink record), the record unchanged, or ``None`` to drop it. It must not change
the record it was given.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from headwater.sdk.config import ConfigDef
from headwater.sdk.records import SinkRecord, SourceRecord

TRANSFORMATION_ENTRY_POINT_GROUP = "headwater.transforms"
"""Installed transformations register their classes under this entry-point group."""

PREDICATE_ENTRY_POINT_GROUP = "headwater.predicates"
"""Installed predicates register their classes under this entry-point group."""

R = TypeVar("R", SourceRecord, SinkRecord)
"""A record a transformation or predicate is given: a :class:`SourceRecord` or a :class:`SinkRecord`."""


class Transformation(abc.ABC, Generic[R]):
    """Changes, or drops, one record at a time (Kafka Connect's ``Transformation``)."""

    def config_def(self) -> ConfigDef:
        """The transformation's settings; the worker validates a connector config's ``transforms.<alias>.*``
        keys against it, and passes :meth:`configure` what it parsed."""
        return ConfigDef()

    def configure(self, config: Mapping[str, Any]) -> None:
        """Take the settings, parsed by :meth:`config_def`. Raise :class:`~headwater.sdk.ConfigError` for a bad one:
        the connector's config is refused (at validation) or its task fails (at start)."""

    @abc.abstractmethod
    def apply(self, record: R) -> R | None:
        """The record transformed: a new record, ``record`` itself when it is unchanged, or ``None`` to drop it.
        An exception fails the record at stage ``TRANSFORMATION`` under the connector's ``errors.*`` settings
        (a :class:`~headwater.sdk.RetriableError` is retried)."""

    def close(self) -> None:
        """Release what :meth:`configure` acquired; called once, when the task stops."""


class Predicate(abc.ABC, Generic[R]):
    """Says whether a transformation applies to a record (Kafka Connect's ``Predicate``)."""

    def config_def(self) -> ConfigDef:
        """The predicate's settings, validated from the connector config's ``predicates.<alias>.*`` keys."""
        return ConfigDef()

    def configure(self, config: Mapping[str, Any]) -> None:
        """Take the settings, parsed by :meth:`config_def`."""

    @abc.abstractmethod
    def test(self, record: R) -> bool:
        """Whether the record matches."""

    def close(self) -> None:
        """Release what :meth:`configure` acquired; called once, when the task stops."""
