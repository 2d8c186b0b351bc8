"""Evaluator mode: metamorphic tests aimed at a metric or a judge instead of a retriever.

The world is a ranked list of contexts (what a retriever returned) with the case's gold evidence. Hypothesis
perturbs the list directly and a relation asserts how the metric must move:

| perturbation | relation | applies to |
| --- | --- | --- |
| move a relevant context above an irrelevant one | value non-decreasing | precision and recall metrics |
| insert an unrelated context ahead of the first evidence | value non-increasing | every metric; judges' Relevance@k |
| drop the sole supporting context of an evidence group | value non-increasing | recall metrics |

"Unrelated" text is made of seeded filler words that share no word (nor stem) with the query. Judges that
declare `stochastic = True` are compared `repeats` times per example; the relation holds when the direction
held in a share of runs that a one-sided exact binomial test accepts: H0 "the direction holds at most half the
time" is rejected at `alpha` (so 10 repeats need at least 9 successes). Share and p-value are reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import attrs
from hypothesis import strategies as st

from .errors import ExitCode, UsageError, describe
from .judges import is_stochastic
from .metrics import Metric, evaluate, parse_metric
from .model import Case, Chunk, Corpus, Hit, Params, Ranking, World
from .relations import Direction, Observation, Relation, Severity, Verdict
from .runner import MetricViolation, search
from .strategies.reorder import PromoteRelevant

__all__ = [
    "EVALUATOR_RELATIONS",
    "ContextCase",
    "DropSoleSupport",
    "EvaluatorReport",
    "EvaluatorResult",
    "InsertUnrelated",
    "PromoteRelevant",
    "binomial_tail",
    "check_evaluator",
    "context_cases",
    "perturbations_for",
]

SCHEMA = "ragmorph.evaluator/1"

PRECISION, RECALL, RELEVANCE = "precision", "recall", "relevance"
_MEASURE_KINDS = {
    "P": PRECISION,
    "P_ret": PRECISION,
    "CP": PRECISION,
    "AP": PRECISION,
    "RR": PRECISION,
    "nDCG": PRECISION,
    "F1": PRECISION,
    "R": RECALL,
    "GroupR": RECALL,
    "Hit": RECALL,
}


@attrs.frozen
class ContextCase:
    """One case with the ranked contexts a retriever returned (best first) and its gold chunks as references."""

    case: Case
    contexts: tuple[Chunk, ...] = attrs.field(converter=tuple)
    references: tuple[Chunk, ...] = attrs.field(converter=tuple, default=())

    @property
    def corpus(self) -> Corpus:
        """Every chunk this case knows: its contexts, then references not among them."""
        seen = {chunk.id for chunk in self.contexts}
        return Corpus(self.contexts + tuple(chunk for chunk in self.references if chunk.id not in seen))


def context_cases(corpus: Corpus, cases: Sequence[Case], rankings: Mapping[str, Ranking]) -> tuple[ContextCase, ...]:
    """ContextCases from a corpus, cases and each case's ranking (e.g. `ragmorph.io.read_ragas` output)."""
    built = []
    for case in cases:
        ranking = rankings.get(case.id)
        if ranking is None:
            raise UsageError(f"expected a ranking for every case, got none for case {case.id!r}")
        unknown = [hit.id for hit in ranking if hit.id not in corpus]
        if unknown:
            raise UsageError(f"expected ranked ids present in the corpus, got {unknown[:5]} in case {case.id!r}")
        contexts = tuple(dict.fromkeys(corpus[hit.id] for hit in ranking))
        references = tuple(corpus[chunk_id] for chunk_id in case.gold_ids if chunk_id in corpus)
        built.append(ContextCase(case, contexts, references))
    return tuple(built)


# ---------------------------------------------------------------------------------------------------- perturbations


