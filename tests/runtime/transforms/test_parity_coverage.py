"""Every built-in transformation and predicate has cases in the parity tables (``support.parity_report`` reads
them): a built-in added without parity cases fails here."""

from __future__ import annotations

from headwater.runtime.transforms.builtins import BUILTIN_PREDICATES, FIELD_TRANSFORMATIONS, RECORD_TRANSFORMATIONS
from support.parity_report import cases


def test_every_builtin_has_parity_cases() -> None:
    kinds = {case[0] for case in cases()}
    tested = {kind.split(" if ")[0] for kind in kinds}
    guards = {kind.split(" if ")[1].removesuffix(" (negated)") for kind in kinds if " if " in kind}
    builtins = {name for name in {**FIELD_TRANSFORMATIONS, **RECORD_TRANSFORMATIONS} if "." not in name}
    assert builtins - tested == set()
    assert {name for name in BUILTIN_PREDICATES if "." not in name} - guards == set()
