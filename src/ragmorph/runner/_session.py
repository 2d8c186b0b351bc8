"""Retriever specs, the call cache and one probe: base and follow-up observation of a perturbation.

The stages stay pure and separate: a perturbation turns a world into a world (ragmorph.strategies), this
module only obtains rankings (through GuardedRetriever, the adapters' one door), and relations judge them.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ..adapters import GuardedRetriever, applied_delta, describe_capabilities, display_name, is_factory, load_retriever
from ..errors import InvalidResponse, RagmorphError, UsageError, retriever_errors
from ..model import Chunk, Corpus, Params, Ranking, World
from ..relations import Observation
from ..strategies import default_filters
from ..strategies._core import RANKING, REPEAT, corpus_diff, derivation

__all__ = ["CallCache", "Probe", "RetrieverSpec", "Session", "Step", "derive_seed", "probe_after"]


def derive_seed(*parts: object) -> int:
    """A 32-bit seed derived from `parts` that is the same on every machine and process."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=4).digest(), "little")


@attrs.frozen
class RetrieverSpec:
    """How a unit obtains its retriever: an import string (picklable anywhere) or the object/factory itself."""

    name: str
    target: Any = attrs.field(eq=False, repr=False)
    traits: tuple[str, ...] = ()

    @property
    def import_string(self) -> str | None:
        """The `package.module:attr` string when the spec was given as one."""
        return self.target if isinstance(self.target, str) else None

    def resolve(self) -> Any:
        """The retriever object or factory this spec names."""
        return load_retriever(self.target) if isinstance(self.target, str) else self.target

    def all_traits(self, resolved: Any) -> frozenset[str]:
        """Declared traits: the spec's plus a `ragmorph_traits` attribute on the retriever or factory."""
        declared = getattr(resolved, "ragmorph_traits", ()) or ()
        if isinstance(declared, str):
            declared = (declared,)
        return frozenset(self.traits) | frozenset(declared)

    @classmethod
    def of(cls, target: Any, name: str | None = None, traits: Sequence[str] = ()) -> RetrieverSpec:
        """A spec for `target` (import string, factory or retriever), named `name` or by its display name."""
        if isinstance(target, RetrieverSpec):
            return target
        return cls(name=name or (target if isinstance(target, str) else display_name(target)), target=target, traits=tuple(traits))


class CallCache:
    """Rankings (or the error raised) by retriever, index state, query, k and filters, shared within a run."""

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, ...], Ranking | BaseException] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_call(self, key: tuple[Any, ...], call: Callable[[], Ranking]) -> Ranking:
        """The cached ranking for `key`, else `call()` (errors are cached too so a broken call is not retried)."""
        if key in self._entries:
            self.hits += 1
            found = self._entries[key]
        else:
            self.misses += 1
            try:
                found = call()
            except Exception as error:
                found = error
            self._entries[key] = found
        if isinstance(found, BaseException):
            raise found
        return found


@attrs.frozen
class Step:
    """One call the base instance answered, inside an add/remove delta that was applied before and undone after.

    A session records its steps so that a violation which needs the calls made before it (a stale cache, state
    leaking between calls) can be reproduced on a fresh instance by making the same steps again.
    """

    query: str
    params: Params
    add: tuple[Chunk, ...] = ()
    remove: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for replay files)."""
        return {
            "query": self.query,
            "params": {"k": self.params.k, "filters": self.params.filters.to_dict()},
            "add": [c.to_dict() for c in self.add],
            "remove": list(self.remove),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """Inverse of `to_dict`."""
        from ..model import Filters

        params = Params(data["params"]["k"], Filters(**data["params"]["filters"]))
        return cls(data["query"], params, tuple(Chunk(**c) for c in data.get("add", ())), tuple(data.get("remove", ())))


@attrs.frozen
class Probe:
    """The two observations of one perturbation and the world they were drawn for."""

    base: Observation
    follow: Observation

    @property
    def invalid(self) -> str | None:
        """The validator's message for the first of the two calls that broke the retriever contract, else None."""
        return self.base.invalid if self.base.invalid is not None else self.follow.invalid


