"""Distractors family: injected chunks that are irrelevant by construction must not beat the evidence.

How each kind is irrelevant by construction (none is ever named by an evidence group, so metrics never count
it as relevant, and its text cannot answer the case):

- `unrelated`: a few Latin lorem words from the seeded vocabulary, after dropping every word that shares a
  word or a 4-character stem with the query, so a word-level lexical retriever scores it exactly 0.
- `boilerplate`: the same, but 40 to 80 words long (long documents stress length normalisation).
- `lookalike`: a copy of a gold chunk's text with a wrong region, product or date appended, owned by
  *another tenant*: it is invisible to the case's tenant, so it can never be that tenant's answer.
- `near_duplicate`: a gold chunk's text with one word replaced by filler, visible to the case's tenant; it is
  not evidence, and only soft relations look at it.
- `padded`: a gold chunk's text with filler words appended, visible to the case's tenant. It carries the same
  answer, so it is never called irrelevant: only its rank relative to the original is judged (words that do
  not match the query make a chunk longer, and length normalisation never lets the longer copy win).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
from hypothesis import strategies as st

from ragmorph.model import Chunk, World
from ragmorph.relations import Concern, Direction, Observation, Relation, Severity, Verdict, scores_tied

from ._core import Family, PerturbationBase, chunk_of, corpus_diff, corpus_tenants, fresh_id, ks_strategy, ruled_out, vocabulary

__all__ = ["FAMILY", "KINDS", "RELATIONS", "InjectDistractors", "distractor_injections"]

KINDS = ("unrelated", "boilerplate", "lookalike", "near_duplicate", "padded")
_MARK = "ragmorph_distractor"


@attrs.frozen
class InjectDistractors(PerturbationBase):
    """Insert `chunks` of one distractor `kind` at corpus position `at`."""

    family: ClassVar[str] = "distractors"
    k: int
    kind: str
    chunks: tuple[Chunk, ...]
    at: int = 0

    def apply(self, world: World) -> World:
        """The world with the distractors inserted."""
        at = min(self.at, len(world.corpus))
        corpus = world.corpus.with_chunks(self.chunks, at=at)
        return attrs.evolve(world, corpus=corpus, params=attrs.evolve(world.params, k=self.k))

    def referenced_ids(self) -> tuple[str, ...]:
        """Gold chunks a look-alike or near-duplicate copies (kept when the corpus is minimised)."""
        return tuple(str(c.metadata["copy_of"]) for c in self.chunks if "copy_of" in c.metadata)


def _ids(world: World, count: int) -> list[str]:
    taken: set[str] = set()
    ids = []
    for number in range(count):
        ids.append(fresh_id(world.corpus, f"distractor-{number}", taken))
        taken.add(ids[-1])
    return ids


def _texts(words: Sequence[str], min_words: int, max_words: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(words), min_size=min_words, max_size=max_words).map(" ".join)


def distractor_injections(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[InjectDistractors]:
    """Draw one kind of distractors for `world`; shrinks toward fewer, shorter chunks at position 0."""
    vocab = vocabulary()
    filler = vocab.filler_for(world.case.query)
    tenant = world.case.tenant
    position = st.integers(0, len(world.corpus))
    choices = []
    if filler:
        for kind, low, high in (("unrelated", 1, 12), ("boilerplate", 40, 80)):
            texts = st.lists(_texts(filler, low, high), min_size=1, max_size=3)
            choices.append(
                st.builds(
                    lambda k, t, at, kind=kind: InjectDistractors(
                        k=k,
                        kind=kind,
                        chunks=tuple(
                            Chunk(i, text, tenant=tenant, metadata={_MARK: kind}) for i, text in zip(_ids(world, len(t)), t)
                        ),
                        at=at,
                    ),
                    ks_strategy(ks),
                    texts,
                    position,
                )
            )
    gold = [world.corpus[i] for i in world.case.gold_ids if i in world.corpus]
    if gold and tenant is not None:
        others = sorted(corpus_tenants(world.corpus) - {None, tenant}) or [f"not-{tenant}"]
        attributes = st.one_of(
            st.sampled_from(vocab.regions), st.sampled_from(vocab.products), st.sampled_from(vocab.dates).map(str)
        )
        lookalike = st.tuples(st.sampled_from(gold), st.sampled_from(others), attributes)
        choices.append(
            st.builds(
                lambda k, drawn, at: InjectDistractors(
                    k=k,
                    kind="lookalike",
                    chunks=tuple(
                        Chunk(i, f"{g.text} ({attr})", tenant=other, metadata={_MARK: "lookalike", "copy_of": g.id})
                        for i, (g, other, attr) in zip(_ids(world, len(drawn)), drawn)
                    ),
                    at=at,
                ),
                ks_strategy(ks),
                st.lists(lookalike, min_size=1, max_size=3),
                position,
            )
        )
    if gold and filler:
        def near_duplicate(k: int, g: Chunk, slot: int, word: str, at: int) -> InjectDistractors:
            words = g.text.split() or [""]
            words[slot % len(words)] = word
            chunk = Chunk(_ids(world, 1)[0], " ".join(words), tenant=g.tenant, metadata={_MARK: "near_duplicate", "copy_of": g.id})
            return InjectDistractors(k=k, kind="near_duplicate", chunks=(chunk,), at=at)

        choices.append(
            st.builds(near_duplicate, ks_strategy(ks), st.sampled_from(gold), st.integers(0, 50), st.sampled_from(filler), position)
        )

        def padded(k: int, g: Chunk, words: list[str], at: int) -> InjectDistractors:
            text = f"{g.text} {' '.join(words)}"
            chunk = Chunk(_ids(world, 1)[0], text, tenant=g.tenant, metadata={_MARK: "padded", "copy_of": g.id})
            return InjectDistractors(k=k, kind="padded", chunks=(chunk,), at=at)

        choices.append(
            st.builds(padded, ks_strategy(ks), st.sampled_from(gold), st.lists(st.sampled_from(filler), min_size=1, max_size=60), position)
        )
    return st.one_of(choices)


def _injected(base: Observation, follow: Observation) -> frozenset[str]:
    return corpus_diff(base.world.corpus, follow.world.corpus)[0]


def _has_gold(base: World, follow: World) -> str | None:
    return None if base.case.gold_ids else "the case has no gold chunks"


def _tenant_filtered(base: World, follow: World) -> str | None:
    return None if follow.params.filters.tenant is not None else "the call has no tenant filter"


def _has_evidence(base: World, follow: World) -> str | None:
    return None if base.case.evidence else "the case has no evidence groups"


def _below_gold(base: Observation, follow: Observation, *, lexical: bool) -> Verdict:
    if (unjudged := ruled_out(_has_gold, base, follow)) is not None:
        return unjudged
    injected = _injected(base, follow)
    gold = set(base.world.case.gold_ids)
    hits = follow.ranking.hits
    if lexical and any(not h.has_finite_score for h in hits):
        return Verdict.not_applicable("the retriever returned no scores, so a zero-scoring gold chunk cannot be told apart")
    first_injected = next((rank for rank, h in enumerate(hits) if h.id in injected), None)
    if first_injected is None:
        return Verdict.ok("no injected chunk returned")
    # With a lexical retriever, a gold chunk scoring 0 shares no word with the query: the pair cannot be judged.
    contested = [
        (rank, h) for rank, h in enumerate(hits) if h.id in gold and rank > first_injected and (not lexical or h.score > 0)
    ]
    if contested:
        rank, hit = contested[0]
        return Verdict.broken(
            f"injected chunk {hits[first_injected].id!r} at rank {first_injected + 1} outranks gold chunk {hit.id!r} "
            f"at rank {rank + 1}",
            culprits=(hits[first_injected].id,),
        )
    if lexical:
        returned = {h.id for h in hits}
        displaced = [h.id for h in base.ranking.hits if h.id in gold and h.has_finite_score and h.score > 0 and h.id not in returned]
        if displaced:
            return Verdict.broken(
                f"injected chunk {hits[first_injected].id!r} is returned while gold chunk {displaced[0]!r}, which "
                "shares a word with the query, dropped out"
            )
    if not any(h.id in gold for h in hits):
        return Verdict.not_applicable("no gold chunk returned to compare with")
    return Verdict.ok("every returned gold chunk ranks above the injected chunks")


def _unrelated_lexical(base: Observation, follow: Observation) -> Verdict:
    return _below_gold(base, follow, lexical=True)


def _unrelated_rate(base: Observation, follow: Observation) -> Verdict:
    return _below_gold(base, follow, lexical=False)


def _lookalike_unauthorized(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_tenant_filtered, base, follow)) is not None:
        return unjudged
    tenant = follow.world.params.filters.tenant
    for rank, hit in enumerate(follow.ranking.hits, start=1):
        chunk = chunk_of(base, follow, hit.id)
        owner = None if chunk is None else chunk.tenant
        if owner is not None and owner != tenant:
            return Verdict.broken(
                f"look-alike {hit.id!r} of tenant {owner!r} returned at rank {rank} to {tenant!r}", 0, 1, culprits=(hit.id,)
            )
    return Verdict.ok("no chunk of another tenant returned", 0, 0)


def _padded_below_original(base: Observation, follow: Observation) -> Verdict:
    injected = _injected(base, follow)
    copies = [c for c in (follow.world.corpus.get(i) for i in sorted(injected)) if c is not None and "copy_of" in c.metadata]
    hits = follow.ranking.hits
    if any(not h.has_finite_score for h in hits):
        return Verdict.not_applicable("the retriever returned no scores, so ties cannot be told apart")
    rank = {h.id: position for position, h in enumerate(hits)}
    corpus = follow.world.corpus
    for copy in copies:
        original = str(copy.metadata["copy_of"])
        if copy.id not in rank:
            continue
        if original in corpus and corpus.is_stale(corpus[original]):
            continue  # a superseded original: a retriever may rank current text first, or drop stale chunks
        mine = hits[rank[copy.id]]
        if original in rank:
            theirs = hits[rank[original]]
            if rank[copy.id] < rank[original] and not scores_tied(mine.score, theirs.score):  # type: ignore[arg-type]
                return Verdict.broken(
                    f"padded copy {copy.id!r} (score {mine.score:.6g}) outranks its original {original!r} "
                    f"(score {theirs.score:.6g}), although it only adds words that do not match the query"
                )
            continue
        last = hits[-1]
        if follow.exhausted or not scores_tied(mine.score, last.score):  # type: ignore[arg-type]
            return Verdict.broken(
                f"padded copy {copy.id!r} (score {mine.score:.6g}) is returned at rank {rank[copy.id] + 1} but its "
                f"original {original!r} is not, although the copy only adds words that do not match the query"
            )
    if not any(c.id in rank for c in copies):
        return Verdict.not_applicable("no padded copy returned to compare with its original")
    return Verdict.ok("every returned padded copy ranks below its original or ties with it")


def _coverage_kept(base: Observation, follow: Observation) -> Verdict:
    if (unjudged := ruled_out(_has_evidence, base, follow)) is not None:
        return unjudged
    before, after = base.metrics[f"GroupR@{base.world.params.k}"], follow.metrics[f"GroupR@{follow.world.params.k}"]
    if before is None or after is None:
        return Verdict.not_applicable("GroupR@k is undefined for this case")
    if after < before:
        return Verdict.broken(f"GroupR@k fell from {before:.3g} to {after:.3g} after a near-duplicate was injected", before, after)
    return Verdict.ok("GroupR@k kept", before, after)


RELATIONS = (
    Relation(
        name="distractors.unrelated_below_gold",
        family="distractors",
        summary="no injected unrelated chunk outranks a gold chunk that scores above zero",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=_unrelated_lexical,
        precondition=_has_gold,
        applies_to=("InjectDistractors:unrelated", "InjectDistractors:boilerplate"),
        requires=("lexical",),
        assumptions=(
            "lexical retriever (declares the trait 'lexical'): a chunk sharing no word or 4-letter stem with the "
            "query scores 0, and a chunk sharing one keeps a positive score when corpus statistics shift",
            "a gold chunk scoring 0 shares no word with the query; such a pair is not judged",
        ),
    ),
    Relation(
        name="distractors.unrelated_below_gold_rate",
        family="distractors",
        summary="how often injected unrelated text stays below every returned gold chunk (any retriever)",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.SOFT,
        check=_unrelated_rate,
        precondition=_has_gold,
        applies_to=("InjectDistractors:unrelated", "InjectDistractors:boilerplate"),
        assumptions=("soft: a dense retriever has no guarantee that unrelated text scores below the evidence",),
    ),
    Relation(
        name="distractors.lookalike_unauthorized_zero",
        family="distractors",
        summary="look-alikes owned by another tenant: under the case's tenant filter, Unauthorized@k is zero",
        target="Unauthorized@k",
        direction=Direction.ZERO,
        severity=Severity.HARD,
        concern=Concern.TENANT_LEAK,
        check=_lookalike_unauthorized,
        precondition=_tenant_filtered,
        applies_to=("InjectDistractors:lookalike",),
        assumptions=("the case is asked with its tenant filter",),
        judges_filtering=True,
        filter_kinds=("tenant",),
        judges_admission=True,
    ),
    Relation(
        name="distractors.padded_below_original",
        family="distractors",
        summary="a copy of a gold chunk padded with words that do not match the query never outranks the original",
        target="ranking@k",
        direction=Direction.NEVER,
        severity=Severity.HARD,
        check=_padded_below_original,
        applies_to=("InjectDistractors:padded",),
        requires=("lexical",),
        assumptions=(
            "lexical retriever with non-negative term weights whose length normalisation never rewards words that "
            "do not match the query (BM25 with Lucene idf and b in [0, 1], length-normalised tf-idf); both chunks are "
            "scored in the same run, so corpus statistics are shared",
            "equal scores (b = 0) may come in either order; an original cut off at k must tie with the last hit",
        ),
    ),
    Relation(
        name="distractors.near_duplicate_coverage",
        family="distractors",
        summary="a near-duplicate of a gold chunk does not push evidence out (GroupR@k kept)",
        target="GroupR@k",
        direction=Direction.NON_DECREASING,
        severity=Severity.SOFT,
        check=_coverage_kept,
        precondition=_has_evidence,
        applies_to=("InjectDistractors:near_duplicate",),
        assumptions=("soft: a near-duplicate may legitimately take a slot from another evidence group",),
    ),
)


FAMILY = Family(
    name="distractors",
    summary="inject unrelated text, long boilerplate, other tenants' look-alikes or near-duplicates",
    relations=RELATIONS,
    perturbation_types=(InjectDistractors,),
    draw=distractor_injections,
    edits_corpus=True,
    max_examples=9,
)
