"""LlamaIndex integration: any `BaseRetriever` as a ragmorph retriever, a `QueryFusionRetriever` over legs each
given k, depth and filters, and a factory for its BM25 retriever.

Needs the extra ``ragmorph[llamaindex]`` (llama-index-core; llama-index-retrievers-bm25 and bm25s for the
factory). LlamaIndex is imported only when an adapter is built.

How the contract maps onto LlamaIndex:

- k: each call runs on a shallow copy of the retriever with ``similarity_top_k`` (`k_attr`) set, so the
  caller's retriever is never modified; with ``k_attr=None`` the results are cut to k.
- ids: each node's ``metadata[id_key]`` (default ``"id"``), else its ``node_id``; scores: `NodeWithScore.score`.
- filters: LlamaIndex's own ``MetadataFilters``, set on the per-call copy at `filter_attr` (``_filters``, where
  `VectorIndexRetriever` keeps the filters of ``index.as_retriever(filters=...)``), so the vector store
  filters. `filter_mapper` turns ragmorph's `Filters` into them; the default, `metadata_filters`, reads the
  metadata encoding of `ragmorph.adapters._integration`. A retriever without that attribute takes no filters,
  unless ``post_filter=True`` asks ragmorph to over-fetch and filter (declared: filter relations then do
  not apply).

`llamaindex_bm25_factory` builds llama-index-retrievers-bm25 over the corpus:

- the indexed text is the chunk text only: LlamaIndex prepends ``key: value`` metadata lines to the text it
  indexes (``MetadataMode.EMBED``), so every metadata key is listed in the node's
  ``excluded_embed_metadata_keys`` (and ``excluded_llm_metadata_keys``);
- filters are fixed when the library retriever is built, so one is built per distinct `Filters` (cached) with
  native ``MetadataFilters``, as an application would. The library's filter only zeroes the scores of excluded
  nodes (a bm25s weight mask): when fewer than k nodes match the query, excluded nodes (another tenant's
  chunks) are still returned with score 0. The adapter passes that through, so ragmorph's tenancy relations
  report it; ``post_filter=True`` lets ragmorph filter instead.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import UsageError, describe
from ..model import Corpus, Filters, Hit
from ._integration import (
    CURRENT,
    SHARED,
    USER_METADATA_PREFIX,
    FilterMapper,
    check_id_key,
    chunk_metadata,
    encode_value,
    fetch_identified,
    filtered_by,
    fusion_filtering,
    no_filters_error,
    positive_depth,
    require_chunk_id,
    with_setting,
)

__all__ = [
    "LlamaIndexBM25Retriever",
    "LlamaIndexFusionRetriever",
    "LlamaIndexRetriever",
    "llamaindex_bm25_factory",
    "metadata_filters",
]

# Distinct filter sets seen by one retriever are few (a tenant or two, current-only); this bounds the worst case.
_MAX_CACHED_BUILDS = 64


def _missing(what: str, error: ImportError) -> UsageError:
    return UsageError(
        f"expected {what} to be installed, got ImportError ({error}); "
        "install it with `pip install 'ragmorph[llamaindex]'`"
    )


class LlamaIndexRetriever:
    """Wraps a LlamaIndex `BaseRetriever` (`retrieve` -> `NodeWithScore` list) as a ragmorph retriever.

    Filters go to the library as `filter_mapper(filters)` at `filter_attr` of a per-call copy, or are applied by
    ragmorph with ``post_filter=True``; a retriever without `filter_attr` otherwise takes no filters.
    """

    def __init__(
        self,
        retriever: Any,
        *,
        id_key: str = "id",
        k_attr: str | None = "similarity_top_k",
        corpus: Corpus | None = None,
        max_k: int | None = None,
        filter_mapper: FilterMapper | None = None,
        filter_attr: str | None = "_filters",
        post_filter: bool = False,
    ) -> None:
        try:
            from llama_index.core.base.base_retriever import BaseRetriever
        except ImportError as error:
            raise _missing("llama-index-core", error) from error
        if not isinstance(retriever, BaseRetriever):
            raise UsageError(
                f"expected a llama_index.core BaseRetriever, got retriever={describe(retriever)}; "
                "wrap other callables with ragmorph.adapters.FunctionRetriever"
            )
        self.retriever = retriever
        self.id_key = check_id_key(id_key)
        self.k_attr = k_attr if k_attr and hasattr(retriever, k_attr.partition(".")[0]) else None
        self.corpus = corpus
        # bm25s refuses a top-k larger than its document count, so requests are clamped to it.
        self.max_k = max_k
        has_attr = bool(filter_attr) and hasattr(retriever, str(filter_attr).partition(".")[0])
        if filter_mapper is not None and (post_filter or not has_attr):
            raise UsageError(
                f"expected filter_mapper with a filter_attr the retriever has and post_filter=False, got "
                f"filter_attr={filter_attr!r} on {type(retriever).__name__}, post_filter={post_filter!r}"
            )
        mode = filtered_by(post_filter, native=has_attr)
        self.filter_attr = filter_attr if mode == "retriever" else None
        self.filter_mapper = filter_mapper or metadata_filters
        self.supports_filters = mode is not None
        self.ragmorph_filtered_by = mode or "retriever"

    def __repr__(self) -> str:
        return f"LlamaIndexRetriever({type(self.retriever).__name__}, id_key={self.id_key!r}, k_attr={self.k_attr!r})"

    def _scored_nodes(self, query: str, n: int, native: Any = None) -> list[Any]:
        if self.max_k is not None:
            n = min(n, self.max_k)
        retriever = self.retriever if self.k_attr is None else with_setting(self.retriever, self.k_attr, n)
        if native is not None and self.filter_attr is not None:
            retriever = with_setting(retriever, self.filter_attr, native)
        found = list(retriever.retrieve(query))
        return found if self.k_attr is not None else found[:n]

    def _identified(self, query: str, n: int, native: Any = None) -> list[tuple[str, Mapping[str, Any], Any]]:
        found = []
        for scored in self._scored_nodes(query, n, native):
            node = getattr(scored, "node", None)
            metadata = getattr(node, "metadata", None) or {}
            chunk_id = require_chunk_id(
                metadata, getattr(node, "node_id", None), id_key=self.id_key, what="LlamaIndex node", query=query,
                item=scored,
            )
            found.append((chunk_id, metadata, scored))
        return found

    def scored_nodes(self, query: str, *, n: int, filters: Filters | None = None) -> list[tuple[str, Any]]:
        """The retriever's best n `(chunk id, NodeWithScore)` pairs for `query`, filtered by the library (or by
        ragmorph if asked): what `retrieve` turns into hits, and what a fusion of several retrievers ranks."""
        if filters is None or filters.is_empty:
            found = self._identified(query, n)
        elif self.filter_attr is not None:
            found = self._identified(query, n, self.filter_mapper(filters))
        elif self.ragmorph_filtered_by == "ragmorph":
            found = fetch_identified(lambda m: self._identified(query, m), k=n, filters=filters, corpus=self.corpus)
        else:
            raise no_filters_error(repr(self), filters, "pass filter_attr= naming where the retriever keeps filters")
        return [(chunk_id, scored) for chunk_id, _, scored in found]

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The retriever's top k nodes for `query` as hits, filtered by the library (or by ragmorph if asked)."""
        return tuple(
            Hit(chunk_id, None if scored.score is None else float(scored.score), scored.node.get_content())
            for chunk_id, scored in self.scored_nodes(query, n=k, filters=filters)
        )


