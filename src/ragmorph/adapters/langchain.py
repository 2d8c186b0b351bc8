"""LangChain integration: any `BaseRetriever` as a ragmorph retriever, an `EnsembleRetriever` with k, depth and
filters passed to every leg, and a factory for LangChain's BM25.

Needs the extra ``ragmorph[langchain]`` (langchain-core; langchain-community and rank-bm25 for the BM25
factory). LangChain is imported only when an adapter is built, so importing this module is cheap.

How the contract maps onto LangChain:

- k: `invoke` takes no k, so each call runs on a shallow copy of the retriever with its k attribute set
  (``k_attr="k"`` for BM25Retriever, ``"search_kwargs.k"`` for a vector store's retriever); the caller's
  retriever is never modified. With ``k_attr=None`` the results are cut to k.
- ids: each Document's ``metadata[id_key]`` (default ``"id"``), else its ``Document.id``.
- scores: ``metadata[score_key]`` when a `score_key` is given, else None. LangChain's BM25Retriever returns no
  scores, so `langchain_bm25_factory` reads them from the retriever's own rank_bm25 vectorizer (the same
  numbers it ranked by), which lets ragmorph tell score ties apart from real reorderings.
- filters: a vector store's retriever takes its store's own filter in ``search_kwargs["filter"]`` (a dict
  for Chroma, PGVector, Qdrant...; a ``Document -> bool`` callable for `InMemoryVectorStore`). The filter
  language differs per store, so you give `filter_mapper`, a function from ragmorph's `Filters` to that value;
  each call runs on a copy with it set at `filter_attr`, and the store filters. With ``post_filter=True``
  ragmorph over-fetches and filters instead (see `ragmorph.adapters._integration`), and declares so: the
  relations that judge filtering then do not apply. With neither, the adapter takes no filters.
- `langchain_bm25_factory`: LangChain's BM25Retriever cannot filter, so ragmorph post-filters it and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import UsageError, describe
from ..model import Corpus, Filters, Hit
from ._integration import (
    FilterMapper,
    check_id_key,
    chunk_metadata,
    fetch_identified,
    filtered_by,
    fusion_filtering,
    no_filters_error,
    positive_depth,
    require_chunk_id,
    with_setting,
)

__all__ = ["LangChainEnsembleRetriever", "LangChainRetriever", "langchain_bm25_factory"]

# Turns (query, documents) into one score per document; used where a library ranks by scores it hides.
Scorer = Callable[[str, Sequence[Any]], Sequence[float | None]]


def _import_base_retriever() -> Any:
    try:
        from langchain_core.retrievers import BaseRetriever
    except ImportError as error:
        raise UsageError(
            "expected langchain-core to be installed for LangChainRetriever, got ImportError; "
            "install it with `pip install 'ragmorph[langchain]'`"
        ) from error
    return BaseRetriever


class LangChainRetriever:
    """Wraps a LangChain `BaseRetriever` (called through `invoke`) as a ragmorph retriever.

    Filters reach the library through `filter_mapper` (set at `filter_attr` on a per-call copy), or are applied
    by ragmorph with ``post_filter=True``; with neither, `supports_filters` is False.
    """

    def __init__(
        self,
        retriever: Any,
        *,
        id_key: str = "id",
        k_attr: str | None = "k",
        score_key: str | None = None,
        corpus: Corpus | None = None,
        scorer: Scorer | None = None,
        filter_mapper: FilterMapper | None = None,
        filter_attr: str = "search_kwargs.filter",
        post_filter: bool = False,
    ) -> None:
        base = _import_base_retriever()
        if not isinstance(retriever, base):
            raise UsageError(
                f"expected a langchain_core BaseRetriever, got retriever={describe(retriever)}; "
                "wrap other callables with ragmorph.adapters.FunctionRetriever"
            )
        self.retriever = retriever
        self.id_key = check_id_key(id_key)
        self.k_attr = k_attr if k_attr and _has_setting(retriever, k_attr) else None
        self.score_key = score_key
        self.corpus = corpus
        self._scorer = scorer
        if filter_mapper is not None:
            if post_filter:
                raise UsageError("expected either filter_mapper (the store filters) or post_filter=True, got both")
            if not callable(filter_mapper):
                raise UsageError(f"expected a callable filter_mapper(filters), got filter_mapper={describe(filter_mapper)}")
            if not _has_setting(retriever, filter_attr):
                raise UsageError(
                    f"expected {type(retriever).__name__} to have the filter setting {filter_attr!r}, got none; "
                    "pass filter_attr= naming where the retriever takes its filter"
                )
        self.filter_mapper = filter_mapper
        self.filter_attr = filter_attr
        mode = filtered_by(post_filter, native=filter_mapper is not None)
        self.supports_filters = mode is not None
        self.ragmorph_filtered_by = mode or "retriever"

    def __repr__(self) -> str:
        return f"LangChainRetriever({type(self.retriever).__name__}, id_key={self.id_key!r}, k_attr={self.k_attr!r})"

    def _documents(self, query: str, n: int, native: Any = None) -> list[Any]:
        retriever = self.retriever if self.k_attr is None else with_setting(self.retriever, self.k_attr, n)
        if native is not None:
            retriever = with_setting(retriever, self.filter_attr, native)
        documents = list(retriever.invoke(query))
        return documents if self.k_attr is not None else documents[:n]

    def _identified(self, query: str, n: int, native: Any = None) -> list[tuple[str, Mapping[str, Any], Any]]:
        found = []
        for document in self._documents(query, n, native):
            metadata = getattr(document, "metadata", None) or {}
            chunk_id = require_chunk_id(
                metadata, getattr(document, "id", None), id_key=self.id_key, what="LangChain Document", query=query,
                item=document,
            )
            found.append((chunk_id, metadata, document))
        return found

    def documents(self, query: str, *, n: int, filters: Filters | None = None) -> list[tuple[str, Any]]:
        """The retriever's best n `(chunk id, Document)` pairs for `query`, filtered by the store (or by ragmorph
        if asked): what `retrieve` turns into hits, and what a fusion of several retrievers ranks."""
        if filters is None or filters.is_empty:
            found = self._identified(query, n)
        elif self.filter_mapper is not None:
            found = self._identified(query, n, self.filter_mapper(filters))
        elif self.ragmorph_filtered_by == "ragmorph":
            found = fetch_identified(lambda m: self._identified(query, m), k=n, filters=filters, corpus=self.corpus)
        else:
            raise no_filters_error(repr(self), filters, "pass filter_mapper= turning Filters into the store's filter")
        return [(chunk_id, document) for chunk_id, _, document in found]

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The retriever's top k documents for `query` as hits, filtered by the store (or by ragmorph if asked)."""
        found = self.documents(query, n=k, filters=filters)
        documents = [document for _, document in found]
        if self._scorer is not None:
            scores: Sequence[float | None] = self._scorer(query, documents)
        elif self.score_key is not None:
            scores = [(d.metadata or {}).get(self.score_key) for d in documents]
        else:
            scores = [None] * len(documents)
        return tuple(
            Hit(chunk_id, None if score is None else float(score), document.page_content)
            for (chunk_id, document), score in zip(found, scores)
        )


