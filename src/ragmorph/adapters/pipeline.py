"""Pipeline stages that wrap any retriever: tenant filtering, freshness, reranking, dedup and context packing.

Each stage is itself a retriever, so stages compose: `ContextPacker(Dedup(TenantFilter(bm25)), 300)`. The same
pipeline can be declared as a list, `Pipeline([BM25Retriever, TenantFilter(), ContextPacker(token_budget=300)])`:
a stage made without its inner retriever is unbound until the pipeline binds it, and the declaration keeps the
stages apart so each prefix of the pipeline can be checked on its own (`ragmorph.runner.attribute_stages`). Stages
that drop hits over-fetch from the inner retriever (k x `overfetch`, growing until k hits survive or the inner
retriever runs out), so dropping never costs a result that a larger fetch would have found. A stage forwards
`add`/`remove`/`checkpoint`/`rollback` to its inner retriever when that has them, and reads chunk metadata and
text from the inner retriever's live `corpus` (or the `corpus` it was given).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError, describe
from ..model import Chunk, Corpus, Filters, Hit
from ._protocol import normalise_hits
from .capabilities import describe_capabilities, display_name, is_retriever, merged_filtered_by

__all__ = ["ContextPacker", "Dedup", "FreshnessFilter", "Pipeline", "Reranker", "TenantFilter", "whitespace_tokens"]

_FORWARDED = frozenset({"add", "remove", "checkpoint", "rollback"})
# A declaration that stays true of a pipeline whatever wraps the stage making it: why a list may end before k (a
# packer inside a Dedup). Who filters is declared through too, kind by kind (`_Stage.ragmorph_filtered_by`).
_DECLARED_THROUGH = frozenset({"ragmorph_cuts_short"})
# Without a corpus to bound it, stop growing a fetch here.
_MAX_FETCH = 1 << 16


def whitespace_tokens(text: str) -> int:
    """The number of whitespace-separated tokens in `text` (ContextPacker's default counter)."""
    return len(text.split())


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"expected a positive integer {name}, got {name}={describe(value)}")
    return value