class Session:
    """One retriever over one base corpus: a lazily built base instance, fresh follow-up indexes, call counting."""

    def __init__(
        self,
        spec: RetrieverSpec,
        corpus: Corpus,
        *,
        cache: CallCache,
        timeout: float | None = None,
        resolved: Any = None,
    ) -> None:
        self.spec = spec
        self.corpus = corpus
        self.cache = cache
        self.timeout = timeout
        self.target = resolved if resolved is not None else spec.resolve()
        self.has_factory = is_factory(self.target)
        self.capabilities = describe_capabilities(self.target)
        self.traits = spec.all_traits(self.target)
        self._base: GuardedRetriever | None = None
        self.calls = 0
        self.served = 0  # calls answered from the call cache instead of the retriever
        self.builds = 0
        self.steps: list[Step] = []
        # Cache key -> the step that filled it, and the step behind the last observation (None: another
        # session's instance or a fresh index answered); `sources` holds both for the last probe.
        self._step_of: dict[tuple[Any, ...], int] = {}
        self.source: int | None = None
        self.sources: tuple[int | None, int | None] = (None, None)

    # Index state identity, part of every cache key: what the index holds and how it got there.
    def _key(self, state: tuple[Any, ...], query: str, params: Params) -> tuple[Any, ...]:
        return (self.spec.name, state, query, params.k, params.filters)

    def _guard(self, retriever: Any, corpus: Corpus) -> GuardedRetriever:
        return GuardedRetriever(retriever, corpus=corpus, timeout=self.timeout, name=self.spec.name)

    def _build(self, corpus: Corpus) -> GuardedRetriever:
        self.builds += 1
        with retriever_errors(f"factory {self.spec.name}, building an index of {len(corpus)} chunks,"):
            built = self.target(corpus)
        return self._guard(built, corpus)

    @property
    def base_instance(self) -> GuardedRetriever:
        """The retriever over the base corpus (built on first need, so fully cached units build nothing)."""
        if self._base is None:
            self._base = self._build(self.corpus) if self.has_factory else self._guard(self.target, self.corpus)
            if self.has_factory:
                self.capabilities = describe_capabilities(self.target, built=self._base.retriever)
        return self._base

    @property
    def supports_delta(self) -> bool:
        """Whether corpus edits can be applied as add/remove deltas on the base instance.

        Only on an index the runner built from the factory: a retriever object handed in is never mutated.
        """
        return self.has_factory and bool(self.capabilities.supports_delta)

    @property
    def asked(self) -> int:
        """Calls this session asked for, whether the retriever or the call cache answered them."""
        return self.calls + self.served

    def _cached(self, key: tuple[Any, ...], call: Callable[[], Ranking]) -> Ranking:
        hits = self.cache.hits
        try:
            return self.cache.get_or_call(key, call)
        finally:
            self.served += self.cache.hits - hits

    def _call(self, guard: GuardedRetriever, query: str, params: Params, corpus: Corpus) -> Ranking:
        before = guard.calls
        try:
            return guard.retrieve(query, params, corpus=corpus)
        finally:
            self.calls += guard.calls - before

    def _on_instance(self, step: Step, known: Corpus) -> Ranking:
        """Make `step` on the base instance (its delta applied, then undone) and record it."""
        guard = self.base_instance
        self.source = len(self.steps)
        self.steps.append(step)
        if not (step.add or step.remove):
            return self._call(guard, step.query, step.params, known)
        with applied_delta(guard.retriever, add=step.add, remove=step.remove, corpus=self.corpus):
            return self._call(guard, step.query, step.params, known)

    def _recorded(self, key: tuple[Any, ...], step: Step, known: Corpus) -> Ranking:
        self.source = self._step_of.get(key)

        def call() -> Ranking:
            self._step_of[key] = len(self.steps)
            return self._on_instance(step, known)

        return self._cached(key, call)

    def run_steps(self, steps: Sequence[tuple[int, Step]]) -> dict[int, Ranking | InvalidResponse | None]:
        """Make `steps` (numbered) on this session's base instance, deltas restricted to its corpus.

        Returns each step's ranking, or the InvalidResponse it raised, or None when the retriever failed.
        """
        results: dict[int, Ranking | InvalidResponse | None] = {}
        for number, step in steps:
            remove = tuple(i for i in step.remove if i in self.corpus)
            try:
                known = self.corpus.with_chunks(step.add) if step.add else self.corpus
                results[number] = self._on_instance(attrs.evolve(step, remove=remove), known)
            except InvalidResponse as error:
                results[number] = error
            except RagmorphError:
                results[number] = None
        return results

    def observe_base(self, world: World) -> Ranking:
        """The base ranking of `world` (whose corpus is the session's corpus), from the cache when possible."""
        key = self._key(("base", self.corpus.fingerprint), world.case.query, world.params)
        return self._recorded(key, Step(world.case.query, world.params), self.corpus)

    def corpus_edit_reason(self) -> str | None:
        """None when this retriever can be run on an edited corpus, else why not."""
        if not self.has_factory:
            return (
                "black-box retriever over a fixed corpus: corpus edits need a factory (a class or function taking the "
                "corpus); the runner never edits an index it did not build"
            )
        return None

    def observe_follow(self, world: World) -> Ranking | None:
        """The follow-up ranking of `world`; None when its corpus edit cannot be applied to this retriever."""
        query, params = world.case.query, world.params
        if world.corpus is self.corpus or world.corpus.chunks == self.corpus.chunks:
            return self.observe_base(world)
        reordering = _is_reordering(self.corpus, world.corpus)
        delta = None if reordering else _as_delta(self.corpus, world.corpus)
        state = _corpus_state(self.corpus, world.corpus, delta, reordering)
        if delta is not None and self.supports_delta:
            add, remove = delta
            key = self._key(("applied",) + state, query, params)
            return self._recorded(key, Step(query, params, add, remove), _known(self.corpus, world.corpus, add))
        self.source = None
        if not self.has_factory:
            return None
        key = self._key(("built",) + state, query, params)
        if reordering:
            known = self.corpus
        else:
            added = delta[0] if delta is not None else [world.corpus[i] for i in corpus_diff(self.corpus, world.corpus)[0]]
            known = _known(self.corpus, world.corpus, added)
        return self._cached(key, lambda: self._call(self._build(world.corpus), query, params, known))

    def repeat(self, world: World, between: Sequence[Params], delta: tuple[Sequence[Chunk], Sequence[str]]) -> Observation | None:
        """Ask `world` again on the base instance after the calls `between` and an undone `delta` (never cached).

        A response breaking the retriever contract on the way is returned as an invalid observation of the
        world of that very call (the edited corpus during the delta, the other k or filters in between).
        """
        add, remove = tuple(delta[0]), tuple(delta[1])
        query = world.case.query
        if (add or remove) and not self.supports_delta:
            return None
        if add or remove:
            try:
                self._on_instance(Step(query, world.params, add, remove), self.corpus.with_chunks(add) if add else self.corpus)
            except InvalidResponse as error:
                edited = World(self.corpus.with_chunks(add).without(remove), world.case, world.params)
                return invalid_observation(edited, error)
        for params in between:
            try:
                self._on_instance(Step(query, params), self.corpus)
            except InvalidResponse as error:
                return invalid_observation(attrs.evolve(world, params=params), error)
        return observed(world, lambda: self._on_instance(Step(query, world.params), self.corpus))

    def probe(self, world: World, perturbation: Any) -> Probe | str:
        """Observe base and follow-up of `perturbation` on `world`; a string says why it cannot be observed.

        A response that breaks the retriever contract becomes an observation with `invalid` set (and the
        follow-up is not asked when the base call already broke it); exceptions and timeouts propagate.
        """
        base_world = perturbation.base(world)
        mode = getattr(perturbation, "mode", "world")
        self.sources = (None, None)
        if mode == REPEAT:
            # Both calls go to this very instance, uncached: its current state (after earlier undone deltas,
            # which may reorder ties) is what the repetition compares against.
            first = observed(base_world, lambda: self._on_instance(Step(base_world.case.query, base_world.params), self.corpus))
            first_source = self.source
            if first.invalid is not None:
                self.sources = (first_source, None)
                return Probe(first, Observation(base_world, Ranking()))
            again = self.repeat(base_world, perturbation.interleave(world), perturbation.round_trip(world))
            if again is None:
                return "the retriever has no add/remove to apply and undo a delta"
            self.sources = (first_source, self.source)
            return Probe(first, again)
        base = observed(base_world, lambda: self.observe_base(base_world))
        self.sources = (self.source, None)
        if mode == RANKING:
            if base.invalid is not None:
                return Probe(base, Observation(base_world, Ranking()))
            return Probe(base, Observation(base_world, perturbation.derive_ranking(base.ranking)))
        follow_world = perturbation.apply(world)
        if base.invalid is not None:
            return Probe(base, Observation(follow_world, Ranking()))
        try:
            follow_ranking = self.observe_follow(follow_world)
        except InvalidResponse as error:
            self.sources = (self.sources[0], self.source)
            return Probe(base, invalid_observation(follow_world, error))
        self.sources = (self.sources[0], self.source)
        if follow_ranking is None:
            return self.corpus_edit_reason() or (
                "this corpus edit (a reordering) needs a factory to build a fresh index; deltas cannot express it"
            )
        return Probe(base, Observation(follow_world, follow_ranking))


