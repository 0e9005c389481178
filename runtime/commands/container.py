"""The worker as the container image runs it (``deploy/container/``): its config from a mounted properties file and
``CONNECT_*`` environment variables, as the Apache Kafka and Confluent Kafka Connect images take theirs, then
``headwater distributed`` (or ``standalone``) in this process, the container's main process, which stops its
connectors and exits 0 on SIGTERM.

``python -m headwater.runtime.commands.container
[distributed | standalone CONNECTOR_FILE_OR_DIR... | properties | health]``

Each key of the worker config comes from the last of these that sets it (the environment overrides the file, as in
Apache Kafka's image):

1. the image's default, :data:`IMAGE_DEFAULTS`: ``listeners=http://0.0.0.0:8083``, so that the REST API answers on
   the port the image exposes;
2. the worker file named by ``HEADWATER_WORKER_CONFIG`` (default ``/etc/headwater/worker.properties``), when it
   exists;
3. each environment variable ``CONNECT_<NAME>``: ``<NAME>`` in upper case, ``_`` for ``.``, ``__`` for ``_`` and
   ``___`` for ``-`` (the rule of both images): ``CONNECT_BOOTSTRAP_SERVERS`` sets ``bootstrap.servers``,
   ``CONNECT_CONFIG_PROVIDERS`` sets ``config.providers``. Any other name (lower case, four underscores in a row, a
   leading or trailing one) is refused, naming the variable.

``properties`` prints the merged config with secret values hidden; ``health`` asks the worker's own ``/health``
(the image's HEALTHCHECK) and exits 0 when it answers 200. The log names the variables a config came from, never a
value.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from headwater.runtime.config.listeners import is_https, parse_listener
from headwater.runtime.config.properties import ConfigFile, PropertiesError, read_connector_properties, read_properties
from headwater.sdk.errors import ConfigError

if TYPE_CHECKING:
    from headwater.runtime.commands.startup import RunnableWorker

log = logging.getLogger("headwater.runtime.commands.container")  # the same name when run as __main__

PREFIX = "CONNECT_"
"""Environment variables that set worker keys start with this, as in the Confluent Kafka Connect image."""
WORKER_CONFIG_ENV = "HEADWATER_WORKER_CONFIG"
"""Names the mounted worker file; unset, :data:`DEFAULT_WORKER_CONFIG`."""
DEFAULT_WORKER_CONFIG = "/etc/headwater/worker.properties"
LOG_LEVEL_ENV = "HEADWATER_LOG_LEVEL"
"""The Python logging level (default INFO): not a ``CONNECT_`` variable, since those are all worker keys."""
IMAGE_DEFAULTS = {"listeners": "http://0.0.0.0:8083"}
"""Keys the image sets unless the file or the environment does."""
CONNECTOR_SUFFIXES = (".properties", ".json")
"""The connector files a directory given to ``standalone`` contributes, in name order."""
HEALTH_TIMEOUT_S = 5.0

_NAME = re.compile(r"[A-Z0-9]+(?:_{1,3}[A-Z0-9]+)*")
_SEPARATORS = {1: ".", 2: "_", 3: "-"}
_SIGTERM_EXIT = 128 + signal.SIGTERM

T = TypeVar("T")


def property_name(variable: str) -> str:
    """The worker key ``CONNECT_<NAME>`` sets: ``CONNECT_BOOTSTRAP_SERVERS`` -> ``bootstrap.servers``,
    ``CONNECT_A__B`` -> ``a_b``, ``CONNECT_A___B`` -> ``a-b``. Raises PropertiesError naming the variable when
    ``<NAME>`` does not follow the rule."""
    name = variable.removeprefix(PREFIX)
    if not variable.startswith(PREFIX) or not _NAME.fullmatch(name):
        raise PropertiesError(
            f"environment variable {variable}",
            f"names no worker key: after {PREFIX}, upper-case letters and digits, with _ for '.', __ for '_' and "
            "___ for '-' (CONNECT_BOOTSTRAP_SERVERS sets bootstrap.servers)",
        )
    return re.sub("_+", lambda run: _SEPARATORS[len(run.group())], name).lower()


def environment_keys(environ: Mapping[str, str]) -> dict[str, str]:
    """The worker key each ``CONNECT_*`` variable of ``environ`` sets, by variable name. Raises PropertiesError for
    a bad name."""
    return {name: property_name(name) for name in sorted(environ) if name.startswith(PREFIX)}


@dataclass(frozen=True)
class WorkerProperties:
    """The worker config the image runs with, and where each key was set: a variable name, ``file:line``, or the
    image's default."""

    config: ConfigFile
    origins: dict[str, str]
    file: ConfigFile | None
    default_path: str = DEFAULT_WORKER_CONFIG
    """Where the worker file is looked for."""

    def explain(self, error: PropertiesError) -> PropertiesError:
        """``error`` (raised for :attr:`config`) with each problem placed where its key was set: the variable, the
        mounted file's line, or, for a missing key, where it could be set."""
        explained = [self._place(each) for each in error.errors]
        return PropertiesError.combine(explained)

    def _place(self, error: PropertiesError) -> PropertiesError:
        key = str(error.key or "")
        origin = self.origins.get(key)
        problem = error.problem
        value = self.config.values.get(key)
        if value and is_secret_key(key):  # the worker's message quotes the value as written
            problem = problem.replace(repr(value), "[hidden]").replace(value, "[hidden]")
        if origin is not None and origin.startswith(PREFIX):
            return PropertiesError(f"environment variable {origin}", problem, key)
        if origin is not None and self.file is not None and key in self.file.values:
            return self.file.error(key, problem)
        if origin is None and key:
            where = self.file.path if self.file is not None else f"a worker file mounted at {self.default_path}"
            hint = f" (set it with {variable_name(key)}, or in {where})"
            return PropertiesError("worker config", problem + hint, key)
        return PropertiesError(error.path, problem, error.key, error.line)

    def build(self, make: Callable[[ConfigFile], T]) -> T:
        """``make(config)``, its config errors re-raised by :meth:`explain`."""
        try:
            return make(self.config)
        except PropertiesError as error:
            raise self.explain(error) from None
        except ConfigError as error:
            raise self.explain(self.config.config_error(error)) from None

    def describe(self) -> str:
        """Where the keys came from, naming variables and files but no value."""
        from_env = sorted(origin for origin in self.origins.values() if origin.startswith(PREFIX))
        parts = []
        if self.file is not None:
            parts.append(f"{len(self.file.values)} keys from {self.file.path}")
        if from_env:
            parts.append(f"{len(from_env)} from the environment ({', '.join(from_env)})")
        defaults = sorted(key for key, origin in self.origins.items() if origin == "default")
        if defaults:
            parts.append(f"the image's default for {', '.join(defaults)}")
        return "worker config: " + "; ".join(parts)


