"""PostgreSQL and MariaDB servers for tests and benchmarks, installed and started by the project itself.

``PostgresServer`` and ``MariadbServer`` install the Debian packages when their programs are missing (as root,
``apt-get install postgresql`` / ``mariadb-server``; ``HEADWATER_INSTALL_DATABASES=0`` forbids it), initialise a data
directory under a fresh temporary directory, start the server on a free loopback port (as the packages' unprivileged
``postgres`` / ``mysql`` user when run as root, since neither server runs as root) and stop it, removing the data.
PostgreSQL runs with ``wal_level=logical``. Each :class:`TestDatabase` is a new, empty database on such a server.

Environment: ``HEADWATER_POSTGRES_URL`` / ``HEADWATER_MARIADB_URL`` name a running server to use instead (an
SQLAlchemy URL of a user that may create databases); ``HEADWATER_REQUIRE_DATABASES=1`` makes the tests fail, not
skip, when a server cannot be had.

Command line: ``python tests/support/databases.py install|start|stop postgres|mariadb``; ``start`` prints the
URL and leaves the server running (state in ``<cache>/databases/<kind>.json``), ``stop`` stops it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import json
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from headwater.harness.long_command import apt_progress, run_logged
from headwater.harness.maven import cache_root

INSTALL_ENV = "HEADWATER_INSTALL_DATABASES"
START_TIMEOUT_S = 60.0

log = logging.getLogger(__name__)


class DatabaseUnavailable(RuntimeError):
    """No server of this kind could be installed or started; the message says why."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _find(name: str, patterns: tuple[str, ...] = ()) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for pattern in patterns:
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def ensure_package(program: str, package: str, patterns: tuple[str, ...] = (), install_env: str = INSTALL_ENV) -> str:
    """The path of ``program``, installing Debian ``package`` first when it is missing and installing is allowed
    (as root, unless ``install_env`` is ``0``)."""
    found = _find(program, patterns)
    if found:
        return found
    if os.environ.get(install_env, "1") == "0" or os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise DatabaseUnavailable(f"{program} not found: install it with apt-get install {package}")
    # one apt-get at a time: pytest-xdist's workers may install PostgreSQL and MariaDB at once, and dpkg takes one
    with open(Path(tempfile.gettempdir()) / "headwater-apt-get.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _find(program, patterns)
        if found:
            return found
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        lists = "updating apt's package lists"
        run_logged(["apt-get", "update"], lists, _lists_progress, log, timeout_s=900, env=env)
        what = f"installing {package} with apt-get for {program}"
        done = run_logged(["apt-get", "install", "-y", package], what, apt_progress, log, timeout_s=900, env=env)
    if done.returncode != 0:
        raise DatabaseUnavailable(f"apt-get install {package} failed:\n{done.stdout[-4000:]}")
    found = _find(program, patterns)
    if not found:
        raise DatabaseUnavailable(f"{program} still missing after apt-get install {package}")
    return found


def _lists_progress(lines: Sequence[str]) -> str:
    return f"{sum(1 for line in lines if line.startswith(('Get:', 'Hit:')))} lists fetched or up to date"


def _as_user(user: str) -> list[str]:
    """The command prefix that runs a program as ``user`` when we are root (neither server runs as root)."""
    return ["runuser", "-u", user, "--"] if os.geteuid() == 0 else []


def _chown(path: Path, user: str) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(user)
        for root, dirs, files in os.walk(path):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.chown(name, entry.pw_uid, entry.pw_gid)


def _wait_port(port: int, process: subprocess.Popen[bytes] | None, log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise DatabaseUnavailable(f"{what} exited ({process.returncode}):\n{_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise DatabaseUnavailable(f"{what} did not listen on port {port} within {START_TIMEOUT_S} s:\n{_tail(log)}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class PostgresServer:
    """A PostgreSQL server of its own: superuser ``headwater`` (trust on loopback), ``wal_level=logical``."""

    kind = "postgres"
    PATTERNS = ("/usr/lib/postgresql/*/bin/pg_ctl",)
    USER = "postgres"

    def __init__(self, directory: Path | None = None, port: int | None = None) -> None:
        self.directory = Path(directory or tempfile.mkdtemp(prefix="headwater-postgres-"))
        self.port = port or free_port()
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self.pg_ctl = ""

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://headwater@127.0.0.1:{self.port}/postgres"

    def start(self) -> PostgresServer:
        self.pg_ctl = ensure_package("pg_ctl", "postgresql", self.PATTERNS)
        initdb = str(Path(self.pg_ctl).with_name("initdb"))
        self.directory.mkdir(parents=True, exist_ok=True)
        _chown(self.directory, self.USER)
        prefix = _as_user(self.USER)
        self._run([*prefix, initdb, "-D", str(self.data), "-U", "headwater", "--auth=trust", "-E", "UTF8"])
        settings = {
            "port": self.port,
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.directory}'",
            "wal_level": "logical",
            "max_replication_slots": 32,
            "max_wal_senders": 32,
            "fsync": "off",
            "full_page_writes": "off",
            "max_connections": 200,
        }
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
        self._run([*prefix, self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start"])
        _wait_port(self.port, None, self.log, "PostgreSQL")
        return self

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd="/")
        if done.returncode != 0:
            raise DatabaseUnavailable(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}\n{_tail(self.log)}")

    def stop(self) -> None:
        if self.pg_ctl and (self.data / "postmaster.pid").exists():
            subprocess.run(
                [*_as_user(self.USER), self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                timeout=120,
                check=False,
                cwd="/",
            )
        shutil.rmtree(self.directory, ignore_errors=True)

    def state(self) -> dict[str, Any]:
        return {"kind": self.kind, "directory": str(self.directory), "port": self.port, "url": self.url}


class MariadbServer:
    """A MariaDB server of its own: user ``headwater`` with every privilege, no password, on a loopback port."""

    kind = "mariadb"
    USER = "mysql"

    def __init__(self, directory: Path | None = None, port: int | None = None) -> None:
        self.directory = Path(directory or tempfile.mkdtemp(prefix="headwater-mariadb-"))
        self.port = port or free_port()
        self.data = self.directory / "data"
        self.log = self.directory / "mariadb.log"
        self.socket = self.directory / "mariadb.sock"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mysql+pymysql://headwater@127.0.0.1:{self.port}/mysql"

    def start(self) -> MariadbServer:
        server = ensure_package("mariadbd", "mariadb-server", ("/usr/sbin/mariadbd",))
        install = ensure_package("mariadb-install-db", "mariadb-server")
        self.directory.mkdir(parents=True, exist_ok=True)
        _chown(self.directory, self.USER)
        user = ["--user=" + self.USER] if os.geteuid() == 0 else []
        done = subprocess.run(
            [install, "--no-defaults", f"--datadir={self.data}", *user, "--auth-root-authentication-method=normal",
             "--skip-test-db"],
            capture_output=True, text=True, timeout=300, check=False, cwd="/",
        )  # fmt: skip
        if done.returncode != 0:
            raise DatabaseUnavailable(f"mariadb-install-db failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        command = [
            server, "--no-defaults", f"--datadir={self.data}", f"--port={self.port}", "--bind-address=127.0.0.1",
            f"--socket={self.socket}", f"--pid-file={self.directory / 'mariadb.pid'}", f"--log-error={self.log}",
            "--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=2", "--skip-name-resolve",
            "--max-connections=200", *user,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", start_new_session=True
        )
        _wait_port(self.port, self.process, self.log, "MariaDB")
        import pymysql

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                admin = pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)
                break
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with admin, admin.cursor() as cursor:
            cursor.execute("CREATE USER IF NOT EXISTS 'headwater'@'%'")
            cursor.execute("GRANT ALL PRIVILEGES ON *.* TO 'headwater'@'%' WITH GRANT OPTION")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def state(self) -> dict[str, Any]:
        pid = {"pid": self.process.pid} if self.process is not None else {}
        return {"kind": self.kind, "directory": str(self.directory), "port": self.port, "url": self.url, **pid}


SERVERS: dict[str, type[PostgresServer] | type[MariadbServer]] = {"postgres": PostgresServer, "mariadb": MariadbServer}


@contextlib.contextmanager
def postgres_url(url: str | None = None) -> Iterator[str]:
    """``url`` when given; otherwise a PostgreSQL server of the test suite's own is started for the block, its
    superuser's URL given, and the server stopped after the block (the benches' ``--postgres-url``)."""
    if url is not None:
        yield url
        return
    server = PostgresServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def _state_path(kind: str) -> Path:
    return cache_root() / "databases" / f"{kind}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/support/databases.py")
    parser.add_argument("action", choices=["install", "start", "stop"])
    parser.add_argument("kind", choices=sorted(SERVERS), nargs="+")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # to stderr
    for kind in args.kind:
        if args.action == "install":
            if kind == "postgres":
                print(ensure_package("pg_ctl", "postgresql", PostgresServer.PATTERNS))
            else:
                print(ensure_package("mariadbd", "mariadb-server", ("/usr/sbin/mariadbd",)))
        elif args.action == "start":
            server = SERVERS[kind]().start()
            path = _state_path(kind)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(server.state()))
            print(server.url)
        else:
            path = _state_path(kind)
            if not path.exists():
                continue
            state = json.loads(path.read_text())
            stop_recorded(state)
            path.unlink()
            print(state["url"])
    return 0


def stop_recorded(state: dict[str, Any]) -> None:
    """Stops, from any process, the server whose :meth:`~PostgresServer.state` is ``state``, and removes its data."""
    if "pid" in state:
        _terminate(int(state["pid"]))
    stopped = SERVERS[state["kind"]](Path(state["directory"]), int(state["port"]))
    if isinstance(stopped, PostgresServer):
        stopped.pg_ctl = ensure_package("pg_ctl", "postgresql", PostgresServer.PATTERNS)
    stopped.stop()


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and has not exited (a zombie whose parent has not reaped it has)."""
    if not Path("/proc/self/stat").exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _terminate(pid: int) -> None:
    """SIGTERM ``pid`` and wait until it has gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)


if __name__ == "__main__":
    raise SystemExit(main())
