"""Units and their execution: Hypothesis draws perturbations, relations judge them, violations shrink.

A unit is one retriever x case x strategy family and carries everything it needs, so units can run in any
order or process and give the same results (only call-cache hits differ).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..adapters import Capabilities
from ..errors import RagmorphError, describe
from ..model import Case, Corpus, Params, World
from ..relations import Instance, Observation, Plan, Relation, Severity, Verdict
from ..strategies import FAMILIES, corpus_diff, perturbation_label, relation_applies
from ..strategies.contract import VALID_RESPONSE, covers
from ._executor import CallCache, Executor, Probe, Step, observation, run_after
from ._growth import smallest_failing_size
from ._minimise import drop_blocks, minimal_subset
from ._search import search
from ._spec import RetrieverSpec, start_world
from ._violation import RetrieverViolation, observation_dict, perturbation_dict

__all__ = ["BUDGETS", "Result", "Settings", "Unit", "budget_problem", "execute"]

# Corpus minimisation spends at most this many probes (each builds a small fresh index).
_MINIMISE_BUDGET = 120
# ...and up to this many more when at most this many chunks are left, to try removing each alone (1-minimality).
_MINIMISE_FINISH = 40
# Reducing the calls a stateful violation needs spends at most this many probes, over the last this-many calls;
# minimising its corpus then spends at most about this many calls (every probe makes the needed calls again).
_HISTORY_BUDGET = 30
_HISTORY_LIMIT = 400
_HISTORY_CALLS = 600
# Minimisation orders candidate chunks by one retriever call over the whole corpus at this k (or the corpus size).
_RELEVANCE_DEPTH = 200


# How a unit spends its examples: "adaptive" (each family's own budget, nothing drawn twice), "full" (the run's
# max_examples for every family).
BUDGETS = ("adaptive", "full")


def budget_problem(value: object) -> str | None:
    """What is wrong with `value` as a budget name (one of BUDGETS), or None when it is one."""
    # One wording for the CLI, the config file, the pytest plugin and check(); each adds where the value came from.
    # Only a str is looked up: `in` compares with ==, which a numpy array (say) answers elementwise.
    if isinstance(value, str) and value in BUDGETS:
        return None
    return f"expected one of {', '.join(BUDGETS)}, got {describe(value)}"


@attrs.frozen
class Settings:
    """Run settings every unit carries."""

    ks: tuple[int, ...] = (1, 3, 5, 10)
    max_examples: int = 25
    derandomize: bool = False
    timeout: float | None = None
    replay_dir: str | None = None
    # True when the run has a contract unit for every case: other units then leave breaches on the base corpus
    # to it (one failure per case, not one per family) and report only those in worlds they edited.
    contract_unit: bool = False
    budget: str = "adaptive"

    def to_dict(self) -> dict[str, Any]:
        """The manifest `settings` block."""
        return {
            "max_examples": self.max_examples,
            "derandomize": self.derandomize,
            "ks": list(self.ks),
            "timeout": self.timeout,
            "budget": self.budget,
        }


@attrs.frozen
class Unit:
    """One retriever x case x strategy family, with its corpus, settings and derived seed (picklable)."""

    retriever: RetrieverSpec
    corpus: Corpus = attrs.field(eq=False, repr=False)
    case: Case
    strategy: str
    settings: Settings
    seed: int


@attrs.frozen
class Result:
    """The outcome of one relation within one unit (the `results` rows of the JSON report)."""

    retriever: str
    case: str
    strategy: str
    relation: str
    severity: str
    status: str
    examples: int
    retriever_calls: int
    reason: str | None = None
    rate: tuple[int, int] | None = None
    violation: RetrieverViolation | None = attrs.field(default=None, eq=False)
    # A soft relation's first broken perturbation (repr and detail), shown next to its rate.
    example: dict[str, str] | None = attrs.field(default=None, eq=False)
    base_metrics: dict[str, float | None] | None = attrs.field(default=None, eq=False, repr=False)
    # The base-world ranking at the largest k, (id, score) per hit: what a later comparison pairs with.
    base_ranking: tuple[tuple[str, float | None], ...] | None = attrs.field(default=None, eq=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON row of this result."""
        return {
            "retriever": self.retriever,
            "case": self.case,
            "strategy": self.strategy,
            "relation": self.relation,
            "severity": self.severity,
            "status": self.status,
            "examples": self.examples,
            "retriever_calls": self.retriever_calls,
            "reason": self.reason,
            "rate": None if self.rate is None else {
                "held": self.rate[0], "tested": self.rate[1], **({"example": self.example} if self.example else {})
            },
            "violation": None if self.violation is None else self.violation.to_dict(),
        }


