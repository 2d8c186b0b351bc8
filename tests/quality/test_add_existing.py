"""Quality: an add of an id the index already holds. Libraries answer it three ways (upsert, refusal, an add
ignored with a warning) and each passes; an index that keeps both versions under the id fails, shrunk small."""

from __future__ import annotations

import pytest

from quality.zoo2.bugs import AddExistingMerges
from quality.zoo2.plain import PlainBM25, PlainBM25IgnoresReadd
from ragmorph.adapters import BM25Retriever
from ragmorph.runner import check
from ragmorph.worlds import demo_world

pytestmark = pytest.mark.slow

RELATION = "lifecycle.added_existing_one_version"


def _rows(factory: object) -> list[object]:
    world = demo_world()
    cases = [c for c in world.cases if c.id in ("q01", "q05")]
    report = check({"index": factory}, world.corpus, cases, strategies=["lifecycle"])
    return [r for r in report.results if r.relation == RELATION or r.status in ("fail", "error")]


@pytest.mark.filterwarnings("ignore:Add of existing embedding ID")
@pytest.mark.parametrize("factory", [PlainBM25, PlainBM25IgnoresReadd, BM25Retriever], ids=["upsert", "ignored", "refused"])
def test_every_way_libraries_answer_an_add_of_a_held_id_passes(factory: object) -> None:
    rows = _rows(factory)
    assert not [(r.relation, r.reason) for r in rows if r.status in ("fail", "error")]
    judged = [r for r in rows if r.relation == RELATION and r.status == "pass"]
    assert judged and all(r.rate is not None and r.rate[0] == r.rate[1] > 0 for r in judged), judged


def test_an_index_keeping_both_versions_under_one_id_fails_with_a_small_case() -> None:
    failed = [r for r in _rows(AddExistingMerges) if r.relation == RELATION and r.status == "fail"]
    assert failed and min(len(r.violation.minimal_corpus) for r in failed) <= 3
    assert all(r.violation.one_minimal for r in failed)
