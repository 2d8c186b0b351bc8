"""A RAG retrieval pipeline declared as stages, and the same pipeline with a packer bug ragmorph pins on its stage.

    ragmorph run --retriever examples/pipeline/pipeline.py:PIPELINE --corpus examples/pipeline/corpus.jsonl \\
        --cases examples/pipeline/cases.jsonl --strategies cutoff          # exit 0
    ragmorph run --retriever examples/pipeline/pipeline.py:EVEN_SHARE ...  # exit 1: 'stage  evidence present
                                                                           # after Reranker, lost in EvenSharePacker'

cases.jsonl cites supporting spans (`{"chunk": "hr-12#3", "span": [197, 266]}`), so the final-context recall
`SpanR@k` and the stage attribution judge the text a packer kept, not only the chunk ids it returned.
"""

from __future__ import annotations

import re

from ragmorph.adapters import BM25Retriever, ContextPacker, Pipeline, Reranker, TenantFilter
from ragmorph.model import Filters, Hit


def overlap(query: str, text: str) -> float:
    """Reranker score: shared lowercase words (depth 30 reranks the same candidates for every k up to 30)."""
    return float(len(set(query.lower().split()) & set(text.lower().split())))


class EvenSharePacker(ContextPacker):
    """A packer bug seen in the wild: each of the k hits gets budget // k words, so a larger k cuts the top hit."""

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The inner top k, each cut to an equal share of the token budget."""
        share = self.token_budget // k
        packed = []
        for hit in self.inner.retrieve(query, k=k, filters=filters):
            text = self.corpus[hit.id].text
            ends = [match.end() for match in re.finditer(r"\S+", text)]
            if len(ends) <= share:
                packed.append(hit)
            elif share:
                packed.append(Hit(hit.id, hit.score, text[: ends[share - 1]], kept=(0, ends[share - 1])))
        return packed


# Correct: ContextPacker fills the budget best first and cuts only the hit that overflows it.
PIPELINE = Pipeline([BM25Retriever, TenantFilter(), Reranker(score_fn=overlap, depth=30), ContextPacker(token_budget=60)])
EVEN_SHARE = Pipeline([BM25Retriever, TenantFilter(), Reranker(score_fn=overlap, depth=30), EvenSharePacker(token_budget=60)])
