"""examples/data: the small hand-written world that README's first command runs on.

Files:

- ``corpus.jsonl``: 36 chunks. An HR handbook for tenant ``acme`` (leave, sick and parental leave, remote
  work, expenses, onboarding, holidays, an IT laptop guide) and a staff manual for tenant ``globex``, plus
  shared (tenant-less) docs: the RagDesk product guide, API reference and FAQ, and a security guide. Acme's
  leave policy was revised: ``acme-hr-leave-v1#1``/``#2`` (version 1, effective 2024-01-01) are superseded by
  ``acme-hr-leave-v2#1``/``#2`` (version 2, effective 2026-09-01).
- ``cases.jsonl``: 11 cases. Single-hop (q1, q2, q5, q7, q9, q10, q11), two-group multi-hop (q3, q8),
  acceptable alternatives (q4, and q8's second group), one unanswerable case (q6), tenant-scoped cases for
  both tenants and tenant-less product questions; tags name each kind.
- ``qrels.trec``: the gold ids of cases.jsonl, relevance 1 (q6 has none, as trec_eval expects).
- ``run.trec``: a plausible BM25-like run with typical mistakes: a superseded policy above its successor (q1,
  q11), another tenant's chunks ranked first (q5, q9, q10), a missed evidence group (q3).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmorph.io import read_cases, read_corpus, read_trec_qrels, read_trec_run, write_cases, write_corpus

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


@pytest.fixture(scope="module")
def world():
    corpus = read_corpus(DATA / "corpus.jsonl")
    cases = read_cases(DATA / "cases.jsonl", corpus=corpus)
    return corpus, cases


def test_corpus_covers_tenants_shared_docs_and_a_revised_policy(world) -> None:
    corpus, _ = world
    assert 30 <= len(corpus) <= 40
    assert {chunk.tenant for chunk in corpus} == {"acme", "globex", None}
    stale = [chunk for chunk in corpus if corpus.is_stale(chunk)]
    assert [chunk.id for chunk in stale] == ["acme-hr-leave-v1#1", "acme-hr-leave-v1#2"]
    for old in stale:
        new = corpus[old.superseded_by]
        assert new.superseded_by is None and new.tenant == old.tenant
        assert old.version < new.version and old.effective_from < new.effective_from


def test_cases_cover_every_kind(world) -> None:
    corpus, cases = world
    assert 8 <= len(cases) <= 12
    assert any(len(case.evidence) == 1 and len(case.evidence[0]) == 1 for case in cases)
    assert any(len(case.evidence) == 2 for case in cases)
    assert any(len(group) > 1 for case in cases for group in case.evidence)
    unanswerable = [case for case in cases if not case.is_answerable]
    assert [case.id for case in unanswerable] == ["q6"] and unanswerable[0].evidence == ()
    assert {case.tenant for case in cases} == {"acme", "globex", None}
    for case in cases:
        assert case.tags, case.id
        # Gold evidence is visible to whoever asks, and current (never a superseded chunk).
        for member in case.gold_ids:
            assert corpus[member].visible_to(case.tenant), (case.id, member)
            assert corpus[member].superseded_by is None, (case.id, member)


def test_qrels_match_the_cases(world) -> None:
    _, cases = world
    qrels = read_trec_qrels(DATA / "qrels.trec")
    assert qrels == {case.id: {m: 1 for m in case.gold_ids} for case in cases if case.gold_ids}


def test_run_is_plausible_with_mistakes(world) -> None:
    corpus, cases = world
    runs = read_trec_run(DATA / "run.trec")
    assert list(runs) == [case.id for case in cases]
    by_id = {case.id: case for case in cases}
    for qid, ranking in runs.items():
        assert 1 <= len(ranking) <= 5
        assert all(hit.id in corpus for hit in ranking)
    # The file's own rank column agrees with trec_eval's score order.
    ranks = [line.split() for line in (DATA / "run.trec").read_text(encoding="utf-8").splitlines()]
    for qid, ranking in runs.items():
        assert [row[2] for row in ranks if row[0] == qid] == list(ranking.ids)
    first = {qid: corpus[ranking.ids[0]] for qid, ranking in runs.items()}
    assert corpus.is_stale(first["q1"]) and corpus.is_stale(first["q11"])
    assert not first["q5"].visible_to(by_id["q5"].tenant)
    assert not any(m in runs["q3"].ids for m in by_id["q3"].evidence[1])
    assert any(set(runs[c.id].ids) & set(c.gold_ids) for c in cases)


def test_round_trips_through_the_writers(world, tmp_path: Path) -> None:
    corpus, cases = world
    write_corpus(corpus, tmp_path / "corpus.jsonl")
    write_cases(cases, tmp_path / "cases.jsonl")
    assert read_corpus(tmp_path / "corpus.jsonl") == corpus
    assert read_cases(tmp_path / "cases.jsonl") == cases
