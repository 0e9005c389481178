"""The test suite's own pytest plugin, registered by ``tests/conftest.py``: PostgreSQL and MariaDB servers and a
scratch database per test for the CDC tests (:mod:`support.databases`, :mod:`support.scratch`), and podman with
the image's Debian base for the container image's test (:mod:`support.podman`). Connector authors get none of
this; their plugin is :mod:`headwater.harness.plugin`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from headwater.harness.shared_services import SharedServices, Started
from support.databases import DatabaseUnavailable, MariadbServer, PostgresServer, stop_recorded
from support.distribution import Distribution, build_distribution
from support.podman import ContainersUnavailable, Podman, base_image, ensure_podman
from support.scratch import ScratchDatabase

REQUIRE_DATABASES_ENV = "HEADWATER_REQUIRE_DATABASES"
REQUIRE_CONTAINERS_ENV = "HEADWATER_REQUIRE_CONTAINERS"
DATABASE_URL_ENV = {"postgres": "HEADWATER_POSTGRES_URL", "mariadb": "HEADWATER_MARIADB_URL"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("headwater").addoption(
        "--require-databases",
        action="store_true",
        default=os.environ.get(REQUIRE_DATABASES_ENV, "") not in ("", "0"),
        help=f"fail, rather than skip, when PostgreSQL or MariaDB cannot be had (or set {REQUIRE_DATABASES_ENV}=1)",
    )
    parser.getgroup("headwater").addoption(
        "--require-containers",
        action="store_true",
        default=os.environ.get(REQUIRE_CONTAINERS_ENV, "") not in ("", "0"),
        help=f"fail, rather than skip, when podman cannot build and run the image (or set {REQUIRE_CONTAINERS_ENV}=1)",
    )


@pytest.fixture(autouse=True, scope="session")
def private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``XDG_STATE_HOME`` for the whole session (worker processes the tests start inherit it): a worker whose
    config sets no ``state.dir`` keeps its state under the session's tmp directory, never in the real home
    directory, which may be read-only (in CI) or someone's own."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("xdg-state")
        patch.setenv("XDG_STATE_HOME", str(path))
        yield path


def _built(state: dict[str, str]) -> None:
    """A built distribution has nothing to stop: its files stay in the worker's tmp directory that built it."""


@pytest.fixture(scope="session")
def headwater_distribution(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Distribution:
    """The wheel and sdist built from this tree, once per session (:mod:`support.distribution`); under pytest-xdist,
    once per run, by the first worker that needs them."""
    shared = SharedServices.of(pytestconfig)
    if shared is None:
        return build_distribution(tmp_path_factory.mktemp("dist"))

    def build() -> Started:
        built = build_distribution(tmp_path_factory.mktemp("dist"))
        return Started({"wheel": str(built.wheel), "sdist": str(built.sdist)}, _built)

    state = shared.get("headwater-distribution", build, AssertionError)
    return Distribution(wheel=Path(state["wheel"]), sdist=Path(state["sdist"]))


def _containers_unavailable(pytestconfig: pytest.Config, error: ContainersUnavailable) -> NoReturn:
    message = f"cannot build and run the container image: {error}"
    if pytestconfig.getoption("require_containers"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def podman(pytestconfig: pytest.Config) -> Podman:
    """podman (with runc and mmdebstrap), installed with apt-get when missing (:mod:`support.podman`). Skips when
    that is impossible, unless ``--require-containers``."""
    try:
        return ensure_podman()
    except ContainersUnavailable as error:
        _containers_unavailable(pytestconfig, error)


@pytest.fixture(scope="session")
def container_base_image(pytestconfig: pytest.Config, podman: Podman) -> str:
    """The image's Debian base made by ``deploy/container/debian-base.sh``, cached by its recipe."""
    try:
        return base_image(podman)
    except ContainersUnavailable as error:
        _containers_unavailable(pytestconfig, error)


def _start_server(kind: str) -> PostgresServer | MariadbServer:
    server = PostgresServer() if kind == "postgres" else MariadbServer()
    try:
        return server.start()
    except (DatabaseUnavailable, OSError) as error:
        server.stop()
        raise DatabaseUnavailable(f"no {kind} server: {error}") from error


def _start_shared_server(kind: str) -> Started:
    server = _start_server(kind)
    return Started(server.state(), stop_recorded, holds=server)


def _database_server(pytestconfig: pytest.Config, kind: str) -> Iterator[str]:
    """The SQLAlchemy URL of a server of ``kind`` for the session: given by the environment, else started here (on a
    pytest-xdist worker, the run's one, started by the first worker that needs it, see
    :mod:`headwater.harness.shared_services`)."""
    given = os.environ.get(DATABASE_URL_ENV[kind])
    if given:
        yield given
        return
    shared = SharedServices.of(pytestconfig)
    server = None
    try:
        if shared is not None:
            url = shared.get(kind, lambda: _start_shared_server(kind), DatabaseUnavailable)["url"]
        else:
            server = _start_server(kind)
            url = server.url
    except DatabaseUnavailable as error:
        if pytestconfig.getoption("require_databases"):
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))
    try:
        yield url
    finally:
        if server is not None:
            server.stop()


@pytest.fixture(scope="session")
def postgres_server(pytestconfig: pytest.Config) -> Iterator[str]:
    """A PostgreSQL server (``wal_level=logical``) for the session, installed and started by the test suite
    (:mod:`support.databases`) unless ``HEADWATER_POSTGRES_URL`` names one; its superuser's URL. Skips
    when none can be had, unless ``--require-databases``."""
    yield from _database_server(pytestconfig, "postgres")


@pytest.fixture(scope="session")
def mariadb_server(pytestconfig: pytest.Config) -> Iterator[str]:
    """A MariaDB server for the session, like :func:`postgres_server` (``HEADWATER_MARIADB_URL``)."""
    yield from _database_server(pytestconfig, "mariadb")


@pytest.fixture
def postgres_database(postgres_server: str) -> Iterator[ScratchDatabase]:
    """A new, empty PostgreSQL database, dropped (with its replication slots) after the test."""
    database = ScratchDatabase.on_server("postgres", postgres_server)
    yield database
    database.close()


@pytest.fixture
def mariadb_database(mariadb_server: str) -> Iterator[ScratchDatabase]:
    """A new, empty MariaDB database, dropped after the test."""
    database = ScratchDatabase.on_server("mariadb", mariadb_server)
    yield database
    database.close()