class _Violation:
    """A relation broken by a perturbation (before minimisation): the evidence the search found."""

    def __init__(self, relation: Relation, perturbation: Any, probe: Probe, verdict: Verdict, executor: Executor) -> None:
        self.relation = relation
        self.perturbation = perturbation
        self.probe = probe
        self.verdict = verdict
        # The calls the base instance had made up to this probe, and which of them gave its observations, so
        # a violation that needs that history can be reproduced on a fresh instance.
        self.sources = probe.sources
        last = max((n for n in self.sources if n is not None), default=-1)
        self.steps = tuple(enumerate(executor.steps[: last + 1]))


@attrs.frozen
class _Minimised:
    """The outcome of corpus minimisation: the smallest violating world found and how far it got."""

    world: World
    probe: Probe
    one_minimal: bool | None
    reason: str | None
    asked: int
    calls: int
    steps: tuple[tuple[int, Step], ...] = ()
    sources: tuple[int | None, int | None] = (None, None)
    # False when even the recorded history does not bring it back on a fresh index: a replay cannot say "fixed".
    reproducible: bool = True


@attrs.define
class _Tally:
    tested: int = 0
    held: int = 0
    last_reason: str | None = None
    first_failure: _Violation | None = None
    calls_to_first_failure: int = 0
    example: dict[str, str] | None = None


def _judge(
    relations: Sequence[Relation], perturbation: Any, probe: Probe, delegate: Callable[[World], bool] | None
) -> list[tuple[Relation, Verdict]]:
    """Verdicts of the relations that judge `perturbation`; `delegate` tells the calls whose contract breaches
    another unit (the contract family's) reports."""
    broken = probe.invalid
    if broken is not None:
        # A rejected response has no ranking to compare: only the contract relation can judge that pair.
        if delegate is not None and delegate(broken.world):
            return []
        return [(r, r.check(probe.base, probe.follow)) for r in relations if r is VALID_RESPONSE]
    return [(r, r.check(probe.base, probe.follow)) for r in relations if relation_applies(r, perturbation)]


def _invalid_reason(broken: Observation) -> str:
    return f"the retriever's response broke the retriever contract (see {VALID_RESPONSE.name}): {broken.invalid}"


