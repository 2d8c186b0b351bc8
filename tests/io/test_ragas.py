"""Ragas-style rows: real SingleTurnSample field names, the documented id rules and error paths."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ragmorph.errors import InputError
from ragmorph.io import read_ragas
from ragmorph.io.ragas import RAGAS_FIELDS, content_id
from ragmorph.model import Chunk, Ranking

ROWS = [
    {
        "user_input": "How long is parental leave?",
        "retrieved_contexts": ["Leave is 16 weeks.", "Laptops last three years."],
        "retrieved_context_ids": ["hr-1", "it-4"],
        "reference": "16 weeks",
        "reference_context_ids": ["hr-1"],
        "response": "Sixteen weeks.",
    },
    {
        "id": "q-laptop",
        "user_input": "When are laptops replaced?",
        "retrieved_contexts": ["Leave is 16 weeks."],
        "reference_contexts": ["Laptops last three years.", "Old laptops are recycled."],
        "reference": "Every three years",
    },
    {"user_input": "Who is the CEO?", "retrieved_context_ids": [7], "reference": "Not documented"},
]


def _write(tmp_path: Path, rows, as_list: bool) -> Path:
    path = tmp_path / ("rows.json" if as_list else "rows.jsonl")
    text = json.dumps(rows) if as_list else "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return path


def test_field_names_match_ragas_single_turn_sample() -> None:
    # find_spec locates the package without importing it (ragas' __init__ pulls optional LLM clients).
    spec = importlib.util.find_spec("ragas")
    if spec is None or spec.origin is None:
        pytest.skip("ragas is not installed")
    source = Path(spec.origin).parent / "dataset_schema.py"
    text = source.read_text(encoding="utf-8")
    for name in RAGAS_FIELDS:
        assert f"    {name}: t.Optional[" in text, name


@pytest.mark.parametrize("as_list", [False, True])
def test_golden_rows(tmp_path: Path, as_list: bool) -> None:
    data = read_ragas(_write(tmp_path, ROWS, as_list))
    laptop = content_id("Laptops last three years.")
    recycled = content_id("Old laptops are recycled.")
    leave = content_id("Leave is 16 weeks.")
    assert data.corpus.chunks == (
        Chunk("hr-1", "Leave is 16 weeks."),
        Chunk("it-4", "Laptops last three years."),
        Chunk(leave, "Leave is 16 weeks."),
        Chunk(laptop, "Laptops last three years."),
        Chunk(recycled, "Old laptops are recycled."),
        Chunk("7", "", metadata={"text_missing": True}),
    )
    first, second, third = data.cases
    assert (first.id, first.evidence, first.claims, first.answerable) == ("row-1", (("hr-1",),), ("16 weeks",), None)
    assert second.id == "q-laptop" and second.evidence == ((laptop,), (recycled,))
    assert (third.evidence, third.answerable, third.is_answerable) == ((), True, True)
    assert data.rankings == {
        "row-1": Ranking.of(["hr-1", "it-4"]),
        "q-laptop": Ranking.of([leave]),
        "row-3": Ranking.of(["7"]),
    }


@pytest.mark.parametrize(
    ("rows", "line", "field", "needle"),
    [
        ([{"question": "x"}], 1, "question", "unknown field"),
        ([{"user_imput": "x"}], 1, "user_imput", "did you mean 'user_input'?"),
        ([{"user_input": 3}], 1, "user_input", "expected a string"),
        ([{"user_input": "x", "retrieved_contexts": "a"}], 1, "retrieved_contexts", "expected a list"),
        (
            [{"user_input": "x", "retrieved_contexts": ["a", "b"], "retrieved_context_ids": ["1"]}],
            1, "retrieved_context_ids", "as many",
        ),
        (
            [
                {"user_input": "x", "retrieved_contexts": ["a"], "retrieved_context_ids": ["1"]},
                {"user_input": "y", "reference_contexts": ["b"], "reference_context_ids": ["1"]},
            ],
            2, "retrieved_context_ids", "other in row 1",
        ),
        ([{"user_input": "x", "id": "a"}, {"user_input": "y", "id": "a"}], 2, "id", "twice"),
        ([["x"]], 1, None, "JSON object"),
    ],
)
def test_errors_name_file_row_and_field(tmp_path: Path, rows, line: int, field, needle: str) -> None:
    path = _write(tmp_path, rows, as_list=False)
    with pytest.raises(InputError) as caught:
        read_ragas(path)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), line, field)
    assert needle in str(caught.value)


def test_bad_json_in_a_list_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text('[{"user_input": "x"},', encoding="utf-8")
    with pytest.raises(InputError, match="expected valid JSON"):
        read_ragas(path)