class _Stage:
    """Base of the stages: holds the inner retriever, forwards delta methods, looks chunks up.

    Made with `inner=None` a stage is unbound (a declaration for `Pipeline`); `bind(inner)` returns a bound copy.
    """

    def __init__(self, inner: Any = None, *, corpus: Corpus | None = None, overfetch: int = 4) -> None:
        if inner is not None and not is_retriever(inner):
            raise UsageError(
                f"expected a retriever to wrap (an object with retrieve), got {describe(inner)}; "
                "call a factory with the corpus first"
            )
        if corpus is not None and not isinstance(corpus, Corpus):
            raise UsageError(f"expected a ragmorph Corpus or None, got corpus={describe(corpus)}")
        self.inner = inner
        self._given_corpus = corpus
        self.overfetch = _positive_int("overfetch", overfetch)
        self._inner_filters = describe_capabilities(inner).supports_filters if inner is not None else False

    def bind(self, inner: Any) -> Any:
        """A copy of this stage wrapping `inner` (the stage's own settings kept)."""
        if not is_retriever(inner):
            raise UsageError(f"expected a retriever for {type(self).__name__} to wrap, got {describe(inner)}")
        bound = copy.copy(self)
        bound.inner = inner
        bound._inner_filters = describe_capabilities(inner).supports_filters
        return bound

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("inner")
        if name in _FORWARDED and inner is not None:
            return getattr(inner, name)
        if name in _DECLARED_THROUGH and inner is not None:
            return getattr(inner, name, None)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # Which filter kinds this stage applies itself (a `ragmorph_filtered_by` value); None: it applies none.
    _filters_itself: Any = None

    @property
    def ragmorph_filtered_by(self) -> Any:
        """Who applies each filter kind through this stage: its own declaration over its inner retriever's (a
        TenantFilter inside a Reranker still filters for the retriever; a FreshnessFilter over a library that
        filters by tenant applies only `current_only` itself)."""
        inner = self.__dict__.get("inner")
        return merged_filtered_by([getattr(inner, "ragmorph_filtered_by", None), self._filters_itself])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({display_name(self.inner) if self.inner is not None else ''})"

    @property
    def corpus(self) -> Corpus | None:
        """The inner retriever's live corpus when it has one (it follows deltas), else the given corpus."""
        live = getattr(self.inner, "corpus", None)
        return live if isinstance(live, Corpus) else self._given_corpus

    def _require_corpus(self) -> Corpus:
        corpus = self.corpus
        if corpus is None:
            raise UsageError(
                f"{type(self).__name__} needs chunk data: pass corpus= or wrap a retriever with a `corpus` attribute"
            )
        return corpus

    def _chunk(self, hit: Hit) -> Chunk | None:
        return self._require_corpus().get(hit.id)

    def _text(self, hit: Hit) -> str:
        if hit.text is not None:
            return hit.text
        chunk = self._chunk(hit)
        if chunk is None:
            raise UsageError(f"{type(self).__name__} found no text for id={hit.id!r}: not in the corpus")
        return chunk.text

    def _inner_call(self, query: str, k: int, filters: Filters | None) -> tuple[Hit, ...]:
        if self.inner is None:
            raise UsageError(f"{type(self).__name__} has no inner retriever: wrap one, or list it in a Pipeline")
        if filters is not None and filters.is_empty:
            filters = None
        if self._inner_filters:
            response = self.inner.retrieve(query, k=k, filters=filters)
        elif filters is None:
            response = self.inner.retrieve(query, k=k)
        else:
            raise UsageError(
                f"{display_name(self.inner)} takes no filters; put a TenantFilter stage around it, got "
                f"filters={filters!r}"
            )
        return normalise_hits(response, query=query)

    def _fetch(
        self,
        query: str,
        k: int,
        filters: Filters | None,
        make_keep: Callable[[], Callable[[Hit], bool]],
    ) -> list[Hit]:
        """The first k inner hits accepted by a fresh `make_keep()` predicate, fetching deeper while too few survive.

        Every deeper fetch re-reads from rank 1, hence a new predicate (stateful ones, like Dedup's, start empty).
        """
        corpus = self.corpus
        ceiling = max(k, len(corpus)) if corpus is not None else _MAX_FETCH
        fetch = min(k * self.overfetch, ceiling)
        while True:
            hits = self._inner_call(query, fetch, filters)
            keep = make_keep()
            kept = [hit for hit in hits if keep(hit)]
            if len(kept) >= k or len(hits) < fetch or fetch >= ceiling:
                return kept[:k]
            fetch = min(fetch * self.overfetch, ceiling)


class TenantFilter(_Stage):
    """Never returns a chunk the call's filters exclude (tenant, current-only, metadata).

    The filters are passed down when the inner retriever takes them, and the hits are post-filtered either way;
    for an inner retriever that ignores filters this over-fetches and filters afterwards, so it may return
    fewer than k hits when the inner candidate list runs out. Ids unknown to the corpus are kept so that
    response validation reports them.
    """

    supports_filters = True
    # ragmorph's own filter stands between the filters and the inner retriever's hits: relations that judge
    # filtering would judge this stage, not the inner retriever, so they report that they do not apply.
    _filters_itself = "ragmorph"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """Inner hits allowed by `filters`, best first."""
        if filters is None or filters.is_empty:
            return list(self._inner_call(query, k, None))
        corpus = self._require_corpus()

        def allowed(hit: Hit) -> bool:
            chunk = corpus.get(hit.id)
            return chunk is None or filters.allows(chunk)

        return self._fetch(query, k, filters, lambda: allowed)

    def _inner_call(self, query: str, k: int, filters: Filters | None) -> tuple[Hit, ...]:
        # This stage's job is to filter, so an inner retriever without filter support is called without them.
        if not self._inner_filters:
            filters = None
        return super()._inner_call(query, k, filters)


class FreshnessFilter(_Stage):
    """Drops a chunk whose `superseded_by` successor is in the corpus (a stale chunk); over-fetches to keep k."""

    # ragmorph's own drop of stale chunks stands between the inner retriever and what the relations judging the
    # current_only filter see (supersede.stale_zero would pass on this stage's code, not the retriever's): they do
    # not apply. The tenant and metadata filters still reach the inner retriever, whose filtering stays judged.
    _filters_itself = {"current_only": "ragmorph"}
    ragmorph_cuts_short = (
        "FreshnessFilter drops every chunk whose successor is in the corpus, so a list shorter than k does not mean "
        "that no other chunk matches the query"
    )

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """Inner hits that are not stale, best first."""
        corpus = self._require_corpus()

        def fresh(hit: Hit) -> bool:
            chunk = corpus.get(hit.id)
            return chunk is None or not corpus.is_stale(chunk)

        return self._fetch(query, k, filters, lambda: fresh)


