"""Errors the herder raises for requests it refuses; the REST API answers each with Kafka Connect's status code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from headwater.sdk.errors import ConfigError, ConnectError

VALIDATE_ENDPOINT = "/connector-plugins/{connectorType}/config/validate"


class NotFoundError(ConnectError):
    """No connector (or task) of that name (HTTP 404)."""


class AlreadyExistsError(ConnectError):
    """A connector of that name exists already (HTTP 409)."""


class BadRequestError(ConnectError):
    """A request the connector's state or the request's own content does not allow (HTTP 400)."""


class InvalidConfigError(ConfigError):
    """A connector config with at least one bad key (HTTP 400); ``errors`` holds every message per key, and the
    message lists them all in Kafka Connect's words."""

    def __init__(self, errors: Mapping[str, Sequence[str]]) -> None:
        if not any(errors.values()):
            raise ValueError("an invalid config has at least one error")
        self.errors = {key: list(messages) for key, messages in errors.items() if messages}
        first = next(iter(self.errors))
        super().__init__(first, None, self.errors[first][0])
        messages = [message for found in self.errors.values() for message in found]
        self.args = (
            f"Connector configuration is invalid and contains the following {len(messages)} error(s):\n"
            + "\n".join(messages)
            + f"\nYou can also find the above list of errors at the endpoint `{VALIDATE_ENDPOINT}`",
        )
