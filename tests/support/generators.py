"""Hypothesis strategies that draw valid, varied retrieval worlds (chunks, corpora, cases, worlds).

Every strategy returns values the model accepts and that round-trip through the native JSON Lines files:

- chunk ids have no whitespace (so they also fit TREC run and qrels files) and look like ``"hr-2#3"``;
- texts mix words from a fixed vocabulary (so lexical retrievers have something to match) with arbitrary
  Unicode text that includes non-BMP characters and combining marks but never lone surrogates (not UTF-8);
- metadata values are JSON values with finite floats only (NaN is not JSON and is not equal to itself);
- ``superseded_by`` points only at a chunk later in the corpus or at an id absent from it, so supersession
  forms chains and never cycles;
- a case's evidence cites only chunks its tenant may see, and the answerable flag never contradicts the
  evidence (``None`` or ``True`` with evidence, ``None`` or ``False`` without).

Collections are drawn with ``lists(min_size=, max_size=)`` and choices with ``sampled_from``/``one_of`` listing
the simplest option first, so failing examples shrink toward fewer chunks, fewer groups, shared chunks, no dates,
no metadata, no supersession and short ASCII words.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from ragmorph.model import Case, Chunk, Corpus, Filters, Params, World

__all__ = [
    "SOURCES",
    "TAGS",
    "VOCABULARY",
    "case_for",
    "cases_for",
    "chunk_ids",
    "chunks",
    "corpora",
    "dates",
    "filters_for",
    "metadata",
    "texts",
    "worlds",
]

# A fixed vocabulary keeps generation deterministic and gives lexical retrievers overlapping terms; the
# non-ASCII entries (precomposed and combining accents, CJK, a non-BMP letter and emoji) exercise UTF-8 paths.
VOCABULARY: tuple[str, ...] = (
    "leave", "policy", "salary", "holiday", "laptop", "password", "reset", "invoice", "refund", "tenant",
    "region", "security", "remote", "office", "travel", "expense", "contract", "notice", "parental", "backup",
    "server", "deploy", "release", "version", "date", "effective", "manager", "approval", "days", "weeks",
    "the", "a", "of", "and", "to", "is", "for", "in", "on", "with",
    "café", "cafe\u0301", "naïve", "Ärger", "数据", "検索", "ß", "İstanbul",
    "\U0001d518\U0001d52b\U0001d526", "😀",
)

# Document names chunk ids are built from; one non-ASCII source keeps ids honest about Unicode.
SOURCES: tuple[str, ...] = ("a", "hr-1", "hr-2", "it-1", "faq", "prod-x", "prod-y", "ü-guide")

TAGS: tuple[str, ...] = ("hr", "it", "product", "date", "multi-hop", "tenant", "unanswerable", "ünïcode")

_VERSIONS = st.one_of(st.none(), st.integers(1, 5))

# Ids of successors that were never loaded: the source name is not in SOURCES, so they are never in a corpus.
_ABSENT_IDS = st.builds(lambda part: f"gone#{part}", st.integers(0, 9))

_SUCCESSOR_KINDS = st.sampled_from(("none", "later", "absent"))
_SUCCESSOR_KINDS_LAST = st.sampled_from(("none", "absent"))

_METADATA_KEYS: tuple[str, ...] = ("lang", "region", "title", "year", "page", "draft")


@functools.lru_cache(maxsize=None)
def chunk_ids(*, sources: Sequence[str] = SOURCES, max_part: int = 30) -> st.SearchStrategy[str]:
    """Chunk ids ``"<source>#<part>"`` without whitespace; shrink toward ``"a#0"``."""
    return st.builds(lambda source, part: f"{source}#{part}", st.sampled_from(sources), st.integers(0, max_part))


@functools.lru_cache(maxsize=None)
def texts(*, min_words: int = 1, max_words: int = 12) -> st.SearchStrategy[str]:
    """Passage or query text: vocabulary words joined by spaces, or arbitrary Unicode with no lone surrogates.

    Shrinks toward a single short vocabulary word. ``min_words=0`` also allows the empty string.
    """
    worded = st.lists(st.sampled_from(VOCABULARY), min_size=min_words, max_size=max_words).map(" ".join)
    # Category Cs (surrogates) cannot be encoded as UTF-8; everything else, including non-BMP and Mn, is fair.
    arbitrary = st.text(
        st.characters(exclude_categories=("Cs",)), min_size=max(min_words, 0), max_size=max(4 * max_words, 1)
    )
    if min_words > 0:
        arbitrary = arbitrary.filter(lambda text: text.strip() != "")
    return st.one_of(worded, arbitrary)


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    )
    # One level of nesting covers lists and objects in metadata; st.recursive costs ~5x more per draw.
    return st.one_of(
        scalars, st.lists(scalars, max_size=2), st.dictionaries(st.text(max_size=4), scalars, max_size=2)
    )


@functools.lru_cache(maxsize=None)
def metadata() -> st.SearchStrategy[dict[str, Any]]:
    """Chunk metadata: a JSON object of usual keys (and some arbitrary ones) to JSON values; shrinks to ``{}``."""
    keys = st.one_of(st.sampled_from(_METADATA_KEYS), st.text(min_size=1, max_size=8))
    return st.dictionaries(keys, _json_values(), max_size=3)


@functools.lru_cache(maxsize=None)
def dates() -> st.SearchStrategy[dt.date | None]:
    """Effective dates between 2000 and 2030, or None (the shrink target)."""
    return st.one_of(st.none(), st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2030, 12, 31)))


@functools.lru_cache(maxsize=None)
def _optional_tenants(tenants: tuple[str, ...]) -> st.SearchStrategy[str | None]:
    # None (shared) first so that shrinking moves chunks and cases toward "shared" and "no tenant context".
    return st.sampled_from((None, *tenants))


def _draw_chunk(draw: st.DrawFn, chunk_id: str, tenants: tuple[str, ...], successor: str | None) -> Chunk:
    # A plain function, not a nested composite: building a strategy per chunk would dominate generation time.
    return Chunk(
        id=chunk_id,
        text=draw(texts()),
        source=chunk_id.split("#", 1)[0] if draw(st.booleans()) else None,
        tenant=draw(_optional_tenants(tenants)),
        version=draw(_VERSIONS),
        effective_from=draw(dates()),
        superseded_by=successor,
        metadata=draw(metadata()),
    )


@st.composite
def chunks(
    draw: st.DrawFn,
    *,
    ids: st.SearchStrategy[str] | None = None,
    tenants: Sequence[str] = ("acme", "globex"),
    superseded_by: st.SearchStrategy[str | None] | None = None,
) -> Chunk:
    """One chunk with every optional field varied; ``superseded_by`` defaults to None (see ``corpora``)."""
    chunk_id = draw(ids if ids is not None else chunk_ids())
    successor = draw(superseded_by) if superseded_by is not None else None
    return _draw_chunk(draw, chunk_id, tuple(tenants), successor)


@st.composite
def corpora(
    draw: st.DrawFn,
    *,
    min_size: int = 1,
    max_size: int = 8,
    tenants: Sequence[str] = ("acme", "globex"),
) -> Corpus:
    """A corpus of ``min_size..max_size`` chunks with unique ids, tenants and shared chunks, superseded chains.

    A chunk may be superseded by a chunk later in the corpus (a chain when that one is superseded in turn) or by
    an id absent from the corpus (the successor was never loaded). Shrinks toward fewer, unsuperseded chunks.
    """
    # Enough parts per source that max_size unique ids always exist.
    ids = chunk_ids(max_part=max(30, max_size))
    id_list = draw(st.lists(ids, min_size=min_size, max_size=max_size, unique=True))
    drawn: list[Chunk] = []
    for position, chunk_id in enumerate(id_list):
        later = id_list[position + 1 :]
        # Strategies are built once; per-chunk choices are plain draws (building strategies per draw is slow).
        kind = draw(_SUCCESSOR_KINDS if later else _SUCCESSOR_KINDS_LAST)
        if kind == "none":
            successor = None
        elif kind == "later":
            successor = later[draw(st.integers(0, len(later) - 1))]
        else:
            successor = draw(_ABSENT_IDS)
        drawn.append(_draw_chunk(draw, chunk_id, tuple(tenants), successor))
    return Corpus(drawn)


_ANSWERABLE_WITH_EVIDENCE = st.sampled_from((None, True))
_ANSWERABLE_WITHOUT_EVIDENCE = st.sampled_from((None, False))
_CASE_IDS = st.builds(lambda n: f"q{n}", st.integers(0, 99))
_CLAIMS = st.lists(texts(max_words=6), max_size=2)
_TAG_LISTS = st.lists(st.sampled_from(TAGS), max_size=3, unique=True)


@st.composite
def case_for(
    draw: st.DrawFn,
    corpus: Corpus,
    *,
    case_id: st.SearchStrategy[str] | None = None,
    tenants: Sequence[str] = ("acme", "globex"),
    max_groups: int = 3,
    max_group_size: int = 3,
) -> Case:
    """One valid case over ``corpus``: tenant, evidence groups of visible chunks (possibly none), supporting
    spans of some cited chunks, claims, tags.

    The query is either drawn text or words taken from a gold chunk (so lexical retrievers can find it). A case
    whose tenant sees no chunk, or whose drawn group list is empty, is unanswerable. Shrinks toward no tenant,
    a single one-member group, no spans and no claims or tags.
    """
    tenant = draw(_optional_tenants(tuple(tenants)))
    visible = [chunk.id for chunk in corpus if chunk.visible_to(tenant)]
    groups: list[list[str]] = []
    if visible:
        groups = draw(
            st.lists(
                st.lists(st.sampled_from(visible), min_size=1, max_size=max_group_size, unique=True),
                min_size=0,
                max_size=max_groups,
            )
        )
    if groups:
        gold_words = corpus[groups[0][0]].text.split()
        from_gold = (
            st.lists(st.sampled_from(gold_words), min_size=1, max_size=6).map(" ".join) if gold_words else texts()
        )
        query = draw(st.one_of(from_gold, texts()))
        answerable = draw(_ANSWERABLE_WITH_EVIDENCE)
    else:
        query = draw(texts())
        answerable = draw(_ANSWERABLE_WITHOUT_EVIDENCE)
    # Some cited chunks carry a supporting span of their text (one span per chunk and case); shrinks to none.
    spanned = sorted({m for group in groups for m in group if corpus[m].text})
    spans: dict[str, tuple[int, int]] = {}
    for member in draw(st.lists(st.sampled_from(spanned), unique=True, max_size=2)) if spanned else ():
        length = len(corpus[member].text)
        start = draw(st.integers(0, length - 1))
        spans[member] = (start, draw(st.integers(start + 1, length)))
    return Case(
        id=draw(case_id if case_id is not None else _CASE_IDS),
        query=query,
        tenant=tenant,
        evidence=[[{"chunk": m, "span": list(spans[m])} if m in spans else m for m in group] for group in groups],
        claims=draw(_CLAIMS),
        answerable=answerable,
        tags=draw(_TAG_LISTS),
    )


def cases_for(
    corpus: Corpus,
    *,
    min_size: int = 1,
    max_size: int = 4,
    tenants: Sequence[str] = ("acme", "globex"),
) -> st.SearchStrategy[tuple[Case, ...]]:
    """A tuple of ``min_size..max_size`` valid cases over ``corpus`` with unique ids ``q0, q1, ...``.

    Drawn as a list so that shrinking drops whole cases; ids are assigned by position afterwards.
    """
    return st.lists(case_for(corpus, tenants=tenants), min_size=min_size, max_size=max_size).map(
        lambda drawn: tuple(attrs.evolve(case, id=f"q{position}") for position, case in enumerate(drawn))
    )


def filters_for(case: Case) -> st.SearchStrategy[Filters]:
    """Filters a caller of ``case`` may use: none, the case's tenant, and/or current-only; shrinks to none."""
    return st.builds(
        Filters,
        tenant=st.sampled_from((None, case.tenant)) if case.tenant is not None else st.none(),
        current_only=st.booleans(),
    )


@st.composite
def worlds(
    draw: st.DrawFn,
    *,
    min_size: int = 1,
    max_size: int = 8,
    tenants: Sequence[str] = ("acme", "globex"),
    max_k: int = 10,
) -> World:
    """A world: a corpus from ``corpora``, one case from ``case_for`` and params with k in ``1..max_k``."""
    corpus = draw(corpora(min_size=min_size, max_size=max_size, tenants=tenants))
    case = draw(case_for(corpus, tenants=tenants))
    params = Params(k=draw(st.integers(1, max_k)), filters=draw(filters_for(case)))
    return World(corpus=corpus, case=case, params=params)
