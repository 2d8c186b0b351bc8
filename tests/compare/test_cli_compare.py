"""`ragmorph compare` and `ragmorph run --baseline` end to end on real files: outputs and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.worlds import generate

FORGETFUL = '''
from ragmorph.adapters import BM25Retriever

FORGOTTEN = {forgotten!r}


class Forgetful(BM25Retriever):
    def retrieve(self, query, *, k, filters=None):
        hits = super().retrieve(query, k=k + len(FORGOTTEN), filters=filters)
        return [hit for hit in hits if hit.id not in FORGOTTEN][:k]


def factory(corpus):
    return Forgetful(corpus)
'''


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("compare")
    world = generate(5, chunks=30, cases=6)
    critical = next(c for c in world.cases if c.is_answerable and len(c.evidence) == 1)
    rows = []
    for case in world.cases:
        row = case.to_dict()
        if case.id == critical.id:
            row["tags"] = [*row["tags"], "critical"]
        rows.append(row)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c.to_dict()) + "\n" for c in world.corpus), encoding="utf-8")
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    edited = [c.to_dict() for c in world.corpus]
    edited[-1]["text"] += " (edited)"  # the same ids, another snapshot
    (folder / "edited.jsonl").write_text("".join(json.dumps(c) + "\n" for c in edited), encoding="utf-8")
    (folder / "forgetful.py").write_text(FORGETFUL.format(forgotten=set(critical.evidence[0])), encoding="utf-8")
    return {"folder": folder, "corpus": folder / "corpus.jsonl", "cases": folder / "cases.jsonl",
            "edited": folder / "edited.jsonl", "adapter": folder / "forgetful.py", "critical": critical.id}


def _common(files: dict) -> list[str]:
    return ["--corpus", str(files["corpus"]), "--cases", str(files["cases"]), "--strategies", "removal",
            "--max-examples", "3", "--k", "1,3,5"]


def test_compare_against_a_saved_report_fails_on_the_lost_critical_case(files, capsys) -> None:
    folder = files["folder"]
    base = folder / "base.json"
    assert main(["run", "--retriever", "bm25=ragmorph.adapters:BM25Retriever", *_common(files), "--json", str(base)]) == EXIT_OK
    capsys.readouterr()
    code = main([
        "compare", "--baseline", str(base), "--candidate", f"{files['adapter']}:factory", *_common(files),
        "--json", str(folder / "c.json"), "--html", str(folder / "c.html"), "--junit", str(folder / "c.xml"),
    ])
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATIONS, out
    assert f"LOST CRITICAL CASES: {files['critical']}" in out and "exit code 1" in out
    data = json.loads((folder / "c.json").read_text())
    assert data["lost_critical"] == [files["critical"]]
    assert data["manifest"]["baseline"]["source"].startswith("report ")
    assert (folder / "c.html").read_text().count("<svg") == 1
    # Naming another tag critical moves the gate: the forgotten case (no 'hr' tag) is no longer critical.
    code = main(["compare", "--baseline", str(base), "--candidate", f"{files['adapter']}:factory", *_common(files),
                 "--critical", "hr"])
    assert code == EXIT_OK, capsys.readouterr().out
    # A tag no case carries would make no case critical: a usage error, not a silent pass.
    code = main(["compare", "--baseline", str(base), "--candidate", f"{files['adapter']}:factory", *_common(files),
                 "--critical", "no-such-tag"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "'no-such-tag'" in err and "Traceback" not in err


def test_run_with_a_baseline_prints_the_comparison_and_gates(files, capsys) -> None:
    folder = files["folder"]
    base = folder / "base-run.json"
    assert main(["run", "--retriever", "bm25=ragmorph.adapters:BM25Retriever", *_common(files), "--json", str(base)]) == EXIT_OK
    capsys.readouterr()
    same = main(["run", "--retriever", "bm25=ragmorph.adapters:BM25Retriever", *_common(files), "--baseline", str(base)])
    out = capsys.readouterr().out
    assert same == EXIT_OK and "0 queries lost evidence" in out
    worse = main(["run", "--retriever", f"forget={files['adapter']}:factory", *_common(files), "--baseline", str(base)])
    out = capsys.readouterr().out
    assert worse == EXIT_VIOLATIONS and "LOST CRITICAL CASES" in out


def test_compare_two_retrievers_and_refuse_another_corpus(files, capsys) -> None:
    code = main(["compare", "--baseline", "ragmorph.adapters:BM25Retriever", "--candidate",
                 "ragmorph.adapters:BM25Retriever", *_common(files)])
    out = capsys.readouterr().out
    assert code == EXIT_OK and "0 significant regressions" in out
    folder = files["folder"]
    base = folder / "base-other.json"
    main(["run", "--retriever", "bm25=ragmorph.adapters:BM25Retriever", *_common(files), "--json", str(base)])
    capsys.readouterr()
    args = _common(files)
    args[1] = str(files["edited"])
    code = main(["compare", "--baseline", str(base), "--candidate", "ragmorph.adapters:BM25Retriever", *args])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE
    assert "same corpus snapshot" in captured.err and "Traceback" not in captured.err
