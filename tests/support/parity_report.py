"""The parity table of issue 22: every case of the ``CASES`` and ``SCHEMA_CASES`` lists of the parity tests
(``tests/runtime/transforms/test_parity_*.py``) through Headwater's chain and Kafka Connect's own transforms,
summed up per transformation as a Markdown table (cases, records, records that agree). Run it from the repository::

    PYTHONPATH=tests .venv/bin/python -m support.parity_report
"""

from __future__ import annotations

import importlib.util
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from support.java_transforms import JavaTransforms
from support.transform_parity import pairs, schema_pairs

TESTS = Path(__file__).resolve().parent.parent / "runtime" / "transforms"
PREFIX = "org.apache.kafka.connect.transforms."


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"parity_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kind(config: dict[str, str]) -> str:
    """The case's transformation, by Kafka's short name (the first of a chain), and the predicate guarding it."""
    first = config["transforms"].split(",")[0].strip()
    kind = config[f"transforms.{first}.type"].removeprefix(PREFIX)
    guard = config.get(f"transforms.{first}.predicate")
    if guard:
        negated = " (negated)" if config.get(f"transforms.{first}.negate") == "true" else ""
        kind += f" if {config[f'predicates.{guard}.type'].removeprefix(PREFIX + 'predicates.')}{negated}"
    return kind


def cases() -> list[tuple[str, bool, dict[str, str], list[dict[str, Any]], dict[str, str] | None]]:
    """(transformation, with schemas, config, records, Kafka's JsonConverter settings) for every parity case, once
    (a list that gathers others is not counted twice). A case is one with schemas when a record of it has one; a
    module's ``SCHEMA_CONVERTER`` gives the converter settings its schema cases run with."""
    found = []
    seen: set[tuple[int, int]] = set()
    for path in sorted(TESTS.glob("test_parity_*.py")):
        module = _module(path)
        converter = getattr(module, "SCHEMA_CONVERTER", None)
        for name, value in vars(module).items():
            if not (name.endswith("CASES") and isinstance(value, list)):
                continue
            for _, config, records in value:
                if (id(config), id(records)) in seen:
                    continue
                seen.add((id(config), id(records)))
                schemas = any(record.get("key_schema") or record.get("value_schema") for record in records)
                found.append((_kind(config), schemas, config, records, converter if schemas else None))
    return found


def main() -> None:
    totals: dict[tuple[str, bool], list[int]] = defaultdict(lambda: [0, 0, 0])
    with JavaTransforms.start() as java:
        for kind, schemas, config, records, converter in cases():
            if schemas:
                answers = schema_pairs(java, config, records, converter=converter)
            else:
                answers = pairs(java, config, records)
            row = totals[kind, schemas]
            row[0] += 1
            row[1] += len(records)
            row[2] += sum(mine == theirs for mine, theirs in answers)
    print("| Transformation | values | cases | records | agree |")
    print("|---|---|---|---|---|")
    for (kind, schemas), (count, records, agree) in sorted(totals.items()):
        print(f"| {kind} | {'with schemas' if schemas else 'schemaless'} | {count} | {records} | {agree} |")
    print(
        f"| all | | {sum(r[0] for r in totals.values())} | {sum(r[1] for r in totals.values())} | "
        f"{sum(r[2] for r in totals.values())} |"
    )


if __name__ == "__main__":
    sys.exit(main())
