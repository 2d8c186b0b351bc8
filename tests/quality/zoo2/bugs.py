"""The second zoo: single-bug retrievers whose bug classes come from real issue trackers.

Every member is `PlainBM25` (a user-style adapter: index built once in the factory, `add`/`remove`/`update`/
`index` edit it) with ONE change copied from a reported bug; the docstring cites the reports. Members declare
traits only where the bug's class is judged by a relation that presumes one, and then the trait a BM25 user
would declare (`lexical` for a bag-of-words scorer). `ZOO2` lists them; tests/quality/zoo2 checks that the
default suite catches each with a hard relation and shrinks it; zoo2_report.py prints the table.
"""

from __future__ import annotations

import logging
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

import attrs

from ragmorph.model import Chunk, Filters, Hit

from .plain import PlainBM25, tokenize

__all__ = ["ZOO2", "Zoo2Member", "zoo2_member"]

_LOG = logging.getLogger(__name__)


# -- corpus lifecycle ---------------------------------------------------------------------------------------
class UpdateKeepsOldText(PlainBM25):
    """Bug: `update()` indexes the new text on top of the old one; the old tokens are never subtracted, so the
    old text still matches and term counts double.

    Sources: nmslib/hnswlib#190 (re-adding a vector under an existing label left the ranking unchanged),
    nambok/mentedb#328 (re-indexing an edited BM25 document "pushed a second posting entry per term", corrupting
    IDF/TF). Surface: update in place.
    """

    # One scored list: two chunks with the same content tie (the hard copy relations presume it).
    ragmorph_traits = ("single_list",)

    def update(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            if chunk.id not in self.chunks:
                self._insert(chunk)
                continue
            tokens = self.tokens(chunk.text)
            counts = Counter(tokens)
            self.chunks[chunk.id] = chunk
            for term in counts:
                if term not in self.tf[chunk.id]:
                    self.df[term] += 1
                    self.postings[term].add(chunk.id)
            self.tf[chunk.id].update(counts)
            self.length[chunk.id] += len(tokens)
            self.total_length += len(tokens)


class UpdateSkipsReindex(PlainBM25):
    """Bug: `update()` stores the new chunk (its metadata and the text shown to users) but never re-tokenises it:
    the inverted index keeps scoring the old text.

    Sources: postgresml/postgresml#893 (upsert "doesn't overwrite the old chunks or embeddings"),
    langchain-ai/langchain#5582 (Chroma.update_document embedded the wrong content). Surface: update in place.
    """

    # One scored list: two chunks with the same content tie (the hard copy relations presume it).
    ragmorph_traits = ("single_list",)

    def update(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            if chunk.id in self.chunks:
                self.chunks[chunk.id] = chunk
            else:
                self._insert(chunk)


class UpsertDuplicates(PlainBM25):
    """Bug: rows are keyed by an auto-increment primary key and the chunk id is a payload field, so `add()` of an
    id already held stores a second row and both rows are returned.

    Sources: milvus-io/milvus#33353 (insert with a duplicate primary key: both entities returned),
    milvus-io/milvus#44320 (upsert keeps both versions of an id), facebookresearch/faiss#224 (repeated ids after
    remove_ids then add). Surface: add of an existing id.
    """

    def __init__(self, corpus: Iterable[Chunk], **kwargs: float) -> None:
        self.copies = 0
        super().__init__(corpus, **kwargs)

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            if chunk.id in self.chunks:
                self.copies += 1
                self._insert(attrs.evolve(chunk, id=f"{chunk.id}\x00row{self.copies}"))
            else:
                self._insert(chunk)

    def update(self, chunks: Sequence[Chunk]) -> None:
        self.add(chunks)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        return [Hit(row.split("\x00")[0], score) for row, score in self.ranked(query, filters)[:k]]


class AddExistingMerges(PlainBM25):
    """Bug: `add()` of an id already held indexes the new text next to the old one under that id (the old nodes of
    a document stay when it is inserted again), so the chunk scores as a mix of both versions.

    Sources: run-llama/llama_index#511 (inserting a document whose doc_id is already present adds its new nodes
    beside the old ones; `update` was the delete-then-insert), langchain-ai/langchain#21384 (the in-memory vector
    store ignored the ids of added documents, so re-adding one kept both), chroma-core/chroma#1062 (an add of an
    existing id is ignored with a warning: the correct behaviour the docs did not state). Surface: add of an
    existing id.
    """

    # One scored list: two chunks with the same content tie (the hard copy relations presume it).
    ragmorph_traits = ("single_list",)

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            if chunk.id not in self.chunks:
                self._insert(chunk)
                continue
            old = self.tf[chunk.id]
            slot = self._delete(chunk.id)
            self._insert(chunk, slot)
            # The old text's postings are written back under the same id.
            for term, count in old.items():
                if term not in self.tf[chunk.id]:
                    self.df[term] += 1
                self.postings[term].add(chunk.id)
                self.tf[chunk.id][term] += count


class DeleteTombstoneBlocksReadd(PlainBM25):
    """Bug: `remove()` records a tombstone and `add()` skips any id with a tombstone ("add of existing id"), so a
    chunk deleted and then re-added never comes back.

    Sources: chroma-core/chroma#4076 (delete, then add the same ids: "Add of existing embedding ID", nothing
    added), nmslib/hnswlib#160 (mark_deleted then add_items under the same label). Surface: delete then re-add.
    """

    def __init__(self, corpus: Iterable[Chunk], **kwargs: float) -> None:
        self.tombstones: set[str] = set()
        super().__init__(corpus, **kwargs)

    def remove(self, ids: Sequence[str]) -> None:
        self.tombstones.update(ids)
        super().remove(ids)

    def add(self, chunks: Sequence[Chunk]) -> None:
        super().add([chunk for chunk in chunks if chunk.id not in self.tombstones])


class RemoveShiftsRows(PlainBM25):
    """Bug: term counts live in a row list parallel to the id list (a flat vector index); `remove()` deletes the
    rows by their positions in ascending order, so every deletion after the first hits the row after the
    intended one and ids end up paired with other chunks' text.

    Sources: deepset-ai/haystack#6228 (FAISS Flat remove_ids shifts the ids of later vectors; the document store
    kept the old mapping), langchain-ai/langchain#2699 and mem0ai/mem0#3246 (index-to-docstore mapping out of
    step after deletes). Surface: remove of several chunks.
    """

    def __init__(self, corpus: Iterable[Chunk], **kwargs: float) -> None:
        self.rows: list[str] = []
        self.row_tf: list[Counter[str]] = []
        self.row_length: list[int] = []
        super().__init__(corpus, **kwargs)

    def _reset(self) -> None:
        super()._reset()
        self.rows, self.row_tf, self.row_length = [], [], []

    def _insert(self, chunk: Chunk, slot: int | None = None) -> None:
        super()._insert(chunk, slot)
        self.rows.append(chunk.id)
        self.row_tf.append(self.tf[chunk.id])
        self.row_length.append(self.length[chunk.id])

    def remove(self, ids: Sequence[str]) -> None:
        held = [chunk_id for chunk_id in ids if chunk_id in self.chunks]
        positions = sorted(self.rows.index(chunk_id) for chunk_id in held)
        for position in positions:  # the bug: ascending deletes shift the later positions
            if position < len(self.row_tf):
                del self.row_tf[position], self.row_length[position]
        for chunk_id in held:
            self.rows.remove(chunk_id)
        super().remove(held)

    def score(self, chunk_id: str, terms: Sequence[str]) -> float:
        row = self.rows.index(chunk_id)
        if row >= len(self.row_tf):
            return 0.0
        avgdl = self.total_length / len(self.chunks) if self.chunks else 0.0
        counts, length = self.row_tf[row], self.row_length[row]
        total = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                total += self.idf(term) * tf / (tf + self.k1 * (1.0 - self.b + self.b * length / avgdl))
        return total


class CapacityDropsAdds(PlainBM25):
    """Bug: the index is allocated for `max_elements = len(corpus) + 16` when it is built (as hnswlib requires);
    an add past that capacity raises inside the index and the adapter logs it and goes on, so chunks added after
    the corpus grew are silently missing.

    Sources: nmslib/hnswlib#39 (adding past max_elements throws), docarray/docarray#1601 (max_elements fixed at
    build, never resized), dragonflydb/dragonfly#2046 (crash on reaching hnsw capacity). Surface: growth past
    the capacity fixed at build, gold placed late. It declares `lexical`, as a BM25 user would.
    """

    ragmorph_traits = ("lexical",)

    def _reset(self) -> None:
        super()._reset()
        self.capacity: int | None = None

    def index(self, corpus: Iterable[Chunk]) -> None:
        chunks = list(corpus)
        self._reset()
        self.capacity = len(chunks) + 16
        self.add(chunks)

    def add(self, chunks: Sequence[Chunk]) -> None:
        chunks = list(chunks)
        if self.capacity is None:
            self.capacity = len(chunks) + 16
        for chunk in chunks:
            if chunk.id not in self.chunks and len(self.chunks) >= self.capacity:
                _LOG.warning("index full (max_elements=%d): %s not added", self.capacity, chunk.id)
                continue
            super().add([chunk])


class ReindexMerges(PlainBM25):
    """Bug: `index(corpus)` indexes the new corpus on top of the old one (the reset was forgotten), so chunks of
    the previous corpus are still returned.

    Sources: run-llama/llama_index#13162 (re-running the ingestion pipeline keeps adding to the vector store),
    langchain-ai/langchain#10967 (repeated from_texts duplicates the data and the responses). Surface: re-index of
    an existing instance.
    """

    def index(self, corpus: Iterable[Chunk]) -> None:
        self.add(list(corpus))


# -- queries ------------------------------------------------------------------------------------------------
class ZeroMatchNaN(PlainBM25):
    """Bug: scores are scaled by the best score of the page (`scale_score`), and when no chunk shares a word with
    the query the first k chunks are returned anyway with score 0 / 0 = NaN.

    Sources: deepset-ai/haystack#5982 (MemoryBM25Retriever always returns top_k documents, score 0 included),
    bojieli/ai-agent-book#511 (BM25 search broke on a query with no usable term). Surface: a query sharing no
    word with the corpus.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        rows = self.ranked(query, filters)
        if not rows:
            held = sorted((c for c in self.chunks.values() if self.admits(c, filters)), key=lambda c: self.slot[c.id])
            rows = [(chunk.id, 0.0) for chunk in held]
        rows = rows[:k]
        top = max((score for _, score in rows), default=0.0)
        return [Hit(chunk_id, score / top if top else math.nan) for chunk_id, score in rows]


_STOPWORDS = frozenset("a an and are at be by for from how in is it of on or that the to was what when which who why with".split())


class StopwordQueryBrowses(PlainBM25):
    """Bug: stop words are removed from the query, and a query left with no term falls back to a "browse" page
    (the first k chunks) built without the caller's filters.

    Sources: quickwit-oss/tantivy#378 (the query parser errors when the query has only stop words),
    weaviate/weaviate#9054 (a stop-word-only query throws), rluiten/elm-text-search#15 ("after tokenisation
    there are no terms to search for"): adapters catch this and return something else. Surface: a query made
    only of stop words or punctuation, asked with a filter.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        terms = [t for t in self.tokens(query) if t not in _STOPWORDS]
        if not terms:
            browse = sorted(self.chunks.values(), key=lambda c: self.slot[c.id])[:k]
            return [Hit(chunk.id, 0.0) for chunk in browse]
        return super().retrieve(" ".join(terms), k=k, filters=filters)


class QueryNotNormalised(PlainBM25):
    """Bug: chunk text is NFKC-normalised when indexed, the query is not, so a decomposed (NFD) accent, a ligature
    or full-width letters in the query match nothing.

    It declares the trait `unicode_normalising` its documentation promises (matching on NFKC-casefolded words).
    Sources: vshulcz/deja-vu#1098 ("the same word in NFC and NFD never match: cross-form recall 0/10"),
    pelias/api#600 (NFC and NFD forms of the same query return different results), valeriansaliou/sonic#370.
    Surface: Unicode normalisation forms of the query.
    """

    ragmorph_traits = ("unicode_normalising",)

    def _insert(self, chunk: Chunk, slot: int | None = None) -> None:
        super()._insert(attrs.evolve(chunk, text=unicodedata.normalize("NFKC", chunk.text)), slot)
        self.chunks[chunk.id] = chunk


# -- filters ------------------------------------------------------------------------------------------------
class MetadataLastConditionWins(PlainBM25):
    """Bug: the metadata conditions are evaluated in a loop that overwrites the previous result, so with several
    conditions only the last one is applied.

    Sources: run-llama/llama_index#13513 (two metadata filters on AzureAISearchVectorStore return "only documents
    related to the second filter"), infiniflow/ragflow#15386 (AND over filter conditions: an early condition's
    result was overwritten when a later one matched). Surface: metadata equality filters with several keys.
    """

    def admits(self, chunk: Chunk, filters: Filters | None) -> bool:
        if filters is None:
            return True
        if filters.tenant is not None and chunk.tenant is not None and chunk.tenant != filters.tenant:
            return False
        if filters.current_only and chunk.superseded_by is not None:
            return False
        matched = True
        for key, value in filters.metadata.items():
            matched = key in chunk.metadata and chunk.metadata[key] == value
        return matched


class CurrentOnlyDroppedWithTenant(PlainBM25):
    """Bug: the backend filter is built with if/elif, so when a tenant is given `current_only` (and any metadata
    condition) is never sent.

    Sources: qdrant/qdrant#5601 (a filter passed through a LangChain retriever made no difference),
    aleph-im/pyaleph#116 (typos in filters meant they were ignored, all data returned). Surface: combined
    filters (tenant with current_only).
    """

    def admits(self, chunk: Chunk, filters: Filters | None) -> bool:
        if filters is not None and filters.tenant is not None:
            return chunk.tenant is None or chunk.tenant == filters.tenant
        return super().admits(chunk, filters)


class PostFilterPage(PlainBM25):
    """Bug: the tenant is a partition of the index (searched natively), but the other conditions (`current_only`,
    metadata) are applied to the k candidates the index returns (the wrapper sizes `ef_search` to the limit), so
    a selective filter returns fewer than k chunks although more admitted chunks match.

    Sources: pgvector/pgvector#259 ("Understanding HNSW + filtering": LIMIT 10 returned 3 rows),
    JasperFx/marten#5452 ("a selective filter can therefore return fewer than limit rows"),
    discourse/discourse-ai#1133 ("filtering is applied after the index is scanned"). Surface: filters other
    than the tenant.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        partition = Filters(tenant=filters.tenant) if filters is not None else None
        pool = self.ranked(query, partition)[:k]
        return [Hit(cid, score) for cid, score in pool if self.admits(self.chunks[cid], filters)]


class FiltersAccumulate(PlainBM25):
    """Bug: runtime filters are merged into the filters the retriever was configured with by appending to the
    stored condition list, so each call's conditions stay active on every later call.

    Sources: deepset-ai/haystack#12500 (FilterPolicy.MERGE accumulates runtime filters across repeated retriever
    runs), infiniflow/infinity#3483 (search options pop the caller's filter out of the dict). Surface: the same
    instance asked with changing filters.
    """

    def __init__(self, corpus: Iterable[Chunk], **kwargs: float) -> None:
        self.conditions: dict[str, object] = {}
        super().__init__(corpus, **kwargs)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        if filters is not None:
            self.conditions.update(dict(filters.metadata))
            if filters.current_only:
                self.conditions["__current_only__"] = True
            if filters.tenant is not None:
                self.conditions["__tenant__"] = filters.tenant
        merged = Filters(
            tenant=self.conditions.get("__tenant__"),  # type: ignore[arg-type]
            current_only=bool(self.conditions.get("__current_only__")),
            metadata={k: v for k, v in self.conditions.items() if not k.startswith("__")},
        )
        return super().retrieve(query, k=k, filters=merged)


# -- state ----------------------------------------------------------------------------------------------------
class ClassLevelCache(PlainBM25):
    """Bug: the result cache is a class attribute (`_cache: dict = {}`), so every instance shares it; each
    instance clears it on its own edits, but a new instance over another corpus is served the answers an
    earlier instance cached.

    Sources: langroid/langroid#1079 (every vector-store provider shared one mutable default config object and
    mutated it in place, so state set on one instance leaked into the next), vibrantlabsai/ragas#926 (an init
    attribute mutable and shared between instances), lepture/mistune#185 (a class attribute must be cloned per
    instance). Surface: a fresh instance over another corpus.
    """

    _cache: dict[tuple[object, ...], list[Hit]] = {}

    def __init__(self, corpus: Iterable[Chunk], **kwargs: float) -> None:
        # The constructor indexes without touching the cache (its author thought it empty at that point).
        self._building = True
        super().__init__(corpus, **kwargs)
        self._building = False

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        key = (query, k, filters)
        if key not in self._cache:
            self._cache[key] = super().retrieve(query, k=k, filters=filters)
        return list(self._cache[key])

    def add(self, chunks: Sequence[Chunk]) -> None:
        if not self._building:
            self._cache.clear()
        super().add(chunks)

    def remove(self, ids: Sequence[str]) -> None:
        self._cache.clear()
        super().remove(ids)

    def update(self, chunks: Sequence[Chunk]) -> None:
        self._cache.clear()
        super().update(chunks)

    def index(self, corpus: Iterable[Chunk]) -> None:
        self._cache.clear()
        super().index(corpus)


class QueryKeyedClassCache(PlainBM25):
    """Bug: the result cache is a class attribute keyed on the query text alone (not k, filters or the corpus):
    the first ranking any instance computed for a query is what every instance serves for it, cut to k.

    Sources: langchain-ai/langchain#14590 (the process-wide LLM cache did not tell models or parameters apart: a
    Llama 2 answer was served for Claude 2), langchain-ai/langchain#19328 (the cache key holds the messages only,
    not the instance's parameters), zilliztech/GPTCache#527 (GPTCache keys on the prompt alone). Surface: a
    fresh instance over another corpus.
    """

    _cache: dict[str, list[Hit]] = {}

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        if query not in self._cache:
            self._cache[query] = [Hit(i, s) for i, s in self.ranked(query, filters)]
        return list(self._cache[query][:k])


class NewestInstanceWins(PlainBM25):
    """Bug: the index lives in a module-level slot that every new instance overwrites ("create the client once"),
    so an older instance answers from the corpus of the newest one.

    Sources: chroma-core/chroma#961 (many clients on one path "can cause strange behavior including data
    deletion"), chroma-core/chroma#683 (the first client persisted last wiped what later ones wrote),
    chroma-core/chroma#1473 (a second client in the same kernel sees an empty collection). Surface: another
    instance built while this one serves.
    """

    _current: dict[str, object] = {}

    def __init__(self, corpus: Iterable[Chunk], **kwargs: float) -> None:
        super().__init__(corpus, **kwargs)
        NewestInstanceWins._current = self.__dict__

    def ranked(self, query: str, filters: Filters | None) -> list[tuple[str, float]]:
        newest = object.__new__(PlainBM25)
        newest.__dict__ = NewestInstanceWins._current
        return PlainBM25.ranked(newest, query, filters)


# -- k ------------------------------------------------------------------------------------------------------
class PadsWithLastId(PlainBM25):
    """Bug: the backend always returns k labels and pads with -1 when fewer chunks match; the adapter maps labels
    through `ids[label]`, so -1 becomes the id of the last chunk indexed, repeated.

    Sources: run-llama/llama_index#9882 (similarity_top_k above the number of nodes gives label -1 with a Faiss
    index), facebookresearch/faiss#2409 (search returns `[7 -1 -1]`). Surface: k above the number of matching
    chunks.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        ids = sorted(self.chunks, key=self.slot.__getitem__)
        rows = self.ranked(query, filters)[:k]
        labels = [ids.index(cid) for cid, _ in rows] + [-1] * (k - len(rows))
        scores = [score for _, score in rows] + [-3.4028235e38] * (k - len(rows))
        return [Hit(ids[label], score) for label, score in zip(labels, scores)] if ids else []


