"""Helpers for the integration tests: a small multi-tenant corpus and ranking comparisons up to score ties."""

from __future__ import annotations

from collections.abc import Sequence

from ragmorph.model import Chunk, Corpus, Filters, Hit

__all__ = ["TIE_TOLERANCE", "assert_filtered_prefix", "assert_same_up_to_ties", "tenant_corpus", "tie_groups"]

# Scores of one chunk computed by two code paths (HNSW vs brute force, masked vs unmasked) may differ in the
# last float32 bits; closer than this they count as a tie.
TIE_TOLERANCE = 1e-5


def tenant_corpus() -> Corpus:
    """Twelve chunks: two tenants with private look-alikes, shared chunks, a superseded chain and metadata."""
    return Corpus(
        [
            Chunk("hr-1#0", "Parental leave policy: twelve weeks of paid leave.", source="hr-1", tenant="acme",
                  version=1, superseded_by="hr-1#1", metadata={"lang": "en"}),
            Chunk("hr-1#1", "Parental leave policy: sixteen weeks of paid leave from 2026.", source="hr-1",
                  tenant="acme", version=2, effective_from="2026-09-01", metadata={"lang": "en"}),
            Chunk("hr-2#0", "Parental leave policy for globex staff: ten weeks paid leave.", source="hr-2",
                  tenant="globex", metadata={"lang": "en"}),
            Chunk("hr-3#0", "Holiday policy: twenty five days of holiday per year.", source="hr-3",
                  metadata={"lang": "en", "draft": False}),
            Chunk("it-1#0", "Reset your password from the security page.", source="it-1", metadata={"lang": "en"}),
            Chunk("it-1#1", "Password reset for globex accounts goes through the globex helpdesk.", source="it-1",
                  tenant="globex", metadata={"lang": "en"}),
            Chunk("it-2#0", "Laptop backup runs nightly to the office server.", source="it-2", tenant="acme",
                  metadata={"lang": "de", "page": 3}),
            Chunk("fin-1#0", "Travel expense refund within thirty days.", source="fin-1", tenant="globex",
                  superseded_by="fin-1#9"),
            Chunk("fin-2#0", "Invoice approval needs a manager.", source="fin-2", metadata={"tags": ["a", "b"]}),
            Chunk("faq#0", "Remote work from another region needs approval.", source="faq"),
            Chunk("faq#1", "Café naïve Ärger 数据 検索 — unicode text about leave.", source="faq",
                  tenant="acme"),
            Chunk("empty#0", "", source="empty"),
        ]
    )


def tie_groups(hits: Sequence[Hit], tolerance: float = TIE_TOLERANCE) -> list[list[Hit]]:
    """Consecutive hits whose scores are within `tolerance` of the group's first score, in order."""
    groups: list[list[Hit]] = []
    for hit in hits:
        if groups and hit.score is not None and groups[-1][0].score is not None and abs(
            groups[-1][0].score - hit.score
        ) <= tolerance:
            groups[-1].append(hit)
        else:
            groups.append([hit])
    return groups


def assert_same_up_to_ties(actual: Sequence[Hit], expected: Sequence[Hit]) -> None:
    """Both rankings have the same length and scores, and the same ids within each tie group."""
    assert len(actual) == len(expected), (actual, expected)
    for got, want in zip(tie_groups(actual), tie_groups(expected)):
        assert {h.id for h in got} == {h.id for h in want}, (actual, expected)
        assert abs(got[0].score - want[0].score) <= TIE_TOLERANCE, (actual, expected)


def assert_filtered_prefix(filtered: Sequence[Hit], unfiltered: Sequence[Hit], corpus: Corpus, filters: Filters,
                           k: int) -> None:
    """`filtered` is `unfiltered`'s allowed chunks in order, cut to k, up to score ties.

    `unfiltered` must be the complete ranking (every chunk the retriever returns). The last tie group of
    `filtered` may be cut short: its ids need only be among the allowed ids of that score.
    """
    allowed = [h for h in unfiltered if filters.allows(corpus[h.id])]
    assert all(filters.allows(corpus[h.id]) for h in filtered), filtered
    assert len(filtered) == min(k, len(allowed)), (filtered, allowed)
    got_groups, want_groups = tie_groups(filtered), tie_groups(allowed)
    for position, got in enumerate(got_groups):
        want = want_groups[position]
        assert abs(got[0].score - want[0].score) <= TIE_TOLERANCE, (filtered, allowed)
        if position < len(got_groups) - 1:
            assert {h.id for h in got} == {h.id for h in want}, (filtered, allowed)
        else:
            assert {h.id for h in got} <= {h.id for h in want}, (filtered, allowed)
