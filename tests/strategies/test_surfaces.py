"""The judges of the filters, depth, odd_query and lifecycle families on hand-built observations, and their draws."""

from __future__ import annotations

import unicodedata

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmorph.model import Case, Chunk, Corpus, Filters, Hit, Params, Ranking, World
from ragmorph.relations import Observation
from ragmorph.strategies import FAMILIES
from ragmorph.strategies._core import query_tokens
from ragmorph.strategies.depth import no_newcomer
from ragmorph.strategies.filtering import admitted_only, filter_choices, filtered_equals_admitted
from ragmorph.strategies.lifecycle import Grow, growth_keeps_matches
from ragmorph.strategies.odd_query import KINDS, nfkc_words, odd_query_text

_QUICK = settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))

CORPUS = Corpus(
    [
        Chunk("hr-1", "Leave policy", tenant="acme", metadata={"kind": "handbook", "area": "hr"}),
        Chunk("hr-1.v1", "Old leave policy", tenant="acme", superseded_by="hr-1", metadata={"kind": "handbook", "area": "hr"}),
        Chunk("faq-1", "Leave questions", metadata={"kind": "faq", "area": "hr"}),
        Chunk("it-1", "Password reset", tenant="globex", metadata={"kind": "guide", "area": "it"}),
    ]
)
CASE = Case("q", "leave policy", tenant="acme", evidence=[["hr-1"]])


def obs(hits: list[tuple[str, float]], *, k: int, filters: Filters = Filters(), corpus: Corpus = CORPUS, query: str = CASE.query) -> Observation:
    """An observation of `hits` for the case asked with `query`, `k` and `filters` over `corpus`."""
    case = Case(CASE.id, query, tenant=CASE.tenant, evidence=CASE.evidence)
    return Observation(World(corpus, case, Params(k, filters)), Ranking(tuple(Hit(i, s) for i, s in hits)))


# -- filters --------------------------------------------------------------------------------------------------
def test_admitted_only_names_the_chunk_outside_the_filter() -> None:
    current = Filters(current_only=True)
    assert admitted_only(obs([("hr-1", 2.0), ("faq-1", 1.0)], k=3, filters=current)).holds
    verdict = admitted_only(obs([("hr-1", 2.0), ("hr-1.v1", 1.0)], k=3, filters=current))
    assert not verdict.holds and "'hr-1.v1' at rank 2" in verdict.detail
    assert not admitted_only(obs([("faq-1", 1.0)], k=3, filters=Filters(metadata={"kind": "handbook"}))).holds
    assert not admitted_only(obs([], k=3)).applicable


def test_filtered_equals_admitted_on_an_exhausted_base_is_exact() -> None:
    base = obs([("hr-1.v1", 3.0), ("hr-1", 2.0), ("faq-1", 1.0)], k=100)
    current = Filters(current_only=True)
    assert filtered_equals_admitted(base, obs([("hr-1", 2.0), ("faq-1", 1.0)], k=5, filters=current)).holds
    # Dropping an admitted chunk, or adding one the unfiltered ranking never showed, is a failure.
    assert not filtered_equals_admitted(base, obs([("hr-1", 2.0)], k=5, filters=current)).holds
    assert not filtered_equals_admitted(base, obs([("hr-1", 2.0), ("faq-1", 1.0), ("it-1", 0.5)], k=5, filters=current)).holds
    assert filtered_equals_admitted(base, obs([("hr-1", 2.0)], k=1, filters=current)).holds


def test_filtered_equals_admitted_allows_ties_at_the_cut_of_a_full_base() -> None:
    base = obs([("hr-1", 2.0), ("faq-1", 1.0)], k=2)  # full: more may match beyond it
    handbook = Filters(metadata={"area": "hr"})
    assert filtered_equals_admitted(base, obs([("hr-1", 2.0), ("faq-1", 1.0)], k=2, filters=handbook)).holds
    assert not filtered_equals_admitted(base, obs([("faq-1", 1.0)], k=2, filters=handbook)).holds
    assert not filtered_equals_admitted(base, base).applicable


def test_filter_choices_start_with_current_only_and_use_gold_metadata() -> None:
    choices = filter_choices(World(CORPUS, CASE, Params(5)))
    assert choices[0] == Filters(current_only=True)
    assert Filters(metadata={"kind": "handbook"}) in choices and Filters(metadata={"kind": "handbook", "area": "hr"}) in choices
    assert Filters(tenant="acme", current_only=True) in choices
    assert len(set(choices)) == len(choices)