class CandidatePool10(PlainBM25):
    """Bug: results come from a per-query candidate list of 10 (a cache of the top 10, or `num_candidates = 10`),
    so any k above 10 still gets at most 10 chunks, filters are applied to those 10 only.

    It declares `lexical`, as a BM25 user would. Sources: pgvector/pgvector#560 and #480 (an HNSW query returns
    at most ef_search rows whatever the LIMIT), deepset-ai/haystack#558 (top_k above 3 returns 3),
    run-llama/llama_index#17407 (fewer nodes than similarity_top_k). Surface: one k well above the usual
    candidate pools.
    """

    ragmorph_traits = ("lexical",)
    pool = 10

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        pool = self.ranked(query, None)[: self.pool]
        return [Hit(cid, score) for cid, score in pool if self.admits(self.chunks[cid], filters)][:k]


class ScoresMisaligned(PlainBM25):
    """Bug: hits are sorted by score, but the scores attached to them are read from the unsorted score array (by
    position in the page, not by chunk), so each hit carries another chunk's score.

    Sources: run-llama/llama_index#14442 (BM25Retriever: "top_n indexes and scores not match"). Surface: any
    query (the scores must not rise down the list and must belong to the hit).
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        terms = self.tokens(query)
        rows = self.ranked(query, filters)[:k]
        in_corpus_order = sorted(rows, key=lambda row: self.slot[row[0]])
        return [Hit(cid, self.score(other, terms)) for (cid, _), (other, _) in zip(rows, in_corpus_order)]


@attrs.frozen
class Zoo2Member:
    """One bug of the second zoo: its name, factory, surface, one sentence, the hard relations that catch it and
    the families whose units find it (the pinned tests run only those), and whether today's suite (before the
    surfaces of issue 10) caught it."""

    name: str
    factory: type[PlainBM25]
    surface: str
    bug: str
    caught_by: tuple[str, ...]
    families: tuple[str, ...]
    caught_before: bool = False
    # A candidate pool of 10 shows only with 11 matching chunks, so its minimal world cannot be smaller.
    max_minimal: int = 3


ZOO2: tuple[Zoo2Member, ...] = (
    Zoo2Member("update_keeps_old_text", UpdateKeepsOldText, "lifecycle", "update() never subtracts the old text",
               ("lifecycle.updated_copy_ties",), ("lifecycle",)),
    Zoo2Member("update_skips_reindex", UpdateSkipsReindex, "lifecycle", "update() stores the chunk, scores the old text",
               ("lifecycle.updated_copy_ties",), ("lifecycle",)),
    Zoo2Member("upsert_duplicates", UpsertDuplicates, "lifecycle", "add() of a held id stores a second row",
               ("contract.valid_response",), ("lifecycle",)),
    Zoo2Member("add_existing_merges", AddExistingMerges, "lifecycle", "add() of a held id keeps the old text beside the new",
               ("lifecycle.added_existing_one_version",), ("lifecycle",)),
    Zoo2Member("delete_tombstone_blocks_readd", DeleteTombstoneBlocksReadd, "lifecycle", "a deleted id can never be re-added",
               ("repeat.after_revert",), ("repeat",), caught_before=True),
    Zoo2Member("remove_shifts_rows", RemoveShiftsRows, "lifecycle", "multi-id remove deletes the wrong rows",
               ("repeat.after_revert",), ("repeat",), caught_before=True),
    Zoo2Member("capacity_drops_adds", CapacityDropsAdds, "lifecycle", "adds past len(corpus)+16 are dropped",
               ("lifecycle.growth_keeps_matches",), ("lifecycle",)),
    Zoo2Member("reindex_merges", ReindexMerges, "lifecycle", "index(corpus) keeps the old corpus",
               ("lifecycle.reindexed_forgets_removed",), ("lifecycle",)),
    Zoo2Member("zero_match_nan", ZeroMatchNaN, "queries", "no shared word: first k chunks with NaN scores",
               ("contract.valid_response",), ("odd_query",)),
    Zoo2Member("stopword_query_browses", StopwordQueryBrowses, "queries", "stop-word-only query ignores filters",
               ("odd_query.admitted_only",), ("odd_query",)),
    Zoo2Member("query_not_normalised", QueryNotNormalised, "queries", "chunks NFKC-normalised, queries not",
               ("odd_query.unicode_invariant",), ("odd_query",)),
    Zoo2Member("metadata_last_condition_wins", MetadataLastConditionWins, "filters", "only the last metadata condition applies",
               ("filters.admitted_only", "filters.filtered_equals_admitted"), ("filters",)),
    Zoo2Member("current_only_dropped_with_tenant", CurrentOnlyDroppedWithTenant, "filters", "tenant set: current_only ignored",
               ("filters.admitted_only", "supersede.current_only_excludes_superseded"), ("filters",), caught_before=True),
    Zoo2Member("post_filter_page", PostFilterPage, "filters", "filters applied to k unfiltered candidates",
               ("filters.filtered_equals_admitted",), ("filters",)),
    Zoo2Member("filters_accumulate", FiltersAccumulate, "state", "each call's filters stay active afterwards",
               ("repeat.identical", "state.fresh_instance_agrees"), ("repeat",), caught_before=True),
    Zoo2Member("class_level_cache", ClassLevelCache, "state", "the result cache is shared by every instance",
               ("state.fresh_never_returns_removed",), ("state",)),
    Zoo2Member("query_keyed_class_cache", QueryKeyedClassCache, "state", "one class-level cache keyed on the query alone",
               ("state.fresh_never_returns_removed",), ("state",)),
    # q05 has two gold chunks (kept in every minimal world) besides the chunk the other instance lacks.
    Zoo2Member("newest_instance_wins", NewestInstanceWins, "state", "every new instance replaces the index older ones read",
               ("state.other_instance_no_effect",), ("state",), max_minimal=4),
    Zoo2Member("pads_with_last_id", PadsWithLastId, "k", "k above matches: -1 labels map to the last id",
               ("contract.valid_response",), ("depth",), caught_before=True),
    Zoo2Member("candidate_pool_10", CandidatePool10, "k", "at most 10 candidates whatever k",
               ("depth.no_newcomer",), ("depth",), max_minimal=11),
    Zoo2Member("scores_misaligned", ScoresMisaligned, "k", "hits carry other chunks' scores",
               ("contract.valid_response",), ("contract",), caught_before=True),
)


def zoo2_member(name: str) -> Zoo2Member:
    """The zoo2 member called `name`."""
    for member in ZOO2:
        if member.name == name:
            return member
    raise KeyError(f"no zoo2 member {name!r}; known: {[m.name for m in ZOO2]}")
