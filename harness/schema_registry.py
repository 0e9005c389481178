"""A real Schema Registry speaking Confluent's REST API, for tests: Apicurio Registry from Maven Central.

Confluent's own server is not published to Maven Central and Karapace is not on PyPI; Apicurio Registry is both
open and served there, as ``io.apicurio:apicurio-registry-app:<version>:tar.gz:all`` (about 160 MB, a Quarkus
application), and serves Confluent's API (subjects, versions, ids, compatibility levels) under
``/apis/ccompat/v7``. :func:`fetch_registry` copies it into the cache root (:func:`~headwater.harness.maven.cache_root`)
and unpacks it once per machine; :class:`LocalSchemaRegistry` runs ``quarkus-run.jar`` on a free loopback port,
with schemas kept in memory and deletion enabled, until :meth:`~LocalSchemaRegistry.stop`.

It needs Java 21 or newer: :func:`find_java` looks at ``HEADWATER_REGISTRY_JAVA``, ``JAVA_HOME``, ``java`` on the
PATH and ``/usr/lib/jvm/*``, and names what it found when none is new enough.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import os
import re
import shutil
import signal
import ssl
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from headwater.harness.broker import free_ports
from headwater.harness.maven import BrokerUnavailable, cache_root, fetch_artifact, tail

if TYPE_CHECKING:
    from headwater.harness.shared_services import SharedServices

APICURIO_VERSION = "3.3.3"
MINIMUM_JAVA = 21
CCOMPAT_PATH = "/apis/ccompat/v7"
_UNPACKED = ".unpacked"


class RegistryUnavailable(BrokerUnavailable):
    """No registry could be provided: no Java new enough, no Maven, or the registry did not start."""


def java_version(java: str) -> int | None:
    """The feature version (17, 21, 25) of a ``java`` executable; ``None`` when it does not run."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def java_candidates() -> list[str]:
    """Where a ``java`` may be, in the order they are preferred."""
    found = [os.environ.get("HEADWATER_REGISTRY_JAVA", "")]
    if home := os.environ.get("JAVA_HOME"):
        found.append(str(Path(home) / "bin" / "java"))
    found.append(shutil.which("java") or "")
    found += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    return [path for path in dict.fromkeys(found) if path and os.access(path, os.X_OK)]


def find_java(minimum: int = MINIMUM_JAVA) -> str:
    """A ``java`` of version ``minimum`` or newer (the newest found), or :class:`RegistryUnavailable` naming the
    versions found."""
    versions = {path: java_version(path) for path in java_candidates()}
    usable = {path: version for path, version in versions.items() if version is not None and version >= minimum}
    if not usable:
        seen = ", ".join(f"{path} ({version or 'does not run'})" for path, version in versions.items()) or "none"
        raise RegistryUnavailable(
            f"the schema registry needs Java {minimum} or newer; found: {seen}. Install one (apt-get install "
            f"openjdk-{minimum}-jre-headless) or point HEADWATER_REGISTRY_JAVA at its java",
            ["java"],
        )
    return max(usable, key=lambda path: usable[path])


def fetch_registry(version: str = APICURIO_VERSION, cache_dir: Path | None = None) -> Path:
    """The unpacked application (its folder holds ``quarkus-run.jar``), fetched and unpacked on the first call."""
    folder = cache_dir if cache_dir is not None else cache_root() / f"apicurio-{version}"
    archive = fetch_artifact(folder, f"io.apicurio:apicurio-registry-app:{version}:tar.gz:all")
    app = folder / "app"
    if not (app / _UNPACKED).exists():
        shutil.rmtree(app, ignore_errors=True)
        with tarfile.open(archive) as tar:
            tar.extractall(app, filter="data")
        (app / _UNPACKED).write_text(version + "\n")
    if not (app / "quarkus-run.jar").is_file():
        raise RegistryUnavailable(f"{archive} holds no quarkus-run.jar")
    return app