def _depth_setting(leg: Any) -> str:
    """Where a leg takes its candidate count: ``k`` (BM25Retriever, TFIDFRetriever) or ``search_kwargs.k``
    (a vector store's retriever)."""
    for path in ("k", "search_kwargs.k"):
        if _has_setting(leg, path):
            return path
    raise UsageError(
        f"expected each EnsembleRetriever leg to take a candidate count (`k` or `search_kwargs`), got "
        f"{describe(leg)}; pass legs= with a LangChainRetriever per leg naming its k_attr"
    )


class LangChainEnsembleRetriever:
    """LangChain's `EnsembleRetriever` (weighted reciprocal rank fusion of its legs) as a ragmorph retriever.

    Every call asks each leg for its best `depth` candidates under the filters (each leg filtered on its own,
    as a hybrid search with a filter in every leg does), fuses them with the ensemble's own
    `weighted_reciprocal_rank`, and cuts to k. The hit score is the fused score the ensemble sorted by,
    ``sum(weight / (rank + c))``, which LangChain computes but does not return. Works with the class from
    ``langchain_classic.retrievers`` and from ``langchain.retrievers`` (LangChain before 1.0).
    """

    def __init__(
        self,
        ensemble: Any,
        *,
        legs: Sequence[LangChainRetriever] | None = None,
        depth: int = 100,
        id_key: str = "id",
        corpus: Corpus | None = None,
    ) -> None:
        if not all(hasattr(ensemble, name) for name in ("retrievers", "weights", "c", "weighted_reciprocal_rank")):
            raise UsageError(
                f"expected a LangChain EnsembleRetriever (retrievers, weights, c, weighted_reciprocal_rank), "
                f"got ensemble={describe(ensemble)}"
            )
        if legs is None:
            # A leg that cannot filter is filtered by ragmorph before fusion, which is still filtering inside it.
            legs = [
                LangChainRetriever(leg, id_key=id_key, k_attr=_depth_setting(leg), corpus=corpus, post_filter=True)
                for leg in ensemble.retrievers
            ]
        legs = list(legs)
        if len(legs) != len(ensemble.retrievers) or not all(isinstance(leg, LangChainRetriever) for leg in legs):
            raise UsageError(
                f"expected legs= to be one LangChainRetriever per ensemble leg ({len(ensemble.retrievers)}), "
                f"got {describe(legs)}"
            )
        self.ensemble = ensemble
        self.legs = legs
        self.depth = positive_depth(depth)
        self.supports_filters, self.ragmorph_filtered_by = fusion_filtering(legs)

    def __repr__(self) -> str:
        names = ", ".join(type(leg.retriever).__name__ for leg in self.legs)
        return f"LangChainEnsembleRetriever([{names}], weights={list(self.ensemble.weights)}, depth={self.depth})"

    def _key(self, document: Any) -> Any:
        # The key the ensemble deduplicates by: the page content, unless it was given an id_key.
        id_key = self.ensemble.id_key
        return document.page_content if id_key is None else document.metadata[id_key]

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The ensemble's fused top k for `query`, each leg filtered and asked for `depth` candidates."""
        found = [leg.documents(query, n=self.depth, filters=filters) for leg in self.legs]
        chunk_ids = {id(document): chunk_id for pairs in found for chunk_id, document in pairs}
        fused_score: dict[Any, float] = {}
        for pairs, weight in zip(found, self.ensemble.weights):
            for rank, (_, document) in enumerate(pairs, start=1):
                key = self._key(document)
                fused_score[key] = fused_score.get(key, 0.0) + weight / (rank + self.ensemble.c)
        fused = self.ensemble.weighted_reciprocal_rank([[document for _, document in pairs] for pairs in found])
        return tuple(
            Hit(chunk_ids[id(document)], fused_score[self._key(document)], document.page_content)
            for document in fused[:k]
        )


