"""Claims family: remove every chunk that supports one of the case's claims; that claim can no longer be supported.

Support is decided by the default token judge of `ClaimR@k` (`ragmorph.support.DEFAULT_SUPPORT`), on chunk
texts, so the family needs no gold ids: it runs wherever a case states claims that the corpus supports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np
from hypothesis import strategies as st

from ragmorph.model import Corpus, World
from ragmorph.relations import Direction, Observation, Relation, Severity, Verdict
from ragmorph.support import DEFAULT_SUPPORT, claim_facts

from ._core import CorpusMemo, Family, PerturbationBase, TokenIndex, chunk_of, corpus_diff, ks_strategy, token_index

__all__ = ["FAMILY", "MAX_SUPPORTERS", "RELATIONS", "RemoveClaimSupport", "claim_removals", "supporters"]

# A claim stated by many chunks is common knowledge of the corpus, not evidence one retriever must find; removing
# all of them would also empty most small corpora. Claims with at most this many supporting chunks are drawn.
MAX_SUPPORTERS = 3


# Every relation of every probe asks for the supporters of the base corpus's claims, and each scan reads every
# chunk: remember the last answers per corpus and claim.
_SUPPORTERS = CorpusMemo(64)


def supporters(corpus: Corpus, claim: str) -> tuple[str, ...]:
    """Ids of the chunks of `corpus` whose text supports `claim` under the default token judge, in corpus order."""
    return _supporters_of(corpus, (claim,))[claim]


def _supporters_of(corpus: Corpus, claims: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """`supporters` of each of `claims`, the ones not remembered found in one pass over the corpus (the judge's
    `supporting`, which reads most chunks with a few substring tests)."""
    found = {claim: _SUPPORTERS.lookup((corpus,), claim) for claim in dict.fromkeys(claims)}
    wanted = [claim for claim, known in found.items() if known is CorpusMemo.ABSENT]
    if wanted:
        chunks = corpus.chunks
        candidates = _candidates(corpus, wanted)
        positions = DEFAULT_SUPPORT.supporting(wanted, (chunks[position].text for position in candidates))
        for claim in wanted:
            ids = tuple(chunks[candidates[at]].id for at in positions[claim])
            found[claim] = _SUPPORTERS.store((corpus,), claim, ids)
    return found


# A letter (the judge's words are runs of letters: word characters but digits and the underscore).
_LETTER = re.compile(r"[^\W\d_]")


def _candidates(corpus: Corpus, claims: Sequence[str]) -> list[int]:
    """Corpus positions, ascending, of every chunk that may support one of `claims` under the default judge.

    An ASCII text is its own NFKC form, so each content word the judge reads in it is a whole run of letters
    inside one of its tokens (`token_index`): a chunk holding tokens for fewer than the threshold's share of a
    claim's words cannot support it. Every other text stays a candidate, as does every chunk for a claim with
    no content words (judged by numbers and dates alone).
    """
    index = token_index(corpus)
    keep = ~index.ascii
    for claim in claims:
        words = sorted(claim_facts(claim)[0])
        if not words:
            return list(range(len(corpus)))
        held = index.holding([_runs_in(corpus, index, word) for word in words])
        # The judge's own ratio test on a count that is never below the words it would find.
        keep |= held / len(words) >= DEFAULT_SUPPORT.threshold
    return np.flatnonzero(keep).tolist()


_VOCABULARIES = CorpusMemo(4)


def _runs_in(corpus: Corpus, index: TokenIndex, word: str) -> list[str]:
    """The tokens of `corpus` in which `word` is a whole run of letters (the token itself, or "5g" for "g")."""
    tokens, text, starts = _VOCABULARIES.get((corpus,), None, lambda: _vocabulary_text(index))
    found = []
    for match in re.finditer(re.escape(word), text):
        start, stop = match.span()
        if not (start and _LETTER.match(text, start - 1)) and not _LETTER.match(text, stop):
            found.append(tokens[int(np.searchsorted(starts, start, side="right")) - 1])
    return found


def _vocabulary_text(index: TokenIndex) -> tuple[list[str], str, np.ndarray]:
    """The corpus vocabulary, the same joined by newlines (no token holds one), and where each token starts."""
    tokens = list(index.numbers)
    starts = np.cumsum([0] + [len(token) + 1 for token in tokens[:-1]]) if tokens else np.zeros(0, np.intp)
    return tokens, "\n".join(tokens), starts


@attrs.frozen
class RemoveClaimSupport(PerturbationBase):
    """Remove `ids`, every chunk that supports claim number `claim` of the case (its sole supporter, or all of
    its few supporters), from the corpus."""

    family: ClassVar[str] = "claims"
    k: int
    claim: int
    ids: tuple[str, ...]

    def apply(self, world: World) -> World:
        """The world without the claim's supporting chunks."""
        return attrs.evolve(world, corpus=world.corpus.without(self.ids), params=attrs.evolve(world.params, k=self.k))

    def referenced_ids(self) -> tuple[str, ...]:
        """The removed ids."""
        return self.ids