def test_filter_choices_do_not_depend_on_the_order_of_metadata_keys(tmp_path) -> None:
    from ragmorph.io import read_corpus, write_corpus

    flipped = Corpus([attrs.evolve(c, metadata=dict(reversed(list(c.metadata.items())))) for c in CORPUS])
    write_corpus(CORPUS, tmp_path / "corpus.jsonl")
    read_back = read_corpus(tmp_path / "corpus.jsonl")

    def drawn(corpus: Corpus) -> list[tuple[object, ...]]:
        # The conditions in the order a retriever iterates them, not only as equal Filters.
        return [(f.tenant, f.current_only, tuple(f.metadata.items())) for f in filter_choices(World(corpus, CASE, Params(5)))]

    assert drawn(CORPUS) == drawn(flipped) == drawn(read_back)
    # The two-key filter leads with the gold chunk's most selective condition (kind=handbook: 2 chunks, area=hr: 3).
    assert ("kind", "area") in [tuple(f.metadata) for f in filter_choices(World(flipped, CASE, Params(5)))]


# -- depth ----------------------------------------------------------------------------------------------------
def test_no_newcomer_only_judges_exhausted_rankings() -> None:
    smaller = CORPUS.without(["faq-1"])
    base = obs([("hr-1", 2.0), ("faq-1", 1.0)], k=21)
    assert no_newcomer(base, obs([("hr-1", 2.0)], k=21, corpus=smaller)).holds
    verdict = no_newcomer(base, obs([("hr-1", 2.0), ("hr-1.v1", 1.0)], k=21, corpus=smaller))
    assert not verdict.holds and "'hr-1.v1' appeared" in verdict.detail
    full = obs([("hr-1", 2.0), ("faq-1", 1.0)], k=2)
    assert not no_newcomer(full, obs([("hr-1", 2.0), ("hr-1.v1", 1.0)], k=2, corpus=smaller)).applicable


# -- lifecycle ------------------------------------------------------------------------------------------------
def test_growth_keeps_every_match_and_finds_the_late_chunk() -> None:
    world = World(CORPUS, CASE, Params(5, Filters(tenant="acme")))
    grow = Grow(k=50, count=3)
    grown = grow.apply(world).corpus
    late = grown.chunks[-1]
    assert late.text.startswith(CASE.query) and len(grown) == len(CORPUS) + 4
    assert all(not set(query_tokens(c.text)) & set(query_tokens(CASE.query)) for c in grown.chunks[len(CORPUS) : -1])
    base = obs([("hr-1", 2.0), ("faq-1", 1.0)], k=50)
    assert growth_keeps_matches(base, obs([(late.id, 3.0), ("hr-1", 2.0), ("faq-1", 1.0)], k=50, corpus=grown)).holds
    lost = growth_keeps_matches(base, obs([(late.id, 3.0), ("hr-1", 2.0)], k=50, corpus=grown))
    assert not lost.holds and "'faq-1'" in lost.detail
    missing = growth_keeps_matches(base, obs([("hr-1", 2.0), ("faq-1", 1.0)], k=50, corpus=grown))
    assert not missing.holds and late.id in missing.detail
    assert not growth_keeps_matches(obs([("hr-1", 2.0)], k=1), obs([], k=1, corpus=grown)).applicable


def test_growth_asks_its_base_ranking_past_the_corpus_as_depth_does() -> None:
    from ragmorph.strategies.depth import RemoveAtDepth

    world = World(CORPUS, CASE, Params(5, Filters(tenant="acme")))
    grow = Grow(k=len(CORPUS) + 34, count=32)
    # The base ranking holds every chunk, asked where depth asks its own base ranking (one call, cached, serves
    # both); the follow-up is asked past the grown corpus.
    assert grow.base(world) == RemoveAtDepth(k=len(CORPUS) + 1, ids=("hr-1",)).base(world)
    assert grow.base(world).params.k == len(CORPUS) + 1 and grow.apply(world).params.k > len(grow.apply(world).corpus)
    assert grow.base(world).params.filters == world.params.filters


# -- odd queries ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fullwidth", "ligature", "nfd", "nfc"])
def test_unicode_forms_keep_the_nfkc_words(kind: str) -> None:
    world = World(CORPUS, Case("q", "Café office flights, ﬁne?", evidence=[["hr-1"]]), Params(3))
    text = odd_query_text(world, kind)
    assert nfkc_words(text) == nfkc_words(world.case.query)
    assert text != world.case.query or kind == "nfc"
    assert unicodedata.normalize("NFKC", text).casefold() == unicodedata.normalize("NFKC", world.case.query).casefold()


