"""The smoke profile finds what README advertises (issue 32 item 3): it runs every family, so one hard violation
hides no other, and it catches a delete that a hybrid's keyword index ignores; through the real CLI and engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmorph import Filters
from ragmorph.cli import EXIT_VIOLATIONS, main
from ragmorph.config import PROFILES
from ragmorph.io import read_cases, read_corpus, write_cases, write_corpus
from ragmorph.strategies import DEFAULT_SUITE
from ragmorph.worlds import generate

# A user's hybrid with two bugs: remove() never reaches the keyword index (the deleted chunk keeps the keyword
# leg's share of its fused score and sinks below the first ranks), and the keyword leg is asked without the
# tenant filter.
HYBRID = '''
from ragmorph.adapters import BM25Retriever, DenseRetriever


class LeakyHybrid:
    def __init__(self, corpus):
        self.keyword = BM25Retriever(corpus)
        self.dense = DenseRetriever(corpus)
        self.keyword_ids = {chunk.id for chunk in corpus}

    def add(self, chunks):
        # An upsert: the keyword index already holds every id it was never told to delete.
        self.keyword.add([chunk for chunk in chunks if chunk.id not in self.keyword_ids])
        self.keyword_ids.update(chunk.id for chunk in chunks)
        self.dense.add(chunks)

    def remove(self, ids):
        self.dense.remove(ids)

    def retrieve(self, query, *, k, filters=None):
        legs = [self.keyword.retrieve(query, k=50), self.dense.retrieve(query, k=50, filters=filters)]
        fused = {}
        for leg in legs:
            for rank, hit in enumerate(leg):
                fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (60 + rank)
        return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
'''


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    world = generate(3, chunks=40, cases=4)
    write_corpus(world.corpus, tmp_path / "corpus.jsonl")
    write_cases(world.cases, tmp_path / "cases.jsonl")
    (tmp_path / "hybrid.py").write_text(HYBRID, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_smoke_profile_looks_past_a_candidate_pool_of_10_and_keeps_every_family() -> None:
    smoke = PROFILES["smoke"]
    assert max(smoke.ks) >= 10 and not smoke.fail_fast and smoke.strategies is None


def test_smoke_catches_the_ignored_delete_and_one_violation_hides_no_other_family(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--retriever", "hybrid.py:LeakyHybrid", "--corpus", "corpus.jsonl", "--cases", "cases.jsonl",
                 "--profile", "smoke", "--json", "report.json"])
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATIONS
    assert "stopped at the first hard violation" not in out
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    # Every unit ran: 4 cases x every family of the default suite.
    assert {(r["case"], r["strategy"]) for r in report["results"]} == {
        (f"q{n}", family) for n in range(1, 5) for family in DEFAULT_SUITE
    }
    failed = {r["relation"] for r in report["results"] if r["status"] == "fail" and r["severity"] == "hard"}
    assert "removal.removed_never_returned" in failed
    assert {"filters.admitted_only", "tenancy.no_cross_tenant"} <= failed  # the leak is reported beside it
    # On the full world the deleted chunk is still returned, but below rank 5: past the old smoke's deepest k.
    corpus = read_corpus(project / "corpus.jsonl")
    cases = {case.id: case for case in read_cases(project / "cases.jsonl", corpus=corpus)}
    LeakyHybrid = _load(project)
    rows = [r for r in report["results"] if r["relation"] == "removal.removed_never_returned" and r["status"] == "fail"]
    for row in rows:
        case, removed = cases[row["case"]], row["violation"]["removed"]
        hybrid = LeakyHybrid(corpus)
        hybrid.remove(removed)
        ids = [chunk_id for chunk_id, _ in hybrid.retrieve(case.query, k=len(corpus), filters=Filters(tenant=case.tenant))]
        assert all(ids.index(chunk_id) >= 5 for chunk_id in removed if chunk_id in ids)
        assert any(chunk_id in ids for chunk_id in removed)


def _load(project: Path):
    namespace: dict = {}
    exec(compile((project / "hybrid.py").read_text(encoding="utf-8"), "hybrid.py", "exec"), namespace)
    return namespace["LeakyHybrid"]
