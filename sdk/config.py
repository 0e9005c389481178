"""Configuration definitions, like Kafka Connect's ``ConfigDef``: keys with a type, default, validator,
importance and documentation. Parsing errors name the key and the bad value."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from headwater.sdk.errors import ConfigError
from headwater.sdk.providers import has_reference


class Type(enum.Enum):
    """A configuration key's type: what its value is parsed into (Kafka Connect's ``ConfigDef.Type``)."""

    BOOLEAN = "BOOLEAN"
    """``True`` or ``False``; strings ``"true"`` and ``"false"`` in any case."""
    STRING = "STRING"
    """A string, stripped of surrounding blanks."""
    INT = "INT"
    """An ``int`` that fits 32 bits (strings are parsed)."""
    LONG = "LONG"
    """An ``int`` that fits 64 bits (strings are parsed)."""
    DOUBLE = "DOUBLE"
    """A ``float`` (strings are parsed)."""
    LIST = "LIST"
    """A ``list[str]``: a comma-separated string is split, each item stripped, empty items dropped."""
    PASSWORD = "PASSWORD"
    """A string kept as given (not stripped)."""
    CLASS = "CLASS"
    """A class name; a class given as an object becomes its ``module.QualifiedName``."""


class Importance(enum.Enum):
    """How much a key matters to a user, reported with the key when a config is validated."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""Default of a key that has none: parsing fails when the key is missing."""

Validator = Callable[[str, Any], None]
"""Called with the key and the parsed value; raises :class:`ConfigError` when the value is not allowed."""

_INT_RANGE = {Type.INT: (-(2**31), 2**31 - 1), Type.LONG: (-(2**63), 2**63 - 1)}


JAVA_TRIMMED = "".join(map(chr, range(33)))
"""What Kafka's ConfigDef trims from a string value (Java's ``String.trim``: the characters up to the space, not
Unicode spaces such as U+00A0)."""