@_QUICK
@given(data=st.data())
def test_odd_queries_cover_every_kind_and_share_no_word_when_asked(data: st.DataObject) -> None:
    world = World(CORPUS, CASE, Params(5, Filters(tenant="acme")))
    drawn = data.draw(FAMILIES["odd_query"].perturbations(world, ks=(1, 3)))
    assert drawn.kind in KINDS and drawn.filters.tenant == "acme"
    if drawn.kind == "no_shared_word":
        held = {t for c in CORPUS for t in query_tokens(c.text)}
        assert drawn.query and not set(query_tokens(drawn.query)) & held
    if drawn.kind in ("punctuation", "stopwords"):
        assert not set(query_tokens(drawn.query)) & set(query_tokens("leave policy"))


def test_added_existing_one_version_accepts_an_unchanged_ranking_or_a_tied_copy() -> None:
    from ragmorph.strategies.lifecycle import added_existing_one_version

    copied = CORPUS.replaced(Chunk("faq-1", "Leave policy", tenant="acme", metadata={"kind": "handbook", "area": "hr"}))
    before = obs([("hr-1", 2.0), ("faq-1", 1.0)], k=3)
    # Refused or ignored: the instance ranks as before.
    assert added_existing_one_version(before, obs([("hr-1", 2.0), ("faq-1", 1.0)], k=3, corpus=copied)).holds
    # Replaced: the copy ties with its original.
    assert added_existing_one_version(before, obs([("hr-1", 2.0), ("faq-1", 2.0)], k=3, corpus=copied)).holds
    # Neither: both versions are indexed under one id.
    verdict = added_existing_one_version(before, obs([("faq-1", 3.0), ("hr-1", 2.0)], k=3, corpus=copied))
    assert not verdict.holds and "neither an upsert nor refused" in verdict.detail
    assert not added_existing_one_version(before, obs([("faq-1", 3.0)], k=3, corpus=copied)).applicable
    assert not added_existing_one_version(before, obs([("hr-1", 2.0)], k=3)).applicable


def _plain_copies(base: Observation, follow: Observation) -> list[tuple[str, str]]:
    """The lifecycle family's copy pairs, read chunk by chunk (the reference for its C-speed scan)."""
    from ragmorph.strategies.lifecycle import _content

    corpus, before = follow.world.corpus, base.world.corpus
    same = [old is new for old, new in zip(before.chunks, corpus.chunks)]
    same += [False] * (len(corpus) - len(same))
    return [
        (chunk.id, other.id)
        for chunk, kept in zip(corpus.chunks, same)
        if not kept and before.get(chunk.id) not in (None, chunk)
        for other in corpus
        if other.id != chunk.id and _content(other) == _content(chunk)
    ]


_TEXTS = st.sampled_from(["leave policy", "Leave policy", "password reset", ""])


@_QUICK
@given(
    st.lists(st.tuples(_TEXTS, st.sampled_from([None, "acme"])), min_size=1, max_size=6),
    st.lists(
        st.tuples(st.sampled_from(["replace", "add", "remove", "reorder"]), st.integers(0, 9), _TEXTS, st.sampled_from([None, "acme"])),
        max_size=5,
    ),
)
def test_lifecycle_copies_match_the_plain_scan(chunks: list[tuple[str, str | None]], edits: list[tuple[str, int, str, str | None]]) -> None:
    from ragmorph.strategies.lifecycle import _changed, _copies, updated_unrelated_unmatched

    base = Corpus(Chunk(f"c{n}", text, tenant=tenant) for n, (text, tenant) in enumerate(chunks))
    corpus = base
    for number, (op, n, text, tenant) in enumerate(edits):
        target = corpus.chunks[n % len(corpus)] if len(corpus) else None
        if op == "replace" and target is not None:
            corpus = corpus.replaced(attrs.evolve(target, text=text, tenant=tenant))
        elif op == "add":
            corpus = corpus.with_chunks([Chunk(f"n{number}", text, tenant=tenant)], at=n % (len(corpus) + 1))
        elif op == "remove" and target is not None and len(corpus) > 1:
            corpus = corpus.without([target.id])
        elif op == "reorder" and len(corpus) > 1:
            corpus = corpus.reordered([*range(1, len(corpus)), 0])
    before, after = obs([], k=3, corpus=base), obs([], k=3, corpus=corpus)
    assert _copies(before, after) == _plain_copies(before, after)
    # The updated chunks the unrelated-update relation judges: the changed chunks, read the plain way.
    plain = [chunk for chunk in corpus if base.get(chunk.id) not in (None, chunk)]
    assert _changed(base, corpus) == plain
    if plain:
        hits = [(chunk.id, 1.0) for chunk in plain]
        verdict = updated_unrelated_unmatched(before, obs(hits, k=3, corpus=corpus))
        # Every changed chunk is returned with a positive score: the first changed to text sharing no query word
        # (in hit order) breaks the relation, and with none there is nothing to judge.
        query = set(query_tokens(after.world.case.query))
        unrelated = [chunk.id for chunk in plain if not query & set(query_tokens(chunk.text))]
        assert verdict.applicable == bool(unrelated)
        assert verdict.holds == (not unrelated)
        if unrelated:
            assert verdict.detail.startswith(f"chunk {unrelated[0]!r} was updated")


