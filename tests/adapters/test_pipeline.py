"""Pipeline stages: each one's contract, over-fetching, composition and delta forwarding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.adapter_worlds import WORDS, corpora, filters

from ragmorph.adapters import (
    BM25Retriever,
    ContextPacker,
    Dedup,
    DenseRetriever,
    FreshnessFilter,
    FunctionRetriever,
    GuardedRetriever,
    Reranker,
    TenantFilter,
    applied_delta,
    describe_capabilities,
)
from ragmorph.errors import UsageError
from ragmorph.model import Case, Chunk, Corpus, Filters, Params

CORPUS = Corpus(
    [
        Chunk("g1", "leave policy leave", tenant="globex"),
        Chunk("g2", "leave policy", tenant="globex"),
        Chunk("s1", "leave policy shared"),
        Chunk("a1", "leave policy acme old", tenant="acme", superseded_by="a2"),
        Chunk("a2", "leave policy acme new", tenant="acme"),
        Chunk("d1", "leave policy shared"),
        Chunk("x1", "unrelated tax"),
    ]
)


def ignores_filters(corpus: Corpus) -> FunctionRetriever:
    """A black box that cannot filter: BM25 order, no filters parameter."""
    bm25 = BM25Retriever(corpus)
    return FunctionRetriever(lambda query, k: bm25.retrieve(query, k=k))


@pytest.mark.parametrize("inner_kind", ["filtering", "ignoring"])
def test_tenant_filter_never_returns_another_tenants_chunk(inner_kind: str) -> None:
    inner = BM25Retriever(CORPUS) if inner_kind == "filtering" else ignores_filters(CORPUS)
    stage = TenantFilter(inner, corpus=CORPUS)
    hits = stage.retrieve("leave policy", k=3, filters=Filters(tenant="acme"))
    assert len(hits) == 3
    assert all(CORPUS[h.id].visible_to("acme") for h in hits)
    assert [h.id for h in hits] == [
        h.id for h in BM25Retriever(CORPUS).retrieve("leave policy", k=3, filters=Filters(tenant="acme"))
    ]
    assert len(stage.retrieve("leave policy", k=10)) == 6  # no filters: passes through


@settings(max_examples=40, deadline=None)
@given(corpus=corpora(max_size=10), query=st.sampled_from(WORDS), chosen=filters(), k=st.integers(1, 6))
def test_tenant_filter_over_a_black_box_equals_native_filtering(
    corpus: Corpus, query: str, chosen: Filters | None, k: int
) -> None:
    stage = TenantFilter(ignores_filters(corpus), corpus=corpus)
    assert stage.retrieve(query, k=k, filters=chosen) == BM25Retriever(corpus).retrieve(query, k=k, filters=chosen)


def test_freshness_filter_drops_stale_chunks_and_follows_deltas() -> None:
    bm25 = BM25Retriever(CORPUS)
    stage = FreshnessFilter(bm25)
    ids = [h.id for h in stage.retrieve("acme old", k=7)]
    assert "a1" not in ids and "a2" in ids
    with applied_delta(stage, remove=["a2"]):  # the successor is gone, so a1 is no longer stale
        assert "a1" in [h.id for h in stage.retrieve("acme old", k=7)]
    assert "a1" not in [h.id for h in stage.retrieve("acme old", k=7)]


def test_reranker_reorders_stably_within_depth() -> None:
    stage = Reranker(BM25Retriever(CORPUS), lambda query, text: float("shared" in text), depth=7)
    hits = stage.retrieve("leave", k=3)
    assert [h.id for h in hits[:2]] == ["s1", "d1"] and [h.score for h in hits] == [1.0, 1.0, 0.0]
    inner_order = [h.id for h in BM25Retriever(CORPUS).retrieve("leave", k=7) if h.id not in ("s1", "d1")]
    assert hits[2].id == inner_order[0]
    shallow = Reranker(BM25Retriever(CORPUS), lambda query, text: float("shared" in text))
    assert len(shallow.retrieve("leave", k=2)) == 2
    with pytest.raises(UsageError, match="score_fn"):
        Reranker(BM25Retriever(CORPUS), "not callable")  # type: ignore[arg-type]


def test_dedup_drops_repeated_ids_and_texts_but_keeps_k() -> None:
    repeated = FunctionRetriever(lambda query, k: ["s1", "s1", "d1", "g2", "g2", "a2", "x1"][:k])
    stage = Dedup(repeated, corpus=CORPUS)
    assert [h.id for h in stage.retrieve("q", k=3)] == ["s1", "g2", "a2"]
    assert [h.id for h in Dedup(repeated, corpus=CORPUS, by_text=False).retrieve("q", k=3)] == ["s1", "d1", "g2"]


def test_context_packer_without_truncation_keeps_the_longest_fitting_prefix() -> None:
    inner = FunctionRetriever(lambda query, k: ["g2", "s1", "x1", "g1"][:k])  # 2, 3, 2, 3 tokens
    prefix = {"corpus": CORPUS, "truncate": False}
    assert [h.id for h in ContextPacker(inner, 5, **prefix).retrieve("q", k=4)] == ["g2", "s1"]
    assert [h.id for h in ContextPacker(inner, 6, **prefix).retrieve("q", k=4)] == ["g2", "s1"]
    assert ContextPacker(inner, 1, **prefix).retrieve("q", k=4) == []
    assert len(ContextPacker(inner, 1000, **prefix).retrieve("q", k=4)) == 4
    chars = ContextPacker(inner, 12, count_tokens=len, **prefix)
    assert [h.id for h in chars.retrieve("q", k=4)] == ["g2"]
    assert all(h.kept is None for h in ContextPacker(inner, 6, **prefix).retrieve("q", k=4))
    with pytest.raises(UsageError, match="token_budget"):
        ContextPacker(inner, -1)
    with pytest.raises(UsageError, match="truncate"):
        ContextPacker(inner, 5, truncate="no")  # type: ignore[arg-type]


def test_context_packer_truncates_the_hit_that_overflows_at_a_word_end() -> None:
    inner = FunctionRetriever(lambda query, k: ["g2", "s1", "x1", "g1"][:k])  # 2, 3, 2, 3 tokens
    hits = ContextPacker(inner, 6, corpus=CORPUS).retrieve("q", k=4)
    # g2 and s1 fit whole (5 tokens); x1 keeps the one word left, and packing stops there.
    assert [(h.id, h.text, h.kept) for h in hits] == [("g2", None, None), ("s1", None, None), ("x1", "unrelated", (0, 9))]
    assert [(h.id, h.text, h.kept) for h in ContextPacker(inner, 1, corpus=CORPUS).retrieve("q", k=4)] == [
        ("g2", "leave", (0, 5))
    ]
    assert ContextPacker(inner, 0, corpus=CORPUS).retrieve("q", k=4) == []
    # Counting characters: "leave policy" (12) fits exactly; nothing of s1 fits in 0 characters.
    assert [h.id for h in ContextPacker(inner, 12, corpus=CORPUS, count_tokens=len).retrieve("q", k=4)] == ["g2"]
    # 16 characters: g2 whole, then "leave policy shared" cut to its longest word prefix of <= 4 characters: none
    # ("leave" is 5), so s1 is dropped, never cut mid-word.
    assert [h.id for h in ContextPacker(inner, 16, corpus=CORPUS, count_tokens=len).retrieve("q", k=4)] == ["g2"]
    assert [h.text for h in ContextPacker(inner, 17, corpus=CORPUS, count_tokens=len).retrieve("q", k=4)] == [
        None, "leave"
    ]


def test_stages_compose_forward_deltas_and_pass_validation() -> None:
    pipeline = ContextPacker(Dedup(FreshnessFilter(TenantFilter(DenseRetriever(CORPUS)))), 9)
    capabilities = describe_capabilities(pipeline)
    assert capabilities.supports_delta and capabilities.supports_rollback and capabilities.supports_filters
    guard = GuardedRetriever(pipeline, corpus=CORPUS)
    ranking = guard.retrieve("leave policy", Params(k=5, filters=Filters(tenant="acme")))
    assert all(CORPUS[i].visible_to("acme") for i in ranking.ids)
    assert "a1" not in ranking.ids and len({CORPUS[i].text for i in ranking.ids}) == len(ranking)
    with applied_delta(pipeline, add=[Chunk("n1", "leave")]):
        assert "n1" in pipeline.corpus
    assert "n1" not in pipeline.corpus


def test_stages_explain_missing_pieces() -> None:
    black_box = FunctionRetriever(lambda query, k: ["s1"])
    with pytest.raises(UsageError, match="needs chunk data"):
        TenantFilter(black_box).retrieve("q", k=1, filters=Filters(tenant="acme"))
    with pytest.raises(UsageError, match="put a TenantFilter stage"):
        Dedup(black_box, corpus=CORPUS).retrieve("q", k=1, filters=Filters(tenant="acme"))
    with pytest.raises(UsageError, match="retriever to wrap"):
        Dedup(BM25Retriever)
    with pytest.raises(AttributeError):
        Dedup(black_box, corpus=CORPUS).add  # noqa: B018 - the inner retriever has no deltas


# --- declared pipelines ------------------------------------------------------------------------------------------


def test_a_declared_pipeline_builds_the_same_retriever_as_nesting() -> None:
    from ragmorph.adapters import Pipeline

    score = lambda query, text: float("shared" in text)  # noqa: E731
    declared = Pipeline([BM25Retriever, TenantFilter(), Reranker(score_fn=score), ContextPacker(token_budget=9)])
    nested = ContextPacker(Reranker(TenantFilter(BM25Retriever(CORPUS)), score), 9)
    built = declared(CORPUS)
    for query, chosen in (("leave policy", Filters(tenant="acme")), ("leave", None)):
        assert built.retrieve(query, k=4, filters=chosen) == nested.retrieve(query, k=4, filters=chosen)
    assert declared.names == ("BM25Retriever", "TenantFilter", "Reranker", "ContextPacker")
    assert declared.prefix(1).names == ("BM25Retriever", "TenantFilter")
    assert type(declared.prefix(0)(CORPUS)) is BM25Retriever
    # Every call builds fresh stages: the declaration itself stays unbound and reusable.
    assert declared(CORPUS) is not built and declared.stages[1].inner is None


def test_a_pipeline_rejects_bound_stages_and_unbound_stages_refuse_to_retrieve() -> None:
    from ragmorph.adapters import Pipeline

    with pytest.raises(UsageError, match="unbound stage"):
        Pipeline([BM25Retriever, TenantFilter(BM25Retriever(CORPUS))])
    with pytest.raises(UsageError, match="non-empty list"):
        Pipeline([])
    with pytest.raises(UsageError, match="no inner retriever"):
        TenantFilter().retrieve("leave", k=3)
    with pytest.raises(UsageError, match="score_fn"):
        Reranker()
    with pytest.raises(UsageError, match="token_budget"):
        ContextPacker()


def test_declarations_about_filtering_and_short_lists_hold_through_wrapping_stages() -> None:
    from ragmorph.adapters import Pipeline

    score = lambda query, text: float("shared" in text)  # noqa: E731
    # A TenantFilter inside a Reranker still filters for the retriever: the filter relations must not judge it.
    wrapped = describe_capabilities(Reranker(TenantFilter(BM25Retriever(CORPUS)), score))
    assert wrapped.filtered_by == "ragmorph"
    assert describe_capabilities(Reranker(BM25Retriever(CORPUS), score)).filtered_by == "retriever"
    # Declared as a list, before any build: the stages' declarations are the pipeline's.
    declared = Pipeline([BM25Retriever, TenantFilter(), Reranker(score_fn=score)])
    assert describe_capabilities(declared).filtered_by == "ragmorph"
    assert describe_capabilities(declared, built=declared(CORPUS)).filtered_by == "ragmorph"
    assert describe_capabilities(Pipeline([BM25Retriever, Dedup(by_text=False)])).filtered_by == "retriever"
    # A packer's budget can end a list before k, inside a Dedup or not, declared or built.
    packed = Pipeline([BM25Retriever, ContextPacker(token_budget=9), Dedup()])
    assert "token budget" in describe_capabilities(packed).cuts_short
    assert "token budget" in describe_capabilities(packed, built=packed(CORPUS)).cuts_short
    assert describe_capabilities(Pipeline([BM25Retriever, Dedup()])).cuts_short is None
    assert describe_capabilities(BM25Retriever(CORPUS)).cuts_short is None


def test_a_cuts_short_declaration_must_be_a_sentence() -> None:
    class Odd(BM25Retriever):
        ragmorph_cuts_short = True

    with pytest.raises(UsageError, match="ragmorph_cuts_short"):
        describe_capabilities(Odd(CORPUS))


class _StaleLeakingBM25(BM25Retriever):
    """A BM25 that ignores current_only: under it a stale chunk leaks, which only a FreshnessFilter would hide."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list:
        plain = None if filters is None else Filters(tenant=filters.tenant, metadata=filters.metadata)
        return super().retrieve(query, k=k, filters=plain)