def probe_after(
    spec: RetrieverSpec,
    world: World,
    perturbation: Any,
    steps: Sequence[tuple[int, Step]],
    sources: tuple[int | None, int | None],
    *,
    timeout: float | None = None,
    resolved: Any = None,
    made: list[Session] | None = None,
) -> Probe | str:
    """Probe `perturbation` on `world` the way it was first observed, after the calls that came before it.

    A fresh instance over `world.corpus` makes `steps` (numbered as in the session that recorded them); the
    base and follow-up observations are the results of the steps numbered `sources`, or, where a source is
    None (the run's call cache or a fresh index answered), come from a second fresh instance. A string says
    why no probe could be formed (a step the observation needs failed).
    """
    replayed = Session(spec, world.corpus, cache=CallCache(), timeout=timeout, resolved=resolved)
    other = Session(spec, world.corpus, cache=CallCache(), timeout=timeout, resolved=resolved)
    if made is not None:
        made.extend((replayed, other))
    results = replayed.run_steps(steps)
    params_of = {number: step.params for number, step in steps}
    mode = getattr(perturbation, "mode", "world")
    base_world = perturbation.base(world)
    follow_world = base_world if mode in (REPEAT, RANKING) else perturbation.apply(world)

    def from_step(number: int, target: World) -> Observation | str:
        found = results.get(number)
        target = attrs.evolve(target, params=params_of.get(number, target.params))
        if isinstance(found, Ranking):
            return Observation(target, found)
        if isinstance(found, InvalidResponse):
            return invalid_observation(target, found)
        return f"step {number} of the recorded calls failed when made again"

    base = from_step(sources[0], base_world) if sources[0] is not None else observed(base_world, lambda: other.observe_base(base_world))
    if isinstance(base, str):
        return base
    if base.invalid is not None:
        return Probe(base, Observation(follow_world, Ranking()))
    if mode == RANKING:
        return Probe(base, Observation(base_world, perturbation.derive_ranking(base.ranking)))
    if sources[1] is not None:
        follow = from_step(sources[1], follow_world)
        return follow if isinstance(follow, str) else Probe(base, follow)
    try:
        ranking = other.observe_follow(follow_world)
    except InvalidResponse as error:
        return Probe(base, invalid_observation(follow_world, error))
    if ranking is None:
        return "this corpus edit cannot be applied to this retriever"
    return Probe(base, Observation(follow_world, ranking))


