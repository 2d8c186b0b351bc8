"""Scale family: the case's world grown to thousands of chunks, where a selective filter runs candidate pools dry.

An approximate index keeps a bounded pool of candidates (pgvector's HNSW `ef_search` = 40, LanceDB's k nearest
rows before a post-filter) and filters it afterwards. On the small worlds of the other families the pool holds
every chunk (and PostgreSQL does not even use the index below a few thousand rows), so the index looks exact.
`GrowCorpus` adds generated chunks to the case's corpus until it holds `size` chunks: most belong to other
tenants and are nearer the query than anything the asking tenant owns (all the query's words and a filler word),
and `share` of them belong to the asking tenant (one query word among filler words), so the tenant's filter
admits a few percent of the corpus and every candidate near the query is another tenant's. The same growth is
drawn with a selective *metadata* filter (`by="metadata"`): the generated chunks are shared (no tenant) and carry
`grown_group`, "asked" on the few far ones and another group on the near ones, and the call asks
`grown_group="asked"` (with the case's tenant, as the application asks), so category, language or access-level
filters are judged the way tenant filters are, on cases without a tenant too.

The growth is deterministic (a seeded generator over the query's words and the shared filler vocabulary) and
nested: the world grown to n chunks is a prefix of the world grown to any larger size, so a violation is shrunk
by bisection over the grown size (the runner's `bisect_growth`), not by minimising thousands of chunks, and a
report names the composition (size, tenant share, k) and the smallest size found instead of listing the ids.

`scale.full_k` (hard) is `filtering.full_k`: the filtered call at k returns at least min(k, visible matching
chunks), the visible ones being the chunks the filter admits in the retriever's own unfiltered ranking of the
whole grown corpus. Opt-in: the family is not in the default suite; `--profile scale` runs it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import ClassVar

import attrs
import numpy as np
from hypothesis import strategies as st

from ragmorph.model import Chunk, Corpus, Filters, World
from ragmorph.relations import Call, Instance, Observation, Plan, Role, Verdict

from ._core import Family, PerturbationBase, ks_strategy, query_tokens, vocabulary
from .filtering import full_k_relation

__all__ = ["FAMILY", "GROUP_KEY", "GROWN_SIZE", "RELATIONS", "SELECTORS", "TENANT_SHARE", "GrowCorpus", "grown_chunks", "growths"]

# The grown world: thousands of chunks, past the row count from which PostgreSQL's planner uses an HNSW index
# (measured: a sequential scan at 2,000 rows, the index at 5,000), with the asking tenant owning 2% of them.
GROWN_SIZE = 5000
TENANT_SHARE = 0.02
# Other tenants owning the generated chunks the asking tenant may not see.
_OTHER_TENANTS = 3
# Filler words per generated chunk: few on the others' (near the query), many on the asking tenant's (far).
_NEAR_FILLER, _FAR_FILLER = 2, 6
# Filler words drawn from (the shortest of the shared vocabulary that share no word with the query).
_FILLER_POOL = 300
# What makes the filter selective: the asking tenant, or a metadata value (the generated chunks then are shared).
SELECTORS = ("tenant", "metadata")
GROUP_KEY, ASKED_GROUP = "grown_group", "asked"


@attrs.frozen
class GrowCorpus(PerturbationBase):
    """Grow the world to `size` chunks (`share` of the generated ones admitted by the filter `by` selects), ask
    under that filter."""

    family: ClassVar[str] = "scale"
    k: int
    size: int
    share: float = TENANT_SHARE
    by: str = attrs.field(default="tenant", validator=attrs.validators.in_(SELECTORS))

    def grown(self, world: World) -> World:
        """The world whose corpus holds the case's chunks, then generated ones up to `size` chunks."""
        count = max(0, self.size - len(world.corpus))
        added = grown_chunks(world.corpus, world.case.query, world.case.tenant, count, self.share, by=self.by)
        return attrs.evolve(world, corpus=world.corpus.with_chunks(added) if added else world.corpus)

    def base(self, world: World) -> World:
        """The grown world asked unfiltered, as deep as it has chunks: every chunk the retriever would return."""
        return self._unfiltered(self.grown(world))

    def apply(self, world: World) -> World:
        """The grown world asked at k under the case's tenant filter."""
        return self._filtered(self.grown(world))

    def plan(self, world: World) -> Plan:
        """Both calls on fresh indexes built over the grown corpus in one load (as an application builds one)."""
        grown = self.grown(world)  # once: growing builds a corpus of thousands of chunks
        # Nothing grown (no tenant, and a retriever taking no filters): the case's own index answers, no build.
        instance = Instance.FRESH if grown.corpus is not world.corpus else Instance.BASE
        return Plan(
            (Call(self._unfiltered(grown), instance, role=Role.BASE), Call(self._filtered(grown), instance, role=Role.FOLLOW))
        )

    def _unfiltered(self, grown: World) -> World:
        return attrs.evolve(grown, params=attrs.evolve(grown.params, k=max(self.k, len(grown.corpus)), filters=Filters()))

    def _filtered(self, grown: World) -> World:
        # Growing changes only the corpus, so the grown world's case is the asked one.
        metadata = {GROUP_KEY: ASKED_GROUP} if self.by == "metadata" else {}
        filters = Filters(tenant=grown.case.tenant, metadata=metadata)
        return attrs.evolve(grown, params=attrs.evolve(grown.params, k=self.k, filters=filters))

    def resized(self, size: int) -> GrowCorpus:
        """The same growth to `size` chunks (a prefix of this one's generated chunks)."""
        return attrs.evolve(self, size=size)