def _search(
    executor: Executor,
    world: World,
    strategy: Any,
    relations: Sequence[Relation],
    targets: set[str],
    tallies: dict[str, _Tally],
    seen: dict[str, frozenset[str]],
    unit: Unit,
    state: dict[str, Any],
) -> _Violation | None:
    """One Hypothesis run; raises inside the test for the first failing target relation so Hypothesis shrinks it.

    `seen` maps each perturbation judged in an earlier run of this unit to the relations it broke: a later run
    (after a violation was shrunk) skips those that broke none of the targets left, without a call.
    """
    shrinking = {"on": False}
    adaptive = unit.settings.budget == "adaptive"
    delegate = None
    if unit.settings.contract_unit and unit.strategy != "contract":
        supports_filters = bool(executor.capabilities.supports_filters)

        def delegate(asked: World) -> bool:
            return covers(world, asked, ks=unit.settings.ks, filters=supports_filters)

    # The relations this unit can still learn something about: not yet failed (a failed one's violation is
    # recorded and shrunk) and judged at all (traits declared, not excused). The family's own, and the contract
    # relation for the calls no contract unit makes (this unit reports a breach there, see `_judge`).
    open_relations = [
        r for r in relations if r in FAMILIES[unit.strategy].relations and tallies[r.name].first_failure is None
    ]
    contract_open = (
        unit.strategy != "contract" and VALID_RESPONSE in relations and tallies[VALID_RESPONSE.name].first_failure is None
    )

    # The family's relations judged on this retriever at all (failed or not).
    own = [r for r in relations if r in FAMILIES[unit.strategy].relations]
    contract_only_kinds = state.setdefault("contract_only_kinds", set())

    def unjudged(perturbation: Any, plan: Plan) -> dict[str, str] | None:
        """Why no open relation can judge `plan`, by relation, before any call is made; None when one can.

        An empty mapping: every open relation that judges this kind of perturbation has failed already (or cannot
        be judged on this retriever), so its calls could only repeat a verdict. The contract relation judges any
        call's response, so a plan with a call the contract unit does not make (or with no contract unit) is
        worth its calls while that relation is open; but where the contract is all that judges a kind of
        perturbation on this retriever (depth's removals at k past the corpus on a retriever not lexical), one
        perturbation of the kind per unit is: the others make the same calls over other chunks.
        """
        if contract_open and any(
            delegate is None or not delegate(c.world) for c in plan.calls if c.instance is not Instance.DERIVED
        ):
            if any(relation_applies(relation, perturbation) for relation in own):
                return None
            kind = perturbation_label(perturbation)
            if kind not in contract_only_kinds:
                contract_only_kinds.add(kind)
                return None
        reasons = {}
        for relation in open_relations:
            if relation_applies(relation, perturbation):
                why = relation.precondition(plan.base, plan.follow) if relation.precondition is not None else None
                if why is None:
                    return None
                reasons[relation.name] = why
        return reasons

    def test(perturbation: Any) -> _Violation | None:
        if state.get("error") is not None:
            return None
        key = repr(perturbation)
        if adaptive and not shrinking["on"] and key in seen and not seen[key] & targets:
            return None  # judged by an earlier search of this unit: it cannot break what is left to find
        try:
            plan = perturbation.plan(world)
            reasons = unjudged(perturbation, plan) if adaptive and not shrinking["on"] else None
            if reasons is not None:
                for name, why in reasons.items():
                    tallies[name].last_reason = why
                return None
            probe = executor.run(plan)
        except RagmorphError as error:
            # Exceptions, timeouts and calls the retriever cannot take (filters it does not accept) prevent a
            # verdict; invalid responses do not get here (the probe records them as observations).
            state["error"] = error
            return None
        fresh = not shrinking["on"] and key not in seen
        if isinstance(probe, str):
            if fresh:
                seen[key] = frozenset()
                for relation in relations:
                    if relation_applies(relation, perturbation):
                        tallies[relation.name].last_reason = probe
            return None
        # `seen` learns the perturbation only once it is judged: an error raised while judging (a bug in a
        # relation) must raise again when Hypothesis replays it, not pass as an example already judged.
        verdicts = _judge(relations, perturbation, probe, delegate)
        broken = probe.invalid
        if fresh and broken is not None:
            for relation in relations:
                if relation is not VALID_RESPONSE and relation_applies(relation, perturbation):
                    tallies[relation.name].last_reason = _invalid_reason(broken)
        if fresh:
            seen[key] = frozenset(r.name for r, v in verdicts if v.applicable and not v.holds)
            for relation, verdict in verdicts:
                tally = tallies[relation.name]
                if verdict.applicable:
                    tally.tested += 1
                    tally.held += bool(verdict.holds)
                    if not verdict.holds and tally.example is None:
                        tally.example = {"perturbation": key, "detail": verdict.detail}
                else:
                    tally.last_reason = verdict.detail
        for relation, verdict in verdicts:
            if verdict.applicable and not verdict.holds and relation.name in targets:
                violation = _Violation(relation, perturbation, probe, verdict, executor)
                if not shrinking["on"]:
                    shrinking["on"] = True
                    tallies[relation.name].first_failure = violation
                    tallies[relation.name].calls_to_first_failure = executor.asked
                return violation
        return None

    def flaky() -> _Violation | None:
        # The retriever answered differently when Hypothesis replayed an example (state or randomness);
        # the first failure observed is still a real observation.
        first = [t.first_failure for t in tallies.values() if t.first_failure is not None]
        return first[-1] if first else None

    family = FAMILIES[unit.strategy]
    explicit: tuple[Any, ...] = ()
    if family.explicit is not None:
        explicit = family.explicit(
            world, ks=unit.settings.ks, delta=executor.supports_delta, filters=executor.capabilities.supports_filters
        )
    return search(
        strategy,
        test,
        explicit=explicit,
        # The explicit examples are part of the budget; Hypothesis draws at least one more.
        max_examples=max(1, examples_for(unit) - len(explicit)),
        derandomize=unit.settings.derandomize,
        seed=unit.seed,
        on_flaky=flaky,
    )


def examples_for(unit: Unit) -> int:
    """The examples `unit` draws per search: its family's budget when adaptive (never above max_examples)."""
    budget = FAMILIES[unit.strategy].max_examples
    if unit.settings.budget == "full" or budget is None:
        return unit.settings.max_examples
    return min(unit.settings.max_examples, budget)


def _same_breach(relation: Relation, first: Probe, probe: Probe) -> bool:
    """Whether `probe` shows the violation `first` of `relation` (for the contract: the same broken rule)."""
    broken, wanted = probe.invalid, first.invalid
    if relation is not VALID_RESPONSE:
        return broken is None
    return broken is not None and wanted is not None and broken.rule is wanted.rule


