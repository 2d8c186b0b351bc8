"""Relations judged on hand-built observations: pass, fail and not-applicable for each kind of check."""

from __future__ import annotations

from ragmorph.model import Case, Chunk, Corpus, Filters, Hit, Params, Ranking, World
from ragmorph.relations import Observation, compare_up_to_ties, scores_tied
from ragmorph.runner import observation
from ragmorph.strategies import relation

CORPUS = Corpus(
    [
        Chunk("a", "alpha", tenant="acme"),
        Chunk("b", "beta", tenant="globex"),
        Chunk("c", "gamma"),
        Chunk("d", "delta", tenant="acme"),
        Chunk("e", "epsilon", tenant="acme", superseded_by="a"),
    ]
)
CASE = Case("q", "alpha question", tenant="acme", evidence=[["a"], ["d"]])


def obs(hits, *, k=3, filters=Filters(), corpus=CORPUS, case=CASE) -> Observation:
    ranking = Ranking(Hit(i, s) if isinstance((i, s)[1], float) else Hit(i) for i, s in hits)
    return observation(World(corpus, case, Params(k, filters)), ranking)


def test_compare_up_to_ties_allows_reordering_inside_a_tie_only() -> None:
    base = [Hit("a", 3.0), Hit("b", 2.0), Hit("c", 2.0)]
    assert compare_up_to_ties(base, [Hit("a", 3.0), Hit("c", 2.0), Hit("b", 2.0)]).holds
    assert not compare_up_to_ties(base, [Hit("b", 2.0), Hit("a", 3.0), Hit("c", 2.0)]).holds
    # The last class is open: another chunk tied at the cut may take the slot, but not one with another score.
    assert compare_up_to_ties(base, [Hit("a", 3.0), Hit("b", 2.0), Hit("d", 2.0)]).holds
    assert not compare_up_to_ties(base, [Hit("a", 3.0), Hit("b", 2.0), Hit("d", 1.0)]).holds
    assert not compare_up_to_ties(base, [Hit("a", 3.0), Hit("b", 2.0), Hit("d", 2.0)], open_end=False).holds
    assert not compare_up_to_ties(base, base[:2]).holds
    unscored = compare_up_to_ties([Hit("a")], [Hit("a")])
    assert not unscored.applicable


def test_scores_tie_up_to_float_noise_only() -> None:
    assert scores_tied(1.0, 1.0 + 1e-12) and scores_tied(1e6, 1e6 + 1e-4)
    assert not scores_tied(1.0, 1.001)


def test_cutoff_prefix_and_recall() -> None:
    prefix, recall = relation("cutoff.prefix"), relation("cutoff.recall")
    base = obs([("a", 3.0), ("d", 2.0)], k=2)
    good = obs([("a", 3.0), ("d", 2.0), ("c", 1.0)], k=3)
    bad = obs([("a", 3.0), ("c", 2.5), ("d", 2.0)], k=3)
    assert prefix.check(base, good).holds and recall.check(base, good).holds
    assert not prefix.check(base, bad).holds
    dropped = obs([("a", 3.0), ("c", 2.5), ("b", 2.4)], k=3)
    assert not recall.check(base, dropped).holds
    # A gold chunk tied at the cut may give way to another member of a tie that overflows k'.
    tied_base = obs([("a", 3.0), ("d", 2.0)], k=2)
    overflow = obs([("a", 3.0), ("c", 2.0), ("b", 2.0)], k=3)
    assert recall.check(tied_base, overflow).holds


def test_tenancy_relations() -> None:
    unauthorized = relation("tenancy.unauthorized_zero")
    visible = relation("tenancy.filtered_equals_visible")
    base = obs([("a", 3.0), ("b", 2.5), ("d", 2.0), ("c", 1.0)], k=10)
    good = obs([("a", 3.0), ("d", 2.0)], k=2, filters=Filters(tenant="acme"))
    leak = obs([("a", 3.0), ("b", 2.5)], k=2, filters=Filters(tenant="acme"))
    skipped = obs([("a", 3.0), ("c", 1.0)], k=2, filters=Filters(tenant="acme"))
    assert unauthorized.check(base, good).holds and visible.check(base, good).holds
    assert not unauthorized.check(base, leak).holds
    assert not visible.check(base, skipped).holds
    assert not unauthorized.check(base, obs([("a", 3.0)])).applicable


def test_no_cross_tenant() -> None:
    rel = relation("tenancy.no_cross_tenant")
    base = obs([("a", 3.0)])
    as_globex = Case("q", "alpha question", tenant="globex", evidence=[["a"]])
    assert rel.check(base, obs([("b", 1.0), ("c", 0.5)], case=as_globex)).holds
    assert not rel.check(base, obs([("a", 1.0)], case=as_globex)).holds
    assert not rel.check(base, obs([("a", 1.0)])).applicable


def test_removal_relations() -> None:
    never, uncovered, recall = (
        relation("removal.removed_never_returned"),
        relation("removal.group_uncovered"),
        relation("removal.recall_non_increasing"),
    )
    smaller = CORPUS.without(["a"])
    base = obs([("a", 3.0), ("d", 2.0)])
    gone = obs([("d", 2.0), ("c", 1.0)], corpus=smaller)
    stale = obs([("a", 3.0), ("d", 2.0)], corpus=smaller)
    assert never.check(base, gone).holds and uncovered.check(base, gone).holds and recall.check(base, gone).holds
    assert not never.check(base, stale).holds and not uncovered.check(base, stale).holds
    other = obs([("a", 3.0)], corpus=CORPUS.without(["b"]))
    assert not uncovered.check(base, other).applicable and not recall.check(base, other).applicable