def invalid_observation(world: World, error: InvalidResponse) -> Observation:
    """The observation of a call on `world` whose response the validator rejected (the message kept)."""
    return Observation(world, Ranking(), invalid=str(error))


def observed(world: World, fetch: Callable[[], Ranking]) -> Observation:
    """`Observation(world, fetch())`, or an invalid observation when the response breaks the contract."""
    try:
        return Observation(world, fetch())
    except InvalidResponse as error:
        return invalid_observation(world, error)


def _without_positions(corpus: Corpus, ids: frozenset[str]) -> list[Chunk]:
    """`corpus.chunks` minus the chunks `ids`, deleting by position (C-speed list surgery, no Python loop over n)."""
    chunks = list(corpus.chunks)
    for position in sorted((corpus.position(i) for i in ids), reverse=True):
        del chunks[position]
    return chunks


def _as_delta(before: Corpus, after: Corpus) -> tuple[tuple[Chunk, ...], tuple[str, ...]] | None:
    """(added chunks, removed ids) turning `before` into `after`, or None when order or content changed otherwise."""
    derived = derivation(before, after)
    if derived is not None and derived.pure:
        # Built by insertions and removals alone: the delta is known without comparing every chunk.
        return derived.added_chunks, tuple(sorted(derived.removed, key=before.position))
    added_ids, removed_ids = corpus_diff(before, after)
    # Perturbations reuse the Chunk objects they keep, so list equality settles on identity at C speed.
    if _without_positions(before, removed_ids) != _without_positions(after, added_ids):
        return None
    added = tuple(sorted((after[i] for i in added_ids), key=lambda c: after.position(c.id)))
    removed = tuple(sorted(removed_ids, key=before.position))
    return added, removed