@functools.cache
def _answered_class() -> type:
    """A LlamaIndex retriever answering with nodes already found: one leg's nodes for one fusion call (the class is
    made once, on first use, so importing this module does not import LlamaIndex)."""
    from llama_index.core.base.base_retriever import BaseRetriever

    class Answered(BaseRetriever):
        def __init__(self, nodes: list[Any]) -> None:
            super().__init__()
            self.nodes = nodes

        def _retrieve(self, query_bundle: Any) -> list[Any]:
            return self.nodes

    return Answered


class LlamaIndexFusionRetriever:
    """LlamaIndex's `QueryFusionRetriever` over legs each asked for their best `depth` nodes under the filters.

    Every call runs the library's own fusion (`mode`: ``reciprocal_rerank``, ``relative_score``,
    ``dist_based_score`` or ``simple``; `weights` as its ``retriever_weights``) with one query (no LLM query
    generation) over the legs' nodes, each leg filtered on its own as a hybrid search with a filter in every leg
    is, and cut to k; the hit score is the fused score the library assigns. Nodes are merged by their hash
    (text and metadata), as LlamaIndex does.
    """

    def __init__(
        self,
        legs: Sequence[LlamaIndexRetriever],
        *,
        mode: str = "reciprocal_rerank",
        weights: Sequence[float] | None = None,
        depth: int = 100,
    ) -> None:
        try:
            from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
        except ImportError as error:
            raise _missing("llama-index-core", error) from error
        legs = list(legs)
        if not legs or not all(isinstance(leg, LlamaIndexRetriever) for leg in legs):
            raise UsageError(f"expected legs to be one or more LlamaIndexRetriever, got legs={describe(legs)}")
        modes = [m.value for m in FUSION_MODES]
        if mode not in modes:
            raise UsageError(f"expected mode in {modes}, got mode={mode!r}")
        if weights is not None and (len(weights) != len(legs) or not all(w >= 0 for w in weights) or not sum(weights)):
            raise UsageError(f"expected {len(legs)} non-negative weights, not all 0, got weights={weights!r}")
        self.legs = legs
        self.mode = FUSION_MODES(mode)
        self.weights = None if weights is None else list(weights)
        self.depth = positive_depth(depth)
        self.supports_filters, self.ragmorph_filtered_by = fusion_filtering(legs)

    def __repr__(self) -> str:
        names = ", ".join(type(leg.retriever).__name__ for leg in self.legs)
        return f"LlamaIndexFusionRetriever([{names}], mode={self.mode.value!r}, depth={self.depth})"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The library's fused top k for `query`, each leg filtered and asked for `depth` nodes."""
        from llama_index.core.llms import MockLLM
        from llama_index.core.retrievers import QueryFusionRetriever

        found = [leg.scored_nodes(query, n=self.depth, filters=filters) for leg in self.legs]
        chunk_ids = {id(scored.node): chunk_id for pairs in found for chunk_id, scored in pairs}
        answered = _answered_class()
        fusion = QueryFusionRetriever(
            [answered([scored for _, scored in pairs]) for pairs in found],
            # Never called: num_queries=1 asks the LLM for no extra queries; it spares resolving Settings.llm.
            llm=MockLLM(),
            mode=self.mode,
            similarity_top_k=k,
            num_queries=1,
            use_async=False,
            retriever_weights=self.weights,
        )
        return tuple(
            Hit(chunk_ids[id(scored.node)], None if scored.score is None else float(scored.score),
                scored.node.get_content())
            for scored in fusion.retrieve(query)
        )