def _removable(world: World) -> list[tuple[int, tuple[str, ...]]]:
    found = []
    claims = tuple(dict.fromkeys(world.case.claims))
    support = _supporters_of(world.corpus, claims)
    for number, claim in enumerate(claims):
        ids = support[claim]
        if 0 < len(ids) <= MAX_SUPPORTERS:
            found.append((number, ids))
    return found


def claim_removals(world: World, *, ks: Sequence[int], **_: object) -> st.SearchStrategy[RemoveClaimSupport]:
    """Draw a claim with one to MAX_SUPPORTERS supporting chunks and remove all of them; shrinks toward the first
    such claim and the smallest k."""
    choices = _removable(world)
    return st.builds(
        lambda k, choice: RemoveClaimSupport(k=k, claim=choice[0], ids=choice[1]),
        ks_strategy(ks),
        st.sampled_from(choices),
    )


def _texts(base: Observation, follow: Observation) -> list[tuple[int, str, str]]:
    """(rank, id, text) of the distinct follow-up hits in the top k; a removed chunk a stale index still returns
    is read from the base corpus."""
    found, seen = [], set()
    for rank, hit in enumerate(follow.ranking.hits[: follow.world.params.k], start=1):
        if hit.id in seen:
            continue
        seen.add(hit.id)
        chunk = chunk_of(base, follow, hit.id)
        text = hit.text if hit.text is not None else (chunk.text if chunk is not None else None)
        if text is not None:
            found.append((rank, hit.id, text))
    return found


def _claim_of(base: Observation, follow: Observation) -> tuple[int, str] | None:
    """The claim whose every supporter the follow-up corpus lost, or None when the pair is not such a removal."""
    removed = corpus_diff(base.world.corpus, follow.world.corpus)[1]
    if not removed:
        return None
    for number, claim in enumerate(dict.fromkeys(base.world.case.claims)):
        ids = supporters(base.world.corpus, claim)
        if ids and set(ids) <= removed:
            return number, claim
    return None


def _removed_claim_unsupported(base: Observation, follow: Observation) -> Verdict:
    found = _claim_of(base, follow)
    if found is None:
        return Verdict.not_applicable("no claim lost every supporting chunk")
    number, claim = found
    for rank, chunk_id, text in _texts(base, follow):
        if DEFAULT_SUPPORT.supports(claim, text):
            return Verdict.broken(
                f"claim {number} ({claim!r}) is still supported at rank {rank} by {chunk_id!r} after every chunk "
                "supporting it was removed",
                0.0,
                1.0,
            )
    return Verdict.ok(f"claim {number} is no longer supported", 0.0, 0.0)


def _claim_recall(base: Observation, follow: Observation) -> float:
    claims = tuple(dict.fromkeys(base.world.case.claims))
    texts = [text for _, _, text in _texts(base, follow)]
    return sum(1 for claim in claims if any(DEFAULT_SUPPORT.supports(claim, t) for t in texts)) / len(claims)


def _claim_recall_non_increasing(base: Observation, follow: Observation) -> Verdict:
    if _claim_of(base, follow) is None:
        return Verdict.not_applicable("no claim lost every supporting chunk")
    before, after = _claim_recall(base, base), _claim_recall(base, follow)
    if after > before:
        return Verdict.broken(f"ClaimR@{follow.world.params.k} rose from {before:.3g} to {after:.3g}", before, after)
    return Verdict.ok(f"ClaimR@{follow.world.params.k} {before:.3g} -> {after:.3g}", before, after)


RELATIONS = (
    Relation(
        name="claims.removed_claim_unsupported",
        family="claims",
        summary="after removing every chunk that supports a claim, no top-k text supports that claim",
        target="ClaimR(judge=tokens)@k",
        direction=Direction.ZERO,
        severity=Severity.HARD,
        check=_removed_claim_unsupported,
        assumptions=(
            "support is the default token judge on the returned text (else the corpus text), a pure function of text",
        ),
    ),
    Relation(
        name="claims.claim_recall_non_increasing",
        family="claims",
        summary="removing the sole supporting chunks of a claim does not raise ClaimR@k",
        target="ClaimR(judge=tokens)@k",
        direction=Direction.NON_INCREASING,
        severity=Severity.SOFT,
        check=_claim_recall_non_increasing,
        assumptions=(
            "soft: a correct retriever fills the freed rank with the next chunk, which may support other claims "
            "(measured: a dense retriever raises ClaimR@1 from 1/3 to 2/3 this way), and BM25 statistics shift",
        ),
    ),
)


def _applicable(world: World) -> str | None:
    if not world.case.claims:
        return "the case states no claims"
    if not _removable(world):
        return f"no claim of the case is supported by 1 to {MAX_SUPPORTERS} chunks of the corpus (token judge)"
    return None


FAMILY = Family(
    name="claims",
    summary="remove every chunk that supports one of the case's claims",
    relations=RELATIONS,
    perturbation_types=(RemoveClaimSupport,),
    draw=claim_removals,
    applicable=_applicable,
    edits_corpus=True,
)
