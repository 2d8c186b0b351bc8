"""validate_hits: each breach of the retriever contract raises InvalidResponse with the query and an excerpt."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import ScoreOrderWarning, validate_hits
from ragmorph.errors import InvalidResponse, UsageError
from ragmorph.model import Chunk, Corpus, Hit

CORPUS = Corpus([Chunk(f"d{i}", f"text {i}") for i in range(6)])


def test_accepts_hits_pairs_and_bare_ids() -> None:
    hits = validate_hits([Hit("d0", 2.0), ("d1", 1.5), "d2"], k=3, query="q", corpus=CORPUS)
    assert hits == (Hit("d0", 2.0), Hit("d1", 1.5), Hit("d2"))


def test_hits_without_scores_and_ties_are_fine() -> None:
    assert len(validate_hits(["d0", "d1"], k=5, query="q", corpus=CORPUS)) == 2
    assert len(validate_hits([("d0", 1.0), ("d1", 1.0), "d2", ("d3", 0.5)], k=5, query="q")) == 4


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (["d0", "d1", "d2"], "at most k=2 hits, got 3"),
        (["d0", "d0"], "distinct ids, got id='d0' at ranks 1 and 2"),
        (["d0", "zz"], "unknown id='zz' at rank 2"),
        ([("d0", math.nan)], "finite score"),
        ([("d0", math.inf)], "finite score"),
        ([("d0", 1.0), ("d1", 2.0)], "not to rise"),
        ([("d0", "high")], "numeric score"),
        ([42], "rank 1, got int"),
        ("d0", "sequence of hits, got str"),
        (None, "sequence of hits, got NoneType"),
    ],
)
def test_each_breach_is_reported(response: object, message: str) -> None:
    with pytest.raises(InvalidResponse, match=message) as caught:
        validate_hits(response, k=2, query="annual leave", corpus=CORPUS)
    assert caught.value.query == "annual leave"
    assert caught.value.excerpt


def test_the_first_breach_in_rank_order_is_the_one_reported() -> None:
    # The whole-response check only decides whether anything breaks; the message is the first breach by rank.
    with pytest.raises(InvalidResponse, match="unknown id='zz' at rank 2"):
        validate_hits([("d0", 3.0), ("zz", 2.0), ("d0", 1.0), ("d1", math.nan)], k=4, query="q", corpus=CORPUS)
    with pytest.raises(InvalidResponse, match="distinct ids, got id='d0' at ranks 1 and 2"):
        validate_hits([("d0", 3.0), ("d0", 2.0), ("zz", 1.0)], k=3, query="q", corpus=CORPUS)
    with pytest.raises(InvalidResponse, match="finite score, got score=nan for id='d1' at rank 2"):
        validate_hits([("d0", 1.0), ("d1", math.nan), ("d2", 5.0)], k=3, query="q", corpus=CORPUS)


def test_ids_are_checked_against_a_derived_corpus_through_its_deltas() -> None:
    smaller = CORPUS.without(["d1"])
    with pytest.raises(InvalidResponse, match="unknown id='d1' at rank 2"):
        validate_hits(["d0", "d1"], k=2, query="q", corpus=smaller)
    again = smaller.with_chunks([Chunk("d1", "back"), Chunk("new", "added")])
    assert len(validate_hits(["new", "d1", "d0"], k=3, query="q", corpus=again)) == 3


def test_rising_scores_are_compared_across_unscored_hits() -> None:
    with pytest.raises(InvalidResponse, match="score=3.0 at rank 3 above score=1.0 at rank 1"):
        validate_hits([("d0", 1.0), "d1", ("d2", 3.0)], k=3, query="q")


def test_unknown_ids_pass_without_a_corpus() -> None:
    assert validate_hits(["zz"], k=1, query="q", corpus=None) == (Hit("zz"),)


def test_rising_scores_only_warn_when_asked() -> None:
    with pytest.warns(ScoreOrderWarning, match="rank 2"):
        hits = validate_hits([("d0", 1.0), ("d1", 2.0)], k=2, query="q", score_order="warn")
    assert [h.id for h in hits] == ["d0", "d1"]


def test_bad_score_order_option() -> None:
    with pytest.raises(UsageError, match="score_order"):
        validate_hits([], k=1, query="q", score_order="ignore")  # type: ignore[arg-type]


CORRUPTIONS = ("too_many", "duplicate", "unknown", "nan", "rising", "wrong_type")


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.sampled_from(CORPUS.ids), unique=True, min_size=1, max_size=4),
    scores=st.lists(st.floats(-1e6, 1e6), min_size=4, max_size=4),
    corruption=st.sampled_from(CORRUPTIONS),
)
def test_every_corruption_of_a_valid_response_is_caught(ids: list[str], scores: list[float], corruption: str) -> None:
    ordered = sorted(scores[: len(ids)], reverse=True)
    valid: list[object] = list(zip(ids, ordered))
    k = len(valid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(validate_hits(valid, k=k, query="q", corpus=CORPUS)) == k
    bad = list(valid)
    if corruption == "too_many":
        k -= 1
        if k == 0:
            bad, k = [valid[0], valid[0]], 2
    elif corruption == "duplicate":
        bad.append(bad[0])
        k += 1
    elif corruption == "unknown":
        bad[-1] = ("not-in-corpus", ordered[-1])
    elif corruption == "nan":
        bad[-1] = (ids[-1], math.nan)
    elif corruption == "rising":
        spare = next(i for i in CORPUS.ids if i not in ids)
        bad.append((spare, ordered[-1] + 1.0))
        k += 1
    else:
        bad[-1] = (ids[-1], object())
    with pytest.raises(InvalidResponse):
        validate_hits(bad, k=k, query="q", corpus=CORPUS)


def _breaks_a_rule(hits: tuple[Hit, ...], corpus: Corpus | None) -> bool:
    """The contract rules after the k check, checked hit by hit in plain Python (what the whole-response passes
    of `validate_hits` must agree with)."""
    seen: set[str] = set()
    previous = None
    for hit in hits:
        if hit.id in seen or (corpus is not None and hit.id not in corpus):
            return True
        seen.add(hit.id)
        if hit.score is None:
            continue
        if not math.isfinite(hit.score) or (previous is not None and hit.score > previous):
            return True
        previous = hit.score
    return False


_SCORES = st.one_of(
    st.none(),
    st.floats(-10, 10),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, math.inf, -math.inf]),
    st.integers(-3, 3),
)


@st.composite
def _derived_corpora(draw: st.DrawFn) -> Corpus | None:
    """None, or a corpus derived from CORPUS by removals, additions, an update in place and a reorder."""
    if draw(st.booleans()):
        return None
    corpus = CORPUS
    for step in draw(st.lists(st.sampled_from(["remove", "add", "update", "reorder"]), max_size=4)):
        if step == "remove" and len(corpus) > 1:
            corpus = corpus.without(draw(st.lists(st.sampled_from(corpus.ids), unique=True, max_size=len(corpus) - 1)))
        elif step == "add":
            fresh = [i for i in ("n0", "n1", "d1", "d3") if i not in corpus]
            if fresh:
                corpus = corpus.with_chunks(Chunk(i, "added") for i in draw(st.lists(st.sampled_from(fresh), unique=True)))
        elif step == "update":
            corpus = corpus.replaced(Chunk(draw(st.sampled_from(corpus.ids)), "updated"))
        elif step == "reorder":
            corpus = corpus.reordered(draw(st.permutations(range(len(corpus)))))
    return corpus


@settings(max_examples=300, deadline=None)
@given(
    hits=st.lists(st.builds(Hit, st.sampled_from([*CORPUS.ids, "n0", "n1", "zz"]), _SCORES), max_size=8),
    distinct=st.booleans(),
    sorted_scores=st.booleans(),
    corpus=_derived_corpora(),
)
def test_whole_response_checks_agree_with_the_checks_hit_by_hit(
    hits: list[Hit], distinct: bool, sorted_scores: bool, corpus: Corpus | None
) -> None:
    from ragmorph.adapters.validation import _valid

    if distinct:  # each rule alone breaks a response more often when the others hold
        hits = list({h.id: h for h in reversed(hits)}.values())[::-1]
    if sorted_scores:  # valid orders are the common case: make them common here too
        scored = sorted((h for h in hits if h.score is not None and not math.isnan(h.score)), key=lambda h: -h.score)
        hits = [*scored, *(h for h in hits if h not in scored)]
    assert _valid(tuple(hits), corpus) is not _breaks_a_rule(tuple(hits), corpus)


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(
        st.one_of(
            st.none(),
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([0.0, -0.0, 1.7e308, -1.7e308, math.inf, -math.inf]),
            st.integers(-3, 3),
        ),
        max_size=6,
    ),
    as_numpy=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_numpy_scores_get_the_verdicts_of_the_checks_hit_by_hit_without_a_warning(
    scores: list[float | int | None], as_numpy: list[bool]
) -> None:
    """numpy's float64 is a float, so a Hit holds it as its score: adding such scores up must not overflow with
    numpy's RuntimeWarning (an error under `-W error`) where the hit-by-hit checks see a valid response."""
    np = pytest.importorskip("numpy")
    hits = tuple(
        Hit(f"d{i}", np.float64(score) if wrap and isinstance(score, float) else score)
        for i, (score, wrap) in enumerate(zip(scores, as_numpy))
    )
    from ragmorph.adapters.validation import _valid

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _valid(hits, CORPUS) is not _breaks_a_rule(hits, CORPUS)
        descending = tuple(Hit(f"d{i}", np.float64(s)) for i, s in enumerate([1.7e308, 1.7e308, 0.5]))
        assert validate_hits(descending, k=3, query="q", corpus=CORPUS) == descending