def test_no_newcomer_excuses_a_predecessor_shown_once_its_successor_is_removed() -> None:
    # A freshness policy hides hr-1.v1 while its successor hr-1 is present; removing hr-1 shows it.
    without_successor = CORPUS.without(["hr-1"])
    base = obs([("hr-1", 2.0), ("faq-1", 1.0)], k=21)
    assert no_newcomer(base, obs([("hr-1.v1", 2.0), ("faq-1", 1.0)], k=21, corpus=without_successor)).holds
    # Any other newcomer is still a break: the first ranking left out a matching chunk.
    without_faq = CORPUS.without(["faq-1"])
    assert not no_newcomer(base, obs([("hr-1", 2.0), ("hr-1.v1", 1.0)], k=21, corpus=without_faq)).holds


def test_filtered_equals_admitted_judges_only_where_the_calls_scores_show_one_list() -> None:
    handbook = Filters(metadata={"kind": "handbook"})
    base = obs([("faq-1", 3.0), ("hr-1", 2.0), ("hr-1.v1", 1.0)], k=100)
    # One scored list that dropped an admitted chunk: judged, and broken.
    assert not filtered_equals_admitted(base, obs([("hr-1.v1", 1.0)], k=2, filters=handbook)).holds
    assert filtered_equals_admitted(base, obs([("hr-1", 2.0), ("hr-1.v1", 1.0)], k=2, filters=handbook)).holds
    # Rank fusion with the filter in each leg: the admitted chunks score higher once faq-1 is gone, and reorder.
    fused = filtered_equals_admitted(base, obs([("hr-1.v1", 2.6), ("hr-1", 2.5)], k=2, filters=handbook))
    assert not fused.applicable and "scored 2 unfiltered and 2.5 under the filter" in fused.detail
    # A candidate pool filtered inside: a chunk the unfiltered call never ranked outscores the ones it did.
    pooled_base = obs([("faq-1", 3.0), ("hr-1", 2.0)], k=100)
    pooled = filtered_equals_admitted(pooled_base, obs([("hr-1.v1", 2.5), ("hr-1", 2.0)], k=2, filters=handbook))
    assert not pooled.applicable and "ranked different candidates" in pooled.detail


def test_repeat_identical_accepts_float_noise_swapping_tied_hits_and_nothing_else() -> None:
    from ragmorph.strategies.repeat import _identical

    first = obs([("hr-1", 0.36265925), ("faq-1", 0.36265924)], k=2)
    # Noise in the last digits swaps two near-tied chunks, within the list or at the cut.
    assert _identical(first, obs([("faq-1", 0.36265929), ("hr-1", 0.36265925)], k=2)).holds
    assert _identical(obs([("hr-1", 0.36265925)], k=1), obs([("faq-1", 0.36265929)], k=1)).holds
    # Bit-identical scores in another order: ties broken differently on a repeat, a state bug.
    tied = obs([("hr-1", 0.5), ("faq-1", 0.5)], k=2)
    assert not _identical(tied, obs([("faq-1", 0.5), ("hr-1", 0.5)], k=2)).holds
    # At the cut the displaced chunk may have moved by noise unseen: another chunk tied at the boundary passes.
    assert _identical(obs([("hr-1", 0.5)], k=1), obs([("faq-1", 0.5)], k=1)).holds
    # A score moving past the tolerance, or a chunk that was not tied, is a change.
    assert not _identical(first, obs([("hr-1", 0.3627), ("faq-1", 0.36265924)], k=2)).holds
    assert not _identical(first, obs([("hr-1", 0.36265925), ("it-1", 0.1)], k=2)).holds