class Reranker(_Stage):
    """Re-scores the inner top `depth` (default k) hits with `score_fn(query, text)` and keeps the best k.

    The sort is stable, so hits the score function ties keep the inner retriever's order.
    """

    def __init__(
        self,
        inner: Any = None,
        score_fn: Callable[[str, str], float] | None = None,
        *,
        depth: int | None = None,
        corpus: Corpus | None = None,
    ) -> None:
        super().__init__(inner, corpus=corpus)
        if not callable(score_fn):
            raise UsageError(f"expected a callable score_fn(query, text) -> float, got score_fn={describe(score_fn)}")
        self.score_fn = score_fn
        self.depth = None if depth is None else _positive_int("depth", depth)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The best k of the inner top max(k, depth) by the new score."""
        hits = self._inner_call(query, max(k, self.depth or k), filters)
        rescored = [Hit(hit.id, float(self.score_fn(query, self._text(hit))), hit.text) for hit in hits]
        rescored.sort(key=lambda hit: -hit.score)  # type: ignore[operator]
        return rescored[:k]


class Dedup(_Stage):
    """Drops repeated ids and, with `by_text`, chunks whose text equals an earlier hit's; over-fetches to keep k."""

    def __init__(
        self, inner: Any = None, *, by_text: bool = True, corpus: Corpus | None = None, overfetch: int = 2
    ) -> None:
        super().__init__(inner, corpus=corpus, overfetch=overfetch)
        self.by_text = by_text
        if by_text:
            # Which of two equal texts survives depends on which chunks the call's filters admit (a filtered call
            # keeps the shared twin of an excluded chunk that an unfiltered call dropped), so relations comparing
            # filtered with unfiltered lists would judge this stage: they do not apply, as for TenantFilter.
            self._filters_itself = "ragmorph"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """Inner hits with the first occurrence of each id (and text) kept."""
        return self._fetch(query, k, filters, self._first_occurrence)

    def _first_occurrence(self) -> Callable[[Hit], bool]:
        seen_ids: set[str] = set()
        seen_texts: set[str] = set()

        def first(hit: Hit) -> bool:
            if hit.id in seen_ids:
                return False
            seen_ids.add(hit.id)
            if self.by_text:
                text = self._text(hit)
                if text in seen_texts:
                    return False
                seen_texts.add(text)
            return True

        return first


def _word_ends(text: str) -> list[int]:
    """Character offsets just past each whitespace-separated word of `text`: where a cut leaves no half word."""
    ends, inside = [], False
    for position, character in enumerate(text):
        if character.isspace():
            if inside:
                ends.append(position)
            inside = False
        else:
            inside = True
    if inside:
        ends.append(len(text))
    return ends