def test_a_freshness_filter_declares_that_ragmorph_filters_so_supersede_relations_do_not_judge_it() -> None:
    from ragmorph.adapters import Pipeline
    from ragmorph.runner import check
    from ragmorph.strategies import CATALOG

    # Only the current_only filter is ragmorph's: the tenant and metadata filters stay the library's.
    expected = {"tenant": "retriever", "current_only": "ragmorph", "metadata": "retriever"}
    for stage in (FreshnessFilter(BM25Retriever(CORPUS)), Reranker(FreshnessFilter(BM25Retriever(CORPUS)), len)):
        assert dict(describe_capabilities(stage).filtered_by_kind) == expected
    assert describe_capabilities(TenantFilter(FreshnessFilter(BM25Retriever(CORPUS)))).filtered_by == "ragmorph"
    judging = {r.name for r in CATALOG if r.judges_filtering and "current_only" in r.filter_kinds}
    assert "supersede.stale_zero" in judging
    cases = [Case(id="c1", query="leave policy acme", tenant="acme", evidence=[["a2"]])]
    report = check({"fresh": Pipeline([_StaleLeakingBM25, FreshnessFilter()])}, CORPUS, cases,
                   strategies=["supersede"], max_examples=5)
    rows = [r for r in report.results if r.relation in judging]
    assert rows and {(r.status, r.reason) for r in rows} == {
        ("not_applicable", "the current_only filter is applied by ragmorph, not by the retriever")
    }


