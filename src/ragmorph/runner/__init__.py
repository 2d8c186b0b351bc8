"""The metamorphic runner: plan units, execute them, fold results into a CheckReport, replay violations.

`check()` is plan + execute + report in one process; `plan()`/`execute()`/`CheckReport.from_results()` let a
caller run units elsewhere (units are picklable and independent) and still build the same report.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..adapters import describe_capabilities, display_name
from ..errors import RagmorphError, UsageError, describe
from ..model import Case, Corpus, validate_cases
from ..strategies import CATALOG, DEFAULT_SUITE, FAMILIES
from ._engine import APPROXIMATE, BUDGETS, Result, Settings, Unit, budget_problem, execute
from ._backends import EXECUTORS
from ._backends import backend_for as _backend_for
from ._backends import batches as _batches
from ._replay import REPLAY_SCHEMA, ReplayOutcome, replay
from ._report import REPORT_SCHEMA, CheckReport, ViolationsFound
from ._executor import CallCache, CallPool, Executor, Probe, observation
from ._heap import frozen_heap as _frozen_heap
from ._search import search
from ._spec import RetrieverSpec
from ._stages import StageAttribution, attribute_stages
from ._spec import derive_seed as _derive_seed
from ._spec import spec_mapping as _spec_mapping
from ._violation import MetricViolation, RetrieverViolation, Violation

__all__ = [
    "BUDGETS",
    "TRAITS",
    "REPLAY_SCHEMA",
    "REPORT_SCHEMA",
    "EXECUTORS",
    "CallCache",
    "CallPool",
    "CheckReport",
    "Executor",
    "MetricViolation",
    "Probe",
    "ReplayOutcome",
    "Result",
    "RetrieverSpec",
    "StageAttribution",
    "RetrieverViolation",
    "Settings",
    "Unit",
    "Violation",
    "ViolationsFound",
    "attribute_stages",
    "budget_problem",
    "check",
    "execute",
    "observation",
    "plan",
    "replay",
    "search",
    "strategies_problem",
    "trait_problem",
]

# Every trait a relation or the engine reads, derived from the catalog so it cannot drift: a name outside it
# (a typo such as 'lexcial') would enable nothing while the user believes the stricter relations run.
TRAITS: frozenset[str] = frozenset({APPROXIMATE, *(t for r in CATALOG for t in (*r.requires, *r.hard_with))})


def _spelling(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def trait_problem(traits: Any) -> str | None:
    """Why `traits` is not a list of known trait names (TRAITS), in words; None when it is."""
    if isinstance(traits, str) or not isinstance(traits, (Sequence, set, frozenset)):
        return f"expected a list of trait names, got {describe(traits)}"
    for trait in traits:
        if not isinstance(trait, str) or trait not in TRAITS:
            hint = _spelling(trait, sorted(TRAITS)) if isinstance(trait, str) else ""
            return f"expected traits among {', '.join(sorted(TRAITS))}, got {describe(trait)}{hint}"
    return None


def strategies_problem(strategies: Any) -> str | None:
    """Why `strategies` is not a non-empty list of strategy families (FAMILIES), in words; None when it is."""
    if isinstance(strategies, str) or not isinstance(strategies, Sequence):
        return f"expected a list of strategy families, got {describe(strategies)}"
    if not strategies:
        # An empty list would run nothing and report "every hard relation holds".
        return "expected at least one strategy family, got an empty list; leave it out for the default suite"
    for family in strategies:
        if not isinstance(family, str) or family not in FAMILIES:
            hint = _spelling(family, sorted(FAMILIES)) if isinstance(family, str) else ""
            return f"expected strategy families among {', '.join(sorted(FAMILIES))}, got {describe(family)}{hint}"
    return None


def _settings(
    ks: Sequence[int],
    max_examples: int,
    derandomize: bool,
    timeout: float | None,
    replay_dir: Any,
    contract_unit: bool = False,
    budget: str = "adaptive",
) -> Settings:
    ks = tuple(ks)
    problem = budget_problem(budget)
    if problem is not None:
        raise UsageError(f"budget: {problem}")
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k <= 0 for k in ks):
        raise UsageError(f"expected ks to be positive integers like (1, 3, 5, 10), got ks={describe(ks)}")
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples <= 0:
        raise UsageError(f"expected a positive max_examples, got max_examples={describe(max_examples)}")
    return Settings(
        ks=tuple(sorted(set(ks))),
        max_examples=max_examples,
        derandomize=bool(derandomize),
        timeout=timeout,
        replay_dir=None if replay_dir is None else str(Path(replay_dir)),
        contract_unit=contract_unit,
        budget=budget,
    )


def _strategies(strategies: Sequence[str] | None) -> tuple[str, ...]:
    if strategies is None:
        return DEFAULT_SUITE
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    elif not isinstance(strategies, Mapping) and hasattr(strategies, "__iter__"):
        strategies = list(strategies)  # any iterable of names (a set, a generator), read once
    problem = strategies_problem(strategies)
    if problem is not None:
        raise UsageError(f"strategies: {problem}")
    return tuple(dict.fromkeys(strategies))


def _check_traits(traits: Mapping[str, Sequence[str]] | None) -> None:
    if traits is None:
        return
    if not isinstance(traits, Mapping):
        raise UsageError(f"expected traits as a mapping retriever name -> trait names, got traits={describe(traits)}")
    for name, declared in traits.items():
        problem = trait_problem(declared)
        if problem is not None:
            raise UsageError(f"traits of retriever {name!r}: {problem}")


def plan(
    retrievers: Any,
    corpus: Corpus,
    cases: Sequence[Case],
    *,
    strategies: Sequence[str] | None = None,
    ks: Sequence[int] = (1, 3, 5, 10),
    max_examples: int = 25,
    seed: int = 0,
    derandomize: bool = False,
    replay_dir: str | Path | None = None,
    timeout: float | None = None,
    traits: Mapping[str, Sequence[str]] | None = None,
    budget: str = "adaptive",
) -> tuple[Unit, ...]:
    """The units of a run: every retriever x case x strategy family, each with a seed derived from `seed`."""
    if not isinstance(corpus, Corpus):
        raise UsageError(f"expected a ragmorph.model.Corpus, got corpus={describe(corpus)}")
    cases = tuple(cases)
    if not cases:
        # A run with nothing to judge would report "0 pass" and exit 0: a false pass, as the CLI already refuses.
        raise UsageError("expected at least one case to judge, got cases=() (empty)")
    validate_cases(corpus, cases)
    _check_traits(traits)
    specs = _spec_mapping(retrievers, traits)
    families = _strategies(strategies)
    settings = _settings(ks, max_examples, derandomize, timeout, replay_dir, contract_unit="contract" in families, budget=budget)
    return tuple(
        Unit(spec, corpus, case, family, settings, _derive_seed(seed, spec.name, case.id, family))
        for spec in specs
        for case in cases
        for family in families
    )


def _descriptions(units: Sequence[Unit]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for unit in units:
        if unit.retriever.name in found:
            continue
        try:
            target = unit.retriever.resolve()
            kind = describe_capabilities(target).kind
        except RagmorphError:
            target, kind = None, "black_box"
        description = unit.retriever.import_string or (display_name(target) if target is not None else unit.retriever.name)
        from ..secrets import clip  # masked before the cut, or a cut secret's prefix would reach the manifest

        found[unit.retriever.name] = {"description": clip(description, 200, ""), "kind": kind}
    return found


def _hard_failure(results: Sequence[Result]) -> bool:
    return any(r.status == "fail" and r.severity == "hard" for r in results)


def check(
    retrievers: Any,
    corpus: Corpus,
    cases: Sequence[Case],
    *,
    strategies: Sequence[str] | None = None,
    ks: Sequence[int] = (1, 3, 5, 10),
    max_examples: int = 25,
    seed: int = 0,
    derandomize: bool = False,
    replay_dir: str | Path | None = None,
    timeout: float | None = None,
    progress: Callable[[int, int, Unit], None] | None = None,
    traits: Mapping[str, Sequence[str]] | None = None,
    fail_fast: bool = False,
    jobs: int | None = None,
    executor: str | None = None,
    address: str | None = None,
    concurrency: int | None = None,
    budget: str = "adaptive",
) -> CheckReport:
    """Run every retriever x case x strategy family and return the CheckReport.

    `retrievers` is a retriever, a factory (a callable taking the corpus), an import string, or a mapping
    name -> any of those. `traits` declares retriever properties some hard relations presume (e.g.
    {"bm25": ["lexical"]}). `progress(done, total, unit)` is called after each unit, in plan order (and, when
    it has one, `progress.record_calls(calls, units)` with the retriever calls of each batch of units that
    finished, before their progress calls). `fail_fast`
    stops after the first unit with a hard violation; the report then holds the units up to it.

    `jobs` > 1 runs the units in that many local processes; `executor` is one of EXECUTORS ("serial",
    "processes", "ray"; `address` names an existing Ray cluster). `concurrency` is the calls in flight at once per
    process, in threads (batches, and the calls of a plan on instances of their own), for retrievers that mostly
    wait (services). Every combination gives the
    report a serial run gives for the same seed, fail-fast included.

    `budget` is one of BUDGETS: "adaptive" (default) lets each family draw what its perturbations need (at most
    `max_examples`, fewer where its space is small or its bugs show early, and no draw for what is already
    decided); "full" draws `max_examples` for every family, for thorough runs.
    """
    cases = tuple(cases)
    backend = _backend_for(executor, jobs=jobs, address=address, concurrency=concurrency)
    units = plan(
        retrievers, corpus, cases, strategies=strategies, ks=ks, max_examples=max_examples, seed=seed,
        derandomize=derandomize, replay_dir=replay_dir, timeout=timeout, traits=traits, budget=budget,
    )
    work = _batches(units)
    # A progress object that also takes retriever calls (reporting.ProgressBar) gets each batch's calls and units
    # before their progress calls, for its seconds per call and ETA; a plain callable gets (done, total, unit).
    record_calls = getattr(progress, "record_calls", None)
    arrived: dict[int, tuple[tuple[Result, ...], ...]] = {}
    results: list[Result] = []
    done, folded, stopped = 0, 0, False
    # Batches may finish in any order; they are folded in plan order, so progress, fail-fast and the rows are
    # exactly a serial run's. The heap the run starts with (the corpus above all) stays out of the garbage
    # collector's full passes meanwhile (see _heap).
    with _frozen_heap():
        finished = backend.run(work, fail_fast=fail_fast)
        try:
            for index, outcome in finished:
                arrived[index] = outcome
                while folded in arrived and not stopped:
                    outcome = arrived.pop(folded)
                    if record_calls is not None:
                        # The batch's calls were all spent by now, whichever of its units is reported first.
                        record_calls(sum(max((r.retriever_calls for r in found), default=0) for found in outcome), len(outcome))
                    for unit, found in zip(work[folded], outcome):
                        results.extend(found)
                        done += 1
                        if progress is not None:
                            progress(done, len(units), unit)
                        if fail_fast and _hard_failure(found):
                            stopped = True
                            break
                    folded += 1
                if stopped:
                    break
        finally:
            finished.close()  # stops the workers still running (fail-fast, or an error in progress())
    specs = tuple(dict.fromkeys(u.retriever for u in units)) or _spec_mapping(retrievers, traits)
    return CheckReport.from_results(
        results,
        corpus=corpus,
        cases=cases,
        retrievers=specs,
        strategies=_strategies(strategies),
        seed=seed,
        settings=units[0].settings if units else _settings(ks, max_examples, derandomize, timeout, replay_dir, budget=budget),
        descriptions=_descriptions(units),
    )