def _stem(corpus: Corpus) -> str:
    """An id prefix no chunk id of `corpus` starts with."""
    stem = "grown"
    while any(chunk_id.startswith(stem + "-") for chunk_id in corpus.ids):
        stem += "_"
    return stem


@functools.lru_cache(maxsize=8)
def _generated(query: str, tenant: str | None, count: int, share: float, stem: str, by: str) -> tuple[Chunk, ...]:
    words = list(dict.fromkeys(query_tokens(query)))
    filler = vocabulary().filler_for(query)[:_FILLER_POOL]
    # One seeded stream, drawn chunk by chunk in fixed amounts: the first n chunks never depend on `count`.
    rng = np.random.default_rng(len(words) * 7919 + sum(map(ord, query)))
    draws = rng.integers(0, len(filler), size=(count, _FAR_FILLER))
    owners = np.floor((np.arange(count) + 1) * share) > np.floor(np.arange(count) * share)
    others = [f"{stem}-tenant-{n}" for n in range(1, _OTHER_TENANTS + 1)]
    chunks = []
    for position in range(count):
        pick = [filler[i] for i in draws[position]]
        if owners[position]:
            # One query word among filler words: it matches (for a lexical retriever too) but sits far away.
            text, owner = " ".join([words[position % len(words)], *pick]), tenant
        else:
            text, owner = " ".join([*words, *pick[:_NEAR_FILLER]]), others[position % _OTHER_TENANTS]
        if by == "metadata":
            # Shared chunks: only the metadata value tells the admitted ones apart.
            group = ASKED_GROUP if owners[position] else owner
            chunks.append(Chunk(f"{stem}-{position}", text, source=stem, metadata={GROUP_KEY: group}))
        else:
            chunks.append(Chunk(f"{stem}-{position}", text, source=stem, tenant=owner))
    return tuple(chunks)


def grown_chunks(
    corpus: Corpus, query: str, tenant: str | None, count: int, share: float, *, by: str = "tenant"
) -> tuple[Chunk, ...]:
    """`count` generated chunks for growing `corpus` around `query` (`share` of them admitted: `tenant`'s, or of
    the asked `grown_group` when `by="metadata"`); deterministic, and a prefix of those for any larger count."""
    if count <= 0 or (by == "tenant" and tenant is None) or not query_tokens(query):
        return ()
    return _generated(query, tenant, count, share, _stem(corpus), by)


def selectors_for(world: World, *, filters: bool = True) -> tuple[str, ...]:
    """The selective filters the scale family can ask `world`'s case with: the tenant's (a case with a tenant)
    and a metadata value (a retriever taking filters)."""
    return tuple(
        by for by in SELECTORS if (by == "tenant" and world.case.tenant is not None) or (by == "metadata" and filters)
    )


def growths(world: World, *, ks: Sequence[int], filters: bool = True, **_: object) -> st.SearchStrategy[GrowCorpus]:
    """Draw a cutoff and a selective filter for the world grown to `GROWN_SIZE` chunks; shrinks toward the
    smallest k and the tenant filter."""
    size = max(GROWN_SIZE, len(world.corpus))
    by = st.sampled_from(selectors_for(world, filters=filters) or ("tenant",))
    return st.builds(lambda k, selector: GrowCorpus(k=k, size=size, by=selector), ks_strategy(ks), by)


def _explicit(world: World, *, ks: Sequence[int], filters: bool = True, **_: object) -> tuple[GrowCorpus, ...]:
    # Each selective filter once at the smallest cutoff: a pool that runs dry does so at every k.
    size = max(GROWN_SIZE, len(world.corpus))
    return tuple(GrowCorpus(k=min(ks), size=size, by=by) for by in selectors_for(world, filters=filters))


def _applicable(world: World) -> str | None:
    if not query_tokens(world.case.query):
        return "the query has no word tokens to grow chunks near it"
    return None


def _under_a_selective_filter(check: Callable[[Observation, Observation], Verdict]) -> Callable[[Observation, Observation], Verdict]:
    """`check`, not applicable when nothing was grown (a case without a tenant, a retriever taking no filters)."""

    def judged(base: Observation, follow: Observation) -> Verdict:
        if follow.world.params.filters.is_empty:
            return Verdict.not_applicable(
                "no selective filter to grow the world under: the case has no tenant and the retriever takes no filters"
            )
        return check(base, follow)

    return judged


_FULL_K = full_k_relation(
    "scale",
    source="the retriever's own unfiltered ranking of the whole grown corpus",
    applies_to=("GrowCorpus",),
    assumptions=(
        "the filter does not change whether an admitted chunk matches the query (one scored list)",
        "opt-in (`--profile scale`): builds two indexes of thousands of chunks per example",
    ),
    filter_kinds=("tenant", "metadata"),
)
RELATIONS = (attrs.evolve(_FULL_K, check=_under_a_selective_filter(_FULL_K.check)),)


FAMILY = Family(
    name="scale",
    summary=(
        f"grow the world to {GROWN_SIZE:,} chunks, {TENANT_SHARE:.0%} admitted by the asking tenant's or a metadata "
        "filter; under-return under that filter"
    ),
    relations=RELATIONS,
    draw=growths,
    explicit=_explicit,
    perturbation_types=(GrowCorpus,),
    applicable=_applicable,
    edits_corpus=True,
    max_examples=2,
    default=False,
    grows_corpus=True,
)