def metadata_filters(filters: Filters) -> Any:
    """The LlamaIndex `MetadataFilters` equivalent of `filters`, over the metadata encoding of `_integration`."""
    from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

    clauses = []
    if filters.tenant is not None:
        clauses.append(MetadataFilter(key="tenant", value=[filters.tenant, SHARED], operator=FilterOperator.IN))
    if filters.current_only:
        clauses.append(MetadataFilter(key="superseded_by", value=CURRENT, operator=FilterOperator.EQ))
    for key, value in filters.metadata.items():
        clauses.append(MetadataFilter(key=USER_METADATA_PREFIX + key, value=encode_value(value)))
    return MetadataFilters(filters=clauses)


class LlamaIndexBM25Retriever:
    """llama-index-retrievers-bm25 over a corpus, rebuilt (and cached) per distinct filter set.

    The library filters (see the module docstring for its leak); with ``post_filter=True`` one unfiltered build
    serves every call and ragmorph filters its hits. A corpus without a single indexable token (empty, or only
    stopwords and one-letter words) cannot be indexed by bm25s; it gets no hits for any query, and neither
    does a filter the library refuses because it admits no node.
    """

    # Declared to the runner: a chunk sharing no (stemmed) word with the query scores exactly 0 in bm25s.
    ragmorph_traits = ("lexical",)

    def __init__(
        self,
        corpus: Corpus,
        *,
        id_key: str = "id",
        language: str = "en",
        skip_stemming: bool = False,
        token_pattern: str = r"(?u)\b\w\w+\b",
        post_filter: bool = False,
    ) -> None:
        try:
            import bm25s
            from llama_index.core.schema import TextNode
            from llama_index.retrievers.bm25 import BM25Retriever
        except ImportError as error:
            raise _missing("llama-index-retrievers-bm25", error) from error
        self.corpus = corpus
        self.id_key = check_id_key(id_key)
        self.ragmorph_filtered_by = filtered_by(post_filter, native=True)
        self._library = BM25Retriever
        self._options = {"language": language, "skip_stemming": skip_stemming, "token_pattern": token_pattern}
        self.nodes: list[Any] = []  # the TextNodes indexed, one per chunk in corpus order
        for chunk in corpus:
            metadata = chunk_metadata(chunk, id_key=id_key)
            hidden = list(metadata)
            self.nodes.append(
                TextNode(
                    id_=chunk.id,
                    text=chunk.text,
                    metadata=metadata,
                    excluded_embed_metadata_keys=hidden,
                    excluded_llm_metadata_keys=hidden,
                )
            )
        # bm25s cannot index a corpus without a single token (after its stopwords and token pattern).
        tokens = bm25s.tokenize(
            [c.text for c in corpus], stopwords=language, token_pattern=token_pattern, return_ids=False,
            show_progress=False,
        )
        self.indexable = any(tokens)
        self._builds: dict[Filters | None, LlamaIndexRetriever | None] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaIndexBM25Retriever({len(self.corpus)} chunks, id_key={self.id_key!r})"

    @property
    def builds(self) -> int:
        """How many library retrievers were built so far (one per distinct filter set)."""
        return len(self._builds)

    def _build(self, filters: Filters | None) -> LlamaIndexRetriever | None:
        if not self.indexable:
            return None
        native = None if filters is None else metadata_filters(filters)
        try:
            library = self._library(nodes=self.nodes, similarity_top_k=1, filters=native, **self._options)
        except ValueError as error:
            if "filtered out" in str(error):
                return None  # the library refuses a filter that admits no node; nothing can be returned
            raise
        return LlamaIndexRetriever(
            library, id_key=self.id_key, corpus=self.corpus, max_k=len(self.nodes),
            post_filter=self.ragmorph_filtered_by == "ragmorph",
        )

    def _for(self, filters: Filters | None) -> LlamaIndexRetriever | None:
        key = None if filters is None or filters.is_empty or self.ragmorph_filtered_by == "ragmorph" else filters
        with self._lock:
            if key in self._builds:
                return self._builds[key]
        built = self._build(key)
        with self._lock:
            if len(self._builds) >= _MAX_CACHED_BUILDS:
                self._builds.pop(next(k for k in self._builds if k is not None), None)
            return self._builds.setdefault(key, built)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The BM25 top k for `query` from the build for `filters` (filtered by the library, or by ragmorph)."""
        adapter = self._for(filters)
        if adapter is None:
            return ()
        if self.ragmorph_filtered_by == "ragmorph":
            return adapter.retrieve(query, k=k, filters=filters)
        return adapter.retrieve(query, k=k)


def llamaindex_bm25_factory(corpus: Corpus, **options: Any) -> LlamaIndexBM25Retriever:
    """Build llama-index-retrievers-bm25 over exactly `corpus` (options: id_key, language, post_filter...)."""
    return LlamaIndexBM25Retriever(corpus, **options)


llamaindex_bm25_factory.ragmorph_traits = LlamaIndexBM25Retriever.ragmorph_traits  # type: ignore[attr-defined]
