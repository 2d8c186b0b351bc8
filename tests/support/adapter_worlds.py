"""Hypothesis strategies for adapter tests: small corpora over a tiny vocabulary so queries overlap often."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus, Filters

WORDS = ("leave", "policy", "acme", "date", "café", "tax", "bonus", "the", "of", "2026")
TENANTS = ("acme", "globex")


def texts() -> st.SearchStrategy[str]:
    """Short texts over WORDS (repeats allowed, empty text possible), joined by varied separators."""
    return st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join) | st.sampled_from(["", "—", "Leave, POLICY!"])


@st.composite
def chunk_lists(draw: Any, *, min_size: int = 0, max_size: int = 8, prefix: str = "c") -> list[Chunk]:
    """Chunks with unique ids `prefix0, prefix1, ...`, random tenants, some superseded, some with metadata."""
    size = draw(st.integers(min_size, max_size))
    chunks = []
    for number in range(size):
        chunks.append(
            Chunk(
                id=f"{prefix}{number}",
                text=draw(texts()),
                tenant=draw(st.sampled_from((None,) + TENANTS)),
                # The next chunk (for the last one an id absent from the corpus): chains, never a cycle.
                superseded_by=draw(st.sampled_from([None, None, f"{prefix}{number + 1}"])),
                metadata=draw(st.sampled_from([{}, {"lang": "en"}, {"lang": "de"}])),
            )
        )
    return chunks


def corpora(**kwargs: Any) -> st.SearchStrategy[Corpus]:
    """Corpora built from chunk_lists."""
    return chunk_lists(**kwargs).map(Corpus)


def filters() -> st.SearchStrategy[Filters | None]:
    """None, or filters combining tenant, current_only and a metadata constraint."""
    return st.none() | st.builds(
        Filters,
        tenant=st.sampled_from((None,) + TENANTS),
        current_only=st.booleans(),
        metadata=st.sampled_from([{}, {"lang": "en"}]),
    )


@st.composite
def delta_scripts(draw: Any, corpus: Corpus, *, max_steps: int = 4) -> list[tuple[tuple[Chunk, ...], tuple[str, ...]]]:
    """A sequence of (add, remove) steps valid in order: removes pick live ids, adds use fresh ids `n0, n1...`."""
    live = list(corpus.ids)
    steps = []
    fresh = 0
    for _ in range(draw(st.integers(1, max_steps))):
        remove = tuple(draw(st.lists(st.sampled_from(live), unique=True, max_size=2))) if live else ()
        live = [i for i in live if i not in remove]
        added = []
        for _ in range(draw(st.integers(0, 2))):
            added.append(Chunk(f"n{fresh}", draw(texts()), tenant=draw(st.sampled_from((None,) + TENANTS))))
            fresh += 1
        live.extend(c.id for c in added)
        steps.append((tuple(added), remove))
    return steps
