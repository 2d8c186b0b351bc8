"""Native corpus.jsonl / cases.jsonl: lossless round trip and one test per error path (file, line, field)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.generators import cases_for, corpora

from ragmorph.errors import InputError
from ragmorph.io import read_cases, read_corpus, write_cases, write_corpus
from ragmorph.model import Case, Chunk, Corpus

ROUND_TRIP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@ROUND_TRIP
@given(corpora(min_size=0, max_size=6).flatmap(lambda c: st.tuples(st.just(c), cases_for(c, min_size=0))))
def test_round_trip_is_lossless_and_byte_stable(tmp_path: Path, drawn: tuple[Corpus, tuple[Case, ...]]) -> None:
    corpus, cases = drawn
    corpus_file, cases_file = tmp_path / "corpus.jsonl", tmp_path / "cases.jsonl"
    write_corpus(corpus, corpus_file)
    write_cases(cases, cases_file)
    first_bytes = corpus_file.read_bytes(), cases_file.read_bytes()

    read_back = read_corpus(corpus_file)
    read_cases_back = read_cases(cases_file, corpus=read_back)
    assert read_back == corpus
    assert read_cases_back == cases
    assert read_back.fingerprint == corpus.fingerprint

    write_corpus(read_back, corpus_file)
    write_cases(read_cases_back, cases_file)
    assert (corpus_file.read_bytes(), cases_file.read_bytes()) == first_bytes


def test_minimal_fields_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "x"}\r\n\n   \n{"id": "b", "text": ""}\n')
    corpus = read_corpus(path)
    assert corpus.ids == ("a", "b")
    assert corpus["a"] == Chunk("a", "x")


def test_written_file_is_utf8_with_fixed_key_order(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    write_corpus(Corpus([Chunk("é#1", "naïve 😀", metadata={"z": 1, "a": {"y": 2, "b": 1}})]), path)
    assert path.read_bytes().decode("utf-8") == (
        '{"id": "é#1", "text": "naïve 😀", "source": null, "tenant": null, "version": null, '
        '"effective_from": null, "superseded_by": null, "metadata": {"a": {"b": 1, "y": 2}, "z": 1}}\n'
    )


def _error(reader, tmp_path: Path, content: bytes | str, **kwargs) -> InputError:
    path = tmp_path / "input.jsonl"
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    with pytest.raises(InputError) as caught:
        reader(path, **kwargs)
    assert caught.value.file == str(path)
    assert str(path) in str(caught.value)
    return caught.value


GOOD = '{"id": "a", "text": "x"}\n'


@pytest.mark.parametrize(
    ("content", "line", "field", "needle"),
    [
        (GOOD + '{"id": "b", "text": "x"\n', 2, None, "expected valid JSON"),
        (GOOD + "[1, 2]\n", 2, None, "one JSON object per line"),
        (GOOD + '{"id": "b", "text": NaN}\n', 2, None, "NaN is not valid JSON"),
        (GOOD + '{"id": "b", "text": "x", "text": "y"}\n', 2, None, "duplicate key 'text'"),
        ('{"id": "b"}\n', 1, "text", "expected field 'text'"),
        ('{"id": "b", "txt": "x"}\n', 1, "txt", "did you mean 'text'?"),
        ('{"id": "b", "text": "x", "lang": "en"}\n', 1, "lang", 'put extra data under "metadata"'),
        ('{"id": 3, "text": "x"}\n', 1, "id", "expected a non-empty string"),
        ('{"id": "b", "text": ["x"]}\n', 1, "text", "expected a string"),
        ('{"id": "b", "text": "x", "version": 1.5}\n', 1, "version", "expected an integer"),
        ('{"id": "b", "text": "x", "version": true}\n', 1, "version", "expected an integer"),
        ('{"id": "b", "text": "x", "effective_from": "2026-13-01"}\n', 1, "effective_from", "ISO date"),
        ('{"id": "b", "text": "x", "effective_from": 20260901}\n', 1, "effective_from", "ISO date"),
        ('{"id": "b", "text": "x", "metadata": ["en"]}\n', 1, "metadata", "JSON object"),
        ('{"id": "b", "text": "x", "tenant": ""}\n', 1, "tenant", "non-empty string"),
        (GOOD + "\n" + GOOD, 3, "id", "first on line 1"),
    ],
)
def test_corpus_errors_name_file_line_and_field(
    tmp_path: Path, content: str, line: int, field: str | None, needle: str
) -> None:
    error = _error(read_corpus, tmp_path, content)
    assert (error.line, error.field) == (line, field)
    assert needle in str(error)
    assert f":{line}" in str(error)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    error = _error(read_corpus, tmp_path, GOOD.encode() + b'{"id": "b", "text": "caf\xe9"}\n')
    assert error.line == 2
    assert "UTF-8" in str(error) and "column 25" in str(error)


@pytest.mark.parametrize(
    ("content", "field", "needle"),
    [
        ('{"id": "q"}\n', "query", "expected field 'query'"),
        ('{"id": "q", "querry": "x"}\n', "querry", "did you mean 'query'?"),
        ('{"id": "q", "query": "x", "evidence": "a"}\n', "evidence", "list of evidence groups"),
        ('{"id": "q", "query": "x", "evidence": {"a": 1}}\n', "evidence", "list of evidence groups"),
        ('{"id": "q", "query": "x", "evidence": [[]]}\n', "evidence[0]", "empty group"),
        ('{"id": "q", "query": "x", "evidence": [["a"], 7]}\n', "evidence[1]", "list of chunk ids"),
        ('{"id": "q", "query": "x", "evidence": [["a", 7]]}\n', "evidence[0]", "chunk ids"),
        ('{"id": "q", "query": "x", "tags": "hr"}\n', "tags", "list of strings"),
        ('{"id": "q", "query": "x", "tags": {"hr": 1}}\n', "tags", "list of strings"),
        ('{"id": "q", "query": "x", "claims": [1]}\n', "claims", "list of strings"),
        ('{"id": "q", "query": "x", "answerable": "yes"}\n', "answerable", "true, false or null"),
    ],
)
def test_case_errors_name_file_line_and_field(tmp_path: Path, content: str, field: str, needle: str) -> None:
    error = _error(read_cases, tmp_path, content)
    assert (error.line, error.field) == (1, field)
    assert needle in str(error)


def test_duplicate_case_id_names_both_lines(tmp_path: Path) -> None:
    case = '{"id": "q1", "query": "x"}\n'
    error = _error(read_cases, tmp_path, case + case)
    assert error.line == 2 and "first on line 1" in str(error)


def test_unknown_evidence_id_names_case_id_and_line(tmp_path: Path) -> None:
    corpus = Corpus([Chunk("a", "x")])
    content = (
        '{"id": "q1", "query": "x", "evidence": [["a"]]}\n\n'
        '{"id": "q2", "query": "y", "evidence": [["a", "zz"]]}\n'
    )
    error = _error(read_cases, tmp_path, content, corpus=corpus)
    assert (error.line, error.field, error.value) == (3, "evidence[0]", "zz")
    assert "'q2'" in str(error) and "'zz'" in str(error)


def test_evidence_shorthand_reads_as_one_member_groups(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "q", "query": "x", "evidence": ["a", ["b", "c"]]}\n', encoding="utf-8")
    assert read_cases(path)[0].evidence == (("a",), ("b", "c"))


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_corpus(tmp_path / "nope.jsonl")


def test_writer_rejects_non_json_metadata_and_leaves_old_file(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    write_corpus(Corpus([Chunk("a", "x")]), path)
    before = path.read_bytes()
    with pytest.raises(InputError, match="metadata") as caught:
        write_corpus(Corpus([Chunk("a", "x", metadata={"score": float("nan")})]), path)
    assert "'a'" in str(caught.value)
    with pytest.raises(InputError, match="surrogate"):
        write_corpus(Corpus([Chunk("a", "bad \udc80")]), path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["corpus.jsonl"]


def test_writer_replaces_atomically_while_a_reader_has_the_file_open(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    write_corpus(Corpus([Chunk("a", "old")]), path)
    with open(path, "rb") as reader:
        write_corpus(Corpus([Chunk("a", "new")]), path)
        assert b'"old"' in reader.read()
    assert read_corpus(path)["a"].text == "new"


def test_writer_follows_symlinks_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    write_corpus(Corpus([Chunk("a", "x")]), target)
    target.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    write_corpus(Corpus([Chunk("b", "y")]), link)
    assert link.is_symlink()
    assert read_corpus(target).ids == ("b",)
    assert target.stat().st_mode & 0o777 == 0o640


def test_write_cases_rejects_duplicate_ids(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="twice"):
        write_cases([Case("q", "x"), Case("q", "y")], tmp_path / "cases.jsonl")