def test_distractor_lexical_relation_judges_only_positive_gold() -> None:
    rel = relation("distractors.unrelated_below_gold")
    more = CORPUS.with_chunks([Chunk("x", "lorem ipsum", tenant="acme")])
    base = obs([("a", 2.0)])
    assert rel.check(base, obs([("a", 2.0), ("x", 0.0)], corpus=more)).holds
    assert not rel.check(base, obs([("x", 0.0), ("a", 2.0)], corpus=more)).holds
    # The injected chunk displaced a gold chunk that shares a word with the query.
    assert not rel.check(base, obs([("x", 0.0)], corpus=more)).holds
    # A gold chunk scoring 0 cannot be told apart from the injected one: not judged.
    zero_base = obs([("c", 1.0)])
    assert rel.check(zero_base, obs([("x", 0.0), ("a", 0.0)], corpus=more)).holds
    assert not rel.check(base, obs([("x", None), ("a", None)], corpus=more)).applicable


def test_supersede_relations() -> None:
    stale, excludes, first = (
        relation("supersede.stale_zero"),
        relation("supersede.current_only_excludes_superseded"),
        relation("supersede.successor_first"),
    )
    old = Chunk("a~old", "alpha", tenant="acme", superseded_by="a")
    added = CORPUS.with_chunks([old], at=0)
    current = Filters(tenant="acme", current_only=True)
    base = obs([("a", 2.0)], filters=current)
    assert stale.check(base, obs([("a", 2.0)], corpus=added, filters=current)).holds
    assert not stale.check(base, obs([("a~old", 2.0), ("a", 2.0)], corpus=added, filters=current)).holds
    swapped = added.without(["a"])
    broken = excludes.check(base, obs([("a~old", 2.0)], corpus=swapped, filters=current))
    assert not broken.holds and "only in superseded form" in broken.detail
    plain = obs([("a", 2.0)])
    assert not first.check(plain, obs([("a~old", 2.0), ("a", 2.0)], corpus=added)).holds
    assert first.check(plain, obs([("a", 2.0), ("a~old", 2.0)], corpus=added)).holds
    assert not first.check(base, obs([("a", 2.0)], corpus=added, filters=current)).applicable


def test_repeat_and_query_relations() -> None:
    identical, query = relation("repeat.identical"), relation("query.ranking_invariant")
    base = obs([("a", 2.0), ("d", 1.0)])
    assert identical.check(base, obs([("a", 2.0), ("d", 1.0)])).holds
    assert not identical.check(base, obs([("d", 1.0), ("a", 2.0)])).holds
    edited = Case("q", "ALPHA QUESTION", tenant="acme", evidence=[["a"], ["d"]])
    assert query.check(base, obs([("a", 5.0), ("d", 1.0)], case=edited)).holds
    assert not query.check(base, obs([("a", 2.0), ("d", 1.0)])).applicable


def test_promote_relevant_uses_the_metrics() -> None:
    rel = relation("reorder.promote_relevant")
    base = obs([("c", None), ("a", None)], k=2)
    swapped = obs([("a", None), ("c", None)], k=2)
    verdict = rel.check(base, swapped)
    assert verdict.applicable and verdict.holds and verdict.after >= verdict.before


def test_padded_copy_never_outranks_its_original_except_in_a_tie() -> None:
    rel = relation("distractors.padded_below_original")
    copy = Chunk("pad", "alpha lorem ipsum", tenant="acme", metadata={"copy_of": "a"})
    more = CORPUS.with_chunks([copy], at=0)
    base = obs([("a", 2.0)], k=2)
    assert rel.check(base, obs([("a", 2.0), ("pad", 1.5)], k=2, corpus=more)).holds
    assert rel.check(base, obs([("pad", 2.0), ("a", 2.0)], k=2, corpus=more)).holds  # b = 0: a tie, any order
    assert not rel.check(base, obs([("pad", 2.5), ("a", 2.0)], k=2, corpus=more)).holds
    # The original cut off at k: only allowed when it could be tied with the last hit.
    assert rel.check(base, obs([("d", 3.0), ("pad", 2.0)], k=2, corpus=more)).holds
    assert not rel.check(base, obs([("pad", 2.0), ("d", 1.0)], k=2, corpus=more)).holds
    assert not rel.check(base, obs([("pad", 2.0)], k=2, corpus=more)).holds
    assert not rel.check(base, obs([("a", 2.0)], k=2, corpus=more)).applicable


def test_normalised_query_invariance_judges_only_edits_that_keep_the_words() -> None:
    rel = relation("query.normalised_invariant")
    base = obs([("a", 2.0), ("d", 1.0)])
    upper = Case("q", "ALPHA QUESTION?", tenant="acme", evidence=[["a"], ["d"]])
    assert rel.check(base, obs([("a", 2.0), ("d", 1.0)], case=upper)).holds
    assert not rel.check(base, obs([("d", 1.0), ("a", 2.0)], case=upper)).holds
    reworded = Case("q", "alphaquestion", tenant="acme", evidence=[["a"], ["d"]])
    assert not rel.check(base, obs([("d", 1.0)], case=reworded)).applicable
    assert rel.requires == ("normalising",) and rel.severity.value == "hard"
