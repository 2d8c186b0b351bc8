"""The executor: the one place that runs a perturbation's plan of calls against a retriever.

A perturbation is plain data (`ragmorph.relations.Plan`): calls, each naming a world and the instance that answers
it. The executor owns everything else: the run's call cache, the base instance and the fresh ones it builds (and
closes), corpus edits applied as deltas, updates or re-indexes and always undone, the history of calls made on the
base instance (so stateful violations replay), call counters, and the observations it hands back: validated
rankings with the contract rule a rejected response broke and the metrics attached. Relations only judge them.
"""

from __future__ import annotations

import functools
import itertools
import operator
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

import attrs

from ..adapters import GuardedRetriever, applied_delta, describe_capabilities, is_factory
from ..adapters.guard import bounded_call, supervised
from ..errors import InvalidResponse, RagmorphError, retriever_errors
from ..metrics import evaluate
from ..model import Chunk, Corpus, Filters, Params, Ranking, World
from ..relations import Call, Edit, Instance, Observation, Plan, Role
from ..strategies import corpus_diff, derivation
from ._spec import RetrieverSpec

__all__ = ["CallCache", "CallPool", "Executor", "Probe", "Step", "invalid_observation", "observation", "run_after"]

_T = TypeVar("_T")
_LINEAGES = itertools.count()

# Why a call cannot be made on this retriever (the plan's relations are then not_applicable with this reason).
_NO_DELTA = "the retriever has no add/remove to apply and undo a delta"
_NOT_A_DELTA = "this corpus edit is not an add/remove delta of the base corpus"
_NO_UPDATE = "the retriever has no update(chunks) to apply and undo an update in place"
_NOT_AN_UPDATE = "this corpus edit changes which ids exist, so update(chunks) cannot express it"
_NO_INDEX = "the retriever has no index(corpus) to re-index the same instance"
_NO_TWIN = "the retriever declares no exact twin (a `ragmorph_twin` factory taking the corpus)"
_BLACK_BOX = (
    "black-box retriever over a fixed corpus: corpus edits need a factory (a class or function taking the "
    "corpus); the runner never edits an index it did not build"
)


class CallPool:
    """Threads that make the independent calls of plans at once, at most `size` retriever calls in flight.

    One pool serves every batch of a process (`--concurrency N`): the calls a batch's thread makes itself and the
    calls it hands to the pool take the same `size` slots, so N bounds the calls in flight however the batches
    and their plans overlap.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._slots = threading.BoundedSemaphore(size)
        self._threads = ThreadPoolExecutor(size, thread_name_prefix="ragmorph-call")

    def slot(self) -> threading.BoundedSemaphore:
        """The context manager a retriever call holds while it is in flight."""
        return self._slots

    def submit(self, work: Callable[[], _T]) -> Future[_T]:
        """Run `work` in a pool thread once a slot is free."""

        def slotted() -> _T:
            with self._slots, supervised():  # the user's code runs here: os._exit in it is an error (exit_guard)
                return work()

        return self._threads.submit(slotted)

    def close(self) -> None:
        """Wait for the calls in flight and stop the threads."""
        self._threads.shutdown(wait=True)

    def __enter__(self) -> CallPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class CallCache:
    """Rankings (or the error raised) by retriever, index state, query, k and filters, shared within a run.

    Safe to share between threads: a key asked while another thread is making its call waits for that call's
    answer instead of making it again, so every key reaches the retriever at most once. `pool` (None: every call
    in the asking thread) makes the independent calls of a plan at once: such a call is *started ahead*, and
    its answer is kept only when a plan asks for the key (`fetch`), so a call no plan reached is never kept.
    """

    def __init__(self, pool: CallPool | None = None, *, reuse: bool = False) -> None:
        self._entries: dict[tuple[Any, ...], Ranking | BaseException] = {}
        self._making: dict[tuple[Any, ...], threading.Event] = {}
        # Calls started ahead and not yet asked for: their future and how many plans wait to ask for them.
        self._ahead: dict[tuple[Any, ...], list[Any]] = {}
        self._lock = threading.Lock()
        self.pool = pool
        self.hits = 0
        self.misses = 0
        # What a built instance declares, by retriever and corpus: read once, not rebuilt to be read again.
        self._capabilities: dict[tuple[str, str], Any] = {}
        self._capabilities_by_name: dict[str, Any] = {}
        # `reuse` (a batch's cache, closed by its owner): base instances handed from one unit to the next (`park`).
        self.reuse = reuse
        self.builds = 0  # instances built by executors on this cache, or work that built some (`note_build`)
        # Only instances without close() are parked (see `Executor.close`), so letting one go releases nothing.
        self._idle: dict[tuple[str, str], _Parked] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def start(self, key: tuple[Any, ...], make: Callable[[], Future[Any]]) -> bool:
        """Have `key`'s call made ahead: by `make()`'s future, or by the one another plan started for the key.

        False (nothing started) when the key is answered already or its call is being made.
        """
        with self._lock:
            if key in self._entries or key in self._making:
                return False
            started = self._ahead.get(key)
            if started is None:
                self._ahead[key] = [make(), 1]
            else:
                started[1] += 1
            return True

    def claim(self, key: tuple[Any, ...]) -> Future[Any] | None:
        """The future of `key`'s call started ahead, taken by the caller making that call (see `fetch`)."""
        with self._lock:
            started = self._ahead.pop(key, None)
        return None if started is None else started[0]

    def release(self, key: tuple[Any, ...]) -> Future[Any] | None:
        """A plan that started `key` ahead no longer asks for it; the future when no plan does any more (cancel it)."""
        with self._lock:
            started = self._ahead.get(key)
            if started is None:
                return None
            started[1] -= 1
            if started[1] > 0:
                return None
            del self._ahead[key]
            return started[0]  # type: ignore[no-any-return]

    def fetch(self, key: tuple[Any, ...], call: Callable[[], Ranking]) -> tuple[Ranking | BaseException, bool]:
        """(the ranking or error for `key`, whether the cache served it); on a miss `call()` makes it (or takes it
        from the call started ahead, `claim`) and it is kept, errors too, so a broken call is not retried."""
        while True:
            with self._lock:
                if key in self._entries:
                    self.hits += 1
                    return self._entries[key], True
                making = self._making.get(key)
                if making is None:
                    self._making[key] = threading.Event()
                    self.misses += 1
                    break
            making.wait()  # another thread is making this very call: its answer is this one's
        found: Ranking | BaseException | None = None
        try:
            try:
                found = call()
            except Exception as error:
                found = error
        finally:
            # Kept before the waiters wake; an interrupt keeps nothing, and a waiter then makes the call itself.
            with self._lock:
                if found is not None:
                    self._entries[key] = found
                self._making.pop(key).set()
        return found, False

    def capabilities(self, key: tuple[str, str]) -> Any:
        """What the instance built for `key` (retriever name, corpus fingerprint) declared; None when none was built."""
        return self._capabilities.get(key)

    def learned(self, key: tuple[str, str], capabilities: Any) -> None:
        """Keep what an instance built for `key` declared."""
        self._capabilities[key] = capabilities
        self._capabilities_by_name[key[0]] = capabilities

    def capabilities_of(self, name: str) -> Any:
        """What an instance of retriever `name` built over any corpus declared; None when none was built.

        A factory's product has the same methods whatever corpus it indexes, so an executor over a smaller corpus
        (shrinking) plans its edits by what the unit's instance showed before building one of its own.
        """
        return self._capabilities_by_name.get(name)

    def note_build(self) -> None:
        """An instance of a retriever was built (or work that builds some ran): idle instances are not handed on."""
        with self._lock:
            self.builds += 1

    def park(self, key: tuple[str, str], parked: _Parked) -> None:
        """Keep an instance no edit touched for the next unit of the batch (in place of an older one)."""
        self._idle[key] = parked

    def take(self, key: tuple[str, str]) -> _Parked | None:
        """The instance parked for `key` if nothing was built since it was parked, else None (it is dropped)."""
        parked = self._idle.pop(key, None)
        return parked if parked is not None and parked.builds == self.builds else None

    def drop_parked(self) -> None:
        """Let the parked instances go (the owner of a reusing cache calls this when its batch is done)."""
        self._idle.clear()

    def get_or_call(self, key: tuple[Any, ...], call: Callable[[], Ranking]) -> Ranking:
        """The cached ranking for `key`, else `call()` (errors are cached too so a broken call is not retried)."""
        found, _ = self.fetch(key, call)
        if isinstance(found, BaseException):
            raise found
        return found


