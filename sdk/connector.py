"""Connector base classes: configuration and the split of work into tasks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from headwater.sdk.config import ConfigDef
from headwater.sdk.context import ConnectorContext
from headwater.sdk.task import SinkTask, SourceTask, Task
from headwater.sdk.transactions import ConnectorTransactionBoundaries, ExactlyOnceSupport


class Connector(ABC):
    """Configures and splits a job into task configs; the worker runs the tasks."""

    context: ConnectorContext
    """What the runtime offers the connector; set by :meth:`initialize`, before :meth:`start`."""

    def initialize(self, context: ConnectorContext) -> None:
        """Called by the worker with the connector's context before :meth:`start`."""
        self.context = context

    def version(self) -> str:
        """The connector's version, listed by ``GET /connector-plugins`` and shown in its status and, unless their
        class tells their own (:meth:`Task.version`), its tasks'."""
        return "0.0.0"

    def config_def(self) -> ConfigDef:
        """The connector's own configuration keys (the worker adds the common ones)."""
        return ConfigDef()

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``config`` against :meth:`config_def`; raise :class:`ConfigError` naming every bad key."""
        return self.config_def().parse(config)

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Start with the connector's config (validated)."""

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The task class the worker instantiates."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Return at most ``max_tasks`` task configs."""

    def stop(self) -> None:  # noqa: B027 - a no-op default
        """Release what the connector holds. The ``stop`` hook (with ``connector_deleted``) calls this by default."""


class SourceConnector(Connector):
    """A connector whose tasks read from an external system into Kafka topics."""

    @abstractmethod
    def task_class(self) -> type[SourceTask]: ...

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether the connector can deliver exactly once with ``config`` (KIP-618); ``None`` when it cannot tell.

        When: on a probe instance (never started), while a config with ``exactly.once.support=required`` is
        validated; anything but ``SUPPORTED`` refuses it. Answer ``SUPPORTED`` only when a task that resumes from
        the offsets of its last committed transaction produces exactly the records after them: the harness's
        exactly-once check holds a connector that says so to it. The default returns ``None``."""
        return None

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        """Whether the connector's tasks can define their own transactions with ``config``, through their
        context's ``transaction_context`` (KIP-618).

        When: on a probe instance (never started), while a config with ``transaction.boundary=connector`` is
        validated; anything but ``SUPPORTED`` refuses it. The default returns ``UNSUPPORTED``."""
        return ConnectorTransactionBoundaries.UNSUPPORTED


class SinkConnector(Connector):
    """A connector whose tasks write the records of the Kafka topics named by its ``topics`` key to an external
    system."""

    @abstractmethod
    def task_class(self) -> type[SinkTask]: ...
