"""Metrics of one ranking against one case, on the ranking exactly as returned."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..errors import UsageError, describe
from ..model import Case, Corpus, Hit, Ranking
from ..support import DEFAULT_SUPPORT, SupportJudge
from ._names import GOLD_MEASURES, Metric, parse_metrics

__all__ = ["Judge", "QueryScores", "evaluate", "is_empty_ok"]

class Judge(Protocol):
    """judge(query, text) -> relevance in [0, 1]; the judges themselves live in ragmorph.judges."""

    def __call__(self, query: str, text: str) -> float:
        """How relevant `text` is to `query`, in [0, 1]."""
        ...


class QueryScores(dict):  # type: ignore[type-arg]
    """The metric values of one query (a plain `dict[str, float | None]`) plus what `aggregate` pools.

    `parts` maps a metric name to its (numerator, denominator) for measures with a micro average;
    `gold_ids` and `returned_ids` (distinct ids in the whole ranking) feed the summary counts.
    """

    def __init__(
        self,
        values: Mapping[str, float | None],
        *,
        parts: Mapping[str, tuple[float, float]] | None = None,
        gold_ids: int | None = None,
        returned_ids: int | None = None,
        tags: Sequence[str] = (),
    ) -> None:
        super().__init__(values)
        self.parts: dict[str, tuple[float, float]] = dict(parts or {})
        self.gold_ids = gold_ids
        self.returned_ids = returned_ids
        self.tags: tuple[str, ...] = tuple(tags)

    def __reduce__(self) -> Any:
        # Keep the extras when results cross process boundaries (the runner pickles units and results).
        return (
            _rebuild_scores,
            (dict(self), self.parts, self.gold_ids, self.returned_ids, self.tags),
        )


def _rebuild_scores(
    values: dict[str, float | None],
    parts: dict[str, tuple[float, float]],
    gold_ids: int | None,
    returned_ids: int | None,
    tags: tuple[str, ...],
) -> QueryScores:
    return QueryScores(values, parts=parts, gold_ids=gold_ids, returned_ids=returned_ids, tags=tags)


def _as_hits(ranking: Ranking | Sequence[Hit | str]) -> tuple[Hit, ...]:
    if isinstance(ranking, Ranking):
        return ranking.hits
    if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Iterable):
        raise UsageError(f"expected a Ranking or a list of ids, got ranking={describe(ranking)}")
    hits = []
    for rank, item in enumerate(ranking, start=1):
        if isinstance(item, Hit):
            hits.append(item)
        elif isinstance(item, str):
            hits.append(Hit(item))
        else:
            raise UsageError(f"expected Hit objects or id strings in the ranking, got {describe(item)} at rank {rank}")
    return tuple(hits)


def _has_gold(case: Case) -> bool:
    """Whether gold-based measures are defined for `case` (policy no_gold)."""
    return case.is_answerable and bool(case.gold_ids)


def is_empty_ok(ranking: Ranking | Sequence[Hit | str], case: Case) -> bool | None:
    """For an unanswerable case: True when nothing was returned; None for answerable cases (policy unanswerable)."""
    if case.is_answerable:
        return None
    return len(_as_hits(ranking)) == 0


def _judge_score(judge: Judge, query: str, text: str, chunk_id: str) -> float:
    score = judge(query, text)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= float(score) <= 1.0:
        raise UsageError(
            f"expected the judge to return a number in [0, 1], got {describe(score)} for chunk {chunk_id!r}; "
            "rescale the judge's output"
        )
    return float(score)


class _Ranked:
    """Per-rank facts of one ranking, computed once and shared by every metric and cutoff."""

    def __init__(self, hits: tuple[Hit, ...], case: Case) -> None:
        self.hits = hits
        gold = set(case.gold_ids)
        seen: set[str] = set()
        self.first: list[bool] = []  # True where the id appears for the first time
        self.relevant: list[bool] = []  # first occurrence of a gold id
        for hit in hits:
            fresh = hit.id not in seen
            seen.add(hit.id)
            self.first.append(fresh)
            self.relevant.append(fresh and hit.id in gold)
        self.distinct = len(seen)

    def first_ids(self, k: int) -> list[str]:
        """Distinct ids in the top k, in rank order."""
        return [hit.id for hit, fresh in zip(self.hits[:k], self.first) if fresh]


def evaluate(
    ranking: Ranking | Sequence[Hit | str],
    case: Case,
    metrics: Iterable[Metric | str] | str,
    *,
    corpus: Corpus | None = None,
    judge: Judge | None = None,
    support: SupportJudge | Sequence[SupportJudge] | None = None,
) -> QueryScores:
    """Score one ranking, exactly as returned, against `case`: `{"P@5": 0.4, "R@5": None, ...}`.

    Values are None where a measure is undefined (see POLICIES). Governance measures need `corpus`;
    Relevance needs `judge`; `ClaimR(judge=M)@k` needs a support judge whose `method` is M among `support`
    (the token judge answers for `tokens` unless given). The result is a dict that also carries what
    `aggregate` needs for micro averages.
    """
    parsed = parse_metrics(metrics)
    supporters = _supporters(support)
    hits = _as_hits(ranking)
    ranked = _Ranked(hits, case)
    gold_ids = case.gold_ids
    defined = _has_gold(case)
    judged: dict[str, float] = {}
    values: dict[str, float | None] = {}
    parts: dict[str, tuple[float, float]] = {}
    for metric in parsed:
        name = str(metric)
        measure, k = metric.measure, metric.k
        if metric.info.needs_corpus and corpus is None:
            raise UsageError(f"expected corpus= for {name}: it looks chunks up by id; pass evaluate(..., corpus=corpus)")
        if measure in GOLD_MEASURES and not defined:
            values[name] = None
            continue
        if metric.info.needs_support:
            value, part = _claim_recall(ranked, case, metric, corpus, supporters)
        elif measure == "SpanR":
            value, part = _span_recall(ranked, case, metric)
        else:
            value, part = _MEASURE_FUNCTIONS[measure](ranked, case, k, corpus, judge, judged)
        values[name] = value
        if part is not None:
            parts[name] = part
    return QueryScores(
        values,
        parts=parts,
        gold_ids=len(gold_ids) if defined else 0,
        returned_ids=ranked.distinct,
        tags=case.tags,
    )


# Each measure function returns (value, (numerator, denominator) or None) for one cutoff.
_Result = tuple[float | None, tuple[float, float] | None]


def _relevant_in(ranked: _Ranked, k: int) -> int:
    return sum(ranked.relevant[:k])


def _precision(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    found = _relevant_in(ranked, k)
    return found / k, (found, k)


def _precision_returned(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    found = _relevant_in(ranked, k)
    slots = min(len(ranked.hits), k)
    return (found / slots if slots else None), (found, slots)


def _recall(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    found = _relevant_in(ranked, k)
    total = len(case.gold_ids)
    return found / total, (found, total)


def _span_recall(ranked: _Ranked, case: Case, metric: Metric) -> _Result:
    # Judged at the first occurrence of each gold id (policy duplicates), on the range the hit kept.
    whole = metric.cover == "all"
    found = sum(
        1
        for hit, relevant in zip(ranked.hits[: metric.k], ranked.relevant)
        if relevant and hit.keeps(case.spans.get(hit.id), whole=whole)
    )
    total = len(case.gold_ids)
    return found / total, (found, total)


def _group_recall(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    top = {hit.id for hit in ranked.hits[:k]}
    covered = sum(1 for group in case.evidence if not top.isdisjoint(group))
    return covered / len(case.evidence), (covered, len(case.evidence))


def _precision_sum(ranked: _Ranked, k: int) -> tuple[float, int]:
    """Sum of P@i over relevant ranks i <= k, and the number of relevant ranks."""
    total, found = 0.0, 0
    for index, relevant in enumerate(ranked.relevant[:k]):
        if relevant:
            found += 1
            total += found / (index + 1)
    return total, found


def _context_precision(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    total, found = _precision_sum(ranked, k)
    return (total / found if found else 0.0), None


def _average_precision(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    total, _found = _precision_sum(ranked, k)
    return total / len(case.gold_ids), None


def _reciprocal_rank(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    for index, relevant in enumerate(ranked.relevant[:k]):
        if relevant:
            return 1.0 / (index + 1), None
    return 0.0, None


def _ndcg(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    # Summed rank by rank, in trec_eval's order, so values agree with ndcg_cut to the last bits.
    dcg = 0.0
    for index, relevant in enumerate(ranked.relevant[:k]):
        if relevant:
            dcg += 1.0 / math.log2(index + 2)
    ideal = 0.0
    for index in range(min(len(case.gold_ids), k)):
        ideal += 1.0 / math.log2(index + 2)
    return dcg / ideal, None


def _hit(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    found = 1.0 if any(ranked.relevant[:k]) else 0.0
    return found, (found, 1.0)


def _f1(ranked: _Ranked, case: Case, k: int, *_: Any) -> _Result:
    found = _relevant_in(ranked, k)
    denominator = k + len(case.gold_ids)
    return 2.0 * found / denominator, (2.0 * found, denominator)


def _governance_count(predicate: Callable[[Case, Corpus, Any], bool]) -> Callable[..., _Result]:
    def measure(ranked: _Ranked, case: Case, k: int, corpus: Corpus, *_: Any) -> _Result:
        ids = ranked.first_ids(k)
        flagged = 0
        for chunk_id in ids:
            chunk = corpus.get(chunk_id)
            if chunk is not None and predicate(case, corpus, chunk):
                flagged += 1
        return float(flagged), (flagged, len(ids))

    return measure


def _text_of(hit: Hit, corpus: Corpus | None) -> str | None:
    if hit.text is not None:
        return hit.text
    chunk = corpus.get(hit.id) if corpus is not None else None
    return chunk.text if chunk is not None else None


def _dup(ranked: _Ranked, case: Case, k: int, corpus: Corpus | None, *_: Any) -> _Result:
    seen_texts: set[str] = set()
    repeats = 0
    top = ranked.hits[:k]
    for hit, fresh in zip(top, ranked.first):
        text = _text_of(hit, corpus)
        if not fresh or (text is not None and text in seen_texts):
            repeats += 1
        if text is not None:
            seen_texts.add(text)
    return float(repeats), (repeats, len(top))


def _relevance(
    ranked: _Ranked, case: Case, k: int, corpus: Corpus | None, judge: Judge | None, judged: dict[str, float]
) -> _Result:
    if judge is None:
        raise UsageError(
            f"expected judge= for Relevance@{k}: pass evaluate(..., judge=fn) with fn(query, text) -> [0, 1] "
            "(ragmorph.judges has ready-made judges)"
        )
    scores = []
    for hit, fresh in zip(ranked.hits[:k], ranked.first):
        if not fresh:
            continue
        if hit.id not in judged:
            text = _text_of(hit, corpus)
            if text is None:
                raise UsageError(
                    f"expected text for hit {hit.id!r} to judge Relevance@{k}: return Hit.text or pass corpus="
                )
            judged[hit.id] = _judge_score(judge, case.query, text, hit.id)
        scores.append(judged[hit.id])
    if not scores:
        return None, (0.0, 0.0)
    return sum(scores) / len(scores), (sum(scores), len(scores))


def _supporters(support: SupportJudge | Sequence[SupportJudge] | None) -> dict[str, SupportJudge]:
    given = () if support is None else (support,) if isinstance(support, SupportJudge) else tuple(support)
    found: dict[str, SupportJudge] = {DEFAULT_SUPPORT.method: DEFAULT_SUPPORT}
    for item in given:
        if not isinstance(item, SupportJudge):
            raise UsageError(
                f"expected support judges with a `method` and supports(claim, text), got support={describe(item)}"
            )
        found[item.method] = item
    return found


def _claim_recall(
    ranked: _Ranked, case: Case, metric: Metric, corpus: Corpus | None, supporters: Mapping[str, SupportJudge]
) -> _Result:
    if not case.claims:
        return None, None  # policy no_claims
    supporter = supporters.get(metric.judge)  # type: ignore[arg-type]
    if supporter is None:
        raise UsageError(
            f"expected a support judge with method {metric.judge!r} for {metric}: pass evaluate(..., support=...) "
            f"(known here: {sorted(supporters)})"
        )
    texts = []
    for hit, fresh in zip(ranked.hits[: metric.k], ranked.first):
        if not fresh:
            continue
        text = _text_of(hit, corpus)
        if text is None:
            raise UsageError(f"expected text for hit {hit.id!r} to judge {metric}: return Hit.text or pass corpus=")
        texts.append(text)
    claims = tuple(dict.fromkeys(case.claims))
    supported = sum(1 for claim in claims if any(supporter.supports(claim, text) for text in texts))
    return supported / len(claims), (supported, len(claims))


def _empty_ok(ranked: _Ranked, case: Case, *_: Any) -> _Result:
    if case.is_answerable:
        return None, None
    value = 1.0 if not ranked.hits else 0.0
    return value, (value, 1.0)


_MEASURE_FUNCTIONS: dict[str, Callable[..., _Result]] = {
    "P": _precision,
    "P_ret": _precision_returned,
    "R": _recall,
    "GroupR": _group_recall,
    "CP": _context_precision,
    "AP": _average_precision,
    "RR": _reciprocal_rank,
    "nDCG": _ndcg,
    "Hit": _hit,
    "F1": _f1,
    "Unauthorized": _governance_count(lambda case, corpus, chunk: not chunk.visible_to(case.tenant)),
    "Stale": _governance_count(lambda case, corpus, chunk: corpus.is_stale(chunk)),
    "Superseded": _governance_count(lambda case, corpus, chunk: chunk.superseded_by is not None),
    "Dup": _dup,
    "Relevance": _relevance,
    "EmptyOK": _empty_ok,
}
