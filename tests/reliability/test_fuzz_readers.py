"""Fuzz every reader through the CLI: a malformed corpus, cases, TREC run, qrels or replay file is exit 2 with a
one-line `file:line` message (file only for a replay, which is one JSON document) and never a traceback.

Each example is a valid file with one generated defect, drawn so that the file is invalid by construction
(Hypothesis shrinks toward the simplest defect on the first line).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import engine_retrievers as er

from ragmorph import check
from ragmorph.cli import EXIT_USAGE, main
from reliability.worldfiles import CASES, CHUNKS

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NEVER_CALLED = "reliability.faults:raises"

_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                          st.text(max_size=8))
_NON_OBJECTS = st.one_of(_JSON_SCALARS, st.lists(_JSON_SCALARS, max_size=3))
_NOT_STRINGS = st.one_of(st.none(), st.booleans(), st.integers(), st.lists(st.text(max_size=3), max_size=2),
                         st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def _not_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return True
    return False


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _line_defects(fields: tuple[str, ...], valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """One line that a reader of records shaped like `valid` (allowed `fields`) must refuse."""
    unknown_key = st.text(min_size=1, max_size=10).filter(lambda key: key not in fields)
    return st.one_of(
        # One line: a defect holding a line break is two lines, and the error names the second.
        st.text(min_size=1, max_size=20).filter(lambda t: t.strip() and t.splitlines() == [t] and _not_json(t)).map(str.encode),
        _NON_OBJECTS.map(lambda value: json.dumps(value).encode()),
        st.builds(lambda key, value: json.dumps({**valid, key: value}).encode(), unknown_key, _JSON_SCALARS),
        _NOT_STRINGS.map(lambda bad: json.dumps({**valid, "id": bad}).encode()),
        st.just(json.dumps({key: value for key, value in valid.items() if key != "id"}).encode()),
        st.integers(65, 3000).map(lambda depth: json.dumps({**valid, "metadata" if "text" in valid else "tags": None})
                                  .encode().replace(b"null", _nested(depth).encode())),
        st.sampled_from([b"\xff\xfe", b"\xc3(", b"\x80abc"]).map(lambda bad: b'{"id": "' + bad + b'"}'),
    )


def _run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def _assert_input_error(code: int, err: str, path: Path, line: int | None) -> None:
    assert code == EXIT_USAGE, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if line is None:
        assert lines[0].startswith(f"ragmorph: error: {path}: "), err
        return
    found = re.match(rf"ragmorph: error: {re.escape(str(path))}:(\d+): ", lines[0])
    assert found, err
    if int(found.group(1)) != line:
        # A repeated id is reported at its second occurrence, naming the first: the defect is one of the two.
        assert f"again (first on line {line})" in err, (line, err)


def _with_defect(rows: list[bytes], position: int, defect: bytes) -> tuple[bytes, int]:
    position = min(position, len(rows))
    return b"".join(row + b"\n" for row in [*rows[:position], defect, *rows[position:]]), position + 1


def _world_files(folder: Path, corpus: bytes, cases: bytes) -> tuple[Path, Path]:
    (folder / "corpus.jsonl").write_bytes(corpus)
    (folder / "cases.jsonl").write_bytes(cases)
    return folder / "corpus.jsonl", folder / "cases.jsonl"


_CORPUS_ROWS = [json.dumps(row).encode() for row in CHUNKS]
_CASE_ROWS = [json.dumps(row).encode() for row in CASES]
_CHUNK_FIELDS = ("id", "text", "source", "tenant", "version", "effective_from", "superseded_by", "metadata")
_CASE_FIELDS = ("id", "query", "tenant", "evidence", "claims", "answerable", "tags")

_CASE_CONTRADICTIONS = st.sampled_from([
    {"id": "z", "query": "x", "evidence": [["no-such-chunk"]]},
    {"id": "z", "query": "x", "evidence": ["hr-1", "it-1"]},
    {"id": "z", "query": "x", "evidence": [["hr-1"]], "answerable": False},
    {"id": "z", "query": "  "},
    {"id": "q1", "query": "a repeated id"},
]).map(lambda record: json.dumps(record).encode())
_CHUNK_CONTRADICTIONS = st.sampled_from([
    {"id": "z", "text": "x", "superseded_by": "z"},
    {"id": "hr-1", "text": "a repeated id"},
    {"id": "z", "text": "x", "effective_from": "yesterday"},
    {"id": "z", "text": "x", "version": 1.5},
]).map(lambda record: json.dumps(record).encode())


@FUZZ
@given(defect=st.one_of(_line_defects(_CHUNK_FIELDS, {"id": "z", "text": "x"}), _CHUNK_CONTRADICTIONS),
       position=st.integers(0, len(_CORPUS_ROWS)))
def test_malformed_corpus_files(defect: bytes, position: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        content, line = _with_defect(_CORPUS_ROWS, position, defect)
        corpus, cases = _world_files(Path(folder), content, b"".join(r + b"\n" for r in _CASE_ROWS))
        code, err = _run_cli(["run", "--retriever", NEVER_CALLED, "--corpus", str(corpus), "--cases", str(cases)])
        _assert_input_error(code, err, corpus, line)


@FUZZ
@given(defect=st.one_of(_line_defects(_CASE_FIELDS, {"id": "z", "query": "x"}), _CASE_CONTRADICTIONS),
       position=st.integers(0, len(_CASE_ROWS)))
def test_malformed_cases_files(defect: bytes, position: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        content, line = _with_defect(_CASE_ROWS, position, defect)
        corpus, cases = _world_files(Path(folder), b"".join(r + b"\n" for r in _CORPUS_ROWS), content)
        code, err = _run_cli(["run", "--retriever", NEVER_CALLED, "--corpus", str(corpus), "--cases", str(cases)])
        _assert_input_error(code, err, cases, line)


_TOKENS = st.text(st.characters(whitelist_categories=("L", "N"), max_codepoint=127), min_size=1, max_size=6)
_RUN_ROWS = [b"q1 Q0 hr-1 1 2.5 t", b"q1 Q0 hr-2 2 1.5 t", b"q2 Q0 it-1 1 3.0 t"]
_QREL_ROWS = [b"q1 0 hr-1 1", b"q2 0 it-1 1"]
_RUN_DEFECTS = st.one_of(
    st.lists(_TOKENS, min_size=1, max_size=9).filter(lambda cols: len(cols) != 6).map(lambda c: " ".join(c).encode()),
    st.builds(lambda rank: f"q1 Q0 ops-1 {rank} 1.0 t".encode(), _TOKENS.filter(lambda t: not t.lstrip("-").isdigit())),
    st.sampled_from(["nan", "inf", "-inf", "high", "1e999"]).map(lambda score: f"q1 Q0 ops-1 3 {score} t".encode()),
    st.just(b"q1 Q0 hr-1 9 0.5 t"),
    st.just(b"q1 Q0 \xff 1 1.0 t"),
)
_QREL_DEFECTS = st.one_of(
    st.lists(_TOKENS, min_size=1, max_size=7).filter(lambda cols: len(cols) != 4).map(lambda c: " ".join(c).encode()),
    st.builds(lambda rel: f"q1 0 ops-1 {rel}".encode(), _TOKENS.filter(lambda t: not t.lstrip("-").isdigit())),
    st.just(b"q1 0 hr-1 0"),
)


@FUZZ
@given(defect=_RUN_DEFECTS, position=st.integers(0, len(_RUN_ROWS)), in_run=st.booleans(),
       qrel_defect=_QREL_DEFECTS, qrel_position=st.integers(0, len(_QREL_ROWS)))
def test_malformed_trec_run_and_qrels_files(
    defect: bytes, position: int, in_run: bool, qrel_defect: bytes, qrel_position: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run, qrels = Path(folder) / "run.trec", Path(folder) / "qrels.trec"
        if in_run:
            content, line = _with_defect(_RUN_ROWS, position, defect)
            run.write_bytes(content)
            qrels.write_bytes(b"".join(r + b"\n" for r in _QREL_ROWS))
            bad = run
        else:
            content, line = _with_defect(_QREL_ROWS, qrel_position, qrel_defect)
            run.write_bytes(b"".join(r + b"\n" for r in _RUN_ROWS))
            qrels.write_bytes(content)
            bad = qrels
        code, err = _run_cli(["metrics", "--run", str(run), "--qrels", str(qrels)])
        _assert_input_error(code, err, bad, line)


@pytest.fixture(scope="module")
def replay_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The text of a real replay file (a tenant leak)."""
    corpus, cases = er.small_world()
    folder = tmp_path_factory.mktemp("fuzz-replays")
    report = check({"leaky": "support.engine_retrievers:IgnoresTenantFilter"}, corpus, cases[:1],
                   strategies=["tenancy"], max_examples=10, replay_dir=folder)
    return Path(next(r.violation["replay"] for r in report.violations)).read_text(encoding="utf-8")


