"""Errors a connector raises and the runtime understands."""

from __future__ import annotations


class ConnectError(Exception):
    """A failure that stops the task or connector that raised it."""


class RetriableError(ConnectError):
    """A transient failure: the runtime retries the same operation (a sink's ``put`` gets the same batch again)."""


class ConfigError(ConnectError, ValueError):
    """A configuration value is missing or invalid; the message names the key and the bad value."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        shown = "null" if value is None else repr(value)  # Kafka's word for a missing value, as in its messages
        super().__init__(f"Invalid value {shown} for configuration {key}: {reason}")


class IllegalWorkerStateError(ConnectError):
    """A task asked the runtime for something its current state does not allow (pausing an unassigned partition)."""