def _parse(key: str, kind: Type, value: Any) -> Any:
    if value is None:
        return None
    if kind is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ConfigError(key, value, "Expected value to be either true or false")
    if kind in (Type.STRING, Type.PASSWORD, Type.CLASS):
        if isinstance(value, str):
            return value.strip(JAVA_TRIMMED) if kind is not Type.PASSWORD else value
        if kind is Type.CLASS and isinstance(value, type):
            return f"{value.__module__}.{value.__qualname__}"
        raise ConfigError(key, value, "Expected value to be a string")
    if kind in (Type.INT, Type.LONG):
        if isinstance(value, bool):
            raise ConfigError(key, value, "Expected value to be an integer")
        try:
            parsed = value if isinstance(value, int) else int(str(value).strip())
        except ValueError:
            raise ConfigError(key, value, "Expected value to be an integer") from None
        low, high = _INT_RANGE[kind]
        if not low <= parsed <= high:
            raise ConfigError(key, value, f"Expected value to fit a {kind.value.lower()}")
        return parsed
    if kind is Type.DOUBLE:
        if isinstance(value, bool):
            raise ConfigError(key, value, "Expected value to be a number")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(key, value, "Expected value to be a number") from None
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, Sequence):
        return [str(item).strip() for item in value]
    raise ConfigError(key, value, "Expected a comma-separated list")


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key, as :meth:`ConfigDef.define` makes it."""

    name: str
    """The key, such as ``"batch.size"``."""
    type: Type
    """What the value is parsed into."""
    default: Any
    """The parsed default, ``REQUIRED`` when the key must be given, or ``None``."""
    importance: Importance
    """How much the key matters to a user."""
    documentation: str
    """What the key does, for generated docs and validation output."""
    validator: Validator | None = None
    """Called with the key and the parsed value; raises :class:`ConfigError` when the value is not allowed."""
    group: str | None = None
    """The group the key is listed under in validation output."""
    display_name: str | None = None
    """A human-readable name for the key."""

    @property
    def required(self) -> bool:
        """Whether the key has no default, so that a config without it is invalid."""
        return self.default is REQUIRED

    def parse(self, raw: Any) -> Any:
        """Parse ``raw`` as :attr:`type` and run the validator; raise :class:`ConfigError` when it is bad."""
        value = _parse(self.name, self.type, raw)
        if self.validator is not None and value is not None:
            self.validator(self.name, value)
        return value


@dataclass
class ConfigDef:
    """An ordered set of :class:`ConfigKey` definitions, and the prefixes of keys passed through without one
    (:meth:`define_prefix`)."""

    keys: dict[str, ConfigKey] = field(default_factory=dict)
    """The keys by name, in the order they were defined."""
    prefixes: dict[str, str] = field(default_factory=dict)
    """The declared prefixes, such as ``"spark."``, with their documentation, in the order they were declared."""
    replaced: dict[str, str] = field(default_factory=dict)
    """Keys of other connectors this one does not read, each with what to write instead (:meth:`define_replaced`)."""

    def define(
        self,
        name: str,
        type: Type,
        default: Any = REQUIRED,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        validator: Validator | None = None,
        group: str | None = None,
        display_name: str | None = None,
    ) -> ConfigDef:
        """Add a key and return this definition, so that calls chain. A default (other than ``REQUIRED`` or
        ``None``) is parsed and validated here: a bad default raises :class:`ConfigError` at once. A name defined
        twice raises ``ValueError``."""
        if name in self.keys or name in self.replaced:
            raise ValueError(f"Configuration {name} is defined twice")
        key = ConfigKey(name, type, default, importance, documentation, validator, group, display_name)
        if not key.required and default is not None:
            # parsed like a given value; a bad default is a programming error: fail where it is written
            key = replace(key, default=key.parse(default))
        self.keys[name] = key
        return self

    def define_prefix(self, prefix: str, documentation: str) -> ConfigDef:
        """Declare that the connector reads every key starting with ``prefix`` (``"spark."``) without a definition
        of its own, usually to pass it on to a library (a client, a session builder) as it is; return this
        definition, so that calls chain.

        The worker reports a connector config key that no definition and no declared prefix covers as unknown
        (a warning when the connector is created, an error in ``PUT /connector-plugins/{p}/config/validate``),
        so a connector that passes keys through declares their prefix here. Parsing leaves such keys as they
        are, and a key defined with :meth:`define` is parsed as usual even when a prefix covers it.
        ``documentation`` says where the keys go, for generated docs. An empty prefix, or one declared twice,
        raises ``ValueError``."""
        if not prefix:
            raise ValueError("A prefix must not be empty: it would cover every key")
        if prefix in self.prefixes:
            raise ValueError(f"Prefix {prefix} is declared twice")
        self.prefixes[prefix] = documentation
        return self

    def define_replaced(self, names: str | Iterable[str], instead: str) -> ConfigDef:
        """Declare keys of another connector, one users come from (Debezium's ``database.hostname``, say), that
        this connector does not read, and what to write instead; return this definition, so that calls chain.

        Such a key stays unknown (a warning, or an error under ``connector.unknown.keys=error``), even under a
        declared prefix, but its message says ``instead`` rather than only that the key would be ignored. A key
        also defined with :meth:`define` raises ``ValueError``."""
        for name in [names] if isinstance(names, str) else names:
            if name in self.keys or name in self.replaced:
                raise ValueError(f"Configuration {name} is defined twice")
            self.replaced[name] = instead
        return self

    def covers(self, name: str) -> bool:
        """Whether ``name`` is a key of this definition: defined, or starting with a declared prefix."""
        return name in self.keys or name.startswith(tuple(self.prefixes))

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new definition with the keys and prefixes of both (``other`` must not redefine a key or prefix)."""
        merged = ConfigDef(dict(self.keys), dict(self.prefixes), dict(self.replaced))
        for name, instead in other.replaced.items():
            merged.define_replaced(name, instead)
        for key in other.keys.values():
            if key.name in merged.keys or key.name in merged.replaced:
                raise ValueError(f"Configuration {key.name} is defined twice")
            merged.keys[key.name] = key
        for prefix, documentation in other.prefixes.items():
            merged.define_prefix(prefix, documentation)
        return merged

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self.keys.values())

    def errors(self, props: Mapping[str, Any]) -> dict[str, list[str]]:
        """Validate every key; return the error messages per key (empty when the config is valid)."""
        found: dict[str, list[str]] = {}
        for key in self.keys.values():
            try:
                self._value(key, props)
            except ConfigError as error:
                found.setdefault(key.name, []).append(str(error))
        return found

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``props``; raise :class:`ConfigError` for the first bad key (message lists all bad keys).

        Keys not defined here (whether a declared prefix covers them or not) are passed through unchanged, and so
        is a value holding a ``${provider:path:key}`` reference (:mod:`headwater.sdk.providers`): it is checked
        once the worker has resolved it, when the connector or task starts.
        """
        self._raise_all(self.errors(props), props)
        parsed = dict(props)
        for key in self.keys.values():
            parsed[key.name] = self._value(key, props)
        return parsed

    def parse_task_config(self, props: Mapping[str, str]) -> TaskConfig:
        """Parse a task's config (what the connector's ``task_configs`` returned): each defined key the task config
        gives is parsed and validated, a defined key it does not give gets its default, and a key this definition
        does not define stays the string it is (``task_configs`` often adds keys of its own, the partitions a task
        reads, say). A required key the task config does not give is left out: reading it raises ``KeyError``
        naming it. Raises :class:`ConfigError` for the first bad value (the message lists every bad key); a
        ``PASSWORD`` key's value is shown as ``[hidden]``."""
        errors: dict[str, list[str]] = {}
        values: dict[str, Any] = dict(props)
        absent: list[str] = []
        for key in self.keys.values():
            if props.get(key.name) is None and key.required:
                values.pop(key.name, None)
                absent.append(key.name)
                continue
            try:
                values[key.name] = self._value(key, props)
            except ConfigError as error:
                if key.type is Type.PASSWORD:
                    error = ConfigError(key.name, _HIDDEN, error.reason)
                errors[key.name] = [str(error)]
        self._raise_all(errors, {**props, **{k: _HIDDEN for k in errors if self.keys[k].type is Type.PASSWORD}})
        return TaskConfig(values, absent)

    def _raise_all(self, errors: Mapping[str, list[str]], props: Mapping[str, Any]) -> None:
        if errors:
            names = sorted(errors)
            first = self.keys[names[0]]
            message = "; ".join(msg for name in names for msg in errors[name])
            error = ConfigError(first.name, props.get(first.name), message)
            error.args = (message,)
            raise error

    @staticmethod
    def _value(key: ConfigKey, props: Mapping[str, Any]) -> Any:
        if has_reference(props.get(key.name)):
            return props[key.name]
        if props.get(key.name) is not None:  # None counts as not set: a required key set to None is missing
            return key.parse(props[key.name])
        if key.required:
            raise ConfigError(key.name, None, "Missing required configuration with no default value")
        return key.default


