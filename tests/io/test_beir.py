"""BEIR folders: a golden example, the documented mapping (title, evidence groups, split) and error paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph.errors import InputError
from ragmorph.io import read_beir
from ragmorph.model import Case, Chunk


def _folder(tmp_path: Path, corpus: list[dict], queries: list[dict], qrels: str, split: str = "test") -> Path:
    root = tmp_path / "scifact"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    (root / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
    return root


CORPUS = [
    {"_id": "d1", "title": "Leave policy", "text": "Parental leave is 16 weeks.", "metadata": {"url": "u1"}},
    {"_id": "d2", "title": "", "text": "Laptops are replaced every three years."},
    {"_id": 3, "title": "Expenses", "text": "Travel is reimbursed within 30 days.", "lang": "en"},
]
QUERIES = [
    {"_id": "q0", "text": "never judged"},
    {"_id": "q1", "text": "How long is parental leave?"},
    {"_id": "q2", "text": "laptop and travel"},
    {"_id": "q3", "text": "only a zero judgment"},
]
QRELS = "query-id\tcorpus-id\tscore\nq2\td2\t1\nq1\td1\t2\nq2\t3\t1\nq2\td1\t0\nq3\td1\t0\n"


def test_golden_folder(tmp_path: Path) -> None:
    corpus, cases = read_beir(_folder(tmp_path, CORPUS, QUERIES, QRELS))
    assert corpus.chunks == (
        Chunk("d1", "Parental leave is 16 weeks.", metadata={"url": "u1", "title": "Leave policy"}),
        Chunk("d2", "Laptops are replaced every three years."),
        Chunk("3", "Travel is reimbursed within 30 days.", metadata={"lang": "en", "title": "Expenses"}),
    )
    assert cases == (
        Case("q1", "How long is parental leave?", evidence=[["d1"]]),
        Case("q2", "laptop and travel", evidence=[["d2"], ["3"]]),
        Case("q3", "only a zero judgment"),
    )
    assert not cases[2].is_answerable


def test_title_prepend(tmp_path: Path) -> None:
    corpus, _ = read_beir(_folder(tmp_path, CORPUS, QUERIES, QRELS), title="prepend")
    assert corpus["d1"].text == "Leave policy\nParental leave is 16 weeks."
    assert corpus["d2"].text == "Laptops are replaced every three years."


def test_other_split(tmp_path: Path) -> None:
    root = _folder(tmp_path, CORPUS, QUERIES, "q1\td1\t1\n", split="dev")
    _, cases = read_beir(root, split="dev")
    assert [c.id for c in cases] == ["q1"]
    with pytest.raises(InputError, match=r"available splits: \['dev'\]"):
        read_beir(root)


@pytest.mark.parametrize(
    ("qrels", "line", "needle"),
    [
        ("q1\td1\n", 1, "3 tab-separated columns"),
        ("q1\td1\tyes\n", 1, "integer score"),
        ("query-id\tcorpus-id\tscore\nq1\tnope\t1\n", 2, "corpus-id present in corpus.jsonl"),
        ("q1\td1\t1\nq1\td1\t1\n", 2, "first on line 1"),
    ],
)
def test_qrels_errors_name_file_and_line(tmp_path: Path, qrels: str, line: int, needle: str) -> None:
    root = _folder(tmp_path, CORPUS, QUERIES, qrels)
    with pytest.raises(InputError) as caught:
        read_beir(root)
    assert caught.value.file == str(root / "qrels" / "test.tsv") and caught.value.line == line
    assert needle in str(caught.value)


def test_corpus_and_query_errors(tmp_path: Path) -> None:
    root = _folder(tmp_path, [*CORPUS, {"_id": "d1", "text": "again"}], QUERIES, QRELS)
    with pytest.raises(InputError, match="first on line 1") as caught:
        read_beir(root)
    assert caught.value.line == 4
    root = _folder(tmp_path / "b", CORPUS, QUERIES[:1], QRELS)
    with pytest.raises(InputError, match="every judged query"):
        read_beir(root)
    root = _folder(tmp_path / "c", [{"_id": "d1", "text": 5}], QUERIES, "q1\td1\t1\n")
    with pytest.raises(InputError, match="expected a string") as caught:
        read_beir(root)
    assert caught.value.field == "text"
    with pytest.raises(InputError, match="not a folder"):
        read_beir(tmp_path / "missing")
