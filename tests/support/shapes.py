"""Correct retrievers of the shapes teams ship: exact dense, hybrids, rerankers, paged services, ANN, stores.

Every class here is a factory (its constructor takes the corpus) with `retrieve(query, *, k, filters=None)`
returning `(id, score)` pairs best first, and the deltas `add` (upsert by id), `remove`, `update` (same ids, new
content) and `index` (rebuild over exactly that corpus). They are correct by their own documented semantics, so a
hard failure ragmorph reports on one of them is either a relation presuming a shape these retrievers do not have,
or a bug in ragmorph.

Shared conventions, chosen so that an edited instance ranks exactly like a fresh index of the edited corpus:

- score ties are broken by chunk id (ascending), never by insertion order, so deltas and corpus order cannot
  move a tie;
- dense scores come from `hashed_counts`, integer feature counts hashed into `DIM` buckets; the cosine of the
  L2-normalised vectors is computed from exact integer dot products and one correctly rounded division, so a
  score is bit-identical whatever other chunks exist or how they are batched;
- BM25 keeps integer statistics (document frequencies, lengths) that every delta edits exactly, so its scores
  after a delta are those of a fresh index.
"""

from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ragmorph.model import Chunk, Filters

__all__ = [
    "DIM",
    "SHAPES",
    "SHAPE_TRAITS",
    "ApproximateDense",
    "ExactDense",
    "HybridRRFPostfilter",
    "HybridRRFPrefilter",
    "HybridScoreFusion",
    "NoisyScoreStore",
    "OperatorStore",
    "PagedClient",
    "PagedService",
    "TwoStageRerank",
    "bm25_tokens",
    "hashed_counts",
    "rrf",
    "where_from_filters",
    "where_matches",
]

# Hashed feature buckets; large enough that the few hundred features of a short passage rarely collide.
DIM = 512
RRF_CONSTANT = 60

_WORD = re.compile(r"\w+")

Scored = list[tuple[str, float]]


# -- text features ---------------------------------------------------------------------------------------------
def bm25_tokens(text: str) -> list[str]:
    """Casefolded runs of word characters (the BM25 legs' tokens, for chunks and queries alike)."""
    return _WORD.findall(text.casefold())


def _bucket(feature: str) -> int:
    # crc32, not hash(): Python's str hash is salted per process and scores must not change between runs.
    return zlib.crc32(feature.encode("utf-8", "surrogatepass")) % DIM