class ContextPacker(_Stage):
    """Packs the inner top k, best first, into `token_budget` tokens: the final context a generator would see.

    Hits that fit are kept whole; the first hit that overflows is truncated to the words that still fit (its
    `Hit.text` becomes the packed text and `Hit.kept` the character range `[0, end)` of the text it kept), and
    packing stops there. A hit of which not even one word fits is dropped. `truncate=False` keeps the longest
    prefix of whole hits instead (the overflowing hit is dropped, nothing is cut). Offsets in `kept` refer to
    the text packed: the hit's own text when the inner retriever returned one, else the chunk's text.
    """

    # The budget, not a lack of matching chunks, may end the list before k: relations must not read a short list
    # as exhausted (a filtered call spends the budget on other chunks than the unfiltered one).
    ragmorph_cuts_short = "a ContextPacker's token budget can end the list before k while other chunks still match"

    def __init__(
        self,
        inner: Any = None,
        token_budget: int | None = None,
        *,
        count_tokens: Callable[[str], int] = whitespace_tokens,
        truncate: bool = True,
        corpus: Corpus | None = None,
    ) -> None:
        super().__init__(inner, corpus=corpus)
        if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0:
            raise UsageError(f"expected a token_budget >= 0, got token_budget={describe(token_budget)}")
        if not isinstance(truncate, bool):
            raise UsageError(f"expected truncate=True or False, got truncate={describe(truncate)}")
        self.token_budget = token_budget
        self.count_tokens = count_tokens
        self.truncate = truncate

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The inner top k packed into the budget: whole hits, then the overflowing one cut (or dropped)."""
        packed: list[Hit] = []
        left = self.token_budget
        for hit in self._inner_call(query, k, filters):
            text = self._text(hit)
            tokens = self.count_tokens(text)
            if tokens <= left:
                packed.append(hit)
                left -= tokens
                continue
            cut = self._cut(text, left) if self.truncate else 0
            if cut:
                packed.append(Hit(hit.id, hit.score, text[:cut], kept=(0, cut)))
            break
        return packed

    def _cut(self, text: str, tokens: int) -> int:
        """The longest prefix of `text`, ending at a word end, that counts at most `tokens` (0: not one word)."""
        ends = _word_ends(text)
        low, high = 0, len(ends)  # ends[:low] fit; ends[high:] do not
        while low < high:
            middle = (low + high) // 2
            if self.count_tokens(text[: ends[middle]]) <= tokens:
                low = middle + 1
            else:
                high = middle
        return ends[low - 1] if low else 0


class Pipeline:
    """A retriever declared as stages: `Pipeline([retriever_or_factory, TenantFilter(), Reranker(score_fn=f),
    ContextPacker(token_budget=512)])`.

    The first item is a retriever (a black box over its fixed corpus) or a factory `Corpus -> retriever`; the
    others are unbound stages, applied in order. Calling the pipeline with a corpus builds a fresh, bound
    pipeline over it (a factory, so corpus perturbations apply); `prefix(n)` is the pipeline of its first n
    stages after the retriever, what stage-by-stage checking runs.
    """

    def __init__(self, stages: Sequence[Any]) -> None:
        if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence) or not stages:
            raise UsageError(f"expected a non-empty list [retriever, stage, ...], got stages={describe(stages)}")
        first, *rest = stages
        if not (is_retriever(first) or callable(first)):
            raise UsageError(f"expected a retriever or a factory first in the pipeline, got {describe(first)}")
        for number, stage in enumerate(rest, start=1):
            if not isinstance(stage, _Stage) or stage.inner is not None:
                raise UsageError(
                    f"expected an unbound stage such as TenantFilter() at position {number}, got {describe(stage)}"
                )
        self.stages: tuple[Any, ...] = (first, *rest)
        # What the built pipeline will declare through its stages, known before any build: who applies each
        # filter kind (the outermost stage declaring it, as when built), why a list may end before k.
        filtered_by = merged_filtered_by([getattr(stage, "ragmorph_filtered_by", None) for stage in self.stages])
        if filtered_by is not None:
            self.ragmorph_filtered_by = filtered_by
        for name in _DECLARED_THROUGH:
            declared = [value for stage in reversed(self.stages) if (value := getattr(stage, name, None)) is not None]
            if declared:
                setattr(self, name, declared[0])

    def __repr__(self) -> str:
        return f"Pipeline([{', '.join(self.names)}])"

    @property
    def names(self) -> tuple[str, ...]:
        """The retriever's name, then each stage's class name, in order."""
        first = self.stages[0]
        head = getattr(first, "__name__", None) or display_name(first)
        return (head, *(type(stage).__name__ for stage in self.stages[1:]))

    def prefix(self, stages: int) -> Pipeline:
        """The pipeline of the retriever and its first `stages` stages (0: the retriever alone)."""
        if isinstance(stages, bool) or not isinstance(stages, int) or not 0 <= stages < len(self.stages):
            raise UsageError(f"expected 0 <= stages < {len(self.stages)}, got stages={describe(stages)}")
        return Pipeline(self.stages[: stages + 1])

    def __call__(self, corpus: Corpus) -> Any:
        """A fresh pipeline over `corpus`: the retriever (built by the factory), wrapped by each stage in order."""
        first = self.stages[0]
        built = first if is_retriever(first) else first(corpus)
        for stage in self.stages[1:]:
            built = stage.bind(built)
        return built
