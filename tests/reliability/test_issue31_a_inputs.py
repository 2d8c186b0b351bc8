"""Issue 31, inputs: blank queries in BEIR and Ragas files, `ragmorph init` meeting a dangling symlink or failing
halfway, and responses whose score no float holds or whose id hashes badly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragmorph import Hit
from ragmorph.adapters import BM25Retriever, validate_hits
from ragmorph.cli import EXIT_OK, EXIT_USAGE, EXIT_VIOLATIONS, main
from ragmorph.errors import ContractRule, InputError, InvalidResponse
from ragmorph.io import read_beir, read_ragas
from ragmorph.model import Chunk, Corpus
from ragmorph.runner import check
from reliability.worldfiles import CASES, CHUNKS


def _beir(root: Path, query_text: object) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "Parental leave is 16 weeks."}) + "\n")
    queries = [{"_id": "q0", "text": ""}, {"_id": "q1", "text": query_text}]  # q0 is never judged: no case
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


@pytest.mark.parametrize("text", ["", "   \t", "\u3000"])
def test_a_blank_judged_beir_query_is_an_input_error_naming_file_and_line(tmp_path, text) -> None:
    root = _beir(tmp_path / "beir", text)
    with pytest.raises(InputError) as caught:
        read_beir(root)
    error = caught.value
    assert (error.file, error.line, error.field) == (str(root / "queries.jsonl"), 2, "text")
    assert "expected a query to ask" in error.message and "'q1'" in error.message


def test_an_unjudged_blank_beir_query_is_no_case_and_no_error(tmp_path) -> None:
    _, cases = read_beir(_beir(tmp_path / "beir", "How long is parental leave?"))
    assert [case.id for case in cases] == ["q1"]


@pytest.mark.parametrize("text", ["", " ", "\n\t"])
def test_a_blank_ragas_user_input_is_an_input_error_naming_the_row(tmp_path, text) -> None:
    rows = [{"user_input": "Who approves leave?", "retrieved_contexts": ["HR approves leave."]},
            {"user_input": text, "retrieved_contexts": ["HR approves leave."]}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_ragas(path)
    assert (caught.value.line, caught.value.field) == (2, "user_input")
    assert "expected a query to ask" in caught.value.message


def test_run_refuses_a_blank_ragas_query_with_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"user_input": "  ", "retrieved_contexts": ["x"]}) + "\n", encoding="utf-8")
    code = main(["run", "--retriever", "ragmorph.adapters:BM25Retriever", "--cases", str(path), "--format", "ragas",
                 "--strategies", "cutoff", "--max-examples", "2"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and f"{path}:1: field 'user_input': expected a query to ask" in err


# --- init -------------------------------------------------------------------------------------------------------


def test_init_refuses_a_dangling_symlink_before_writing_anything(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    os.symlink(tmp_path / "nowhere.py", tmp_path / "ragmorph_adapter.py")
    assert main(["init"]) == EXIT_USAGE
    assert "expected no existing ragmorph_adapter.py" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ragmorph_adapter.py"]
    # Once the link is gone, the rerun is not refused.
    (tmp_path / "ragmorph_adapter.py").unlink()
    assert main(["init"]) == EXIT_OK
    assert (tmp_path / "ragmorph.toml").is_file() and (tmp_path / "data" / "cases.jsonl").is_file()


def test_init_refuses_a_dangling_data_symlink(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    os.symlink(tmp_path / "gone.jsonl", tmp_path / "data" / "corpus.jsonl")
    assert main(["init"]) == EXIT_USAGE
    assert "a symlink to nothing" in capsys.readouterr().err
    assert not (tmp_path / "ragmorph.toml").exists() and os.path.islink(tmp_path / "data" / "corpus.jsonl")


def test_init_that_fails_halfway_takes_back_what_it_wrote(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blocker").write_text("a file where a folder is needed", encoding="utf-8")
    # The scaffold and the sample corpus are written, then the cases' folder cannot be made.
    code = main(["init", "--corpus", "data/corpus.jsonl", "--cases", "blocker/cases.jsonl"])
    assert code == EXIT_USAGE, capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "data"]
    assert list((tmp_path / "data").iterdir()) == []
    assert main(["init"]) == EXIT_OK  # nothing half-written blocks the rerun


# --- responses ----------------------------------------------------------------------------------------------------


class _OddId(str):
    def __hash__(self) -> int:
        raise RuntimeError("no hash")


class HugeScores(BM25Retriever):
    """Scores of 10**400 (and 10**5000, past int repr's digit limit): numbers no float holds."""

    POWER = 400

    def retrieve(self, query, *, k, filters=None):
        return [(hit.id, 10**self.POWER) for hit in super().retrieve(query, k=k, filters=filters)]


class OddIds(BM25Retriever):
    """Correct hits, ids given as a str subclass whose hash raises."""

    def retrieve(self, query, *, k, filters=None):
        return [(_OddId(hit.id), hit.score) for hit in super().retrieve(query, k=k, filters=filters)]


class OddHits(BM25Retriever):
    """Hit objects built with such ids."""

    def retrieve(self, query, *, k, filters=None):
        return [Hit(_OddId(hit.id), hit.score) for hit in super().retrieve(query, k=k, filters=filters)]


@pytest.fixture(scope="module")
def small():
    from ragmorph.model import Case

    corpus = Corpus([Chunk(c["id"], c["text"], tenant=c.get("tenant"), superseded_by=c.get("superseded_by"))
                     for c in CHUNKS])
    return corpus, [Case(c["id"], c["query"], tenant=c.get("tenant"), evidence=c["evidence"]) for c in CASES]


@pytest.mark.parametrize("power", [400, 5000])
def test_a_score_no_float_holds_is_a_contract_breach_not_a_crash(small, power) -> None:
    corpus, _ = small
    with pytest.raises(InvalidResponse) as caught:
        validate_hits([("hr-1", 10**power)], k=3, query="q", corpus=corpus)
    assert caught.value.rule is ContractRule.NON_FINITE_SCORE and "beyond any float" in str(caught.value)
    retriever = type("Huge", (HugeScores,), {"POWER": power})
    report = check({"huge": retriever}, corpus, small[1], strategies=["cutoff"], ks=(1, 3), max_examples=2)
    assert report.exit_code == EXIT_VIOLATIONS
    assert any(r.status == "fail" and "beyond any float" in (r.reason or "") for r in report.results)


def test_str_subclass_ids_are_read_as_plain_strings(small) -> None:
    corpus, cases = small
    hits = validate_hits([(_OddId("hr-1"), 1.0), _OddId("hr-2")], k=3, query="q", corpus=corpus)
    assert [type(hit.id) for hit in hits] == [str, str]
    assert check({"odd": OddIds}, corpus, cases, strategies=["cutoff"], ks=(1, 3), max_examples=2).exit_code == EXIT_OK


def test_hits_whose_id_hash_raises_are_a_malformed_response(small) -> None:
    corpus, cases = small
    with pytest.raises(InvalidResponse) as caught:
        validate_hits([Hit(_OddId("hr-1"), 1.0)], k=3, query="q", corpus=corpus)
    assert caught.value.rule is ContractRule.MALFORMED and "expected ids of type str" in str(caught.value)
    report = check({"odd": OddHits}, corpus, cases, strategies=["cutoff"], ks=(1, 3), max_examples=2)
    assert report.exit_code == EXIT_VIOLATIONS
