"""Replay files: schema-checked, fingerprinted, never a false "fixed", never overwriting each other (items 4, 8).

A replay file comes from a real run against a retriever with a planted bug. Every malformed field is exit 2
naming the field; any edit of the world, perturbation, relation or history is exit 2 (fingerprint); a violation
the run could not reproduce on a fresh index replays as an error (exit 3), never as fixed (exit 0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from support import engine_retrievers as er

from ragmorph import check
from ragmorph.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.model import Case

CORPUS, CASES = er.small_world()
LEAKY = "support.engine_retrievers:IgnoresTenantFilter"
FIXED = "ragmorph.adapters:BM25Retriever"


@pytest.fixture(scope="module")
def replay_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A replay file of a tenancy leak (the file every test edits a copy of)."""
    folder = tmp_path_factory.mktemp("replays")
    report = check({"leaky": LEAKY}, CORPUS, CASES[:1], strategies=["tenancy"], max_examples=10, replay_dir=folder)
    paths = [r.violation["replay"] for r in report.violations if r.violation.get("replay")]
    assert paths
    return Path(paths[0])


def _edited(replay_file: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(replay_file.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _replay(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["replay", str(path), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out + captured.err


def test_an_unchanged_file_still_reproduces_and_a_fix_replays_as_fixed(
    replay_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _replay(replay_file, capsys)[0] == EXIT_VIOLATIONS
    assert _replay(replay_file, capsys, "--retriever", FIXED)[0] == EXIT_OK


def _drop(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.pop(name)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[int(last) if isinstance(target, list) else last] = value

    return edit


def _span_past_text(data: dict[str, Any]) -> None:
    chunk = data["world"]["corpus"][0]
    data["world"]["case"]["evidence"] = [[{"chunk": chunk["id"], "span": [0, len(chunk["text"]) + 1]}]]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_drop("relation"), "relation"),
        (_drop("world"), "world"),
        (_drop("perturbation"), "perturbation"),
        (_drop("fingerprint"), "fingerprint"),
        (_set("relation", 7), "relation"),
        (_set("relation", "no.such_relation"), "relation"),
        (_set("perturbation", ["x"]), "perturbation"),
        (_set("perturbation.type", "Nope"), "perturbation"),
        (_set("world.corpus", {"a": 1}), "world.corpus"),
        (_set("world.corpus.0", "text"), "world.corpus[0]"),
        (_set("world.corpus.0.text", 5), "world.corpus[0].text"),
        (_set("world.case", None), "world.case"),
        (_set("world.case.evidence", ["a", "b"]), "world.case.evidence"),
        (_span_past_text, "world.case.evidence[0][0].span"),
        (_set("world.params", {"k": 3}), "world.params"),
        (_set("world.params.k", "three"), "world.params.k"),
        (_set("world.params.filters.where", {"$and": [{"n": {"$gt": "x"}}]}), "world.params.where.$and[0].n.$gt"),
        (_set("settings", []), "settings"),
        (_set("settings.timeout", "soon"), "settings.timeout"),
        (_set("history", "yes"), "history"),
        (_set("retriever", "x"), "retriever"),
        (_set("retriever.traits", "lexical"), "retriever.traits"),
        (_set("expected.reproducible", "no"), "expected.reproducible"),
        (_set("schema", "ragmorph.replay/0"), "schema"),
    ],
)
def test_a_malformed_field_is_exit_2_naming_it(
    replay_file: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None], field: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, output = _replay(_edited(replay_file, tmp_path, edit), capsys)
    assert code == EXIT_USAGE, output
    assert f"field {field!r}" in output


@pytest.mark.parametrize(
    "edit",
    [
        _set("world.corpus.0.text", "edited text"),
        _set("world.corpus.0.tenant", "someone-else"),
        _set("world.corpus", []),
        _set("world.params.k", 9),
        _set("world.case.query", "another question"),
    ],
    ids=["chunk-text", "tenant", "emptied-corpus", "k", "query"],
)
def test_an_edited_world_is_refused_never_reported_fixed(
    replay_file: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None], capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = _replay(_edited(replay_file, tmp_path, edit), capsys)
    assert code == EXIT_USAGE, output
    assert "field 'fingerprint'" in output and "fixed" not in output


def test_a_violation_the_run_could_not_reproduce_never_replays_as_fixed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    er.OnceFlipped.seen.clear()
    report = check({"flip": "support.engine_retrievers:OnceFlipped"}, CORPUS, CASES[:1], strategies=["repeat"],
                   max_examples=10, replay_dir=tmp_path)
    row = next(r for r in report.violations if r.relation == "repeat.identical")
    stored = json.loads(Path(row.violation["replay"]).read_text(encoding="utf-8"))
    assert stored["expected"]["reproducible"] is False
    code, output = _replay(Path(row.violation["replay"]), capsys)
    assert code == EXIT_ERRORS and "cannot tell a fix from a miss" in output and "fixed:" not in output
    code, output = _replay(Path(row.violation["replay"]), capsys, "--retriever", FIXED)
    assert code == EXIT_ERRORS


def test_long_ids_that_share_their_first_60_characters_get_their_own_replay_files(tmp_path: Path) -> None:
    stem = "case-" + "x" * 70
    cases = tuple(Case(f"{stem}-{n}", CASES[0].query, tenant="acme", evidence=[["gold"]]) for n in range(3))
    report = check({"leaky": LEAKY}, CORPUS, cases, strategies=["tenancy"], max_examples=10, replay_dir=tmp_path)
    paths = [r.violation["replay"] for r in report.violations]
    assert len(paths) >= 3 and len(set(paths)) == len(paths)
    assert len(list(tmp_path.glob("*.json"))) == len(paths)
    for row in report.violations:
        assert json.loads(Path(row.violation["replay"]).read_text(encoding="utf-8"))["world"]["case"]["id"] == row.case
