"""SpanR(cover=...)@k, span-aware final-context recall: a gold chunk counts only when its supporting span survived."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from support.generators import cases_for, corpora
from support.metric_worlds import cases, ranked_lists

from ragmorph.adapters import BM25Retriever, ContextPacker, Pipeline
from ragmorph.metrics import MEASURES, aggregate, evaluate, measures_markdown, parse_metric
from ragmorph.model import Case, Chunk, Corpus, Hit, Ranking

KS = (1, 2, 3, 5, 10)


def test_the_name_carries_how_much_of_the_span_must_survive() -> None:
    assert str(parse_metric("SpanR@5")) == "SpanR(cover=all)@5"
    assert str(parse_metric(" spanr ( cover = ANY ) @ 3")) == "SpanR(cover=any)@3"
    assert "`SpanR@k`" in measures_markdown() and MEASURES["SpanR"].micro is not None


def test_a_chunk_counts_only_when_its_span_survived_packing() -> None:
    case = Case("q", "x", evidence=[[{"chunk": "a", "span": [10, 20]}], ["b"], [{"chunk": "c", "span": [0, 4]}]])
    ranking = Ranking([Hit("a", kept=(0, 15)), Hit("b", kept=(0, 3)), Hit("c"), Hit("z")])
    values = evaluate(ranking, case, ["SpanR@4", "SpanR(cover=any)@4", "SpanR@1", "R@4"])
    # a keeps only half its span; b has no span (returned is enough); c was not cut.
    assert values == {"SpanR(cover=all)@4": 2 / 3, "SpanR(cover=any)@4": 1.0, "SpanR(cover=all)@1": 0.0, "R@4": 1.0}
    assert values.parts["SpanR(cover=all)@4"] == (2, 3)
    summary = aggregate({"q1": values, "q2": evaluate(Ranking.of(["a"]), case, ["SpanR@4"])})
    assert summary.metrics["SpanR(cover=all)@4"].micro == 3 / 6
    # A repeated id is judged at its first hit (policy duplicates), and no gold means None (policy no_gold).
    assert evaluate(Ranking([Hit("a", kept=(0, 5)), Hit("a")]), case, ["SpanR@2"])["SpanR(cover=all)@2"] == 0.0
    assert evaluate(ranking, Case("q", "x"), ["SpanR@3"]) == {"SpanR(cover=all)@3": None}


@settings(max_examples=60, deadline=None)
@given(case=cases(), ids=ranked_lists(unique=False), cover=st.sampled_from(["all", "any"]))
def test_without_packing_it_equals_chunk_recall(case: Case, ids: list[str], cover: str) -> None:
    # Hits without a kept range hold their whole text, so every span survives (with or without spans).
    spanned = attrs.evolve(case, spans={gold: (0, 1) for gold in case.gold_ids[::2]})
    for judged in (case, spanned):
        values = evaluate(Ranking.of(ids), judged, [f"{m}@{k}" for k in KS for m in (f"SpanR(cover={cover})", "R")])
        assert all(values[f"SpanR(cover={cover})@{k}"] == values[f"R@{k}"] for k in KS)


@settings(max_examples=30, deadline=None)
@given(
    corpora(min_size=1, max_size=6).flatmap(lambda c: st.tuples(st.just(c), cases_for(c, max_size=2))),
    st.integers(0, 30),
)
def test_through_a_packer_it_never_exceeds_recall_and_equals_it_without_spans(drawn: tuple, budget: int) -> None:
    corpus, drawn_cases = drawn
    packed = Pipeline([BM25Retriever, ContextPacker(token_budget=budget)])(corpus)
    for case in drawn_cases:
        ranking = Ranking(packed.retrieve(case.query, k=5))
        values = evaluate(ranking, case, ["SpanR@5", "SpanR(cover=any)@5", "R@5"])
        if values["R@5"] is None:
            continue
        assert values["SpanR(cover=all)@5"] <= values["SpanR(cover=any)@5"] <= values["R@5"]
        plain = evaluate(ranking, attrs.evolve(case, spans={}), ["SpanR@5", "R@5"])
        assert plain["SpanR(cover=all)@5"] == plain["R@5"]


def test_a_truncated_supporting_sentence_is_lost_but_the_chunk_is_still_found() -> None:
    text = "Leave policy. " + "filler " * 20 + "Leave starts on 1 September 2026."
    start = text.index("Leave starts")
    corpus = Corpus([Chunk("hr-12#3", text)])
    case = Case("q", "leave", evidence=[[{"chunk": "hr-12#3", "span": [start, len(text)]}]])
    for budget, expected in ((10, 0.0), (40, 1.0)):
        hits = Pipeline([BM25Retriever, ContextPacker(token_budget=budget)])(corpus).retrieve("leave", k=1)
        values = evaluate(Ranking(hits), case, ["SpanR@1", "R@1"])
        assert values == {"SpanR(cover=all)@1": expected, "R@1": 1.0}
