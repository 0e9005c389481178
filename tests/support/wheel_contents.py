"""What a built wheel should hold, from the source tree it was built from: every module and every other file under
each folder ``pyproject.toml``'s ``[tool.setuptools] package-dir`` maps into ``headwater`` (bytecode left aside),
and, for each entry point the wheel declares, a module in the wheel that defines the named object.

``wheel_problems(wheel, source_root)`` returns one line per problem; run it by hand on any wheel with
``python tests/support/wheel_contents.py WHEEL [SOURCE_ROOT]``. ``wheel_differences`` compares two wheels (the one
built from the sdist and the one built straight from the tree).
"""

from __future__ import annotations

import ast
import configparser
import sys
import tomllib
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from headwater import release

SOURCE_ROOT = Path(__file__).resolve().parents[2]
BYTECODE = {".pyc", ".pyo"}
GENERATED = {f"headwater/{release.COMMIT_FILE}"}
"""Files the build writes into the wheel that are not in the tree (``setup.py``: the commit it was built from)."""


def package_dirs(source_root: Path) -> dict[str, str]:
    """``{import name: folder}`` as the tree's ``pyproject.toml`` maps them."""
    config = tomllib.loads((source_root / "pyproject.toml").read_text())
    mapped: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return mapped


def source_files(source_root: Path) -> dict[str, Path]:
    """Each file the wheel should hold, by its path in the wheel (``runtime/cli.py`` -> ``headwater/runtime/cli.py``);
    a mapped folder inside another is listed under its own name only."""
    mapped = package_dirs(source_root)
    folders = {(source_root / folder).resolve() for folder in mapped.values()}
    expected: dict[str, Path] = {}
    for name, folder in mapped.items():
        top = (source_root / folder).resolve()
        for path in _files(top, folders - {top}):
            expected[str(PurePosixPath(*name.split("."), *path.relative_to(top).parts))] = path
    return expected


def _files(folder: Path, skipped: set[Path]) -> Iterator[Path]:
    for path in sorted(folder.iterdir()):
        if path.is_dir():
            if path.name != "__pycache__" and path.resolve() not in skipped:
                yield from _files(path, skipped)
        elif path.suffix not in BYTECODE:
            yield path


def wheel_files(wheel: Path) -> list[str]:
    """The wheel's files, its ``.dist-info`` and bytecode left out."""
    with zipfile.ZipFile(wheel) as archive:
        names = [name for name in archive.namelist() if not name.endswith("/")]
    return sorted(
        name
        for name in names
        if ".dist-info/" not in name
        and "__pycache__" not in name.split("/")
        and PurePosixPath(name).suffix not in BYTECODE
    )


def entry_points(wheel: Path) -> list[tuple[str, str, str]]:
    """``(group, name, "module:attr")`` of each entry point the wheel's ``entry_points.txt`` declares."""
    with zipfile.ZipFile(wheel) as archive:
        found = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
        text = archive.read(found[0]).decode() if found else ""
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.read_string(text)
    return [(group, name, value.strip()) for group in parser.sections() for name, value in parser.items(group)]


def defined_names(source: str) -> set[str]:
    """The names a module binds at its top level (also inside top-level ``if`` and ``try`` blocks)."""
    names: set[str] = set()

    def visit(body: Iterable[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(source).body)
    return names


def entry_point_problems(wheel: Path) -> list[str]:
    """One line per entry point whose module is not in the wheel or does not define the object it names."""
    with zipfile.ZipFile(wheel) as archive:
        contents = set(archive.namelist())
        problems = []
        for group, name, value in entry_points(wheel):
            module, _, attr = value.partition("[")[0].strip().partition(":")
            path = module.strip().replace(".", "/")
            found = next((file for file in (f"{path}.py", f"{path}/__init__.py") if file in contents), None)
            if found is None:
                problems.append(f"entry point {group}:{name} = {value}: module {module} is not in the wheel")
                continue
            first = attr.strip().partition(".")[0]
            if first and first not in defined_names(archive.read(found).decode()):
                problems.append(f"entry point {group}:{name} = {value}: {found} does not define {first}")
    return problems


def wheel_problems(wheel: Path, source_root: Path = SOURCE_ROOT) -> list[str]:
    """Every module and data file of the tree the wheel misses, every file it holds that the tree has not (stale
    build output), and every entry point that does not resolve in it; empty when the wheel is complete."""
    expected = source_files(source_root)
    held = set(wheel_files(wheel))
    problems = [
        f"missing {'module' if path.endswith('.py') else 'data file'} {path} "
        f"(from {expected[path].relative_to(source_root)})"
        for path in sorted(set(expected) - held)
    ]
    problems += [f"not in the tree: {path}" for path in sorted(held - set(expected) - GENERATED)]
    return problems + entry_point_problems(wheel)


def wheel_differences(first: Path, second: Path) -> list[str]:
    """One line per file only one of two wheels holds, and per file both hold with different contents (metadata
    included: ``METADATA``, ``entry_points.txt``, ``RECORD``)."""
    with zipfile.ZipFile(first) as one, zipfile.ZipFile(second) as other:
        names, other_names = set(one.namelist()), set(other.namelist())
        differences = [f"only in {first.name} from {first.parent.name}: {name}" for name in sorted(names - other_names)]
        differences += [
            f"only in {second.name} from {second.parent.name}: {name}" for name in sorted(other_names - names)
        ]
        differences += [
            f"different: {name}" for name in sorted(names & other_names) if one.read(name) != other.read(name)
        ]
    return differences


if __name__ == "__main__":
    found = wheel_problems(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else SOURCE_ROOT)
    print("\n".join(found) or "the wheel holds the whole tree")
    sys.exit(1 if found else 0)
