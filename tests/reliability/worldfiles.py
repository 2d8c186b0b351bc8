"""A small native world on disk for the reliability tests (two tenants, one supersession, two cases)."""

from __future__ import annotations

import json
from pathlib import Path

CHUNKS = [
    {"id": "hr-1", "text": "Parental leave policy: twelve weeks of paid leave.", "tenant": "acme"},
    {"id": "hr-2", "text": "Revised parental leave policy starts in September.", "tenant": "acme"},
    {"id": "hr-0", "text": "Old parental leave policy: eight weeks.", "tenant": "acme", "superseded_by": "hr-2"},
    {"id": "it-1", "text": "Reset your password from the account page.", "tenant": None},
    {"id": "gx-1", "text": "Globex parental leave policy: ten weeks.", "tenant": "globex"},
    {"id": "ops-1", "text": "The office opens at eight in the morning.", "tenant": None},
]
CASES = [
    {"id": "q1", "query": "parental leave policy", "tenant": "acme", "evidence": [["hr-1", "hr-2"]]},
    {"id": "q2", "query": "reset password", "evidence": [["it-1"]]},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    """Write `rows` as JSON Lines and return the path."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_args(world: tuple[Path, Path], retriever: str, *extra: str) -> list[str]:
    """`ragmorph run` arguments over `world` with a small budget."""
    corpus, cases = world
    return ["run", "--retriever", retriever, "--corpus", str(corpus), "--cases", str(cases),
            "--max-examples", "3", "--strategies", "cutoff,repeat", *extra]