def _judged(probe: Probe | str | None, relation: Relation, first: Probe) -> Probe | None:
    """`probe` when it shows the violation of `relation` that `first` showed again, else None."""
    if probe is None or isinstance(probe, str) or not _same_breach(relation, first, probe):
        return None
    verdict = relation.check(probe.base, probe.follow)
    return probe if verdict.applicable and not verdict.holds else None


def _still_fails(executor_for: Any, world: World, perturbation: Any, relation: Relation, first: Probe) -> Probe | None:
    try:
        probe = executor_for(world.corpus).run(perturbation.plan(world))
    except RagmorphError:
        return None
    return _judged(probe, relation, first)


def _needed_steps(
    violation: _Violation, try_steps: Any, budget: dict[str, int]
) -> tuple[tuple[int, Step], ...] | None:
    """The fewest recorded calls (before the violating probe) with which it reproduces; None when none do."""
    pinned = {n for n in violation.sources if n is not None}
    step_of = dict(violation.steps)
    earlier = [n for n, _ in violation.steps if n not in pinned][-_HISTORY_LIMIT:]

    def works(chosen: list[int]) -> bool:
        if budget["left"] <= 0:
            return False
        budget["left"] -= 1
        return try_steps(tuple((n, step_of[n]) for n in sorted(set(chosen) | pinned)))

    size, chosen = 0, None
    # The calls right before the violation are the likeliest culprits: try growing windows of them first.
    while chosen is None and budget["left"] > 0:
        window = earlier[len(earlier) - size :] if size else []
        if works(window):
            chosen = window
        elif size >= len(earlier):
            return None
        size = min(len(earlier), max(1, size * 2))
    if chosen is None:
        return None
    chosen, _ = drop_blocks(chosen, works, budget)
    return tuple((n, step_of[n]) for n in sorted(set(chosen) | pinned))


def _minimise(
    unit: Unit, cache: CallCache, resolved: Any, world: World, violation: _Violation, siblings: Sequence[set[str]] = ()
) -> _Minimised:
    """Shrink the corpus to the chunks the violation still needs, checking 1-minimality with a post-pass.

    A violation that does not reproduce on a fresh index of the unchanged world needs the calls made before
    it (a stale cache, state leaking between calls): then the fewest of those calls that bring it back are
    made again on every candidate's fresh index. When even all of them do not, the corpus stays whole and the
    reason says so.
    """
    executors: list[Executor] = []
    try:
        return _minimise_with(unit, cache, resolved, world, violation, executors, siblings)
    finally:
        _close_all(executors)


def _close_all(executors: Sequence[Executor]) -> None:
    """Close the executors a shrink made; a candidate's index failing to close does not change what it found."""
    for made in executors:
        with contextlib.suppress(RagmorphError):
            made.close()