def hashed_counts(text: str) -> np.ndarray:
    """Integer counts of word unigrams and character 3/4-grams of the NFKC-casefolded text, hashed into DIM buckets."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    features = [f"w:{word}" for word in words]
    for word in words:
        padded = f"<{word}>"
        for n in (3, 4):
            features.extend(f"c:{padded[i:i + n]}" for i in range(len(padded) - n + 1))
    if not features:
        return np.zeros(DIM, dtype=np.int64)
    return np.bincount([_bucket(f) for f in features], minlength=DIM).astype(np.int64)


def _top(rows: Iterable[tuple[str, float]], n: int | None = None) -> Scored:
    """`rows` best first, score ties by ascending id, cut to `n` (None: all)."""
    ranked = sorted(rows, key=lambda row: (-row[1], row[0]))
    return ranked if n is None else ranked[:n]


def rrf(legs: Sequence[Scored], constant: int = RRF_CONSTANT) -> Scored:
    """Reciprocal rank fusion: each id scores the sum over legs of 1/(constant + rank), best first, ties by id."""
    fused: dict[str, float] = {}
    for leg in legs:
        for rank, (chunk_id, _) in enumerate(leg, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (constant + rank)
    return _top(fused.items())


# -- indexes the shapes are built from ----------------------------------------------------------------------------
class _DenseIndex:
    """Hashed count vectors per chunk id and exact cosines against a query."""

    def __init__(self) -> None:
        self.counts: dict[str, np.ndarray] = {}
        self.norm2: dict[str, int] = {}
        self._matrix: np.ndarray | None = None
        self._rows: dict[str, int] = {}

    def put(self, chunk: Chunk) -> None:
        counts = hashed_counts(chunk.text)
        self.counts[chunk.id] = counts
        self.norm2[chunk.id] = int(counts @ counts)
        self._matrix = None

    def drop(self, chunk_id: str) -> None:
        del self.counts[chunk_id], self.norm2[chunk_id]
        self._matrix = None

    def cosines(self, query: str, ids: Sequence[str]) -> Scored:
        """(id, cosine) of each of `ids` with `query`; 0.0 where either text has no feature."""
        if not ids:
            return []
        if self._matrix is None:
            self._rows = {chunk_id: row for row, chunk_id in enumerate(self.counts)}
            self._matrix = np.stack(list(self.counts.values()))
        q = hashed_counts(query)
        q2 = int(q @ q)
        # Integer matmul is exact whatever the batch; sqrt and division are correctly rounded per element, so each
        # cosine depends only on its two texts.
        dots = self._matrix[[self._rows[i] for i in ids]] @ q
        denominators = np.sqrt(np.array([float(self.norm2[i] * q2) for i in ids]))
        safe = np.where(denominators > 0, denominators, 1.0)
        scores = np.where(denominators > 0, dots.astype(np.float64) / safe, 0.0)
        return list(zip(ids, scores.tolist()))


class _BM25Index:
    """Lucene BM25 (k1=1.5, b=0.75) over casefolded \\w+ tokens with exactly maintained integer statistics."""

    k1 = 1.5
    b = 0.75

    def __init__(self) -> None:
        self.tf: dict[str, Counter[str]] = {}
        self.length: dict[str, int] = {}
        self.df: Counter[str] = Counter()
        self.postings: defaultdict[str, set[str]] = defaultdict(set)
        self.total_length = 0

    def put(self, chunk: Chunk) -> None:
        tokens = bm25_tokens(chunk.text)
        counts = Counter(tokens)
        self.tf[chunk.id] = counts
        self.length[chunk.id] = len(tokens)
        self.total_length += len(tokens)
        for term in counts:
            self.df[term] += 1
            self.postings[term].add(chunk.id)

    def drop(self, chunk_id: str) -> None:
        for term in self.tf.pop(chunk_id):
            self.df[term] -= 1
            if not self.df[term]:
                del self.df[term]
            self.postings[term].discard(chunk_id)
            if not self.postings[term]:
                del self.postings[term]
        self.total_length -= self.length.pop(chunk_id)

    def scores(self, query: str, ids: Sequence[str]) -> Scored:
        """(id, BM25) of those of `ids` that share a token with `query`, in the order of `ids`."""
        terms = bm25_tokens(query)
        matching: set[str] = set()
        for term in dict.fromkeys(terms):
            matching |= self.postings.get(term, set())
        n = len(self.tf)
        if not matching or not n:
            return []
        avgdl = self.total_length / n
        idf = {t: math.log(1.0 + (n - self.df.get(t, 0) + 0.5) / (self.df.get(t, 0) + 0.5)) for t in set(terms)}
        rows: Scored = []
        for chunk_id in ids:
            if chunk_id not in matching:
                continue
            counts, norm = self.tf[chunk_id], 1.0 - self.b + self.b * self.length[chunk_id] / avgdl
            total = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    total += idf[term] * tf / (tf + self.k1 * norm)
            rows.append((chunk_id, total))
        return rows


class _PerChunk(dict):  # type: ignore[type-arg]
    """A per-chunk value kept beside the indexes: `of(chunk)` on put, removed on drop."""

    def __init__(self, of: Callable[[Chunk], Any]) -> None:
        super().__init__()
        self._of = of

    def put(self, chunk: Chunk) -> None:
        self[chunk.id] = self._of(chunk)

    def drop(self, chunk_id: str) -> None:
        del self[chunk_id]


class _Held:
    """The chunks an instance holds and the delta protocol; subclasses name their indexes in `_indexes`, each
    with `put(chunk)` and `drop(chunk_id)`, kept as attributes of those names and updated in order."""

    def __init__(self, corpus: Iterable[Chunk]) -> None:
        self._reset()
        self.add(corpus)

    def _indexes(self) -> dict[str, Any]:
        """Fresh, empty indexes by attribute name (none here)."""
        return {}

    def _reset(self) -> None:
        self._chunks: dict[str, Chunk] = {}
        self._held = self._indexes()
        for name, index in self._held.items():
            setattr(self, name, index)

    def _put(self, chunk: Chunk) -> None:
        self._chunks[chunk.id] = chunk
        for index in self._held.values():
            index.put(chunk)

    def _drop(self, chunk_id: str) -> None:
        del self._chunks[chunk_id]
        for index in self._held.values():
            index.drop(chunk_id)

    def add(self, chunks: Iterable[Chunk]) -> None:
        """Index `chunks`; an id already held is replaced (upsert)."""
        for chunk in list(chunks):
            if chunk.id in self._chunks:
                self._drop(chunk.id)
            self._put(chunk)

    def update(self, chunks: Iterable[Chunk]) -> None:
        """Replace the content of held chunks (same ids); an id not held is added."""
        self.add(chunks)

    def remove(self, ids: Iterable[str]) -> None:
        """Drop the chunks `ids` (ids not held are ignored)."""
        for chunk_id in list(ids):
            if chunk_id in self._chunks:
                self._drop(chunk_id)

    def index(self, corpus: Iterable[Chunk]) -> None:
        """Rebuild this instance over exactly `corpus` (everything held before is dropped)."""
        self._reset()
        self.add(corpus)

    def _admitted(self, filters: Filters | None) -> list[str]:
        """Ids of the held chunks `filters` admits (all of them without filters)."""
        if filters is None:
            return list(self._chunks)
        return [chunk_id for chunk_id, chunk in self._chunks.items() if filters.allows(chunk)]


class _DenseHeld(_Held):
    """Held chunks with a dense index."""

    _dense: _DenseIndex

    def _indexes(self) -> dict[str, Any]:
        """The dense index."""
        return {"_dense": _DenseIndex()}


class _HybridHeld(_DenseHeld):
    """Held chunks with a dense and a BM25 index."""

    _bm25: _BM25Index

    def _indexes(self) -> dict[str, Any]:
        """The dense and the BM25 index."""
        return {**super()._indexes(), "_bm25": _BM25Index()}


# -- 1. exact dense -----------------------------------------------------------------------------------------------
class ExactDense(_DenseHeld):
    """Exact cosine of hashed count vectors over every admitted chunk; every admitted chunk matches; ties by id.

    The filter is applied inside the search (only admitted chunks are scored), so a call returns
    min(k, admitted chunks) hits. A chunk's score depends only on its text and the query's.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` admitted chunks by cosine, ties by id."""
        return _top(self._dense.cosines(query, self._admitted(filters)), k)


# -- 2-4. hybrids -------------------------------------------------------------------------------------------------
class HybridRRFPrefilter(_HybridHeld):
    """BM25 and dense legs over the admitted chunks only, each cut to 50, fused by RRF (constant 60); ties by id.

    The BM25 leg holds the admitted chunks sharing a casefolded \\w+ token with the query, the dense leg every
    admitted chunk; each leg ranks best first with ties by id and keeps its top `WINDOW`. The fused score of a
    chunk is the sum over the legs holding it of 1/(60 + rank). A chunk in neither window is not scored, so for
    k > WINDOW a list may end before k although more chunks are admitted (declared in `ragmorph_cuts_short`).
    This is Qdrant prefetch + fusion, Elasticsearch `rrf` and Weaviate hybrid with a filter.
    """

    WINDOW = 50
    ragmorph_cuts_short = (
        "each leg keeps only its top 50 admitted chunks before fusion, so for k above the fused windows the list "
        "ends although more admitted chunks exist"
    )

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` of the RRF fusion of the two windows over the admitted chunks."""
        admitted = self._admitted(filters)
        lexical = _top(self._bm25.scores(query, admitted), self.WINDOW)
        dense = _top(self._dense.cosines(query, admitted), self.WINDOW)
        return rrf([lexical, dense])[:k]


class HybridRRFPostfilter(_HybridHeld):
    """BM25 and dense legs over ALL held chunks, windows holding the whole collection, RRF (60), then the filter.

    Ranks (and so fused scores) come from the unfiltered legs: a chunk's fused score depends on chunks the
    filter drops. Since the dense leg holds every chunk, the filtered fused list holds every admitted chunk and a
    call returns min(k, admitted chunks) hits. Ties by id.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` admitted chunks of the unfiltered RRF fusion."""
        everything = list(self._chunks)
        window = max(len(everything), 1)
        lexical = _top(self._bm25.scores(query, everything), window)
        dense = _top(self._dense.cosines(query, everything), window)
        fused = rrf([lexical, dense])
        if filters is not None:
            fused = [row for row in fused if filters.allows(self._chunks[row[0]])]
        return fused[:k]


def _min_max(rows: Scored) -> dict[str, float]:
    """Scores min-max normalised to [0, 1]; all 0.0 when max == min (the leg cannot tell the chunks apart)."""
    if not rows:
        return {}
    values = [score for _, score in rows]
    low, high = min(values), max(values)
    if high == low:
        return {chunk_id: 0.0 for chunk_id, _ in rows}
    return {chunk_id: (score - low) / (high - low) for chunk_id, score in rows}


class HybridScoreFusion(_HybridHeld):
    """Convex fusion 0.5*bm25' + 0.5*dense' of min-max normalised leg scores over the admitted chunks; ties by id.

    Each leg scores every admitted chunk (BM25 0.0 for a chunk sharing no token with the query) and is min-max
    normalised over the admitted chunks (a leg whose scores are all equal contributes 0.0). Every admitted chunk
    matches, so a call returns min(k, admitted chunks) hits.
    """

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` admitted chunks by fused normalised score."""
        admitted = self._admitted(filters)
        matched = dict(self._bm25.scores(query, admitted))
        lexical = _min_max([(chunk_id, matched.get(chunk_id, 0.0)) for chunk_id in admitted])
        dense = _min_max(self._dense.cosines(query, admitted))
        return _top(((i, 0.5 * lexical[i] + 0.5 * dense[i]) for i in admitted), k)


# -- 5. two-stage rerank ------------------------------------------------------------------------------------------
class TwoStageRerank(_DenseHeld):
    """ExactDense picks a fixed pool of the 40 best admitted chunks; a pool-independent reranker orders them.

    The reranker scores a (query, chunk) pair as the F1 of their casefolded \\w+ token multisets plus 0.1 times
    their dense cosine; the pool is cut before reranking whatever k is, so k beyond 40 returns at most 40 hits.
    Pool and rerank ties are broken by id.
    """

    POOL = 40
    ragmorph_cuts_short = (
        "the first stage passes a fixed pool of 40 chunks to the reranker, so for k above 40 the list ends at 40 "
        "although more admitted chunks exist"
    )

    @staticmethod
    def rerank_score(query_tokens: Counter[str], chunk: Chunk, cosine: float) -> float:
        """Token-overlap F1 of the query and chunk tokens plus 0.1 * cosine (a per-pair function)."""
        tokens = Counter(bm25_tokens(chunk.text))
        size = sum(query_tokens.values()) + sum(tokens.values())
        overlap = sum((query_tokens & tokens).values())
        return (2.0 * overlap / size if size else 0.0) + 0.1 * cosine

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` of the reranked pool of 40."""
        pool = _top(self._dense.cosines(query, self._admitted(filters)), self.POOL)
        wanted = Counter(bm25_tokens(query))
        return _top(((i, self.rerank_score(wanted, self._chunks[i], cos)) for i, cos in pool), k)


