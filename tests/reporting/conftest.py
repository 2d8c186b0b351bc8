"""Golden-file fixture for the report formats: RAGMORPH_UPDATE_GOLDEN=1 rewrites the files instead of comparing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def golden():
    """Compare text with tests/reporting/golden/<name> (or rewrite it when RAGMORPH_UPDATE_GOLDEN=1)."""

    def compare(name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("RAGMORPH_UPDATE_GOLDEN") == "1":
            path.write_text(text, encoding="utf-8")
        expected = path.read_text(encoding="utf-8")
        assert text == expected, f"{name} differs from the golden file; if intended, rerun with RAGMORPH_UPDATE_GOLDEN=1"

    return compare
