"""Words a reader outside the team understands: the proposals are named by their KIP numbers (KIP-910, KIP-89,
KIP-310, KIP-558, KIP-901), and tests and docstrings cite Kafka's own sources or KIPs, never a notes file kept
outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TEAM_WORDS = re.compile(r"\bseeds? KIP|\bthe seed\b|\bseed's\b|\bSEED_", re.IGNORECASE)
""""The seed" as the team called the founding KIPs (a random seed, a hash seed or a seeded kill point is fine)."""

NOTES = re.compile(r"kafka-connect-runtime\.md|connector-anchors\.md|real-kafka-and-jars\.md|shared/reference|§\s*\d")
"""A notes file outside the repository, or a section of one."""


def tracked_texts() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.toml", "*.yml", "Makefile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in names if ROOT / name != Path(__file__).resolve()]


def offending_lines(pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in tracked_texts()
        if path.exists()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


def test_proposals_are_named_by_their_kip_numbers() -> None:
    assert offending_lines(TEAM_WORDS) == []


def test_no_notes_file_outside_the_repository_is_cited() -> None:
    assert offending_lines(NOTES) == []


def test_the_patterns_catch_what_they_are_for_and_spare_random_seeds() -> None:
    assert TEAM_WORDS.search("Source heartbeats (seed KIP-910)")
    assert TEAM_WORDS.search("Every option of the seed, with its default")
    assert not TEAM_WORDS.search("kill after a write: seed %d")
    assert not TEAM_WORDS.search("Kafka's Utils.murmur2 (seed 0x9747b28c)")
    assert NOTES.search("the black-box checks of kafka-connect-runtime.md §2c")
