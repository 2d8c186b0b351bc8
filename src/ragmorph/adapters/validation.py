"""The retriever contract, checked on every response: at most k hits, distinct known ids, finite ordered scores."""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

from ..errors import ContractRule, InvalidResponse, UsageError, describe
from ..model import Corpus, Hit
from ._protocol import excerpt, normalise_hits

__all__ = ["RagmorphWarning", "ScoreOrder", "ScoreOrderWarning", "validate_hits"]

ScoreOrder = Literal["error", "warn"]


class RagmorphWarning(UserWarning):
    """Base class of the warnings ragmorph issues."""


class ScoreOrderWarning(RagmorphWarning):
    """A retriever returned scores that rise down the ranking (allowed with score_order="warn")."""


def _check_score_order(score_order: object) -> None:
    if score_order not in ("error", "warn"):
        raise UsageError(f"expected score_order 'error' or 'warn', got score_order={describe(score_order)}")


def validate_hits(
    hits: Any,
    *,
    k: int,
    query: str,
    corpus: Corpus | None = None,
    score_order: ScoreOrder = "error",
) -> tuple[Hit, ...]:
    """Normalise a response and check the retriever contract; raise InvalidResponse naming the first breach.

    Checks, in order: shape and types, at most `k` hits, no repeated id, every id in `corpus` (when given),
    finite scores, and scores not rising down the list (compared between consecutive scored hits; hits
    without a score are fine). A rising score raises, or with `score_order="warn"` issues ScoreOrderWarning.
    """
    _check_score_order(score_order)
    normalised = normalise_hits(hits, query=query)

    def shown() -> str:
        # Built only when a rule breaks: most responses are valid and the excerpt costs a repr of all hits.
        return excerpt(hits)

    if len(normalised) > k:
        raise InvalidResponse(
            f"expected at most k={k} hits, got {len(normalised)}; cut the response to k",
            query=query,
            excerpt=shown(),
            rule=ContractRule.TOO_MANY_HITS,
        )
    try:
        valid = _valid(normalised, corpus)
    except Exception as error:
        # Hits built by the retriever itself keep their ids as given: a str subclass whose hash or equality
        # raises would otherwise escape as a traceback, read as a ragmorph crash instead of a contract breach.
        odd = next((hit.id for hit in normalised if type(hit.id) is not str), None)
        raise InvalidResponse(
            f"expected ids of type str, got an id of type {type(odd).__name__} whose comparison raised "
            f"{type(error).__name__}: {error}; return plain str ids",
            query=query,
            excerpt=shown(),
            rule=ContractRule.MALFORMED,
        ) from None
    if valid:
        return normalised
    # Some rule breaks: find the first breach in rank order, with its message (or the score-order warning).
    seen: dict[str, int] = {}
    for rank, hit in enumerate(normalised, start=1):
        if hit.id in seen:
            raise InvalidResponse(
                f"expected distinct ids, got id={hit.id!r} at ranks {seen[hit.id]} and {rank}",
                query=query,
                excerpt=shown(),
                rule=ContractRule.DUPLICATE_ID,
            )
        seen[hit.id] = rank
        if corpus is not None and hit.id not in corpus:
            raise InvalidResponse(
                f"expected ids from the corpus, got unknown id={hit.id!r} at rank {rank}; is the retriever "
                "indexed over a different corpus?",
                query=query,
                excerpt=shown(),
                rule=ContractRule.UNKNOWN_ID,
            )
        if hit.score is not None and not math.isfinite(hit.score):
            raise InvalidResponse(
                f"expected a finite score, got score={hit.score!r} for id={hit.id!r} at rank {rank}",
                query=query,
                excerpt=shown(),
                rule=ContractRule.NON_FINITE_SCORE,
            )
    previous: tuple[int, Hit] | None = None
    for rank, hit in enumerate(normalised, start=1):
        if hit.score is None:
            continue
        if previous is not None and hit.score > previous[1].score:  # type: ignore[operator]
            message = (
                f"expected scores not to rise down the ranking, got score={hit.score!r} at rank {rank} above "
                f"score={previous[1].score!r} at rank {previous[0]}; return hits best first (for distances, "
                "return the negated distance)"
            )
            if score_order == "error":
                raise InvalidResponse(message, query=query, excerpt=shown(), rule=ContractRule.RISING_SCORE)
            warnings.warn(f"{message}; query={query!r}", ScoreOrderWarning, stacklevel=2)
            break
        previous = (rank, hit)
    return normalised


def _valid(hits: tuple[Hit, ...], corpus: Corpus | None) -> bool:
    """Whether `hits` keep every rule `validate_hits` checks, in one pass over the ids and one over the scores (the
    depth family asks for k = corpus + 1: a 100k-hit response checked rule by rule cost more than the call)."""
    # One pass over the hits builds the set: at 100k hits each pass costs a cache miss per hit (the ids lie all
    # over the heap), more than the set itself. `missing` reads the set without copying it. Comprehensions, not
    # map(attrgetter): the interpreter reads a Hit's slot directly (half the time of attrgetter at 100k hits).
    distinct = {hit.id for hit in hits}
    if len(distinct) != len(hits) or (corpus is not None and corpus.missing(distinct)):
        return False
    scores = [hit.score for hit in hits]
    try:
        finite = _all_finite(scores)
    except TypeError:  # some hits have no score: those rules skip them
        scores = [score for score in scores if score is not None]
        finite = _all_finite(scores)
    if not finite:
        return False
    # Finite numbers are totally ordered: not rising down the list is being in descending order already (a sort
    # of a sorted list is one linear pass).
    return scores == sorted(scores, reverse=True)


def _all_finite(scores: list[float]) -> bool:
    """Whether every score is finite: by one sum, settled score by score when the sum is not finite."""
    # A finite sum has no inf or nan among its terms. fsum adds C doubles: a sum of numpy float64 scores (a Hit
    # holds them, float64 being a float) would overflow with numpy's RuntimeWarning, an error under -W error.
    try:
        if math.isfinite(math.fsum(scores)):
            return True
    except (OverflowError, ValueError):  # finite scores whose sum overflows; inf + -inf
        pass
    return all(map(math.isfinite, scores))
