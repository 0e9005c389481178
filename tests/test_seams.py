"""Each seam has one home: confluent-kafka's private modules are imported only behind the transport
(``runtime/transport/``), and the Maven download is written once (``harness/maven.py``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ["headwater", "sdk", "runtime", "harness", "reference_connectors", "demo", "tests", "bench", "tools", "docs"]
TRANSPORT = ROOT / "runtime" / "transport"
PRIVATE = {"cimpl"}
"""confluent-kafka's private modules whose names lack the leading underscore (the C extension)."""


def sources() -> Iterator[Path]:
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every module an import statement names, ``from a import b`` giving both ``a`` and ``a.b``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def is_private_client_module(name: str) -> bool:
    root, *parts = name.split(".")
    return root == "confluent_kafka" and any(part.startswith("_") or part in PRIVATE for part in parts)


def test_no_private_confluent_kafka_module_outside_the_transport() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sources()
        if not path.is_relative_to(TRANSPORT)
        for line, name in imported_modules(ast.parse(path.read_text(), str(path)))
        if is_private_client_module(name)
    ]
    assert found == []


def test_private_client_modules_are_recognised() -> None:
    code = (
        "from confluent_kafka.cimpl import NewTopic\n"
        "import confluent_kafka.admin._config\n"
        "from confluent_kafka.admin import _resource\n"
        "from confluent_kafka.admin import NewTopic, OffsetSpec\n"
        "from confluent_kafka import Consumer\n"
    )
    private = [name for _, name in imported_modules(ast.parse(code)) if is_private_client_module(name)]
    assert private == [
        "confluent_kafka.cimpl",
        "confluent_kafka.cimpl.NewTopic",
        "confluent_kafka.admin._config",
        "confluent_kafka.admin._resource",
    ]


MAVEN_DOWNLOAD = ("dependency:copy-dependencies", "repo1.maven.org", "repo.maven.apache.org")
"""What a Maven download in Python code says: the goal that copies the jars, or Maven Central's address."""


def test_one_maven_download_in_the_code() -> None:
    homes = sorted(
        str(path.relative_to(ROOT))
        for path in sources()
        if path != Path(__file__).resolve() and any(word in path.read_text() for word in MAVEN_DOWNLOAD)
    )
    assert homes == ["harness/maven.py"]
