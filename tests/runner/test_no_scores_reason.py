"""A relation that cannot judge a retriever without scores says how to give them (issue: a skipped relation's
reason names the fix)."""

from __future__ import annotations

from ragmorph.adapters import BM25Retriever
from ragmorph.model import Corpus, Filters, Hit
from ragmorph.relations import NO_SCORES
from ragmorph.runner import check
from ragmorph.worlds import demo_world


class Unscored:
    """A correct BM25 whose adapter drops the scores, as a LangChain retriever without score_key does."""

    def __init__(self, corpus: Corpus) -> None:
        self.inner = BM25Retriever(corpus)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """BM25's ranking without its scores."""
        return [Hit(hit.id, None, hit.text) for hit in self.inner.retrieve(query, k=k, filters=filters)]


def test_relations_skipped_for_missing_scores_name_the_adapter_options_that_give_them() -> None:
    world = demo_world()
    report = check({"unscored": Unscored}, world.corpus, world.cases[:3], strategies=["cutoff", "duplicate"])
    reasons = {r.reason for r in report.results if r.status == "not_applicable"}
    assert NO_SCORES in reasons, reasons
    assert "score_key=" in NO_SCORES and "score_field=" in NO_SCORES
    assert report.exit_code == 0
