"""LangChain integration: any `BaseRetriever` as a ragmorph retriever, and a factory for LangChain's BM25.

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
    no_filters_error,
    require_chunk_id,
    with_setting,
)

__all__ = ["LangChainRetriever", "langchain_bm25_factory"]

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

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> tuple[Hit, ...]:
        """The retriever's top k documents for `query` as hits, filtered by the store (or by ragmorph if asked)."""
        if filters is None or filters.is_empty:
            found = self._identified(query, k)
        elif self.filter_mapper is not None:
            found = self._identified(query, k, self.filter_mapper(filters))
        elif self.ragmorph_filtered_by == "ragmorph":
            found = fetch_identified(lambda n: self._identified(query, n), k=k, filters=filters, corpus=self.corpus)
        else:
            raise no_filters_error(repr(self), filters, "pass filter_mapper= turning Filters into the store's filter")
        documents = [document for _, _, document in found]
        if self._scorer is not None:
            scores: Sequence[float | None] = self._scorer(query, documents)
        elif self.score_key is not None:
            scores = [(d.metadata or {}).get(self.score_key) for d in documents]
        else:
            scores = [None] * len(documents)
        return tuple(
            Hit(chunk_id, None if score is None else float(score), document.page_content)
            for (chunk_id, _, document), score in zip(found, scores)
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
