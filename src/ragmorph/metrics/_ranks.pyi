"""Type stub for the compiled batch kernel (src/ragmorph/metrics/_ranks.c)."""

from typing_extensions import Buffer

def scored_ranks(
    runs: list[dict[str, float]], qrels: list[dict[str, int]], positive: Buffer, found: Buffer, ranks: Buffer
) -> int | None:
    """Write found judgement indices and 0-based ranks of relevant judged docs; None when a score is unusable."""