class _Hidden:
    def __repr__(self) -> str:
        return "[hidden]"


_HIDDEN: Any = _Hidden()


class TaskConfig(Mapping[str, Any]):
    """A task's config parsed by its connector's :class:`ConfigDef` (:meth:`ConfigDef.parse_task_config`), read
    only: each defined key as its type (an ``INT`` an ``int``, a ``LIST`` a ``list[str]``) or its default, each
    other key the string the task config holds, as Kafka's ``AbstractConfig`` keeps its originals."""

    def __init__(self, values: Mapping[str, Any], absent: Sequence[str] = ()) -> None:
        self._values = dict(values)
        self._absent = tuple(absent)

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            if key in self._absent:
                raise KeyError(
                    f"{key}: the connector's config_def requires it, but this task's config does not give it "
                    "(task_configs did not pass it on)"
                ) from None
            raise

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"TaskConfig({sorted(self._values)})"


def at_least(minimum: float) -> Validator:
    """The value must be >= ``minimum``."""

    def check(key: str, value: Any) -> None:
        if value < minimum:
            raise ConfigError(key, value, f"Value must be at least {minimum}")

    check.__doc__ = f"At least {minimum}."
    return check


def in_range(minimum: float, maximum: float) -> Validator:
    """The value must be between ``minimum`` and ``maximum`` inclusive."""

    def check(key: str, value: Any) -> None:
        if not minimum <= value <= maximum:
            raise ConfigError(key, value, f"Value must be between {minimum} and {maximum}")

    check.__doc__ = f"Between {minimum} and {maximum}."
    return check


def one_of(*allowed: str, case_sensitive: bool = False) -> Validator:
    """The value must be one of ``allowed``."""
    folded = {a if case_sensitive else a.lower() for a in allowed}

    def check(key: str, value: Any) -> None:
        probe = value if case_sensitive else str(value).lower()
        if probe not in folded:
            raise ConfigError(key, value, f"String must be one of: {', '.join(allowed)}")

    check.__doc__ = f"One of: {', '.join(allowed)}."
    return check


def non_empty_string(key: str, value: Any) -> None:
    """The value must be a non-empty string."""
    if not str(value).strip():
        raise ConfigError(key, value, "String must be non-empty")


def regex(key: str, value: Any) -> None:
    """The value must compile as a regular expression."""
    try:
        re.compile(value)
    except re.error as error:
        raise ConfigError(key, value, f"Invalid regular expression: {error}") from None