# -- 6. paged service ---------------------------------------------------------------------------------------------
class PagedService(_Held):
    """A search service answering one page (at most 10 hits from an offset) of a single BM25 list.

    The list holds the admitted chunks sharing a casefolded \\w+ token with the query, best first, ties by id; a
    page is the slice [offset, offset + min(limit, 10)).
    """

    PAGE_SIZE = 10
    _bm25: _BM25Index

    def _indexes(self) -> dict[str, Any]:
        """The BM25 index."""
        return {"_bm25": _BM25Index()}

    def search(self, query: str, *, offset: int = 0, limit: int = 10, filters: Filters | None = None) -> Scored:
        """One page of the ranked list: at most min(limit, 10) hits starting at `offset`."""
        ranked = _top(self._bm25.scores(query, self._admitted(filters)))
        return ranked[offset: offset + min(limit, self.PAGE_SIZE)]

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The first page only (a client pages for more)."""
        return self.search(query, limit=min(k, self.PAGE_SIZE), filters=filters)


class PagedClient:
    """A retriever that pages a `PagedService` until it holds k hits or a page comes back short; cut to k.

    Pure BM25: only chunks sharing a casefolded \\w+ token with the query are returned, min(k, such admitted
    chunks) of them; deltas are forwarded to the service.
    """

    def __init__(self, corpus: Iterable[Chunk]) -> None:
        self.service = PagedService(corpus)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """Pages of 10 from offset 0 until k hits or a short page."""
        hits: Scored = []
        while len(hits) < k:
            page = self.service.search(query, offset=len(hits), limit=PagedService.PAGE_SIZE, filters=filters)
            hits.extend(page)
            if len(page) < PagedService.PAGE_SIZE:
                break
        return hits[:k]

    def add(self, chunks: Iterable[Chunk]) -> None:
        """Upsert `chunks` in the service."""
        self.service.add(chunks)

    def update(self, chunks: Iterable[Chunk]) -> None:
        """Replace held chunks' content in the service."""
        self.service.update(chunks)

    def remove(self, ids: Iterable[str]) -> None:
        """Drop `ids` from the service."""
        self.service.remove(ids)

    def index(self, corpus: Iterable[Chunk]) -> None:
        """Rebuild the service over exactly `corpus`."""
        self.service.index(corpus)


