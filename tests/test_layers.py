"""Imports point one way: the installed package's import graph has no circle, and no module of a lower layer
imports one of a higher layer (docs/architecture.md gives the same order with what each package owns).

Every import counts: at module level, inside a function and under ``TYPE_CHECKING``. ``from package import name``
counts as an import of the submodule ``package.name`` when there is one, else of the package itself (its
``__init__``), as Python runs it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {
    "headwater": "headwater",
    "sdk": "headwater.sdk",
    "runtime": "headwater.runtime",
    "harness": "headwater.harness",
    "reference_connectors": "headwater.reference_connectors",
    "demo": "headwater.demo",
}
"""pyproject.toml's ``package-dir``: the folders that install as ``headwater.*``."""

R = "headwater.runtime"
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("package", ("headwater",)),
    ("sdk", ("headwater.sdk",)),
    ("reference connectors", ("headwater.reference_connectors",)),
    ("core", (f"{R}.clock", f"{R}.errors", f"{R}.java_plugins", f"{R}.plugins")),
    ("transport", (f"{R}.transport",)),
    ("storage", (f"{R}.storage",)),
    ("converters", (f"{R}.converters",)),
    ("config", (f"{R}.config",)),
    ("logs", (f"{R}.logs",)),
    ("error_handling", (f"{R}.error_handling",)),
    ("transforms", (f"{R}.transforms", f"{R}.plugin_catalog")),
    ("tasks", (f"{R}.tasks",)),
    ("worker", (f"{R}.worker", f"{R}.worker_connector", f"{R}.task_builder")),
    ("metrics", (f"{R}.metrics",)),
    ("herder", (f"{R}.herder",)),
    ("distributed", (f"{R}.distributed",)),
    ("rest", (f"{R}.rest",)),
    ("commands", (f"{R}.commands",)),
    ("runtime", (R,)),
    ("harness", ("headwater.harness",)),
    ("demo", ("headwater.demo", "headwater.__main__")),
]
"""Lowest first. A module belongs to the layer of the longest prefix that names it, and may import its own layer
and those below. Beyond the issue's order (sdk < transport < storage < config < error_handling < transforms <
tasks < worker < herder < distributed < rest < commands): ``core`` is what every part uses (the clock, the REST
errors, the plugin manager: Kafka Connect's ``isolation``); converters sit below config, whose unknown-key rule
asks a converter which settings it has; logs sit above config, whose secret rule the log scrubber applies; the
plugin catalog lists transforms and converters; metrics read the task loops and the worker; the root package
(``headwater.runtime``'s ``__init__``) re-exports from the top, so nothing inside the runtime imports it. The
reference connectors import the SDK only."""


def layer_of(module: str, layers: Iterable[tuple[str, tuple[str, ...]]] = LAYERS) -> int:
    best, found = -1, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    if found < 0:
        raise LookupError(f"{module} is in no layer of tests/test_layers.py: add it")
    return found


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Each module of the installed package, by its dotted name."""
    found: dict[str, Path] = {}
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports_of(name: str, source: str, known: Mapping[str, Path], is_package: bool) -> Iterator[tuple[int, str]]:
    """Each module of ``known`` that ``source`` (module ``name``) imports, with the line."""

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([node.module] if node.module else []))
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            targets = submodules if len(submodules) == len(node.names) else [*submodules, base]
        for target in targets:
            found = owner(target) if target.startswith("headwater") else None
            if found is not None and found != name:
                yield node.lineno, found


def graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}."""
    known = modules(root)
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        found = edges.setdefault(name, {})
        for line, target in imports_of(name, path.read_text(), known, path.name == "__init__.py"):
            found.setdefault(target, line)
    return edges


def circles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def upward(edges: Mapping[str, Mapping[str, int]], known: Mapping[str, Path], root: Path = ROOT) -> list[str]:
    names = [name for name, _ in LAYERS]
    return [
        f"{known[module].relative_to(root)}:{line}: {module} ({names[layer_of(module)]}) imports "
        f"{target} ({names[layer_of(target)]})"
        for module, targets in sorted(edges.items())
        for target, line in sorted(targets.items())
        if layer_of(target) > layer_of(module)
    ]


def test_the_import_graph_has_no_circle() -> None:
    assert circles(graph()) == []


def test_no_module_imports_a_higher_layer() -> None:
    edges = graph()
    assert upward(edges, modules()) == []


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_a_lower_layer_importing_a_higher_one_is_caught(tmp_path: Path) -> None:
    """The check itself: a transport module importing the worker, and two modules importing each other."""
    for folder in PACKAGE_DIRS:
        (tmp_path / folder).mkdir()
    (tmp_path / "runtime" / "transport").mkdir()
    (tmp_path / "runtime" / "transport" / "__init__.py").write_text("")
    (tmp_path / "runtime" / "transport" / "base.py").write_text(
        "def make():\n    from headwater.runtime.worker import Worker\n"
    )
    (tmp_path / "runtime" / "worker.py").write_text("from headwater.runtime.transport import base\n")
    (tmp_path / "runtime" / "__init__.py").write_text("")
    edges = graph(tmp_path)
    assert edges[f"{R}.transport.base"] == {f"{R}.worker": 2}
    assert circles(edges) == [[f"{R}.transport.base", f"{R}.worker"]]
    known = modules(tmp_path)
    assert [line.split(": ", 1)[1] for line in upward(edges, known, tmp_path)] == [
        f"{R}.transport.base (transport) imports {R}.worker (worker)"
    ]


def test_an_unplaced_module_is_named() -> None:
    with pytest.raises(LookupError, match=r"headwater\.elsewhere"):
        layer_of("headwater.elsewhere", LAYERS[1:])


if __name__ == "__main__":  # python tests/test_layers.py [ROOT]: the graph's size, its circles and upward imports
    import sys

    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    edges, known = graph(root), modules(root)
    print(f"{len(known)} modules, {sum(map(len, edges.values()))} imports between them")
    print(f"{len(circles(edges))} circles", *circles(edges), sep="\n")
    print(f"{len(upward(edges, known, root))} upward imports", *upward(edges, known, root), sep="\n")