def _minimise_with(
    unit: Unit, cache: CallCache, resolved: Any, world: World, violation: _Violation, executors: list[Executor],
    siblings: Sequence[set[str]] = (),
) -> _Minimised:
    perturbation, relation = violation.perturbation, violation.relation
    timeout = unit.settings.timeout

    def executor_for(corpus: Corpus, shared: CallCache | None = cache) -> Executor:
        executor = Executor(unit.retriever, corpus, cache=shared or CallCache(), timeout=timeout, resolved=resolved)
        executors.append(executor)
        return executor

    def spent(**fields: Any) -> _Minimised:
        return _Minimised(asked=sum(s.asked for s in executors), calls=sum(s.calls for s in executors), **fields)

    steps: tuple[tuple[int, Step], ...] = ()
    reason: str | None = None

    def reproduce(candidate: World) -> Probe | None:
        if not steps:
            return _still_fails(executor_for, candidate, perturbation, relation, violation.probe)
        try:
            probe = run_after(
                unit.retriever, perturbation.plan(candidate), steps, violation.sources, timeout=timeout, resolved=resolved, made=executors
            )
        except RagmorphError:
            return None
        return _judged(probe, relation, violation.probe)

    # A fresh index that has seen nothing else: does the world alone show the violation?
    fresh = executor_for(world.corpus, None)
    if _still_fails(lambda _: fresh, world, perturbation, relation, violation.probe) is None:
        history_budget = {"left": _HISTORY_BUDGET}

        def try_steps(chosen: tuple[tuple[int, Step], ...]) -> bool:
            nonlocal steps
            steps = chosen
            return reproduce(world) is not None

        found = _needed_steps(violation, try_steps, history_budget) if violation.steps else None
        if found is None:
            made = len(violation.steps)
            why = (
                f"the violation does not reproduce on a fresh index of the same corpus, even after making the {made} "
                "call(s) that came before it again"
                if made
                else "the violation does not reproduce on a fresh index of the same corpus"
            )
            why += ": it depends on state the runner cannot rebuild (randomness, time, or state shared between "
            why += "instances), so the corpus was not minimised"
            return spent(world=world, probe=violation.probe, one_minimal=False, reason=why, reproducible=False)
        steps = found
        reason = (
            f"needs {len(steps)} call(s) made before it on the same instance (it does not reproduce on a fresh index): "
            "every candidate corpus was checked by making them again, and the replay file makes them too"
        )

    pinned = set(perturbation.referenced_ids()) | {i for i in world.case.gold_ids if i in world.corpus}
    probes = _MINIMISE_BUDGET if not steps else max(15, min(_MINIMISE_BUDGET, _HISTORY_CALLS // (len(steps) + 2)))
    best = (world, violation.probe)

    def works(keep: set[str]) -> bool:
        nonlocal best
        candidate = attrs.evolve(world, corpus=world.corpus.restricted(keep | pinned))
        probe = reproduce(candidate)
        if probe is not None:
            best = (candidate, probe)
        return probe is not None

    # The retriever's relevance order costs a deep call: it is asked for only when no likeliest subset works.
    rest, first = _likeliest(world, violation.probe, pinned, ())
    # The minimal corpus of another relation this perturbation broke is the likeliest small start after none.
    first = (first[0], *(ids - pinned for ids in siblings if ids - pinned), *first[1:])
    shrunk = minimal_subset(
        rest, works, budget=probes, first=first, finish=_MINIMISE_FINISH if not steps else 0,
        grow_order=lambda: _likeliest(world, violation.probe, pinned, _relevance(fresh, world))[0],
    )
    current, one_minimal = shrunk.kept, shrunk.one_minimal
    final_world, final_probe = best
    if set(final_world.corpus.ids) != set(current) | pinned:
        final_world = attrs.evolve(world, corpus=world.corpus.restricted(set(current) | pinned))
        probe = reproduce(final_world)
        if probe is None:
            final_world, final_probe, one_minimal = best[0], best[1], False
        else:
            final_probe = probe
    if not one_minimal:
        ran_out = (
            f"the minimisation budget of {shrunk.budget} probes ran out with {len(current)} of {len(rest)} unpinned "
            f"chunks kept ({', '.join(current[:20])}{', ...' if len(current) > 20 else ''}), before removing each "
            "of them alone was tried"
        )
        reason = f"{reason}; {ran_out}" if reason else ran_out
    return spent(world=final_world, probe=final_probe, one_minimal=one_minimal, reason=reason, steps=steps, sources=violation.sources)


def _bisect_growth(unit: Unit, cache: CallCache, resolved: Any, world: World, violation: _Violation) -> _Minimised:
    """Shrink a violation of a corpus-growing perturbation by bisection over the grown size (see `_growth`).

    The case's own corpus stays whole: the perturbation regrows the generated chunks, so the record and the
    replay file carry the case's chunks and the smallest failing size, never thousands of generated chunks.
    """
    perturbation, relation = violation.perturbation, violation.relation
    found = {"probe": violation.probe}
    # One executor for every probe: each asks for fresh indexes of the grown corpus (GrowCorpus's calls are all
    # Instance.FRESH), which it builds, answers and closes per call, over the case's own corpus.
    executor = Executor(unit.retriever, world.corpus, cache=cache, timeout=unit.settings.timeout, resolved=resolved)

    def fails(size: int) -> bool:
        probe = _still_fails(lambda _: executor, world, perturbation.resized(size), relation, violation.probe)
        if probe is not None:
            found["probe"] = probe
        return probe is not None

    try:
        bisection = smallest_failing_size(len(world.corpus), perturbation.size, fails)
    finally:
        _close_all([executor])
    smallest = perturbation.resized(bisection.fails)
    violation.perturbation = smallest
    held = f", held at {bisection.held:,}" if bisection.held is not None else ""
    reason = (
        f"bisected over the grown size in {bisection.probes} probes: fails from {bisection.fails:,} chunks{held} "
        f"(grown from {perturbation.size:,}); the corpus listed is the case's own {len(world.corpus):,}, "
        f"{smallest!r} regrows the rest"
    )
    return _Minimised(world, found["probe"], None, reason, executor.asked, executor.calls)


def _relevance(fresh: Executor, world: World) -> list[str]:
    """The ids of `world`'s corpus by the retriever's own relevance to the query (one unfiltered call with a deep
    k on the fresh index minimisation built anyway); [] when that call fails or is refused."""
    deep = attrs.evolve(world, params=Params(k=min(len(world.corpus), _RELEVANCE_DEPTH)))
    try:
        return [hit.id for hit in fresh.observe_base(deep).hits]
    except RagmorphError:
        return []


def _likeliest(world: World, probe: Probe, pinned: set[str], relevance: Sequence[str]) -> tuple[list[str], tuple[set[str], ...]]:
    """The unpinned ids likeliest first, and the subsets to try first: none, the chunks the violation's rankings
    showed, and those plus the chunks its filters admit (a filter violation is about them).

    After those come the other chunks in the retriever's own order of relevance, then the rest in corpus order:
    the chunks nearest the query are the ones an approximate index confuses with the answer. Measured on a
    low-ef FAISS HNSW index under a 2% tenant (tests/quality/test_shrink_approximate.py): 13-26 chunks, all
    1-minimal, where corpus order from the whole corpus down ended at 45-54 chunks with the budget spent.
    """
    observations = (probe.base, probe.follow)
    rest = [i for i in world.corpus.ids if i not in pinned]
    unpinned = set(rest)
    shown = {h.id for o in observations for h in o.ranking.hits} & unpinned
    filters = [o.world.params.filters for o in observations if not o.world.params.filters.is_empty]
    admitted = {c.id for c in world.corpus if c.id in unpinned and any(f.allows(c) for f in filters)} - shown
    likely = shown | admitted
    ranked = [i for i in dict.fromkeys(relevance) if i in unpinned and i not in likely]
    placed = likely | set(ranked)
    order = [i for i in rest if i in shown] + [i for i in rest if i in admitted] + ranked + [i for i in rest if i not in placed]
    return order, (set(), shown, likely)


def _stage_attribution(unit: Unit, resolved: Any, violation: _Violation, minimised: _Minimised, detail: str) -> Any:
    """For a retriever declared as a Pipeline: the first stage that breaks the relation on the minimal case."""
    from ..adapters import Pipeline
    from ._replay import Replayable, ReplayOutcome
    from ._stages import attribute

    if not isinstance(resolved, Pipeline) or len(resolved.stages) < 2 or not minimised.reproducible:
        return None
    found = Replayable(
        minimised.world, violation.perturbation, violation.relation, minimised.steps, minimised.sources,
        timeout=unit.settings.timeout,
    )
    # The whole pipeline is known to break it on this world: its probe is the minimal one just found.
    whole = ReplayOutcome(True, violation.relation.name, detail, probe=minimised.probe)
    return attribute(unit.retriever, resolved, found, last=whole)


def _violation_record(
    unit: Unit, violation: _Violation, minimised: _Minimised, calls_first: int, calls_shrinking: int, resolved: Any = None
) -> tuple[RetrieverViolation, int]:
    """The violation's record and the retriever calls stage attribution spent on it."""
    from ._replay import replay_path, write_replay

    world, probe = minimised.world, minimised.probe
    verdict = violation.relation.check(probe.base, probe.follow)
    perturbation = violation.perturbation
    detail = verdict.detail or violation.verdict.detail
    if minimised.reason:
        # Renderers show the detail: say there why the corpus is (or how it was) minimised.
        detail = f"{detail} [minimal corpus: {minimised.reason}]"
    replay = None
    if unit.settings.replay_dir is not None:
        path = replay_path(Path(unit.settings.replay_dir), unit, violation.relation)
        replay = str(
            write_replay(
                path,
                unit=unit,
                world=world,
                perturbation=perturbation,
                relation=violation.relation,
                detail=detail,
                steps=minimised.steps,
                sources=minimised.sources,
                reproducible=minimised.reproducible,
            )
        )
    injected, removed = corpus_diff(probe.base.world.corpus, probe.follow.world.corpus)
    shown = violation.relation.shown
    pair = shown(probe.base, probe.follow) if shown is not None else (probe.base, probe.follow)
    # A shown observation other than the one made gets its own metrics (the made one's are of another ranking).
    base, follow = (made if seen is made else observation(seen.world, seen.ranking) for seen, made in zip(pair, (probe.base, probe.follow)))
    stages = _stage_attribution(unit, resolved, violation, minimised, verdict.detail or violation.verdict.detail)
    record = RetrieverViolation(
        relation=violation.relation.name,
        case=unit.case.id,
        query=unit.case.query,
        perturbation=perturbation_dict(perturbation),
        detail=detail,
        calls_to_first_failure=calls_first,
        calls_shrinking=calls_shrinking,
        base=observation_dict(base),
        follow_up=observation_dict(follow),
        minimal_corpus=tuple(c.to_dict() for c in world.corpus),
        evidence=tuple(tuple(group) for group in unit.case.evidence),
        injected=tuple(sorted(injected)),
        removed=tuple(sorted(removed)),
        one_minimal=minimised.one_minimal,
        minimal_reason=minimised.reason,
        culprits=tuple(verdict.culprits),
        replay=replay,
        stages=None if stages is None else stages.to_dict(),
    )
    return record, 0 if stages is None else sum(outcome.calls for outcome in stages.outcomes)


def _base_metrics(executor: Executor, unit: Unit, world: World) -> tuple[Any, tuple[tuple[str, float | None], ...] | None]:
    from ..metrics import evaluate, standard_metrics

    try:
        ranking = executor.observe_base(world)
    except RagmorphError:
        return None, None
    # Keep the QueryScores object (not a plain dict): its numerators/denominators feed the micro averages and counts.
    wanted = standard_metrics(unit.settings.ks, claims=bool(unit.case.claims), spans=bool(unit.case.spans))
    metrics = evaluate(ranking, unit.case, wanted, corpus=unit.corpus)
    return metrics, tuple((hit.id, hit.score) for hit in ranking.hits)


def execute(unit: Unit, cache: CallCache | None = None) -> tuple[Result, ...]:
    """Run one unit: one Result per relation of its family (pass, fail, error or not_applicable)."""
    cache = cache if cache is not None else CallCache()
    family = FAMILIES[unit.strategy]
    relations = family.relations

    def rows(
        status: str, reason: str | None, examples: int = 0, calls: int = 0, metrics: Any = None, ranking: Any = None
    ) -> tuple[Result, ...]:
        return tuple(
            Result(
                unit.retriever.name, unit.case.id, unit.strategy, r.name, r.severity.value, status, examples, calls,
                reason, base_metrics=metrics, base_ranking=ranking,
            )
            for r in relations
        )

    try:
        resolved = unit.retriever.resolve()
        executor = Executor(
            unit.retriever, unit.corpus, cache=cache, timeout=unit.settings.timeout, resolved=resolved, reuse=True
        )
    except RagmorphError as error:
        return rows("error", str(error))
    try:
        results = _execute(unit, cache, resolved, executor, rows)
    except BaseException:
        with contextlib.suppress(RagmorphError):
            executor.close()
        raise
    try:
        executor.close()
    except RagmorphError as error:
        # Closing the instance the runner built failed: a retriever error like any other.
        return rows("error", str(error), calls=executor.calls)
    return results


APPROXIMATE = "approximate"
APPROXIMATE_REASON = (
    "the retriever declares the trait 'approximate': this relation presumes exact search, so it is measured as a "
    "rate (held/tested), never a failure; approximate.* judges the index against its exact twin"
)


def _shape_reason(relation: Relation) -> str:
    """Why a relation presuming a retriever shape is measured as a rate for a retriever that does not declare it."""
    traits = ", ".join(f"'{t}'" for t in relation.hard_with)
    return (
        f"measured as a rate (held/tested), never a failure: this relation presumes the shape {traits}, which a "
        "correct retriever of another shape (rank fusion, say) does not have; declare it to make the relation hard"
    )


def _not_judged(relation: Relation, capabilities: Capabilities) -> str | None:
    """Why `relation` would judge ragmorph's own filtering (or its own admitted set) instead of the retriever's."""
    if relation.judges_admission:
        return capabilities.admission_not_judged(relation.filter_kinds)
    return capabilities.filtering_not_judged(relation.filter_kinds) if relation.judges_filtering else None


def _execute(unit: Unit, cache: CallCache, resolved: Any, executor: Executor, rows: Any) -> tuple[Result, ...]:
    family = FAMILIES[unit.strategy]
    relations = family.relations
    world = start_world(unit.corpus, unit.case, unit.settings.ks)
    base_metrics, base_ranking = _base_metrics(executor, unit, world)
    reason = family.applicable(world)
    if reason is None and family.edits_corpus:
        reason = executor.corpus_edit_reason()
    if reason is not None:
        return rows("not_applicable", reason, calls=executor.calls, metrics=base_metrics, ranking=base_ranking)
    # Every family judges the retriever contract on the responses it sees; outside the contract family the
    # relation is only reported when it fails (the contract family's own row carries its pass).
    judged = relations if VALID_RESPONSE in relations else (*relations, VALID_RESPONSE)
    tallies = {r.name: _Tally() for r in judged}
    missing = {r.name: sorted(set(r.requires) - executor.traits) for r in judged}
    # What a factory builds is known only once it is built: a plain `def factory(corpus)` (no return annotation,
    # or a string one under `from __future__ import annotations`) builds an instance with add/remove/update/index,
    # and who filters may be declared by the instance only (`post_filter=True`, FAISS's selector). Read them from
    # a built instance (once per corpus, remembered by the cache) before drawing, for every family alike.
    try:
        executor.learn_capabilities()
    except RagmorphError as error:
        return rows("error", str(error), calls=executor.calls, metrics=base_metrics, ranking=base_ranking)
    excused = {r.name: why for r in judged if (why := _not_judged(r, executor.capabilities)) is not None}
    active = [r for r in judged if not missing[r.name] and r.name not in excused]
    # An approximate index may legitimately break what exact search guarantees: measure those relations as rates.
    rated = {r.name: APPROXIMATE_REASON for r in active if r.exact_search and APPROXIMATE in executor.traits}
    rated.update(
        (r.name, _shape_reason(r)) for r in active if r.hard_with and not set(r.hard_with) <= executor.traits and r.name not in rated
    )
    strategy = family.draw(world, ks=unit.settings.ks, delta=executor.supports_delta, filters=executor.capabilities.supports_filters)
    targets = {r.name for r in active if r.severity is Severity.HARD and r.name not in rated}
    seen: dict[str, frozenset[str]] = {}
    state: dict[str, Any] = {"error": None}
    found: dict[str, RetrieverViolation] = {}
    while targets and state["error"] is None:
        violation = _search(executor, world, strategy, active, targets, tallies, seen, unit, state)
        if violation is None or state["error"] is not None:
            break
        name = violation.relation.name
        targets.discard(name)
        # Shrinking builds instances outside this cache's count: none built before it is handed to a later unit.
        cache.note_build()
        calls_first = tallies[name].calls_to_first_failure or executor.asked
        if executor.has_factory and family.grows_corpus:
            minimised = _bisect_growth(unit, cache, resolved, world, violation)
        elif executor.has_factory:
            siblings = [
                {c["id"] for c in record.minimal_corpus}
                for record in found.values()
                if record.perturbation == perturbation_dict(violation.perturbation)
            ]
            minimised = _minimise(unit, cache, resolved, world, violation, siblings)
        else:
            why = "black-box retriever: without a factory the runner cannot build an index over a smaller corpus"
            minimised = _Minimised(world, violation.probe, None, why, 0, 0)
        shrinking = executor.asked - calls_first + minimised.asked
        found[name], attributing = _violation_record(unit, violation, minimised, calls_first, shrinking, resolved)
        executor.calls += minimised.calls + attributing
    if not targets and not found and state["error"] is None:
        # Only soft relations: one search to measure their rates.
        _search(executor, world, strategy, active, set(), tallies, seen, unit, state)
    results = []
    reported = relations if VALID_RESPONSE.name not in found else judged
    for relation in reported:
        tally = tallies[relation.name]
        common = dict(
            retriever=unit.retriever.name,
            case=unit.case.id,
            strategy=unit.strategy,
            relation=relation.name,
            severity=Severity.SOFT.value if relation.name in rated else relation.severity.value,
            examples=len(seen),
            retriever_calls=executor.calls,
            base_metrics=base_metrics,
            base_ranking=base_ranking,
        )
        rate = (tally.held, tally.tested) if tally.tested else None
        if relation.name in found:
            results.append(Result(status="fail", reason=found[relation.name].detail, rate=rate, violation=found[relation.name], **common))
        elif state["error"] is not None:
            results.append(Result(status="error", reason=str(state["error"]), rate=rate, **common))
        elif missing[relation.name]:
            why = (
                f"assumes a retriever with trait(s) {missing[relation.name]}; declare them with a `ragmorph_traits` "
                "attribute or check(..., traits={name: [...]}) when they hold"
            )
            results.append(Result(status="not_applicable", reason=why, **common))
        elif relation.name in excused:
            results.append(Result(status="not_applicable", reason=excused[relation.name], **common))
        elif tally.tested == 0:
            why = tally.last_reason or "no drawn perturbation could test this relation"
            results.append(Result(status="not_applicable", reason=why, **common))
        else:
            soft = relation.severity is Severity.SOFT or relation.name in rated
            example = tally.example if soft else None
            why = rated.get(relation.name)
            results.append(Result(status="pass", reason=why, rate=rate, example=example, **common))
    return tuple(results)
