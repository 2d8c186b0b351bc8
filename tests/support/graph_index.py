"""A planted approximate index in integer arithmetic: a one-layer HNSW graph that gives the same answers on every
machine.

FAISS's HNSW graph is built with the CPU's float rounding (its SIMD build), so which chunks a tiny beam reaches,
and whether a test of it sees anything, depends on the hardware. This index keeps what makes HNSW approximate
and drops the floats: chunks are bags of words (`default_tokenize`), similarity is the integer dot product of
word counts, ties go to the chunk inserted first.

- Build (HNSW's insertion): chunks are inserted in corpus order, each linked both ways to the `m` chunks inserted
  before it that are most similar to it; a chunk keeps its `2 m` most similar links (HNSW's layer 0).
- Search (HNSW's layer-0 beam): from the first chunk, keep the best `ef` chunks reached (at least k), expand
  the best chunk not yet expanded, and stop when it is worse than every chunk kept. The answer is the best `k`
  kept chunks that the filters admit and that share a word with the query: the filter is applied to what the
  beam kept, never to the corpus, so a selective filter under-returns (a post-filtering store's bug).

Bugs it plants for the exact-search relations (not declared `approximate`): a larger k can reach better chunks
(`ef` is at least k), another insertion order builds another graph, and filtered searches under-return.
"""

from __future__ import annotations

import heapq
from collections import Counter

from ragmorph.adapters import default_tokenize
from ragmorph.model import Corpus, Filters, Hit

__all__ = ["IntegerHNSW"]


class IntegerHNSW:
    """A one-layer HNSW graph over word counts, searched with a beam of `ef` (at least k); not declared approximate.
    One scored list, as its user would declare (reorder.invariant presumes it)."""

    ragmorph_traits: tuple[str, ...] = ("single_list",)
    m = 2
    ef = 4

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = list(corpus)
        self.words = [Counter(default_tokenize(chunk.text)) for chunk in self.chunks]
        self.links: list[list[int]] = []
        for node in range(len(self.chunks)):
            self._insert(node)

    def _similarity(self, left: Counter[str], right: Counter[str]) -> int:
        if len(left) > len(right):
            left, right = right, left
        return sum(count * right[word] for word, count in left.items() if word in right)

    def _best(self, node: int, others: list[int], count: int) -> list[int]:
        """The `count` chunks of `others` most similar to `node`, ties by insertion order."""
        return sorted(others, key=lambda other: (-self._similarity(self.words[node], self.words[other]), other))[:count]

    def _insert(self, node: int) -> None:
        near = self._best(node, list(range(node)), self.m)
        self.links.append(near)
        for other in near:
            self.links[other] = self._best(other, [*self.links[other], node], 2 * self.m)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The best k chunks of the beam, admitted by `filters` and sharing a word with the query."""
        if not self.chunks or k < 1:
            return []
        asked = Counter(default_tokenize(query))
        score = [self._similarity(asked, words) for words in self.words]
        width = max(self.ef, k)
        # HNSW's search: `beam` holds the best `width` chunks reached (a min-heap: its worst first), `frontier` the
        # chunks still to expand (best first); it stops when the best to expand is worse than the whole beam.
        reached = {0}
        beam = [(score[0], 0)]  # (score, -position): the later chunk is the worse of a tie
        frontier = [(-score[0], 0)]
        while frontier:
            best, node = heapq.heappop(frontier)
            if len(beam) == width and -best < beam[0][0]:
                break
            for other in self.links[node]:
                if other in reached:
                    continue
                reached.add(other)
                if len(beam) < width or (score[other], -other) > beam[0]:
                    heapq.heappush(frontier, (-score[other], other))
                    heapq.heappush(beam, (score[other], -other))
                    if len(beam) > width:
                        heapq.heappop(beam)
        found = [-negative for _, negative in beam]
        found = [n for n in found if score[n] > 0 and (filters is None or filters.allows(self.chunks[n]))]
        found.sort(key=lambda n: (-score[n], n))
        return [Hit(self.chunks[n].id, float(score[n])) for n in found[:k]]
