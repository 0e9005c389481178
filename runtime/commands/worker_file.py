"""Reading a worker command's worker file, as strictly as a connector file: every problem of the file at once,
before the worker waits for Kafka or starts a task.

:func:`check_worker_file` refuses, in one :class:`~headwater.runtime.config.properties.PropertiesError` listing
each by file, line and key: lines Java would read but not as meant, unknown keys when the file sets
``connector.unknown.keys=error`` (:mod:`~headwater.runtime.config.worker_file`), config providers that do not load
and references they cannot resolve, bad values, Java-only client security keys, REST listener files that do not
load, and converters that do not load or configure. It logs a warning for each unknown key otherwise, and for each
Kafka Connect key Headwater does nothing with (``plugin.path``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from headwater.runtime.config.clients import client_settings
from headwater.runtime.config.known_keys import CONVERTERS
from headwater.runtime.config.properties import ConfigFile, PropertiesError
from headwater.runtime.config.references import resolve_worker_file
from headwater.runtime.config.worker_file import (
    IGNORED_KEYS,
    converter_errors,
    line_errors,
    unknown_keys_refused,
    unknown_worker_keys,
)
from headwater.runtime.rest.security import RestSecurity
from headwater.sdk.config import ConfigDef
from headwater.sdk.errors import ConfigError

log = logging.getLogger(__name__)

Check = Callable[[dict[str, Any]], object]
"""A command's own check of the parsed worker config; raises ConfigError naming the key."""


@dataclass(frozen=True)
class WorkerFile:
    """A worker file that passed :func:`check_worker_file`."""

    file: ConfigFile
    """The file with its ``${provider:path:key}`` references resolved."""
    config: dict[str, Any]
    """Its values parsed by the worker's definition."""
    rest_security: RestSecurity
    """The REST listener's protections, every file they name loaded."""


def check_worker_file(file: ConfigFile, definition: ConfigDef, *checks: Check) -> WorkerFile:
    """Check ``file`` against ``definition`` (the worker's: standalone or distributed) and the command's own
    ``checks``; raise one PropertiesError naming every problem found (see the module's docstring)."""
    errors = line_errors(file)
    refused = {error.key for error in errors}
    try:
        resolved = resolve_worker_file(file)
    except PropertiesError as error:  # the rest is checked with the references as written
        errors += error.errors
        resolved = file
    values = resolved.values
    unknown = {key: message for key, message in unknown_worker_keys(values, definition).items() if key not in refused}
    if unknown_keys_refused(values):
        errors += [file.error(key, message) for key, message in unknown.items()]
    else:
        for key, message in unknown.items():
            log.warning("%s", file.error(key, message), extra={"unknown_key": key})
    for key in IGNORED_KEYS.keys() & values.keys():
        log.warning("%s", file.error(key, IGNORED_KEYS[key]))
    config: dict[str, Any] | None = None
    try:
        config = resolved.parse(definition)
    except PropertiesError as error:
        errors += error.errors
    errors += _security_errors(file, values)
    security: RestSecurity | None = None
    if config is not None:
        for check in checks:
            try:
                check(config)
            except ConfigError as error:
                errors.append(file.config_error(error))
        try:
            security = RestSecurity.from_config(config)
        except ConfigError as error:
            errors.append(file.config_error(error))
    errors += [_converter_error(file, problem) for problem in converter_errors(values, definition)]
    if errors:
        raise PropertiesError.combine(sorted(errors, key=lambda found: (found.line is None, found.line or 0)))
    assert config is not None and security is not None
    return WorkerFile(resolved, config, security)


def _security_errors(file: ConfigFile, values: dict[str, Any]) -> list[PropertiesError]:
    """The Java-only client security keys of ``values``, each once, named without its value (it may be a
    password)."""
    found: dict[str, PropertiesError] = {}
    for client in (None, "producer", "consumer", "admin"):
        try:
            client_settings(values, client)
        except ConfigError as error:
            found.setdefault(error.key, file.error(error.key, error.reason))
    return list(found.values())


def _converter_error(file: ConfigFile, error: ConfigError) -> PropertiesError:
    """A converter's error naming its key; at the line of the converter key when the setting it names (a missing
    ``value.converter.schema.registry.url``, say) is on none."""
    found = file.config_error(error)
    if found.line is None:
        converter = next(key for key in CONVERTERS if error.key.startswith(key))
        found = PropertiesError(file.path, found.problem, found.key, file.lines.get(converter))
    return found
