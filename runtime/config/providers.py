"""The built-in config providers (``file``, ``env``, ``directory``, Kafka's three) and making a worker's providers
from its ``config.providers`` keys.

``file`` reads a Java ``.properties`` file (``${file:/etc/secrets/db.properties:password}``), ``directory`` a
file's whole content (``${directory:/run/secrets:db-password}``), ``env`` an environment variable (``${env:VAR}``,
or ``${env::VAR}``; a path is refused). ``file`` and ``directory`` take ``allowed.paths`` (KIP-993): a
comma-separated list of absolute directories or files; a reference to a path outside them is refused. ``env`` takes
``allowlist.pattern``: a regular expression a variable's whole name must match (KIP-887).
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from headwater.runtime.config.properties import PropertiesError, parse_properties
from headwater.runtime.plugins import installed_entry_points
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.providers import CONFIG_PROVIDER_ENTRY_POINT_GROUP, ConfigProvider

PREFIX = "config.providers."
_JAVA = "org.apache.kafka.common.config.provider."


class AllowedPaths:
    """The ``allowed.paths`` of a file or directory provider; every path is allowed when it is not set.

    A path is compared once normalised (``..`` removed) and once with symbolic links resolved: both must lie
    within an allowed path, so neither ``..`` nor a link leads out of it."""

    def __init__(self, key: str, value: str | None) -> None:
        self.allowed: list[Path] | None = None
        if value:
            self.allowed = []
            for item in (part.strip() for part in value.split(",")):
                path = Path(os.path.normpath(item))
                if not path.is_absolute():
                    raise ConfigError(key, value, f"Path {item} is not absolute")
                if not path.exists():
                    raise ConfigError(key, value, f"Path {item} does not exist")
                self.allowed.append(path)

    def check(self, path: str) -> Path:
        """``path`` as a :class:`~pathlib.Path`; raise when it is empty or lies outside the allowed paths."""
        if not path:
            raise ConnectError("a path is required")
        if self.allowed is None:
            return Path(path)
        normal = Path(os.path.normpath(path))
        real = Path(os.path.realpath(path))
        for allowed in self.allowed:
            if normal.is_relative_to(allowed) and real.is_relative_to(os.path.realpath(allowed)):
                return normal
        raise ConnectError(f"the path {path} is not within allowed.paths")


class FileConfigProvider:
    """Values from a Java ``.properties`` file: the path is the file, the key a key in it."""

    def configure(self, params: Mapping[str, str]) -> None:
        self.paths = AllowedPaths("allowed.paths", params.get("allowed.paths"))

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        file = self.paths.check(path)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConnectError(f"cannot read properties from file {path}: {type(error).__name__}") from None
        try:
            values = parse_properties(text, path).values
        except PropertiesError as error:
            raise ConnectError(f"cannot read properties from file {path}: {error.problem}") from None
        return {key: values[key] for key in keys if key in values}

    def close(self) -> None:
        pass


class DirectoryConfigProvider:
    """Values from a directory of files: the path is the directory, the key a regular file in it whose whole
    content (UTF-8) is the value, as Kubernetes and Docker mount secrets."""

    def configure(self, params: Mapping[str, str]) -> None:
        self.paths = AllowedPaths("allowed.paths", params.get("allowed.paths"))

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        directory = self.paths.check(path)
        found = {}
        for key in keys:
            file = directory / key
            if os.sep in key or key in ("", ".", "..") or not file.is_file():
                continue
            self.paths.check(str(file))  # a link in the directory must not lead out of the allowed paths
            try:
                found[key] = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise ConnectError(f"cannot read file {file}: {type(error).__name__}") from None
        return found

    def close(self) -> None:
        pass


class EnvVarConfigProvider:
    """Values from the worker's environment variables: the key is the variable's name; there is no path."""

    def configure(self, params: Mapping[str, str]) -> None:
        pattern = params.get("allowlist.pattern", ".*")
        try:
            self.allowlist = re.compile(pattern)
        except re.error as error:
            raise ConfigError("allowlist.pattern", pattern, f"Invalid regular expression: {error}") from None

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        if path:
            raise ConnectError(f"a path is not supported by the env provider, invalid value {path!r}")
        return {key: os.environ[key] for key in keys if key in os.environ and self.allowlist.fullmatch(key)}

    def close(self) -> None:
        pass


BUILT_IN: dict[str, type[Any]] = {
    "file": FileConfigProvider,
    "env": EnvVarConfigProvider,
    "directory": DirectoryConfigProvider,
    _JAVA + "FileConfigProvider": FileConfigProvider,
    _JAVA + "EnvVarConfigProvider": EnvVarConfigProvider,
    _JAVA + "DirectoryConfigProvider": DirectoryConfigProvider,
}
"""The built-in providers by short name and by Kafka's class name, so that Kafka Connect worker files work."""


def provider_class(key: str, spec: str) -> type[Any]:
    """A provider class by built-in name, Kafka class name, entry-point name or import path
    (``package.module:Class`` or ``package.module.Class``)."""
    if spec in BUILT_IN:
        return BUILT_IN[spec]
    for entry in installed_entry_points(CONFIG_PROVIDER_ENTRY_POINT_GROUP):
        if entry.name == spec:
            loaded: type[Any] = entry.load()
            return loaded
    module_name, _, attr = spec.partition(":") if ":" in spec else spec.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(key, spec, "Unknown config provider; built in: file, env, directory")
    try:
        loaded = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(key, spec, f"Cannot load config provider class: {error}") from None
    return loaded


def load_providers(config: Mapping[str, Any]) -> dict[str, ConfigProvider]:
    """The providers ``config.providers`` names, each made from ``config.providers.<name>.class`` and configured
    with its ``config.providers.<name>.param.*`` keys; raise :class:`ConfigError` naming the bad key."""
    names = config.get("config.providers") or []
    providers: dict[str, ConfigProvider] = {}
    for name in names:
        key = f"{PREFIX}{name}.class"
        if not config.get(key):
            raise ConfigError(key, None, f"Config provider {name} is listed in config.providers but has no class")
        instance = provider_class(key, str(config[key]))()
        if not isinstance(instance, ConfigProvider):
            raise ConfigError(key, config[key], "Class is not a config provider (configure, get, close)")
        param = f"{PREFIX}{name}.param."
        params = {k[len(param) :]: str(v) for k, v in config.items() if k.startswith(param)}
        try:
            instance.configure(params)
        except ConfigError as error:
            raise ConfigError(param + error.key, error.value, error.reason) from None
        providers[name] = instance
    return providers
