"""Evidence spans in cases.jsonl: `{"chunk": id, "span": [start, end]}` entries, read, written and checked at load."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from ragmorph.cli import EXIT_USAGE, main
from ragmorph.errors import InputError
from ragmorph.io import read_cases, write_cases, write_corpus
from ragmorph.model import Case, Chunk, Corpus

CORPUS = Corpus([Chunk("hr-12#3", "Leave starts on 1 September 2026 for all staff."), Chunk("hr-14#1", "Other text.")])


def _cases_file(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_span_entry_reads_into_ids_and_spans_and_writes_back_the_same(tmp_path: Path) -> None:
    row = {"id": "q7", "query": "When?", "evidence": [[{"chunk": "hr-12#3", "span": [16, 32]}, "hr-14#1"]]}
    (case,) = read_cases(_cases_file(tmp_path, row), corpus=CORPUS)
    assert case.evidence == (("hr-12#3", "hr-14#1"),)
    assert case.spans == {"hr-12#3": (16, 32)}
    assert CORPUS["hr-12#3"].text[16:32] == "1 September 2026"
    written = tmp_path / "again.jsonl"
    write_cases([case], written)
    assert json.loads(written.read_text())["evidence"] == [[{"chunk": "hr-12#3", "span": [16, 32]}, "hr-14#1"]]
    assert read_cases(written, corpus=CORPUS) == (case,)
    # A one-entry group may be written bare, like a bare id; groups of alternatives keep their spans.
    bare = {"id": "q8", "query": "When?", "evidence": [{"chunk": "hr-12#3", "span": [0, 5]}]}
    assert read_cases(_cases_file(tmp_path, bare), corpus=CORPUS)[0].spans == {"hr-12#3": (0, 5)}
    # Python callers build the same case either way, and evolve keeps the spans.
    assert Case("q7", "When?", evidence=[["hr-12#3", "hr-14#1"]], spans={"hr-12#3": [16, 32]}) == case
    assert attrs.evolve(case, tags=["hr"]).spans == case.spans


@pytest.mark.parametrize(
    ("entry", "field", "needle"),
    [
        ({"chunk": "hr-12#3", "span": [40, 60]}, "evidence[0][0].span", "inside its text (0..47 characters)"),
        ({"chunk": "hr-12#3", "span": [9, 3]}, "evidence[0][0].span", "write the smaller offset first"),
        ({"chunk": "hr-12#3", "span": [4, 4]}, "evidence[0][0].span", "0 <= start < end"),
        ({"chunk": "hr-12#3", "span": [-1, 4]}, "evidence[0][0].span", "0 <= start < end"),
        ({"chunk": "hr-12#3", "span": [1.5, 4]}, "evidence[0][0].span", "two integer character offsets"),
        ({"chunk": "hr-12#3", "span": [True, 4]}, "evidence[0][0].span", "two integer character offsets"),
        ({"chunk": "hr-12#3", "span": "0-4"}, "evidence[0][0].span", "two integer character offsets"),
        ({"chunk": "hr-12#3", "span": [1, 2, 3]}, "evidence[0][0].span", "two integer character offsets"),
        ({"chunk": "nope", "span": [0, 2]}, "evidence[0]", "not in the corpus"),
        ({"chunk": 7, "span": [0, 2]}, "evidence[0][0].chunk", "non-empty string"),
        ({"span": [0, 2]}, "evidence[0][0]", 'no "chunk" key'),
        ({"chunk": "hr-12#3", "start": 0}, "evidence[0][0]", "unknown key(s) ['start']"),
    ],
)
def test_a_bad_span_names_file_line_field_and_what_was_expected(
    tmp_path: Path, entry: dict, field: str, needle: str
) -> None:
    path = _cases_file(tmp_path, {"id": "q1", "query": "x"}, {"id": "q2", "query": "y", "evidence": [[entry]]})
    with pytest.raises(InputError) as caught:
        read_cases(path, corpus=CORPUS)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert needle in str(caught.value)


def test_one_chunk_carries_one_span_per_case(tmp_path: Path) -> None:
    twice = {"id": "q", "query": "x", "evidence": [[{"chunk": "hr-12#3", "span": [0, 5]}], [{"chunk": "hr-12#3", "span": [6, 9]}]]}
    mixed = {"id": "q", "query": "x", "evidence": [["hr-12#3"], [{"chunk": "hr-12#3", "span": [0, 5]}]]}
    for row in (twice, mixed):
        with pytest.raises(InputError, match="same span wherever the case cites it") as caught:
            read_cases(_cases_file(tmp_path, row), corpus=CORPUS)
        assert caught.value.field == "evidence[1][0]"
    with pytest.raises(InputError, match="only for chunks the evidence cites"):
        Case("q", "x", evidence=[["hr-14#1"]], spans={"hr-12#3": (0, 5)})
    # Two span entries side by side are as ambiguous as two bare ids: alternatives or both required?
    with pytest.raises(InputError, match="flat list"):
        Case("q", "x", evidence=[{"chunk": "hr-12#3", "span": [0, 5]}, {"chunk": "hr-14#1", "span": [0, 2]}])


def test_ragmorph_run_refuses_a_span_past_the_text_with_exit_2_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    write_corpus(CORPUS, corpus)
    cases = _cases_file(tmp_path, {"id": "q1", "query": "leave", "evidence": [[{"chunk": "hr-12#3", "span": [30, 90]}]]})
    code = main(["run", "--retriever", "ragmorph.adapters:BM25Retriever", "--corpus", str(corpus), "--cases", str(cases)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{cases}:1: field 'evidence[0][0].span': expected the span of chunk 'hr-12#3' inside its text" in err