_REQUIRED = ("schema", "relation", "perturbation", "world", "fingerprint", "settings", "expected")


def _replay_defects(text: str) -> st.SearchStrategy[str]:
    data = json.loads(text)
    end = len(text.rstrip()) - 1

    def replaced(path: tuple[str, ...], value: Any) -> str:
        copy = json.loads(text)
        target = copy
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return json.dumps(copy)

    def dropped(key: str) -> str:
        return json.dumps({k: v for k, v in data.items() if k != key})

    return st.one_of(
        st.integers(0, end).map(lambda cut: text[:cut]),
        st.sampled_from(_REQUIRED).map(dropped),
        st.tuples(st.sampled_from(_REQUIRED), _NON_OBJECTS).filter(
            lambda pair: not isinstance(pair[1], str) or pair[0] not in ("relation", "fingerprint")
        ).map(lambda pair: replaced((pair[0],), pair[1])),
        st.tuples(st.sampled_from(["text", "id", "tenant", "superseded_by"]), _NOT_STRINGS.filter(lambda v: v is not None)).map(
            lambda pair: replaced(("world", "corpus"), [{**data["world"]["corpus"][0], pair[0]: pair[1]}])
        ),
        st.text(min_size=1, max_size=30).filter(lambda t: t != data["world"]["case"]["query"]).map(
            lambda query: replaced(("world", "case", "query"), query)
        ),
        _NOT_STRINGS.map(lambda bad: replaced(("world", "params", "k"), bad)),
        st.integers(65, 2000).map(lambda depth: text.replace('"settings": {', '"settings": {"deep": ' + _nested(depth) + ", ", 1)),
    )


def test_malformed_replay_files(replay_text: str) -> None:
    @FUZZ
    @given(content=_replay_defects(replay_text))
    def check_one(content: str) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "replay.json"
            path.write_text(content, encoding="utf-8")
            code, err = _run_cli(["replay", str(path)])
            _assert_input_error(code, err, path, None)

    check_one()