def variable_name(key: str) -> str:
    """The ``CONNECT_*`` variable that sets ``key`` (the inverse of :func:`property_name`)."""
    return PREFIX + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def worker_properties(environ: Mapping[str, str]) -> WorkerProperties:
    """The worker config from the image's defaults, the mounted file and ``CONNECT_*`` variables, later ones
    winning. Raises PropertiesError for a bad variable name or a file that cannot be read."""
    keys = environment_keys(environ)
    path = environ.get(WORKER_CONFIG_ENV) or DEFAULT_WORKER_CONFIG
    file = read_properties(path) if Path(path).is_file() else None
    if file is None and environ.get(WORKER_CONFIG_ENV):
        raise PropertiesError(path, f"no such file ({WORKER_CONFIG_ENV} names it)")
    values = dict(IMAGE_DEFAULTS)
    origins = dict.fromkeys(IMAGE_DEFAULTS, "default")
    lines: dict[str, int] = {}
    if file is not None:
        values.update(file.values)
        origins.update(dict.fromkeys(file.values, "file"))
        lines.update(file.lines)
    for variable, key in keys.items():
        values[key] = environ[variable]
        origins[key] = variable
        lines.pop(key, None)
    where = file.path if file is not None else "the image's defaults"
    name = f"{where} and {PREFIX}* environment variables" if keys else where
    return WorkerProperties(ConfigFile(name, values, lines), origins, file, path)