class LocalSchemaRegistry:
    """One Apicurio Registry process on a free loopback port; :attr:`url` is its Confluent-compatible API."""

    def __init__(
        self,
        app_dir: Path | None = None,
        java: str | None = None,
        tls: tuple[Path, Path, Path] | None = None,
        basic_auth: tuple[str, str] | None = None,
    ) -> None:
        self.app_dir = app_dir
        self.java = java
        self.tls = tls
        """``(certificate, key, CA)`` PEM files: serve HTTPS only, with that certificate (the CA checks it)."""
        self.basic_auth = basic_auth
        """``(user, password)``: every request must carry them by HTTP basic authentication, else 401."""
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_path = Path(tempfile.mkstemp(prefix="headwater-registry-", suffix=".log")[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/apis/ccompat/v7`` (``https://localhost:...`` with TLS): what
        ``schema.registry.url`` names."""
        if self.port is None:
            raise RegistryUnavailable("the schema registry is not started")
        if self.tls is not None:
            return f"https://localhost:{self.port}{CCOMPAT_PATH}"
        return f"http://127.0.0.1:{self.port}{CCOMPAT_PATH}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __repr__(self) -> str:
        where = self.url if self.port is not None else "not started"
        return f"LocalSchemaRegistry({where}, {'running' if self.running else 'stopped'})"

    def __enter__(self) -> LocalSchemaRegistry:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 120) -> LocalSchemaRegistry:
        java = self.java or find_java()
        app = self.app_dir or fetch_registry()
        self.port, management = free_ports(2)
        settings = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": str(self.port),
            # Quarkus's management interface (health, metrics) binds 0.0.0.0:9000 by default: a second registry on
            # the machine (another test run's) would fail to start
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(management),
            # deletes through Apicurio's own API; Confluent's API deletes subjects (soft and permanent) without them
            # in 3.3.3 (tests/harness/test_schema_registry.py passes with them off too)
            "apicurio.rest.deletion.artifact.enabled": "true",
            "apicurio.rest.deletion.artifact-version.enabled": "true",
            "apicurio.rest.deletion.group.enabled": "true",
        }
        if self.tls is not None:
            certificate, key, _ca = self.tls
            settings |= {
                "quarkus.http.ssl-port": str(self.port),
                "quarkus.http.port": "0",
                "quarkus.http.insecure-requests": "disabled",
                "quarkus.http.ssl.certificate.files": str(certificate),
                "quarkus.http.ssl.certificate.key-files": str(key),
            }
        if self.basic_auth is not None:
            # Quarkus's own HTTP security (the app is built with its embedded user realm): every path needs the one
            # user; Apicurio's own authentication (OIDC) stays off
            user, password = self.basic_auth
            settings |= {
                "quarkus.http.auth.basic": "true",
                "quarkus.security.users.embedded.plain-text": "true",
                f"quarkus.security.users.embedded.users.{user}": password,
                "quarkus.http.auth.permission.everything.paths": "/*",
                "quarkus.http.auth.permission.everything.policy": "authenticated",
            }
        command = [java, "-Xmx512m", *(f"-D{key}={value}" for key, value in settings.items()), "-jar"]
        self._log = open(self._log_path, "wb")  # noqa: SIM115 - closed by stop()
        self._proc = subprocess.Popen(
            [*command, str(app / "quarkus-run.jar")],
            cwd=app,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                raise RegistryUnavailable(f"the schema registry exited:\n{self.log_tail()}")
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(self._request("subjects"), timeout=5, context=self._ssl_context()) as answer,
            ):
                if answer.status == 200:
                    return self
            time.sleep(0.2)
        self.stop()
        raise RegistryUnavailable(f"the schema registry did not answer at {self.url} in time:\n{self.log_tail()}")

    def _request(self, path: str) -> urllib.request.Request:
        request = urllib.request.Request(f"{self.url}/{path}")
        if self.basic_auth is not None:
            token = base64.b64encode(":".join(self.basic_auth).encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        return request

    def _ssl_context(self) -> ssl.SSLContext | None:
        return None if self.tls is None else ssl.create_default_context(cafile=str(self.tls[2]))

    def detach(self) -> dict[str, str]:
        """Leave the registry running after this process exits (shared by the workers of a test run); the state
        :func:`stop_detached` stops it with, from any process."""
        if self._proc is None:
            raise RegistryUnavailable("the schema registry is not started")
        if self._log is not None:
            self._log.close()
            self._log = None
        return {"url": self.url, "pid": str(self._proc.pid)}

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return tail(self._log_path.read_text(errors="replace"), lines)
        return ""

    def stop(self, timeout_s: float = 30) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


def stop_detached(state: dict[str, str]) -> None:
    """Stop, from any process, the registry :meth:`LocalSchemaRegistry.detach` left running (``state`` is what it
    returned); a pid now used by another program is left alone."""
    pid = int(state["pid"])
    with contextlib.suppress(OSError):
        if b"quarkus-run.jar" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)  # not our child: nothing to wait on but the pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def registry_url(given: str | None, shared: SharedServices | None = None) -> tuple[str, Callable[[], None]]:
    """A registry's URL and what stops it when done: ``given`` as it is; else one started here, or on a pytest-xdist
    worker (``shared``) the run's one, started by the first worker that asks and stopped by the controller."""
    if given:
        return given.rstrip("/"), lambda: None
    if shared is None:
        registry = LocalSchemaRegistry().start()
        return registry.url, registry.stop
    from headwater.harness.shared_services import Started

    def start() -> Started:
        registry = LocalSchemaRegistry().start()
        return Started(registry.detach(), stop_detached, holds=registry)

    return str(shared.get("schema_registry", start, RegistryUnavailable)["url"]), lambda: None
