"""What a connector name may be: checked wherever a connector is created or replaced (every herder, and so the
REST API and the standalone worker's connector files).

Kafka Connect refuses an empty name and control characters inside one (its ``name`` key's validator, which trims
the name first). Headwater refuses control characters anywhere (NUL, newlines and tabs break log lines and the
properties files), and also what makes a connector unreachable: a ``/`` or ``\\`` (a name with ``/`` cannot be
read or deleted through ``/connectors/{name}``) and names longer than :data:`MAX_LENGTH`.
"""

from __future__ import annotations

import unicodedata

from headwater.runtime.errors import BadRequestError

MAX_LENGTH = 241
"""The longest connector name. A sink connector's consumer group is ``connect-<name>``, and names end up in ids
built like Kafka's topic names, whose limit is 249 characters: 241 keeps ``connect-<name>`` within it."""

FORBIDDEN = {"/": "'/'", "\\": "'\\'"}


def _describe(character: str) -> str | None:
    """How a forbidden character is named in the error, ``None`` when it is allowed."""
    if character in FORBIDDEN:
        return FORBIDDEN[character]
    if unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp"):
        return f"the control character U+{ord(character):04X}"
    return None


def check_connector_name(name: str) -> None:
    """Raise :class:`~headwater.runtime.errors.BadRequestError` naming what is wrong when ``name`` cannot be a
    connector's name."""
    if not name or not name.strip():
        raise BadRequestError("Connector name is empty or only whitespace")
    if len(name) > MAX_LENGTH:
        raise BadRequestError(
            f"Connector name {name[:40]!r}... is {len(name)} characters long; the limit is {MAX_LENGTH} "
            "(its consumer group connect-<name> must fit Kafka's 249)"
        )
    for character in name:
        described = _describe(character)
        if described is not None:
            raise BadRequestError(
                f"Connector name {name!r} contains {described}, which a connector name may not contain "
                "(no '/', '\\' or control characters)"
            )