def _known(base: Corpus, after: Corpus, added: Sequence[Chunk]) -> Corpus:
    """The ids a follow-up response may name without being invalid: the base corpus plus what was added.

    A removed id is deliberately *known*: returning it is a relation failure ("removed id never returned")
    with a shrunk, replayable example, not a malformed response.
    """
    if not added:
        return base
    if len(after) == len(base) + len(added):
        return after  # nothing was removed, so `after` already holds exactly base + added
    return base.with_chunks(added)


def _is_reordering(base: Corpus, after: Corpus) -> bool:
    """True when `after` holds the very chunk objects of `base` in another order (compared at C speed)."""
    if len(after) != len(base) or not base.chunks or derivation(base, after) is not None:
        return False
    return set(map(id, after.chunks)) == _identities(base)


def _corpus_state(base: Corpus, after: Corpus, delta: Any, reordering: bool) -> tuple[Any, ...]:
    """A cheap identity of `after` relative to `base` for cache keys (no full fingerprint of big corpora)."""
    if delta is not None:
        return ("delta", base.fingerprint, delta[0], delta[1])
    if reordering:
        return ("order", base.fingerprint, tuple(map(_ID, after.chunks)))
    return ("corpus", after.fingerprint)


_ID = operator.attrgetter("id")
_IDENTITIES: list[tuple[Corpus, frozenset[int]]] = []


def _identities(corpus: Corpus) -> frozenset[int]:
    """The identities of `corpus`'s chunk objects (the last corpus asked is remembered: it is the base)."""
    if not _IDENTITIES or _IDENTITIES[0][0] is not corpus:
        _IDENTITIES[:] = [(corpus, frozenset(map(id, corpus.chunks)))]
    return _IDENTITIES[0][1]


def start_world(corpus: Corpus, case: Any, ks: Sequence[int]) -> World:
    """The world a unit draws perturbations for: the case at the largest k with its default filters."""
    return World(corpus, case, Params(max(ks), default_filters(case)))


def spec_mapping(retrievers: Any, traits: Mapping[str, Sequence[str]] | None = None) -> tuple[RetrieverSpec, ...]:
    """Normalise check()'s `retrievers` argument into named specs."""
    traits = traits or {}
    if isinstance(retrievers, Mapping):
        items = list(retrievers.items())
    elif isinstance(retrievers, (list, tuple)):
        items = [(None, r) for r in retrievers]
    else:
        items = [(None, retrievers)]
    specs = []
    for name, target in items:
        spec = RetrieverSpec.of(target, name)
        spec = attrs.evolve(spec, traits=tuple(sorted(set(spec.traits) | set(traits.get(spec.name, ())))))
        specs.append(spec)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"expected distinct retriever names, got {names}; pass a mapping name -> retriever")
    if not specs:
        raise UsageError("expected at least one retriever, got none")
    return tuple(specs)