@attrs.frozen
class InsertUnrelated:
    """Insert a context of unrelated `words` at index `position` (at or ahead of the first evidence)."""

    family: ClassVar[str] = "evaluator"
    position: int
    words: tuple[str, ...]
    chunk_id: str = "unrelated"

    def apply_to(self, contexts: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
        """The context list with the unrelated context inserted."""
        inserted = Chunk(self.chunk_id, " ".join(self.words))
        return contexts[: self.position] + (inserted,) + contexts[self.position :]


@attrs.frozen
class DropSoleSupport:
    """Drop the context at `index`, the only context supporting one of the case's evidence groups."""

    family: ClassVar[str] = "evaluator"
    index: int

    def apply_to(self, contexts: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
        """The context list without that context."""
        return contexts[: self.index] + contexts[self.index + 1 :]


def _relevant_indices(item: ContextCase) -> list[int]:
    gold = set(item.case.gold_ids)
    return [index for index, chunk in enumerate(item.contexts) if chunk.id in gold]


def _promotions(item: ContextCase, k: int) -> st.SearchStrategy[PromoteRelevant] | None:
    relevant = _relevant_indices(item)
    pairs = [
        (upper, lower)
        for lower in relevant
        for upper in range(min(lower, k))
        if upper not in relevant
    ]
    if not pairs:
        return None
    # Sorted so shrinking moves toward the top of the list and the shortest swap.
    pairs.sort(key=lambda pair: (pair[1] - pair[0], pair[0]))
    return st.sampled_from(pairs).map(lambda pair: PromoteRelevant(k, *pair))


def _unrelated_words(item: ContextCase) -> tuple[str, ...]:
    from .strategies import vocabulary

    taken = {chunk.id for chunk in item.contexts}
    words = vocabulary().filler_for(item.case.query)
    # A one-letter or two-letter word is too close to anything under edit distance; keep real words.
    words = tuple(word for word in words if len(word) >= 4)
    if not words or "unrelated" in taken:
        return ()
    return words


def _insertions(item: ContextCase, k: int) -> st.SearchStrategy[InsertUnrelated] | None:
    words = _unrelated_words(item)
    if not words:
        return None
    relevant = _relevant_indices(item)
    last = min(relevant[0] if relevant else len(item.contexts), k - 1)
    return st.builds(
        InsertUnrelated,
        position=st.integers(0, last),
        words=st.lists(st.sampled_from(words[:200]), min_size=3, max_size=30).map(tuple),
    )


def _drops(item: ContextCase, k: int) -> st.SearchStrategy[DropSoleSupport] | None:
    positions = {chunk.id: index for index, chunk in enumerate(item.contexts)}
    sole = set()
    for group in item.case.evidence:
        present = [positions[member] for member in group if member in positions]
        if len(present) == 1:
            sole.add(present[0])
    if not sole:
        return None
    return st.sampled_from(sorted(sole)).map(DropSoleSupport)


# ---------------------------------------------------------------------------------------------------- relations


def _directional(direction: Direction) -> Callable[[Observation, Observation], Verdict]:
    def check(base: Observation, follow: Observation) -> Verdict:
        before, after = base.metrics.get("value"), follow.metrics.get("value")
        if before is None or after is None:
            return Verdict.not_applicable(f"the value is undefined (before={before}, after={after})")
        tolerance = float(base.metrics.get("tolerance") or 0.0)
        if direction is Direction.NON_DECREASING and after < before - tolerance:
            return Verdict.broken(f"fell from {before:.6g} to {after:.6g}", before, after)
        if direction is Direction.NON_INCREASING and after > before + tolerance:
            return Verdict.broken(f"rose from {before:.6g} to {after:.6g}", before, after)
        return Verdict.ok(f"{before:.6g} -> {after:.6g}", before, after)

    return check


EVALUATOR_RELATIONS: tuple[Relation, ...] = (
    Relation(
        name="evaluator.promote_relevant",
        family="evaluator",
        summary="moving a relevant context above an irrelevant one never lowers a precision or recall metric",
        target="metric@k",
        direction=Direction.NON_DECREASING,
        severity=Severity.HARD,
        check=_directional(Direction.NON_DECREASING),
        applies_to=("PromoteRelevant",),
        assumptions=("relevance is binary, from the case's gold ids",),
    ),
    Relation(
        name="evaluator.unrelated_ahead",
        family="evaluator",
        summary="inserting an unrelated context ahead of the evidence never raises the metric or judged relevance",
        target="metric@k",
        direction=Direction.NON_INCREASING,
        severity=Severity.HARD,
        check=_directional(Direction.NON_INCREASING),
        applies_to=("InsertUnrelated",),
        assumptions=(
            "the inserted text shares no word or stem with the query",
            "a judge scores such text at most `tolerance` above the contexts it displaces",
        ),
    ),
    Relation(
        name="evaluator.drop_sole_support",
        family="evaluator",
        summary="dropping the only context supporting an evidence group never raises a recall metric",
        target="metric@k",
        direction=Direction.NON_INCREASING,
        severity=Severity.HARD,
        check=_directional(Direction.NON_INCREASING),
        applies_to=("DropSoleSupport",),
        assumptions=("recall counts evidence from the given contexts only",),
    ),
)

_DRAWS: dict[str, Callable[[ContextCase, int], st.SearchStrategy[Any] | None]] = {
    "evaluator.promote_relevant": _promotions,
    "evaluator.unrelated_ahead": _insertions,
    "evaluator.drop_sole_support": _drops,
}
_RELATIONS_BY_KIND = {
    PRECISION: ("evaluator.promote_relevant", "evaluator.unrelated_ahead"),
    RECALL: ("evaluator.promote_relevant", "evaluator.unrelated_ahead", "evaluator.drop_sole_support"),
    RELEVANCE: ("evaluator.unrelated_ahead",),
}


def perturbations_for(relation: str, item: ContextCase, *, k: int) -> st.SearchStrategy[Any] | None:
    """The Hypothesis strategy of perturbations testing `relation` on `item`, or None when none exists."""
    if relation not in _DRAWS:
        raise UsageError(f"expected a relation in {sorted(_DRAWS)}, got relation={describe(relation)}")
    return _DRAWS[relation](item, k)


# ---------------------------------------------------------------------------------------------------- targets


@attrs.frozen
class _Target:
    """What is being tested: a name, a kind (which relations apply), and how to compute its value."""

    name: str
    kind: str
    stochastic: bool
    compute: Callable[[ContextCase, tuple[Chunk, ...], int], float | None] = attrs.field(eq=False, repr=False)


def _ranking(contexts: tuple[Chunk, ...]) -> Ranking:
    """The contexts as a ranking without scores (the order is the ranking)."""
    return Ranking(Hit(chunk.id, None, chunk.text) for chunk in contexts)


def _metric_target(metric: Metric, k: int) -> _Target:
    measure = metric.measure
    if measure not in _MEASURE_KINDS:
        raise UsageError(
            f"expected a gold-label metric ({', '.join(sorted(_MEASURE_KINDS))}), got metric={str(metric)!r}; "
            "governance metrics have no evaluator relations"
        )
    name = str(metric)

    def compute(item: ContextCase, contexts: tuple[Chunk, ...], cut: int) -> float | None:
        return evaluate(_ranking(contexts), item.case, [name])[name]

    return _Target(name, _MEASURE_KINDS[measure], False, compute)


def _judge_target(judge: Any, k: int) -> _Target:
    name = f"Relevance@{k}"

    def compute(item: ContextCase, contexts: tuple[Chunk, ...], cut: int) -> float | None:
        return evaluate(_ranking(contexts), item.case, [name], judge=judge.score)[name]

    return _Target(f"{name} ({type(judge).__name__})", RELEVANCE, is_stochastic(judge), compute)


def _callable_target(metric: Callable[..., float | None], kind: str | None) -> _Target:
    kind = kind or getattr(metric, "kind", None)
    if kind not in (PRECISION, RECALL):
        raise UsageError(
            f"expected kind='precision' or kind='recall' for the metric {metric!r} (a `kind` attribute or the "
            f"kind= argument), got kind={describe(kind)}"
        )
    name = str(getattr(metric, "name", None) or getattr(metric, "__name__", None) or repr(metric))

    def compute(item: ContextCase, contexts: tuple[Chunk, ...], cut: int) -> float | None:
        value = metric(item.case, contexts[:cut], item.references)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise UsageError(f"expected the metric {name} to return a number or None, got {describe(value)}")
        return None if value is None else float(value)

    return _Target(name, kind, bool(getattr(metric, "stochastic", False)), compute)


def _target(metric_or_judge: Any, k: int, kind: str | None) -> _Target:
    if isinstance(metric_or_judge, (str, Metric)):
        metric = parse_metric(metric_or_judge)
        if metric.k is None:
            metric = Metric(metric.measure, k)
        return _metric_target(metric, k)
    if callable(getattr(metric_or_judge, "score", None)):
        return _judge_target(metric_or_judge, k)
    if callable(metric_or_judge):
        return _callable_target(metric_or_judge, kind)
    raise UsageError(
        "expected a metric name ('CP@5'), a Metric, a judge with score(query, text) or a callable "
        f"metric(case, contexts, references), got {describe(metric_or_judge)}"
    )


# ---------------------------------------------------------------------------------------------------- binomial


def binomial_tail(successes: int, trials: int, p: float = 0.5) -> float:
    """P(X >= successes) for X ~ Binomial(trials, p): the one-sided exact p-value, summed with math.comb."""
    if not 0 <= successes <= trials:
        raise UsageError(f"expected 0 <= successes <= trials, got successes={successes}, trials={trials}")
    if not 0.0 <= p <= 1.0:
        raise UsageError(f"expected a probability p in [0, 1], got p={describe(p)}")
    return min(1.0, sum(math.comb(trials, i) * p**i * (1.0 - p) ** (trials - i) for i in range(successes, trials + 1)))


# ---------------------------------------------------------------------------------------------------- results


@attrs.frozen
class EvaluatorResult:
    """The outcome of one relation on one case: status, budget spent and, on failure, the shrunk violation."""

    target: str
    case: str
    relation: str
    severity: str
    status: str
    examples: int = 0
    calls: int = 0
    reason: str | None = None
    violation: MetricViolation | None = None
    share: float | None = None
    p_value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "target": self.target,
            "case": self.case,
            "relation": self.relation,
            "severity": self.severity,
            "status": self.status,
            "examples": self.examples,
            "calls": self.calls,
            "reason": self.reason,
            "share": self.share,
            "p_value": self.p_value,
            "violation": None if self.violation is None else self.violation.to_dict(),
        }


@attrs.frozen
class EvaluatorReport:
    """Every EvaluatorResult of one `check_evaluator` run, with the settings that reproduce it."""

    target: str
    kind: str
    results: tuple[EvaluatorResult, ...]
    settings: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def failures(self) -> tuple[EvaluatorResult, ...]:
        """The results whose relation was violated."""
        return tuple(result for result in self.results if result.status == "fail")

    @property
    def passed(self) -> bool:
        """True when no relation was violated."""
        return not self.failures

    @property
    def exit_code(self) -> int:
        """0 when every relation held, 1 on a violation (the CLI convention, `ragmorph.errors.ExitCode`)."""
        return int(ExitCode.OK if self.passed else ExitCode.VIOLATIONS)

    def to_dict(self) -> dict[str, Any]:
        """JSON form `{"schema": "ragmorph.evaluator/1", ...}`."""
        counts = {status: 0 for status in ("pass", "fail", "not_applicable")}
        for result in self.results:
            counts[result.status] += 1
        return {
            "schema": SCHEMA,
            "target": self.target,
            "kind": self.kind,
            "settings": dict(self.settings),
            "results": [result.to_dict() for result in self.results],
            "summary": {**counts, "exit_code": self.exit_code},
        }


@attrs.frozen
class _Found:
    """What the search found on one perturbation: the broken verdict, the perturbed contexts, the binomial test."""

    perturbation: Any
    verdict: Verdict
    contexts: tuple[Chunk, ...]
    share: float | None
    p_value: float | None


def _perturbed(perturbation: Any, contexts: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """The context list after `perturbation` (PromoteRelevant swaps two hits of the list read as a ranking)."""
    if isinstance(perturbation, PromoteRelevant):
        by_id = {chunk.id: chunk for chunk in contexts}
        return tuple(by_id[hit.id] for hit in perturbation.promoted(_ranking(contexts)).hits)
    return perturbation.apply_to(contexts)


def _observation(item: ContextCase, contexts: tuple[Chunk, ...], k: int, value: float | None, tolerance: float) -> Observation:
    corpus = attrs.evolve(item, contexts=contexts).corpus
    return Observation(World(corpus, item.case, Params(k)), _ranking(contexts), {"value": value, "tolerance": tolerance})


def _perturbation_dict(perturbation: Any) -> dict[str, Any]:
    fields = attrs.asdict(perturbation)
    return {"type": type(perturbation).__name__, "repr": repr(perturbation), "fields": fields}


def _run_relation(
    target: _Target,
    relation: Relation,
    item: ContextCase,
    *,
    k: int,
    max_examples: int,
    seed: int,
    derandomize: bool,
    repeats: int,
    alpha: float,
    tolerance: float,
) -> EvaluatorResult:
    strategy = perturbations_for(relation.name, item, k=k)
    common = {"target": target.name, "case": item.case.id, "relation": relation.name, "severity": relation.severity.value}
    if strategy is None:
        return EvaluatorResult(**common, status="not_applicable", reason="no perturbation of this kind exists for these contexts")
    counter: dict[str, Any] = {"examples": 0, "calls": 0, "first_failure": None, "applicable": 0, "last_violation": None}
    runs = repeats if target.stochastic else 1
    base_cache: dict[str, float | None] = {}

    def value_of(contexts: tuple[Chunk, ...]) -> float | None:
        counter["calls"] += 1
        return target.compute(item, contexts, k)

    def base_value() -> float | None:
        # A deterministic target's base value never changes; a stochastic one is re-drawn on every run.
        if target.stochastic:
            return value_of(item.contexts)
        if "value" not in base_cache:
            base_cache["value"] = value_of(item.contexts)
        return base_cache["value"]

    def probe(perturbation: Any) -> _Found | None:
        counter["examples"] += 1
        follow_contexts = _perturbed(perturbation, item.contexts)
        held, verdicts = 0, []
        for _ in range(runs):
            base = _observation(item, item.contexts, k, base_value(), tolerance)
            follow = _observation(item, follow_contexts, k, value_of(follow_contexts), tolerance)
            verdict = relation.check(base, follow)
            if not verdict.applicable:
                return None
            verdicts.append(verdict)
            held += verdict.holds
        counter["applicable"] += 1
        share = p_value = None
        if target.stochastic:
            share, p_value = held / runs, binomial_tail(held, runs)
            if p_value <= alpha:
                return None
            worst = next((v for v in verdicts if not v.holds), verdicts[0])
            detail = f"the direction held in {held} of {runs} runs (share {share:.2f}, p = {p_value:.4g} > {alpha})"
            verdict = Verdict.broken(f"{detail}; e.g. {worst.detail}", worst.before, worst.after)
        elif held:
            return None
        else:
            verdict = verdicts[0]
        if counter["first_failure"] is None:
            counter["first_failure"] = counter["calls"]
        found = _Found(perturbation, verdict, follow_contexts, share, p_value)
        counter["last_violation"] = found
        return found

    # A stochastic target can fail once and pass on Hypothesis's replay (a flaky failure); keep what was seen.
    found = search(
        strategy,
        probe,
        max_examples=max_examples,
        derandomize=derandomize,
        seed=seed,
        on_flaky=lambda: counter["last_violation"],
    )
    if found is not None:
        violation = found
        first = counter["first_failure"] or counter["calls"]
        return EvaluatorResult(
            **common,
            status="fail",
            examples=counter["examples"],
            calls=counter["calls"],
            reason=violation.verdict.detail,
            share=violation.share,
            p_value=violation.p_value,
            violation=MetricViolation(
                relation=relation.name,
                case=item.case.id,
                query=item.case.query,
                perturbation=_perturbation_dict(violation.perturbation),
                detail=f"{target.name} {violation.verdict.detail}",
                calls_to_first_failure=first,
                calls_shrinking=counter["calls"] - first,
                before=violation.verdict.before,
                after=violation.verdict.after,
                base_contexts=tuple(chunk.id for chunk in item.contexts),
                follow_up_contexts=tuple(chunk.id for chunk in violation.contexts),
            ),
        )
    if not counter["applicable"]:
        return EvaluatorResult(
            **common, status="not_applicable", examples=counter["examples"], calls=counter["calls"],
            reason="the value was undefined for every example",
        )
    return EvaluatorResult(**common, status="pass", examples=counter["examples"], calls=counter["calls"])


def check_evaluator(
    metric_or_judge: Any,
    cases_with_contexts: Sequence[ContextCase],
    *,
    k: int = 5,
    kind: str | None = None,
    max_examples: int = 25,
    seed: int = 0,
    derandomize: bool = False,
    repeats: int = 10,
    alpha: float = 0.05,
    tolerance: float = 0.0,
) -> EvaluatorReport:
    """Run the evaluator relations that fit `metric_or_judge` on every ContextCase; shrink each violation.

    `metric_or_judge` is a metric name (`"CP@5"`; a name without @k takes `k`), a judge (`score(query, text)`,
    tested through Relevance@k), or a callable `metric(case, contexts, references) -> float | None` with
    `kind` "precision" or "recall" (an attribute or the argument). Stochastic targets are compared `repeats`
    times per example with a one-sided binomial test at `alpha`.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise UsageError(f"expected a positive integer k, got k={describe(k)}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise UsageError(f"expected repeats >= 1, got repeats={describe(repeats)}")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"expected 0 < alpha < 1, got alpha={describe(alpha)}")
    items = tuple(cases_with_contexts)
    for position, item in enumerate(items):
        if not isinstance(item, ContextCase):
            raise UsageError(
                f"expected ContextCase values (see ragmorph.evaluator.context_cases), got {describe(item)} at "
                f"position {position}"
            )
    target = _target(metric_or_judge, k, kind)
    if target.stochastic and binomial_tail(repeats, repeats) > alpha:
        raise UsageError(
            f"expected enough repeats for the binomial test to pass at all, got repeats={repeats} "
            f"(even {repeats}/{repeats} gives p = {binomial_tail(repeats, repeats):.3g} > alpha={alpha}); raise repeats"
        )
    relations = [r for r in EVALUATOR_RELATIONS if r.name in _RELATIONS_BY_KIND[target.kind]]
    results = [
        _run_relation(
            target,
            relation,
            item,
            k=k,
            max_examples=max_examples,
            seed=seed,
            derandomize=derandomize,
            repeats=repeats,
            alpha=alpha,
            tolerance=tolerance,
        )
        for item in items
        for relation in relations
    ]
    return EvaluatorReport(
        target.name,
        target.kind,
        tuple(results),
        {
            "k": k,
            "max_examples": max_examples,
            "seed": seed,
            "derandomize": derandomize,
            "repeats": repeats if target.stochastic else 1,
            "alpha": alpha,
            "tolerance": tolerance,
        },
    )