def connector_files(paths: Sequence[str]) -> list[ConfigFile]:
    """The connector files ``standalone`` runs: each path a file, or a directory whose ``.properties`` and
    ``.json`` files count, in name order."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix in CONNECTOR_SUFFIXES and p.is_file()))
        else:
            found.append(path)
    return [read_connector_properties(path) for path in found]


def is_secret_key(key: str) -> bool:
    """Whether the value of the worker key ``key`` is secret: a ``PASSWORD`` key of the worker, or a well-known
    secret name of the Kafka clients under any prefix (:func:`headwater.runtime.config.secrets.is_secret`)."""
    from headwater.runtime.config.secrets import is_secret
    from headwater.runtime.config.worker import STANDALONE_CONFIG
    from headwater.runtime.distributed import DISTRIBUTED_CONFIG
    from headwater.sdk.config import Type

    passwords = {each.name for each in [*DISTRIBUTED_CONFIG, *STANDALONE_CONFIG] if each.type is Type.PASSWORD}
    return is_secret(key, passwords)


def hidden_properties(properties: WorkerProperties) -> dict[str, str]:
    """The merged config with every secret value shown as ``[hidden]`` (:func:`is_secret_key`)."""
    return {k: "[hidden]" if is_secret_key(k) else v for k, v in sorted(properties.config.values.items())}


# ---- the health check --------------------------------------------------------------------------------------------


def health_url(config: Mapping[str, str]) -> str:
    """The URL of the worker's own ``/health`` on the loopback interface, from its ``listeners``."""
    listener = str(config.get("listeners", IMAGE_DEFAULTS["listeners"])).split(",")[0].strip()
    host, port = parse_listener("listeners", listener)
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    host = f"[{host}]" if ":" in host else host
    return f"{'https' if is_https(listener) else 'http'}://{host}:{port}/health"


def check_health(url: str, timeout_s: float = HEALTH_TIMEOUT_S) -> tuple[bool, str]:
    """GET ``url``: whether it answered 200, and what it said. TLS is not verified: the probe asks its own worker."""
    context = None
    if url.startswith("https"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as response:
            return response.status == 200, f"{response.status} {response.read(500).decode('utf-8', 'replace')}"
    except urllib.error.HTTPError as error:
        return False, f"{error.code} {error.read(500).decode('utf-8', 'replace')}"
    except OSError as error:
        return False, str(error)


# ---- the command ---------------------------------------------------------------------------------------------------


def _stop_before_start(signum: int, frame: object) -> None:
    """SIGTERM before the worker's own handler is in place: as PID 1 the signal would otherwise be ignored."""
    raise SystemExit(_SIGTERM_EXIT)


def run(command: str, connector_paths: Sequence[str], environ: Mapping[str, str]) -> int:
    """Run the worker ``command`` (``distributed`` or ``standalone``) until SIGTERM; the exit code: 0 after a
    graceful stop, 2 for a bad config, 1 for other failures
    (:func:`~headwater.runtime.commands.startup.run_worker_command`)."""
    from headwater.runtime.commands.startup import run_worker_command

    try:
        properties = worker_properties(environ)
    except ConfigError as error:
        print(f"headwater {command}: error: {error}", file=sys.stderr)
        return 2
    log.info("%s", properties.describe())

    def build() -> RunnableWorker:
        if command == "distributed":
            from headwater.runtime.commands.distributed import DistributedWorker

            return properties.build(DistributedWorker)
        from headwater.runtime.commands.standalone import StandaloneWorker

        connectors = connector_files(connector_paths)
        return properties.build(lambda config: StandaloneWorker(config, connectors))

    previous = signal.signal(signal.SIGTERM, _stop_before_start)
    try:
        return run_worker_command(command, build)
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(
        prog="python -m headwater.runtime.commands.container",
        description="The container image's worker: config from a mounted file and CONNECT_* environment variables.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("distributed", help="Run a distributed worker (the image's default).")
    standalone = commands.add_parser("standalone", help="Run a standalone worker with connectors from files.")
    standalone.add_argument("connectors", nargs="*", metavar="CONNECTOR_FILE_OR_DIR")
    commands.add_parser("properties", help="Print the merged worker config, secret values hidden.")
    commands.add_parser("health", help="Exit 0 when the worker's /health answers 200 (the image's HEALTHCHECK).")
    args = parser.parse_args(argv)
    try:
        properties = worker_properties(environ)
    except ConfigError as error:
        prefix = f"headwater {args.command}: " if args.command in ("distributed", "standalone") else ""
        print(f"{prefix}error: {error}", file=sys.stderr)
        return 1 if args.command == "health" else 2
    if args.command == "health":
        url = health_url(properties.config.values)
        healthy, said = check_health(url)
        print(f"{url}: {said}", file=sys.stdout if healthy else sys.stderr)
        return 0 if healthy else 1
    if args.command == "properties":
        print("".join(f"{key}={value}\n" for key, value in hidden_properties(properties).items()), end="")
        return 0
    from headwater.runtime.logs.context import configure_logging

    configure_logging(environ.get(LOG_LEVEL_ENV) or "INFO")
    return run(args.command, getattr(args, "connectors", []), environ)


if __name__ == "__main__":
    sys.exit(main())
