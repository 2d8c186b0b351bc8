"""A built-in world of real text: the Python language reference topics that ship with CPython (`pydoc_data`).

Each topic (`pydoc_data.topics.topics`, the text behind `help("break")`) is a document; its paragraphs are
packed into chunks of at most about 900 characters. A case's query is one sentence of one chunk that occurs in
no other chunk (compared casefolded, whitespace collapsed), the most distinctive such sentence of its chunk (the
highest summed inverse document frequency of its words). That chunk is the case's only evidence and the
sentence its claim, so the labels hold by construction, with no judge: the gold chunk contains the query
verbatim and no other chunk does.

Real text has no tenants: a seeded draw makes each topic shared or private to one tenant (so the tenancy and
filter families have something to judge), and a case asks as its gold chunk's tenant (a shared gold chunk:
as any tenant). The text is the running interpreter's, so the world is pinned per Python version (its
`description` names it).
"""

from __future__ import annotations

import math
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence

from ..errors import UsageError, describe
from ..model import Case, Chunk, Corpus
from ._generate import DEFAULT_TENANTS, BuiltinWorld

__all__ = ["pydoc_world"]

_CHUNK_CHARS = 900
_SHARED_SHARE = 0.6
_MIN_WORDS, _MAX_WORDS = 8, 30
_PARAGRAPH = re.compile(r"\n\s*\n")
# A sentence ends at ., ! or ? before a capital, except after the abbreviations these topics use.
_SENTENCE_END = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<=[.!?])\s+(?=[A-Z\"'])")
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")


def _topics() -> dict[str, str]:
    try:
        from pydoc_data.topics import topics
    except ImportError as error:  # some distributions strip pydoc_data
        raise UsageError(
            "expected the standard library's pydoc_data package (the Python reference topics), got ImportError; "
            "install your distribution's full Python (e.g. Debian's libpython3-stdlib)"
        ) from error
    return dict(topics)


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _pack(text: str) -> list[str]:
    """The topic's paragraphs packed in order into chunks of at most `_CHUNK_CHARS` (a longer paragraph alone)."""
    chunks: list[str] = []
    current = ""
    for paragraph in (p.rstrip() for p in _PARAGRAPH.split(text)):
        if not paragraph.strip():
            continue  # leading indentation is kept: it marks grammar and code blocks
        if current and len(current) + 2 + len(paragraph) > _CHUNK_CHARS:
            chunks.append(current)
            current = paragraph
        else:
            current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        chunks.append(current)
    return chunks


def _prose_sentences(text: str) -> list[str]:
    """Sentences of ordinary prose (no grammar rules, code or tables): 8-30 words, ending in a full stop."""
    found = []
    for paragraph in _PARAGRAPH.split(text):
        if paragraph.startswith(" ") or "::=" in paragraph or ">>>" in paragraph or "+--" in paragraph:
            continue  # indented blocks are grammar or code in these topics
        for sentence in _SENTENCE_END.split(_SPACE.sub(" ", paragraph).strip()):
            words = sentence.split()
            if _MIN_WORDS <= len(words) <= _MAX_WORDS and sentence.endswith(".") and words[0].isalpha() \
                    and words[0][0].isupper():
                found.append(sentence)
    return found


def _check(cases: object, seed: object, topics: object, tenants: object) -> tuple[str, ...]:
    for name, value in (("seed", seed), ("cases", cases)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"expected a non-negative integer {name}, got {name}={describe(value)}")
    if topics is not None and (isinstance(topics, bool) or not isinstance(topics, int) or topics < 1):
        raise UsageError(f"expected a positive integer number of topics or None (all), got topics={describe(topics)}")
    if isinstance(tenants, str) or not isinstance(tenants, Sequence) or not tenants:
        raise UsageError(f"expected a non-empty sequence of tenant names, got tenants={describe(tenants)}")
    return tuple(str(t) for t in tenants)


def pydoc_world(
    cases: int = 12, *, seed: int = 0, topics: int | None = None, tenants: Sequence[str] = DEFAULT_TENANTS
) -> BuiltinWorld:
    """The Python reference topics as a world: `topics` of them (seeded choice; None: all 79 on 3.11), `cases` cases.

    The same arguments give the same world for the same Python version. `facts` maps each case to its gold
    chunk's id. Fewer cases than asked for are drawn only when the chosen topics hold fewer usable sentences.
    """
    names = _check(cases, seed, topics, tenants)
    rng = random.Random(seed)
    texts = _topics()
    chosen = sorted(texts) if topics is None else sorted(rng.sample(sorted(texts), min(topics, len(texts))))
    chunks: list[Chunk] = []
    for topic in chosen:
        owner = None if rng.random() < _SHARED_SHARE else rng.choice(names)
        area = topic.split("-")[0]
        for n, text in enumerate(_pack(texts[topic]), start=1):
            chunks.append(Chunk(f"{topic}#{n}", text, source=topic, tenant=owner,
                                metadata={"kind": "reference", "area": area}))
    corpus = Corpus(chunks)
    drawn = _cases(corpus, cases, rng, names)
    description = (
        f"Python {sys.version_info.major}.{sys.version_info.minor} reference topics (pydoc_data, seed {seed}): "
        f"{len(chosen)} topics in {len(corpus)} chunks ({_owners(corpus)}); {len(drawn)} cases, each a sentence "
        "found in exactly one chunk."
    )
    return BuiltinWorld(corpus, tuple(drawn), description, {c.id: c.gold_ids for c in drawn}, seed)


def _owners(corpus: Corpus) -> str:
    counts = Counter(c.tenant or "shared" for c in corpus)
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))


def _cases(corpus: Corpus, wanted: int, rng: random.Random, tenants: tuple[str, ...]) -> list[Case]:
    """One case per drawn chunk, at most one per topic: its most distinctive unique sentence as the query."""
    normal = {c.id: _normal(c.text) for c in corpus}
    frequency: Counter[str] = Counter()
    for text in normal.values():
        frequency.update(set(_WORD.findall(text)))

    def weight(sentence: str) -> float:
        return sum(math.log(len(corpus) / frequency[w]) for w in set(_WORD.findall(_normal(sentence))))

    by_topic: dict[str, list[Chunk]] = {}
    for chunk in corpus:
        by_topic.setdefault(chunk.source or chunk.id, []).append(chunk)
    order = sorted(by_topic)
    rng.shuffle(order)
    drawn: list[Case] = []
    for topic in order:
        if len(drawn) >= wanted:
            break
        candidates = by_topic[topic][:]
        rng.shuffle(candidates)
        for chunk in candidates:
            unique = [s for s in _prose_sentences(chunk.text)
                      if sum(_normal(s) in text for text in normal.values()) == 1]
            if not unique:
                continue
            sentence = max(unique, key=lambda s: (weight(s), s))
            tenant = chunk.tenant if chunk.tenant is not None else rng.choice(tenants)
            drawn.append(Case(f"py-{topic}", sentence, tenant=tenant, evidence=[[chunk.id]], claims=[sentence],
                              tags=("pydoc", chunk.metadata["area"])))
            break
    return drawn