class _TenantLeakingBM25(BM25Retriever):
    """A BM25 that ignores the tenant filter (a library bug a FreshnessFilter stage does nothing about)."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list:
        plain = None if filters is None else Filters(current_only=filters.current_only, metadata=filters.metadata)
        return super().retrieve(query, k=k, filters=plain)


@pytest.mark.parametrize(("first", "leaks"), [(BM25Retriever, False), (_TenantLeakingBM25, True)])
def test_behind_a_freshness_filter_the_librarys_tenant_filter_is_still_judged(first: type, leaks: bool) -> None:
    from ragmorph.adapters import Pipeline
    from ragmorph.runner import check

    cases = [Case(id="c1", query="leave policy acme", tenant="acme", evidence=[["a2"]])]
    report = check({"fresh": Pipeline([first, FreshnessFilter()])}, CORPUS, cases, strategies=["tenancy"], max_examples=10)
    statuses = {r.relation: r.status for r in report.results}
    assert "not_applicable" not in statuses.values(), {r.relation: r.reason for r in report.results}
    assert (statuses["tenancy.no_cross_tenant"] == "fail") is leaks and ("fail" in statuses.values()) is leaks


def test_a_text_dedup_declares_that_ragmorph_filters_so_a_correct_pipeline_raises_no_false_alarm() -> None:
    from ragmorph.adapters import Pipeline
    from ragmorph.runner import check
    from ragmorph.strategies import CATALOG

    # acme's x1 and the shared s1 have one text: unfiltered, Dedup keeps x1 (ranked first); for globex, s1.
    corpus = Corpus(
        [
            Chunk("x1", "leave policy text", tenant="acme"),
            Chunk("s1", "leave policy text"),
            Chunk("g1", "leave policy globex", tenant="globex"),
            Chunk("o1", "other words"),
        ]
    )
    assert describe_capabilities(Dedup(BM25Retriever(corpus))).filtered_by == "ragmorph"
    assert describe_capabilities(Dedup(BM25Retriever(corpus), by_text=False)).filtered_by == "retriever"
    cases = [Case(id="c1", query="leave policy text", tenant="globex", evidence=[["s1"]])]
    report = check({"dedup": Pipeline([BM25Retriever, Dedup()])}, corpus, cases, strategies=["tenancy", "filters"],
                   max_examples=20)
    judging = {r.name for r in CATALOG if r.judges_filtering}
    assert {"tenancy.filtered_equals_visible", "filters.filtered_equals_admitted"} <= judging
    assert not [r for r in report.results if r.status == "fail"]
    rows = [r for r in report.results if r.relation in judging]
    assert rows and {r.status for r in rows} == {"not_applicable"}
