"""Contradictory or hostile input is an input error naming file, line and field (items 11 and 16 of issue 12).

A `superseded_by` naming an id absent from the corpus is not an error: it has a documented meaning (the chunk
was replaced by a version this corpus does not hold: superseded, not stale), which the last test pins.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_USAGE, main
from ragmorph.errors import InputError
from ragmorph.io import read_cases, read_corpus
from ragmorph.metrics import evaluate
from ragmorph.model import Case, Chunk, Corpus, Filters, Ranking
from reliability.worldfiles import CASES, CHUNKS, run_args, write_jsonl


def _corpus_error(tmp_path: Path, rows: list[dict]) -> InputError:
    with pytest.raises(InputError) as caught:
        read_corpus(write_jsonl(tmp_path / "corpus.jsonl", rows))
    return caught.value


def _cases_error(tmp_path: Path, rows: list[dict]) -> InputError:
    with pytest.raises(InputError) as caught:
        read_cases(write_jsonl(tmp_path / "cases.jsonl", rows))
    return caught.value


def test_a_supersession_cycle_names_the_line_of_a_chunk_in_it(tmp_path: Path) -> None:
    error = _corpus_error(tmp_path, [
        {"id": "x", "text": "x"},
        {"id": "a", "text": "old", "superseded_by": "b"},
        {"id": "b", "text": "new", "superseded_by": "a"},
    ])
    assert (error.line, error.field) == (2, "superseded_by")
    assert "'a' -> 'b' -> 'a'" in error.message


def test_a_longer_cycle_reached_from_a_chain_is_found(tmp_path: Path) -> None:
    error = _corpus_error(tmp_path, [
        {"id": "a", "text": "a", "superseded_by": "b"},
        {"id": "b", "text": "b", "superseded_by": "c"},
        {"id": "c", "text": "c", "superseded_by": "d"},
        {"id": "d", "text": "d", "superseded_by": "b"},
    ])
    assert "'b' -> 'c' -> 'd' -> 'b'" in error.message and error.line == 2


def test_self_supersession_is_an_error(tmp_path: Path) -> None:
    error = _corpus_error(tmp_path, [{"id": "a", "text": "a"}, {"id": "b", "text": "b", "superseded_by": "b"}])
    assert (error.line, error.field) == (2, "superseded_by")
    assert "own id" in error.message


def test_unanswerable_with_evidence_is_an_error(tmp_path: Path) -> None:
    error = _cases_error(tmp_path, [{"id": "q", "query": "x", "evidence": [["a"]], "answerable": False}])
    assert (error.line, error.field) == (1, "answerable")


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_an_empty_query_is_an_error(tmp_path: Path, query: str) -> None:
    error = _cases_error(tmp_path, [{"id": "q0", "query": "ok"}, {"id": "q", "query": query}])
    assert (error.line, error.field) == (2, "query")


def test_a_flat_evidence_list_is_ambiguous_and_refused_with_both_spellings(tmp_path: Path) -> None:
    error = _cases_error(tmp_path, [{"id": "q", "query": "x", "evidence": ["a", "b"]}])
    assert (error.line, error.field) == (1, "evidence")
    assert "[['a'], ['b']]" in error.message and "[['a', 'b']]" in error.message


def test_one_bare_id_and_mixed_lists_keep_their_documented_meaning(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "q1", "query": "x", "evidence": ["a"]},
        {"id": "q2", "query": "x", "evidence": ["a", ["b", "c"]]},
    ])
    assert [case.evidence for case in read_cases(path)] == [(("a",),), (("a",), ("b", "c"))]


def test_a_successor_absent_from_the_corpus_means_superseded_but_not_stale() -> None:
    corpus = Corpus([Chunk("old", "leave policy", superseded_by="retired-version"), Chunk("b", "other")])
    case = Case("q", "leave policy", evidence=[["b"]])
    values = evaluate(Ranking.of(["old", "b"]), case, ["Stale@2", "Superseded@2"], corpus=corpus)
    assert values["Stale@2"] == 0 and values["Superseded@2"] == 1
    assert not Filters(current_only=True).allows(corpus["old"])


@pytest.mark.parametrize("depth", [65, 2_000, 200_000])
def test_deeply_nested_json_is_an_input_error_at_its_line(
    world: tuple[Path, Path], depth: int, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _ = world
    nested = '{"id": "deep", "text": "x", "metadata": {"m": ' + "[" * depth + "]" * depth + "}}"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in CHUNKS) + nested + "\n", encoding="utf-8")
    assert main(run_args(world, "reliability.faults:raises")) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{corpus}:{len(CHUNKS) + 1}: expected JSON nested at most 64 levels deep" in err
    assert "Traceback" not in err


def test_nesting_up_to_the_limit_still_reads(tmp_path: Path) -> None:
    metadata = {"m": json.loads("[" * 62 + "]" * 62)}
    corpus = read_corpus(write_jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x", "metadata": metadata}]))
    assert corpus["a"].metadata["m"] == metadata["m"]


def test_cases_fixture_is_valid(world: tuple[Path, Path]) -> None:
    corpus = read_corpus(world[0])
    assert [case.id for case in read_cases(world[1], corpus=corpus)] == [row["id"] for row in CASES]