def _has_setting(obj: Any, path: str) -> bool:
    attribute, _, key = path.partition(".")
    if not hasattr(obj, attribute):
        return False
    return not key or isinstance(getattr(obj, attribute), dict)


class _EmptyRetriever:
    """Stands in for a library index that cannot be built (no chunk has a single token): returns nothing."""

    indexable = False
    ragmorph_filtered_by = "ragmorph"  # stands in for the post-filtered BM25 adapter

    def __repr__(self) -> str:
        return "LangChainRetriever(BM25Retriever over a corpus without tokens)"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """No hits: there is nothing to match."""
        return ()


def langchain_bm25_factory(
    corpus: Corpus,
    *,
    id_key: str = "id",
    preprocess_func: Callable[[str], list[str]] | None = None,
    bm25_params: dict[str, Any] | None = None,
) -> LangChainRetriever | _EmptyRetriever:
    """Build langchain-community's BM25Retriever (rank_bm25's BM25Okapi) over exactly `corpus`.

    Each chunk becomes a Document whose metadata carries the chunk fields (see `_integration`).
    `preprocess_func` defaults to LangChain's own whitespace split (case-sensitive, punctuation kept).
    BM25Retriever has no filters, so ragmorph post-filters its hits and declares ``filtered_by="ragmorph"``.
    rank_bm25 cannot index a corpus without a single token, so such a corpus (or an empty one) gets a
    retriever that returns no hits.
    """
    try:
        from langchain_community.retrievers.bm25 import BM25Retriever, default_preprocessing_func
        from langchain_core.documents import Document
    except ImportError as error:
        raise UsageError(
            "expected langchain-community and rank-bm25 for langchain_bm25_factory, got ImportError; "
            "install them with `pip install 'ragmorph[langchain]'`"
        ) from error
    check_id_key(id_key)
    documents = [Document(page_content=c.text, metadata=chunk_metadata(c, id_key=id_key), id=c.id) for c in corpus]
    options: dict[str, Any] = {"bm25_params": bm25_params}
    if preprocess_func is not None:
        options["preprocess_func"] = preprocess_func
    tokenize = preprocess_func or default_preprocessing_func
    if not any(tokenize(document.page_content) for document in documents):
        return _EmptyRetriever()
    library = BM25Retriever.from_documents(documents, **options)
    positions = {chunk.id: position for position, chunk in enumerate(corpus)}

    def bm25_scores(query: str, found: Sequence[Any]) -> list[float]:
        # The same BM25Okapi scores get_top_n sorted by, looked up by the document's corpus position.
        scores = library.vectorizer.get_scores(library.preprocess_func(query))
        return [float(scores[positions[d.metadata[id_key]]]) for d in found]

    return LangChainRetriever(library, id_key=id_key, k_attr="k", corpus=corpus, scorer=bm25_scores, post_filter=True)


# Declared to the runner: a chunk sharing no word with the query scores exactly 0 (rank_bm25 sums per-term
# contributions), so the distractor relations that assume a word-level lexical retriever apply.
langchain_bm25_factory.ragmorph_traits = ("lexical",)  # type: ignore[attr-defined]
langchain_bm25_factory.ragmorph_filtered_by = "ragmorph"  # type: ignore[attr-defined]