@attrs.frozen
class _Parked:
    """A base instance between units of one batch: the calls made on it (none edited it) and the build count then."""

    guard: GuardedRetriever
    steps: tuple[Step, ...]
    builds: int


@attrs.frozen
class Step:
    """One call the base instance answered, inside an edit (delta, update or re-index) applied before and undone after.

    An executor records its steps so that a violation which needs the calls made before it (a stale cache, state
    leaking between calls) can be reproduced on a fresh instance by making the same steps again.
    """

    query: str
    params: Params
    add: tuple[Chunk, ...] = ()
    remove: tuple[str, ...] = ()
    update: tuple[Chunk, ...] = ()
    index: Corpus | None = attrs.field(default=None, eq=False)
    # add(chunks) of ids the instance already holds (Edit.ADD); a rejecting add is an outcome, not an error.
    upsert: tuple[Chunk, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for replay files); `update` and `index` appear only when used."""
        data: dict[str, Any] = {
            "query": self.query,
            "params": {"k": self.params.k, "filters": self.params.filters.to_dict()},
            "add": [c.to_dict() for c in self.add],
            "remove": list(self.remove),
        }
        if self.update:
            data["update"] = [c.to_dict() for c in self.update]
        if self.index is not None:
            data["index"] = [c.to_dict() for c in self.index]
        if self.upsert:
            data["upsert"] = [c.to_dict() for c in self.upsert]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """Inverse of `to_dict`."""
        params = Params(data["params"]["k"], Filters(**data["params"]["filters"]))
        index = data.get("index")
        return cls(
            data["query"],
            params,
            tuple(Chunk(**c) for c in data.get("add", ())),
            tuple(data.get("remove", ())),
            tuple(Chunk(**c) for c in data.get("update", ())),
            None if index is None else Corpus(Chunk(**c) for c in index),
            tuple(Chunk(**c) for c in data.get("upsert", ())),
        )


@attrs.frozen
class Probe:
    """The base and follow-up observations of one plan, and which recorded steps gave them (None: no step did)."""

    base: Observation
    follow: Observation
    sources: tuple[int | None, int | None] = (None, None)

    @property
    def invalid(self) -> Observation | None:
        """The first of the two observations whose response broke the retriever contract, else None."""
        if self.base.rule is not None:
            return self.base
        return self.follow if self.follow.rule is not None else None


@attrs.frozen
class _Tail:
    """The call a plan ended with on the base instance, unedited and uncached: its answer, the step that gave it,
    and the steps recorded and instances built by then (any call or build since ends the chain)."""

    step: Step
    ranking: Ranking
    source: int
    steps: int
    builds: int


@attrs.frozen
class _Job:
    """One call of a plan, prepared but not made: which instance answers it and under which cache key.

    `step` set: the base instance answers it and the step is recorded (`key` None: never cached, the plan's SAME
    instance). `step` None: an instance built for this call alone over `corpus` answers it (by `factory`, else
    the retriever's own factory) and is closed after.
    """

    key: tuple[Any, ...] | None
    query: str
    params: Params
    known: Corpus = attrs.field(eq=False, repr=False)
    step: Step | None = None
    corpus: Corpus | None = attrs.field(default=None, eq=False, repr=False)
    factory: Any = attrs.field(default=None, eq=False, repr=False)


class _Metrics(Mapping[str, "float | None"]):
    """Metric values of one observation, each computed on first use (ir_measures names, e.g. `R@5`).

    Iterating lists the values computed so far; looking a name up computes it.
    """

    __slots__ = ("_case", "_corpus", "_ranking", "_values")

    def __init__(self, world: World, ranking: Ranking) -> None:
        self._ranking, self._case, self._corpus = ranking, world.case, world.corpus
        self._values: dict[str, float | None] = {}

    def __getitem__(self, name: str) -> float | None:
        if name not in self._values:
            self._values[name] = evaluate(self._ranking, self._case, [name], corpus=self._corpus)[name]
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._values))

    def __len__(self) -> int:
        return len(self._values)


def observation(world: World, ranking: Ranking) -> Observation:
    """The observation of `ranking` answered on `world`, with its metrics attached."""
    return Observation(world, ranking, _Metrics(world, ranking))


def _declared_probe(base: Observation, follow: Observation, sources: tuple[int | None, int | None], capabilities: Any) -> Probe:
    """The probe of two observations, carrying what the retriever declared about its short lists."""
    if capabilities.cuts_short is not None:
        base, follow = (attrs.evolve(o, cut_short=capabilities.cuts_short) for o in (base, follow))
    return Probe(base, follow, sources)


def invalid_observation(world: World, error: InvalidResponse) -> Observation:
    """The observation of a call on `world` whose response the validator rejected (message and rule kept)."""
    return Observation(world, Ranking(), _Metrics(world, Ranking()), invalid=str(error), rule=error.rule)


def _plain(step: Step | None) -> bool:
    """Whether `step` is a call on the instance as it is, with no edit (a re-index takes no part in Step equality)."""
    return step is not None and step.index is None and step == Step(step.query, step.params)


def _updated(before: Corpus, after: Corpus) -> tuple[Chunk, ...] | None:
    """The chunks of `after` whose content differs from `before`'s chunk of the same id, in `after`'s order; None
    when the two do not hold the same ids. A derived corpus shares its unchanged chunk objects with its parent,
    so pairs in the same place that are the same object are passed over without comparing fields."""
    if len(after) != len(before):
        return None
    changed = []
    for old, new in zip(before.chunks, after.chunks):
        if old is not new:
            held = before.get(new.id)
            if held is None:
                return None
            if held != new:
                changed.append(new)
    return tuple(changed)


class Executor:
    """Runs plans for one retriever over one base corpus: a lazily built base instance, fresh ones, call counting.

    `reuse` (a unit's own executor): on a cache made with `reuse=True` (a batch's), take the base instance an
    earlier unit parked and park this one for the next (see `base_instance` and `close`).
    """

    def __init__(
        self,
        spec: RetrieverSpec,
        corpus: Corpus,
        *,
        cache: CallCache,
        timeout: float | None = None,
        resolved: Any = None,
        reuse: bool = False,
    ) -> None:
        self.spec = spec
        self.corpus = corpus
        self.cache = cache
        self.timeout = timeout
        self.target = resolved if resolved is not None else spec.resolve()
        self.has_factory = is_factory(self.target)
        learned = cache.capabilities_of(spec.name) if self.has_factory else None
        self.capabilities = learned if learned is not None else describe_capabilities(self.target)
        self.traits = spec.all_traits(self.target)
        self._base: GuardedRetriever | None = None
        self.calls = 0
        self.served = 0  # calls answered from the call cache instead of the retriever
        self.steps: list[Step] = []
        # Cache key -> the step that filled it; `_source` is the step behind the call being answered (None:
        # another executor's instance or a fresh index answered), read when a probe is assembled.
        self._step_of: dict[tuple[Any, ...], int] = {}
        self._source: int | None = None
        # A unit's own executor on a reusing cache takes and parks base instances (shrinking's never do).
        self.reuse = reuse and cache.reuse
        # Whether the base instance may be handed to the next unit: no edit, no failed call, nothing else built.
        self._touched = False
        self._lineage = next(_LINEAGES)  # tells apart the answers of instances edits were applied to
        self._built_at = 0
        # The last call of the previous plan when it was an uncached call on the unedited base instance.
        self._tail: _Tail | None = None

    # ------------------------------------------------------------------------------------------ instances

    def _key(self, state: tuple[Any, ...], query: str, params: Params) -> tuple[Any, ...]:
        # Index state identity, part of every cache key: what the index holds and how it got there.
        return (self.spec.name, state, query, params.k, params.filters)

    def _guard(self, retriever: Any, corpus: Corpus) -> GuardedRetriever:
        return GuardedRetriever(retriever, corpus=corpus, timeout=self.timeout, name=self.spec.name)

    def _build(self, corpus: Corpus, factory: Any = None) -> GuardedRetriever:
        make = factory or self.target
        with retriever_errors(f"factory {self.spec.name}, building an index of {len(corpus)} chunks,"):
            # The timeout bounds every call into the user's code: a factory that never returns hangs no run.
            built = bounded_call(
                lambda: make(corpus), self.timeout, f"factory {self.spec.name} to build an index of {len(corpus)} chunks"
            )
        return self._guard(built, corpus)

    def _close(self, retriever: Any) -> None:
        close = getattr(retriever, "close", None)
        if callable(close):
            with retriever_errors(f"retriever {self.spec.name}.close"):
                bounded_call(close, self.timeout, f"retriever {self.spec.name}.close() to return")

    def _bounded(self, retriever: Any) -> Any:
        """`retriever` with its edit methods under the timeout (see `_TimedEdits`)."""
        return retriever if self.timeout is None else _TimedEdits(retriever, self.timeout, self.spec.name)

    @property
    def _instance_key(self) -> tuple[str, str]:
        return (self.spec.name, self.corpus.fingerprint)

    @property
    def base_instance(self) -> GuardedRetriever:
        """The retriever over the base corpus (built on first need, so fully cached units build nothing).

        With `reuse` on a reusing cache, the instance an earlier unit of the batch parked is taken instead of a
        build, with the calls made on it as this executor's first steps: a violation that needs them replays them.
        """
        if self._base is None:
            if not self.has_factory:
                self._base = self._guard(self.target, self.corpus)
                return self._base
            parked = self.cache.take(self._instance_key) if self.reuse else None
            if parked is not None:
                self._base = parked.guard
                self.steps[:0] = parked.steps
            else:
                self._base = self._build(self.corpus)
                self.cache.note_build()
            self._built_at = self.cache.builds
            self.capabilities = describe_capabilities(self.target, built=self._base.retriever)
            self.cache.learned(self._instance_key, self.capabilities)
        return self._base

    def learn_capabilities(self) -> None:
        """Refine `capabilities` by what the built instance declares (known from an earlier build, else built)."""
        if not self.has_factory or self._base is not None:
            return
        known = self.cache.capabilities(self._instance_key)
        if known is None:
            self.base_instance  # noqa: B018 - built for its capabilities
        else:
            self.capabilities = known

    def close(self) -> None:
        """Close the base instance if this executor built it (a retriever handed in is the caller's to close).

        With `reuse` on a reusing cache, an instance is parked for the next unit instead when it is in the state a
        fresh build plus its recorded calls gives: no edit was applied to it (undoing one restores a correct
        retriever, not necessarily a buggy one), no call on it failed or timed out, and no other instance was
        built since it was (state shared between instances: a newer one may change it). Instances with `close()`
        are always closed here, so that closing stays part of the unit that built them.
        """
        base, self._base = self._base, None
        if base is None or not self.has_factory:
            return
        reusable = self.reuse and not self._touched and self.cache.builds == self._built_at
        if reusable and not callable(getattr(base.retriever, "close", None)):
            self.cache.park(self._instance_key, _Parked(base, tuple(self.steps), self.cache.builds))
            return
        self._close(base.retriever)

    @property
    def supports_delta(self) -> bool:
        """Whether corpus edits can be applied as add/remove deltas on the base instance.

        Only on an index the runner built from the factory: a retriever object handed in is never mutated.
        """
        return self.has_factory and bool(self.capabilities.supports_delta)

    @property
    def asked(self) -> int:
        """Calls this executor asked for, whether the retriever or the call cache answered them."""
        return self.calls + self.served

    def corpus_edit_reason(self) -> str | None:
        """None when this retriever can be run on an edited corpus, else why not."""
        return None if self.has_factory else _BLACK_BOX

    # ------------------------------------------------------------------------------------------ calls

    def _cached(self, key: tuple[Any, ...], call: Callable[[], Ranking]) -> Ranking:
        found, served = self.cache.fetch(key, call)
        self.served += served
        if isinstance(found, BaseException):
            raise found
        return found

    def _slot(self) -> Any:
        pool = self.cache.pool
        return nullcontext() if pool is None else pool.slot()

    def _call(self, guard: GuardedRetriever, query: str, params: Params, corpus: Corpus) -> Ranking:
        before = guard.calls
        try:
            with self._slot():
                return guard.retrieve(query, params, corpus=corpus)
        finally:
            self.calls += guard.calls - before

    @contextmanager
    def _edited(self, retriever: Any, step: Step) -> Iterator[None]:
        """`step`'s edit applied to the base instance, undone on the way out (even when the call failed)."""
        name = self.spec.name
        retriever = self._bounded(retriever)
        if step.add or step.remove:
            with applied_delta(retriever, add=step.add, remove=step.remove, corpus=self.corpus):
                yield
        elif step.update:
            originals = [self.corpus[c.id] for c in step.update]
            with retriever_errors(f"retriever {name}.update"):
                retriever.update(list(step.update))
            try:
                yield
            finally:
                with retriever_errors(f"retriever {name}.update (undoing an update)"):
                    retriever.update(originals)
        elif step.upsert:
            with _added_again(retriever, step.upsert, [self.corpus[c.id] for c in step.upsert], name):
                yield
        elif step.index is not None:
            with retriever_errors(f"retriever {name}.index"):
                retriever.index(step.index)
            try:
                yield
            finally:
                with retriever_errors(f"retriever {name}.index (re-indexing the base corpus)"):
                    retriever.index(self.corpus)
        else:
            yield

    def _on_instance(self, step: Step, known: Corpus) -> Ranking:
        """Make `step` on the base instance (its edit applied, then undone) and record it."""
        guard = self.base_instance
        self._source = len(self.steps)
        self.steps.append(step)
        if step.add or step.remove or step.update or step.upsert or step.index is not None:
            self._touched = True
        try:
            with self._edited(guard.retriever, step):
                return self._call(guard, step.query, step.params, known)
        except BaseException:
            self._touched = True  # a failed or timed-out call may leave the instance in any state
            raise

    def _recorded(self, key: tuple[Any, ...], step: Step, known: Corpus) -> Ranking:
        if self._touched and key not in self.cache:
            # Made now, the answer comes from an instance that edits were applied to and undone: it is kept for
            # this executor alone. A retriever whose undo is broken answers otherwise than an unedited instance,
            # and another unit served this answer would fail with a violation its own calls cannot rebuild.
            key = (*key, ("after edits", self._lineage))
        self._source = self._step_of.get(key)

        def call() -> Ranking:
            # Taking a parked instance puts its history first: number this call after it, not before.
            self.base_instance  # noqa: B018
            self._step_of[key] = len(self.steps)
            return self._on_instance(step, known)

        return self._cached(key, call)

    def _own_outcome(self, job: _Job) -> tuple[Ranking | Exception, int]:
        """Build an instance over the job's corpus, make its call and close it: (the ranking or error, calls made).

        Reads nothing the executor changes, so it may run in a pool thread while the plan goes on.
        """
        built: GuardedRetriever | None = None
        try:
            built = self._build(job.corpus if job.corpus is not None else self.corpus, job.factory)
            try:
                return built.retrieve(job.query, job.params, corpus=job.known), built.calls
            finally:
                self._close(built.retriever)
        except Exception as error:
            return error, 0 if built is None else built.calls

    def _own(self, job: _Job) -> Ranking:
        """The call of `job` on an instance built for it alone (cached): started ahead in the pool, or made here."""
        self._source = None
        key = job.key
        assert key is not None

        def call() -> Ranking:
            # Counted where the plan reaches the call, as a serial run builds it: a call started ahead and dropped
            # is not, so whether a base instance is handed on is the same in every mode.
            self.cache.note_build()
            future = self.cache.claim(key)
            if future is not None:
                found, calls = future.result()
            else:
                with self._slot():
                    found, calls = self._own_outcome(job)
            self.calls += calls
            if isinstance(found, BaseException):
                raise found
            return found  # type: ignore[no-any-return]

        return self._cached(key, call)

    def observe_base(self, world: World) -> Ranking:
        """The base ranking of `world` (whose corpus is the executor's corpus), from the cache when possible."""
        key = self._key(("base", self.corpus.fingerprint), world.case.query, world.params)
        return self._recorded(key, Step(world.case.query, world.params), self.corpus)

    def _unchanged(self, corpus: Corpus) -> bool:
        return corpus == self.corpus  # lengths first: an edited corpus is not built to be compared

    def _known(self, corpus: Corpus, added: Sequence[Chunk]) -> Corpus:
        """The ids a response over `corpus` may name without being invalid: the base corpus plus what was added.

        A removed id is deliberately *known*: returning it is a relation failure ("removed id never returned")
        with a shrunk, replayable example, not a malformed response.
        """
        if not added:
            return self.corpus
        if len(corpus) == len(self.corpus) + len(added):
            return corpus  # nothing was removed, so `corpus` already holds exactly base + added
        return self.corpus.with_chunks(added)

    def _edit_step(self, call: Call, edit: Edit) -> tuple[Step, Corpus] | str:
        """The step making `call` on the base instance through `edit`, with the ids it may name; or why not."""
        world = call.world
        query, params, corpus = world.case.query, world.params, world.corpus
        if edit is Edit.DELTA:
            delta = None if _is_reordering(self.corpus, corpus) else _as_delta(self.corpus, corpus)
            if not self.supports_delta:
                return _NO_DELTA
            if delta is None:
                return _NOT_A_DELTA
            return Step(query, params, delta[0], delta[1]), self._known(corpus, delta[0])
        if edit is Edit.UPDATE or edit is Edit.ADD:
            if edit is Edit.ADD and not self.supports_delta:
                return _NO_DELTA
            if edit is Edit.UPDATE and not (self.has_factory and self.capabilities.supports_update):
                return _NO_UPDATE
            changed = _updated(self.corpus, corpus)
            if changed is None:
                return _NOT_AN_UPDATE
            return (Step(query, params, upsert=changed) if edit is Edit.ADD else Step(query, params, update=changed)), corpus
        if not (self.has_factory and self.capabilities.supports_index):
            return _NO_INDEX
        added = [c for c in corpus if c.id not in self.corpus]
        return Step(query, params, index=corpus), self._known(corpus, added)

    def _prepare_base(self, call: Call) -> _Job | str:
        """A call on the base instance: as it is, through the call's edit, or (edit unset) a delta when it takes
        one, else a fresh index over the call's corpus. Cached."""
        world = call.world
        query, params, corpus = world.case.query, world.params, world.corpus
        if self._unchanged(corpus):
            key = self._key(("base", self.corpus.fingerprint), query, params)
            return _Job(key, query, params, self.corpus, step=Step(query, params))
        if call.edit is not None:
            made = self._edit_step(call, call.edit)
            if isinstance(made, str):
                return made
            step, known = made
            state = (
                "edited", call.edit.value, self.corpus.fingerprint, step.add, step.remove, step.update, step.upsert,
                _fingerprint(step.index),
            )
            return _Job(self._key(state, query, params), query, params, known, step=step)
        reordering = _is_reordering(self.corpus, corpus)
        delta = None if reordering else _as_delta(self.corpus, corpus)
        state = _corpus_state(self.corpus, corpus, delta, reordering)
        if delta is not None and self.supports_delta:
            add, remove = delta
            key = self._key(("applied",) + state, query, params)
            return _Job(key, query, params, self._known(corpus, add), step=Step(query, params, add, remove))
        if not self.has_factory:
            return _BLACK_BOX
        known = self._fresh_known(corpus, delta, reordering)
        return _Job(self._key(("built",) + state, query, params), query, params, known, corpus=corpus)

    def _fresh_known(self, corpus: Corpus, delta: Any, reordering: bool) -> Corpus:
        if reordering:
            return self.corpus
        added = delta[0] if delta is not None else [corpus[i] for i in corpus_diff(self.corpus, corpus)[0]]
        return self._known(corpus, added)

    def _prepare(self, call: Call) -> _Job | str:
        """Which instance answers `call`, under which cache key, with which edit; or why it cannot be made.

        Makes no call and changes nothing, so a plan's calls can be prepared before any of them is made.
        """
        world = call.world
        query, params, corpus = world.case.query, world.params, world.corpus
        if call.instance is Instance.BASE:
            return self._prepare_base(call)
        if call.instance is Instance.SAME:
            # Never cached: the instance's current state (after earlier undone edits, which may reorder ties)
            # is what the plan compares against.
            if self._unchanged(corpus):
                return _Job(None, query, params, self.corpus, step=Step(query, params))
            made = self._edit_step(call, call.edit or Edit.DELTA)
            if isinstance(made, str):
                return made
            return _Job(None, query, params, made[1], step=made[0])
        if not self.has_factory:
            return _BLACK_BOX
        reordering = _is_reordering(self.corpus, corpus)
        delta = None if reordering else _as_delta(self.corpus, corpus)
        state = _corpus_state(self.corpus, corpus, delta, reordering)
        known = self._fresh_known(corpus, delta, reordering) if not self._unchanged(corpus) else self.corpus
        if call.instance is Instance.FRESH:
            return _Job(self._key(("built",) + state, query, params), query, params, known, corpus=corpus)
        twin = getattr(self.target, "ragmorph_twin", None)
        if not callable(twin):
            return _NO_TWIN
        return _Job(self._key(("twin",) + state, query, params), query, params, known, corpus=corpus, factory=twin)

    def _make(self, job: _Job) -> Ranking:
        """Make the call `job` prepared (InvalidResponse and retriever errors propagate)."""
        if job.step is None:
            return self._own(job)
        if job.key is None:
            return self._on_instance(job.step, job.known)
        return self._recorded(job.key, job.step, job.known)

    def _answer(self, call: Call) -> Ranking | str:
        """The ranking answering `call` (InvalidResponse and retriever errors propagate), or why it cannot be made."""
        job = self._prepare(call)
        if isinstance(job, str):
            self._source = None
            return job
        return self._make(job)

    def _ahead(self, plan: Plan) -> tuple[list[_Job | str | None], list[tuple[Any, ...]]]:
        """The plan's calls prepared, and the keys of the calls on instances of their own started ahead in the pool.

        Only calls answered by an instance built for them alone (FRESH, TWIN, a fresh index of an edited corpus)
        start ahead: nothing else touches that instance, so the order of calls on the base instance (the state
        under test) stays the serial one. They start only when the plan has another call to overlap them with.
        What a call started ahead returns is used (kept, counted) only when the plan reaches it, as a serial run
        would; after a stop (a call that cannot be made, an invalid response, a retriever error) it is dropped.
        """
        pool = self.cache.pool
        if pool is None or len(plan.calls) < 2:
            return [], []
        jobs: list[_Job | str | None] = []
        for call in plan.calls:
            job = None if call.instance is Instance.DERIVED else self._prepare(call)
            jobs.append(job)
            if isinstance(job, str):
                break
        made = [j for j in jobs if isinstance(j, _Job) and (j.key is None or j.key not in self.cache)]
        own = {j.key: j for j in made if j.step is None}
        if not own or len(made) < 2:
            return jobs, []
        started = []
        for key, job in own.items():
            if self.cache.start(key, functools.partial(pool.submit, functools.partial(self._own_outcome, job))):  # type: ignore[arg-type]
                started.append(key)
        return jobs, started  # type: ignore[return-value]

    def run(self, plan: Plan) -> Probe | str:
        """Make the calls of `plan`; the base and follow-up observations, or why the plan cannot run.

        The calls take effect in plan order; with a call pool (`--concurrency`), calls on instances of their own
        are made at once with the others (see `_ahead`), which changes no answer, count or recorded step.
        A response that breaks the retriever contract becomes an observation with `rule` set and ends the plan
        (see `Plan`); exceptions and timeouts of the retriever propagate as RagmorphError.
        """
        jobs, started = self._ahead(plan)
        built = self._base is not None
        try:
            return self._run(plan, jobs, built)
        finally:
            # Calls started ahead that the plan did not reach: dropped if not started yet, else they finish (and
            # close their instance) before the plan returns.
            dropped = [f for f in map(self.cache.release, started) if f is not None]
            for future in dropped:
                future.cancel()
            wait_for(dropped)

    def _continues(self, tail: _Tail | None, job: _Job) -> bool:
        """Whether `job` repeats the call the previous plan ended with, on the same instance with nothing since.

        Then the instance already answered this very call in this very state: the answer it gave stands for this
        call too, and the plan goes on from that step (its recorded number is the observation's source, so replay
        and shrinking make it again). Any call on the instance or build since breaks the chain.
        """
        return (
            tail is not None
            and job.key is None
            and _plain(job.step)
            and job.step == tail.step
            and len(self.steps) == tail.steps
            and self.cache.builds == tail.builds
            and self._base is not None
        )

    def _run(self, plan: Plan, jobs: Sequence[_Job | str | None], built: bool) -> Probe | str:
        observed: dict[Role, Observation] = {}
        sources: dict[Role, int | None] = {}
        tail, self._tail = self._tail, None
        job: _Job | str | None = None
        answer: Ranking | None = None
        for number, call in enumerate(plan.calls):
            if call.instance is Instance.DERIVED:
                observed[Role.FOLLOW] = observation(call.world, call.derive(observed[Role.BASE].ranking))  # type: ignore[misc]
                job = None
                continue
            # Prepared ahead unless building the base instance since then refined its capabilities.
            job = jobs[number] if number < len(jobs) and (self._base is not None) == built else self._prepare(call)
            if isinstance(job, str):
                return job
            try:
                if number == 0 and self._continues(tail, job):  # type: ignore[arg-type]
                    assert tail is not None
                    answer, self._source = tail.ranking, tail.source
                    self.served += 1
                else:
                    answer = self._make(job)  # type: ignore[arg-type]
            except InvalidResponse as error:
                role = Role.BASE if Role.BASE not in observed else Role.FOLLOW
                observed[role], sources[role] = invalid_observation(call.world, error), self._source
                break
            if call.role is not None:
                observed[call.role], sources[call.role] = observation(call.world, answer), self._source
        else:
            if isinstance(job, _Job) and job.key is None and _plain(job.step) and self._source is not None:
                self._tail = _Tail(job.step, answer, self._source, len(self.steps), self.cache.builds)  # type: ignore[arg-type]
        base = observed.get(Role.BASE) or observation(plan.base, Ranking())
        follow = observed.get(Role.FOLLOW) or observation(plan.follow, Ranking())
        return _declared_probe(base, follow, (sources.get(Role.BASE), sources.get(Role.FOLLOW)), self.capabilities)

    def run_steps(self, steps: Sequence[tuple[int, Step]]) -> dict[int, Ranking | InvalidResponse | None]:
        """Make `steps` (numbered) on this executor's base instance, deltas restricted to its corpus.

        Returns each step's ranking, or the InvalidResponse it raised, or None when the retriever failed.
        """
        results: dict[int, Ranking | InvalidResponse | None] = {}
        for number, step in steps:
            remove = tuple(i for i in step.remove if i in self.corpus)
            update = tuple(c for c in step.update if c.id in self.corpus)
            upsert = tuple(c for c in step.upsert if c.id in self.corpus)
            try:
                known = self.corpus.with_chunks(step.add) if step.add else self.corpus
                if step.index is not None:
                    known = self._known(step.index, [c for c in step.index if c.id not in self.corpus])
                results[number] = self._on_instance(attrs.evolve(step, remove=remove, update=update, upsert=upsert), known)
            except InvalidResponse as error:
                results[number] = error
            except RagmorphError:
                results[number] = None
        return results


def run_after(
    spec: RetrieverSpec,
    plan: Plan,
    steps: Sequence[tuple[int, Step]],
    sources: tuple[int | None, int | None],
    *,
    timeout: float | None = None,
    resolved: Any = None,
    made: list[Executor] | None = None,
) -> Probe | str:
    """Run `plan` the way it was first observed, after the calls that came before it.

    A fresh instance over the plan's base corpus makes `steps` (numbered as in the executor that recorded them);
    the base and follow-up observations are the results of the steps numbered `sources`, or, where a source is
    None (the run's call cache or a fresh index answered), the plan's own call made by a second fresh executor.
    A string says why no probe could be formed (a step the observation needs failed).
    """
    corpus = plan.base.corpus
    replayed = Executor(spec, corpus, cache=CallCache(), timeout=timeout, resolved=resolved)
    other = Executor(spec, corpus, cache=CallCache(), timeout=timeout, resolved=resolved)
    if made is not None:
        made.extend((replayed, other))
    results = replayed.run_steps(steps)
    params_of = {number: step.params for number, step in steps}
    calls = {call.role: call for call in plan.calls if call.role is not None}
    observed: dict[Role, Observation] = {}
    for role, source in zip((Role.BASE, Role.FOLLOW), sources):
        call = calls[role]
        if call.instance is Instance.DERIVED:
            observed[role] = observation(call.world, call.derive(observed[Role.BASE].ranking))  # type: ignore[misc]
        elif source is not None:
            found = results.get(source)
            world = attrs.evolve(call.world, params=params_of.get(source, call.world.params))
            if isinstance(found, Ranking):
                observed[role] = observation(world, found)
            elif isinstance(found, InvalidResponse):
                observed[role] = invalid_observation(world, found)
            else:
                return f"step {source} of the recorded calls failed when made again"
        else:
            try:
                answer = other._answer(call)
            except InvalidResponse as error:
                observed[role] = invalid_observation(call.world, error)
            else:
                if isinstance(answer, str):
                    return answer
                observed[role] = observation(call.world, answer)
        if observed[role].rule is not None:
            break
    base = observed[Role.BASE]
    follow = observed.get(Role.FOLLOW) or observation(plan.follow, Ranking())
    return _declared_probe(base, follow, sources, replayed.capabilities)


class _TimedEdits:
    """A retriever whose edit methods (add, remove, update, index, checkpoint, rollback) give up after `timeout`.

    Everything else is the retriever's own attribute, so capability checks and the edit helpers see the same
    retriever; an edit that outlives the timeout is a RetrieverTimeout naming the method.
    """

    _TIMED = frozenset({"add", "remove", "update", "index", "checkpoint", "rollback"})

    def __init__(self, retriever: Any, timeout: float, name: str) -> None:
        self._retriever = retriever
        self._timeout = timeout
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._retriever, attribute)
        if attribute not in self._TIMED or not callable(value):
            return value

        def timed(*args: Any, **kwargs: Any) -> Any:
            return bounded_call(
                lambda: value(*args, **kwargs), self._timeout, f"retriever {self._name}.{attribute}() to return"
            )

        return timed

    def __repr__(self) -> str:
        return repr(self._retriever)


@contextmanager
def _added_again(retriever: Any, chunks: Sequence[Chunk], originals: Sequence[Chunk], name: str) -> Iterator[None]:
    """`retriever.add(chunks)` of ids it already holds, undone on the way out.

    Libraries differ here (an upsert, an error, an add ignored with a warning) and each is correct, so an add
    that raises is an outcome: the instance is asked as it is. Undone by `rollback` when the retriever has
    checkpoints, else by `update(originals)`, else by adding the originals again (the same upsert backwards).
    """
    revertible = callable(getattr(retriever, "checkpoint", None)) and callable(getattr(retriever, "rollback", None))
    token = retriever.checkpoint() if revertible else None
    try:
        with retriever_errors(f"retriever {name}.add (of ids it already holds)"):
            retriever.add(list(chunks))
        accepted = True
    except RagmorphError:
        accepted = False  # rejected: nothing to undo unless a checkpoint says otherwise
    try:
        yield
    finally:
        if revertible:
            with retriever_errors(f"retriever {name}.rollback"):
                retriever.rollback(token)
        elif accepted:
            undo = retriever.update if callable(getattr(retriever, "update", None)) else retriever.add
            with retriever_errors(f"retriever {name} (undoing an add of ids it already held)"):
                undo(list(originals))


def _fingerprint(corpus: Corpus | None) -> str | None:
    return None if corpus is None else corpus.fingerprint


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


def _is_reordering(base: Corpus, after: Corpus) -> bool:
    """True when `after` holds the very chunk objects of `base` in another order (compared at C speed)."""
    if len(after) != len(base) or not base.chunks or derivation(base, after) is not None:
        return False
    # A corpus's chunks have distinct ids, so as many chunks all held by `base` are all of them: a subset test
    # (no set of `after`'s identities built, about half the time for 100k chunks in a new order). A corpus built
    # by `base.reordered(...)` is known as one without reading its chunks.
    return after.is_permutation_of(base) or _identities(base).issuperset(map(id, after.chunks))


def _corpus_state(base: Corpus, after: Corpus, delta: Any, reordering: bool) -> tuple[Any, ...]:
    """A cheap identity of `after` relative to `base` for cache keys (no full fingerprint of big corpora)."""
    if delta is not None:
        return ("delta", base.fingerprint, delta[0], delta[1])
    if reordering:
        return ("order", base.fingerprint, tuple(map(_ID, after.chunks)))
    patched = _patched(base, after)
    if patched is not None:
        return ("patched", base.fingerprint, patched)
    return ("corpus", after.fingerprint)


# A corpus differing from the base in at most this many positions is identified by those positions alone.
_PATCHES = 64


def _patched(base: Corpus, after: Corpus) -> tuple[tuple[int, str], ...] | None:
    """(position, fingerprint of the chunk there) wherever `after` holds other content than `base`, when both hold
    as many chunks and at most _PATCHES positions differ; else None.

    An update in place (same ids, some texts changed) of a 100k-chunk corpus then costs a C-speed identity scan
    instead of a full fingerprint. Canonical like the fingerprint: positions holding the very same chunk object
    are equal, and the others are compared by content, so equal corpora get equal identities.
    """
    if len(after) != len(base):
        return None
    moved = itertools.compress(itertools.count(), map(operator.is_not, base.chunks, after.chunks))
    patches = []
    for position in moved:
        mark = Corpus((after.chunks[position],)).fingerprint
        if mark != Corpus((base.chunks[position],)).fingerprint:
            patches.append((position, mark))
            if len(patches) > _PATCHES:
                return None
    return tuple(patches)


_ID = operator.attrgetter("id")
_IDENTITIES: list[tuple[Corpus, frozenset[int]]] = []


def _identities(corpus: Corpus) -> frozenset[int]:
    """The identities of `corpus`'s chunk objects (the last corpus asked is remembered: it is the base)."""
    # Read once and replaced whole: batches running in threads (--concurrency) each see a consistent entry.
    entry = _IDENTITIES[0] if _IDENTITIES else None
    if entry is None or entry[0] is not corpus:
        entry = (corpus, frozenset(map(id, corpus.chunks)))
        _IDENTITIES[:] = [entry]
    return entry[1]
