"""Embedders: shape, normalisation, determinism across processes, and caching by text."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.adapters import CachedEmbedder, Embedder, HashingEmbedder
from ragmorph.errors import UsageError


def test_hashing_rows_are_unit_float32_and_zero_for_empty_text() -> None:
    rows = HashingEmbedder(dim=64).embed(["leave policy begins", "", "!!!"])
    assert rows.dtype == np.float32 and rows.shape == (3, 64)
    assert np.isclose(np.linalg.norm(rows[0]), 1.0)
    assert not rows[1].any() and not rows[2].any()


def test_hashing_is_deterministic_across_processes() -> None:
    # blake2b, not the salted hash(): a fresh interpreter with another PYTHONHASHSEED gives the same vector.
    code = "from ragmorph.adapters import HashingEmbedder; print(HashingEmbedder(32).embed(['Café policy 2026']).tolist())"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": seed}
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1
    expected = HashingEmbedder(32).embed(["Café policy 2026"]).tolist()
    assert runs.pop().strip() == str(expected)


def test_hashing_shares_direction_for_shared_words() -> None:
    a, b, c = HashingEmbedder().embed(["annual leave policy", "leave policy update", "quantum chromodynamics"])
    assert float(a @ b) > float(a @ c)


@pytest.mark.parametrize("dim", [0, -3, 2.5, True])
def test_hashing_rejects_bad_dim(dim: object) -> None:
    with pytest.raises(UsageError, match="positive integer dim"):
        HashingEmbedder(dim)  # type: ignore[arg-type]


def test_embed_rejects_a_bare_string() -> None:
    with pytest.raises(UsageError, match="wrap it in a list"):
        HashingEmbedder().embed("one text")


def test_protocol_recognises_embedders() -> None:
    assert isinstance(HashingEmbedder(), Embedder)
    assert isinstance(CachedEmbedder(HashingEmbedder()), Embedder)


def test_cache_embeds_only_new_distinct_texts() -> None:
    cached = CachedEmbedder(HashingEmbedder(16))
    first = cached.embed(["a b", "c d", "a b"])
    assert (cached.calls, cached.embedded) == (1, 2)
    second = cached.embed(["c d", "e f"])
    assert (cached.calls, cached.embedded) == (2, 3)
    np.testing.assert_array_equal(first[1], second[0])
    cached.embed(["a b", "e f"])
    assert cached.calls == 2
    assert cached.embed([]).shape == (0, 16)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=8))
def test_cache_returns_what_the_inner_embedder_returns(texts: list[str]) -> None:
    inner = HashingEmbedder(24)
    np.testing.assert_array_equal(CachedEmbedder(inner).embed(texts), inner.embed(texts).reshape(len(texts), 24))
