"""Fixtures of the reliability tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from reliability.worldfiles import CASES, CHUNKS, write_jsonl


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """(corpus.jsonl, cases.jsonl) of the small world in a fresh folder."""
    return write_jsonl(tmp_path / "corpus.jsonl", CHUNKS), write_jsonl(tmp_path / "cases.jsonl", CASES)