# -- 7. approximate dense -----------------------------------------------------------------------------------------
# Fixed 0/1 centroids from a fixed seed: bucket assignment never depends on the corpus, so deltas equal a fresh
# index (a trained IVF would need retraining on every delta to promise that).
_NLIST = 8
_CENTROIDS = (np.random.default_rng(20240611).random((_NLIST, DIM)) < 0.15).astype(np.int64)
_CENTROID_NORMS = np.sqrt((_CENTROIDS * _CENTROIDS).sum(axis=1).astype(np.float64))


def _centroid_similarity(counts: np.ndarray) -> np.ndarray:
    # Integer dots (exact) over correctly rounded centroid norms: the same bits for the same text, always.
    return (_CENTROIDS @ counts).astype(np.float64) / _CENTROID_NORMS


class ApproximateDense(_DenseHeld):
    """An IVF over ExactDense's vectors: 8 fixed buckets, searching the 2 nearest and more until k are admitted.

    A chunk lives in the bucket whose fixed centroid is most similar to its vector (ties: lowest bucket). A query
    probes buckets by decreasing centroid similarity (ties: lowest bucket): the first `NPROBE`, then one more at a
    time while fewer than k admitted chunks were found (as filtered IVF scans iterate), and ranks the admitted
    chunks found by exact cosine, ties by id. So a call returns min(k, admitted chunks) hits, but may miss a
    nearer chunk in an unprobed bucket. Its exact twin (`ragmorph_twin`) is ExactDense over the same vectors.
    """

    NPROBE = 2
    ragmorph_twin = ExactDense

    _bucket_of: _PerChunk

    def _indexes(self) -> dict[str, Any]:
        """The dense index, then each chunk's bucket (read from its dense counts, put first)."""
        bucket = _PerChunk(lambda chunk: int(np.argmax(_centroid_similarity(self._dense.counts[chunk.id]))))
        return {**super()._indexes(), "_bucket_of": bucket}

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` by cosine among admitted chunks in the probed buckets."""
        similarity = _centroid_similarity(hashed_counts(query)).tolist()
        order = sorted(range(_NLIST), key=lambda bucket: (-similarity[bucket], bucket))
        by_bucket: dict[int, list[str]] = defaultdict(list)
        for chunk_id in self._admitted(filters):
            by_bucket[self._bucket_of[chunk_id]].append(chunk_id)
        candidates: list[str] = []
        for probed, bucket in enumerate(order):
            if probed >= self.NPROBE and len(candidates) >= k:
                break
            candidates.extend(by_bucket.get(bucket, ()))
        return _top(self._dense.cosines(query, candidates), k)


# -- 8. operator store --------------------------------------------------------------------------------------------
def _json_same(a: Any, b: Any) -> bool:
    """Equality by JSON type: booleans, integers and floats are three kinds; arrays and objects compare deeply."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_same(a[key], b[key]) for key in a)
    return type(a) is type(b) and bool(a == b)


def _ordered(a: Any, b: Any) -> bool:
    """Whether `a` and `b` may be ordered: both numbers (never booleans) or both strings."""
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (isinstance(a, str) and isinstance(b, str))


_ORDERINGS = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _field_matches(record: Mapping[str, Any], field: str, condition: Mapping[str, Any]) -> bool:
    present = field in record
    value = record.get(field)
    for operator, operand in condition.items():
        if operator == "$eq":
            held = present and _json_same(value, operand)
        elif operator == "$ne":
            held = not (present and _json_same(value, operand))
        elif operator == "$in":
            held = present and any(_json_same(value, option) for option in operand)
        elif operator == "$nin":
            held = not (present and any(_json_same(value, option) for option in operand))
        elif operator in _ORDERINGS:
            held = present and _ordered(value, operand) and _ORDERINGS[operator](value, operand)
        else:
            raise ValueError(f"unknown operator {operator!r} on field {field!r}")
        if not held:
            return False
    return True


def where_matches(record: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """Whether a store record satisfies a where-dict (`$and`, `$or`, per-field `$eq`, `$ne`, `$in`, `$nin`, `$gt`...).

    A field condition is a dict of operators, all of which must hold. A record lacking the field never matches
    `$eq`, `$in` or an ordering, and always matches `$ne` and `$nin`. Equality is by JSON type (true, 1 and 1.0
    are three values); orderings compare numbers with numbers and strings with strings only.
    """
    if not where:
        return True
    for key, condition in where.items():
        if key == "$and":
            if not all(where_matches(record, part) for part in condition):
                return False
        elif key == "$or":
            if not any(where_matches(record, part) for part in condition):
                return False
        elif not isinstance(condition, Mapping):
            raise ValueError(f"expected an operator dict for field {key!r}, got {condition!r}")
        elif not _field_matches(record, key, condition):
            return False
    return True


# Metadata lives under its own prefix so that a metadata key named "tenant" cannot shadow the system field.
_META = "m:"


def _record(chunk: Chunk) -> dict[str, Any]:
    """The store's flat record of a chunk: tenant and superseded_by ("" for none), metadata keys prefixed."""
    record: dict[str, Any] = {"tenant": chunk.tenant or "", "superseded_by": chunk.superseded_by or ""}
    record.update((_META + key, value) for key, value in chunk.metadata.items())
    return record


def where_from_filters(filters: Filters | None) -> dict[str, Any] | None:
    """ragmorph `Filters` as an OperatorStore where-dict; None when they exclude nothing."""
    if filters is None:
        return None
    clauses: list[dict[str, Any]] = []
    if filters.tenant is not None:
        clauses.append({"tenant": {"$in": [filters.tenant, ""]}})
    if filters.current_only:
        clauses.append({"superseded_by": {"$eq": ""}})
    clauses.extend({_META + key: {"$eq": value}} for key, value in filters.metadata.items())
    return {"$and": clauses} if clauses else None


class OperatorStore(_DenseHeld):
    """A vector store with a where-dict filter language; `retrieve` translates ragmorph `Filters` into it.

    Records hold `tenant` ("" for shared), `superseded_by` ("" for current) and each metadata key under the
    prefix "m:". The translation: tenant T -> `{"tenant": {"$in": [T, ""]}}`, current_only ->
    `{"superseded_by": {"$eq": ""}}`, metadata key=v -> `{"m:key": {"$eq": v}}`, joined by `$and`. The store
    ranks the records its where-dict matches by exact cosine (ExactDense's), ties by id; every matched record
    is a hit, so a call returns min(k, matched records).
    """

    _records: _PerChunk

    def _indexes(self) -> dict[str, Any]:
        """The dense index and each chunk's store record."""
        return {**super()._indexes(), "_records": _PerChunk(_record)}

    def query(self, text: str, *, n: int, where: Mapping[str, Any] | None = None) -> Scored:
        """The store's native search: the `n` records matching `where` nearest to `text`."""
        matched = [chunk_id for chunk_id, record in self._records.items() if where_matches(record, where)]
        return _top(self._dense.cosines(text, matched), n)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The native search under the translated filters."""
        return self.query(query, n=k, where=where_from_filters(filters))


# -- 9. noisy scores ----------------------------------------------------------------------------------------------
class NoisyScoreStore(_DenseHeld):
    """ExactDense whose scores carry relative noise of 1e-7 whose sign alternates per call and per chunk.

    Like float32 SIMD paths, the n-th call returns cosine * (1 + s * 1e-7) with s = +1 or -1 from the parity of
    n plus a fixed hash of the chunk id, and ranks by that noisy score (ties by id): two chunks whose exact
    cosines are within about 2e-7 relative may swap between identical calls. Otherwise exactly ExactDense.
    """

    NOISE = 1e-7

    def __init__(self, corpus: Iterable[Chunk]) -> None:
        self._calls = 0
        super().__init__(corpus)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> Scored:
        """The top `k` admitted chunks by noisy cosine."""
        self._calls += 1
        rows = self._dense.cosines(query, self._admitted(filters))
        noisy = []
        for chunk_id, score in rows:
            sign = 1.0 if (self._calls + zlib.crc32(chunk_id.encode("utf-8", "surrogatepass"))) % 2 else -1.0
            noisy.append((chunk_id, score * (1.0 + sign * self.NOISE)))
        return _top(noisy, k)


SHAPES: dict[str, type] = {
    "exact_dense": ExactDense,
    "hybrid_rrf_prefilter": HybridRRFPrefilter,
    "hybrid_rrf_postfilter": HybridRRFPostfilter,
    "hybrid_score_fusion": HybridScoreFusion,
    "two_stage_rerank": TwoStageRerank,
    "paged_client": PagedClient,
    "approximate_dense": ApproximateDense,
    "operator_store": OperatorStore,
    "noisy_score_store": NoisyScoreStore,
}

# What a user of each would honestly declare. Every delta recomputes exact statistics, so all have exact_deltas;
# only the paged client is pure BM25 over casefolded \w+ tokens (lexical, and invariant to case, whitespace and
# punctuation edits of the query); the dense legs match chunks sharing no word with the query. Every shape whose
# score of a chunk is a function of its content and the query is a single_list (two identical chunks tie; the
# noisy store's noise stays within the tie tolerance); the RRF hybrids score ranks, so identical chunks differ.
SHAPE_TRAITS: dict[str, list[str]] = {
    "exact_dense": ["exact_deltas", "single_list"],
    "hybrid_rrf_prefilter": ["exact_deltas"],
    "hybrid_rrf_postfilter": ["exact_deltas"],
    "hybrid_score_fusion": ["exact_deltas", "single_list"],
    "two_stage_rerank": ["exact_deltas", "single_list"],
    "paged_client": ["lexical", "normalising", "exact_deltas", "single_list"],
    "approximate_dense": ["approximate", "exact_deltas", "single_list"],
    "operator_store": ["exact_deltas", "single_list"],
    "noisy_score_store": ["exact_deltas", "single_list"],
}
