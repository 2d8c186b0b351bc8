"""Stage attribution: when a relation fails on a declared Pipeline, run its minimal case on each prefix and name the
first stage that breaks it, and, when evidence was lost there, how (dropped, or cut by a packer before its span).

One implementation serves the runner (every violation found on a Pipeline carries it) and `ragmorph replay FILE
--stages` / `attribute_stages(FILE, pipeline)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..adapters import Pipeline, whitespace_tokens
from ..errors import UsageError, describe
from ..model import Hit
from ..relations import Observation
from ._replay import Replayable, ReplayOutcome, read_replayable, run_replayable
from ._spec import RetrieverSpec

__all__ = ["StageAttribution", "attribute", "attribute_stages"]


@attrs.frozen
class StageAttribution:
    """Which prefix of a pipeline first reproduces a violation.

    `outcomes[i]` is the run on the retriever and its first i stages; `broken_at` is the index into `stages` of
    the first stage whose prefix reproduces the violation (0: the retriever itself), or None when no prefix
    reproduces it (not even the whole pipeline: the bug is gone, or needs more than the minimal world). `lost`
    says how that stage lost evidence the prefix before it still had (None when it lost none).
    """

    stages: tuple[str, ...]
    outcomes: tuple[ReplayOutcome, ...]
    broken_at: int | None
    lost: str | None = None

    @property
    def culprit(self) -> str | None:
        """The name of the first stage that breaks the relation (None when no prefix does)."""
        return None if self.broken_at is None else self.stages[self.broken_at]

    @property
    def detail(self) -> str:
        """One sentence: where the relation (or the evidence) still held, which stage broke it, and how."""
        if self.broken_at is None:
            return f"no prefix of {' -> '.join(self.stages)} reproduces the violation"
        culprit = self.stages[self.broken_at]
        reason = self.outcomes[self.broken_at].detail
        if self.broken_at == 0:
            return f"already broken by the retriever {culprit}, before any stage: {reason}"
        if self.lost is not None:
            return f"evidence present after {self.stages[self.broken_at - 1]}, {self.lost}"
        return f"holds after {self.stages[self.broken_at - 1]}, broken in {culprit}: {reason}"

    def to_dict(self) -> dict[str, Any]:
        """The `stages` block of a violation: the stage names, each prefix run, which broke it, and the sentence."""
        return {
            "stages": list(self.stages),
            "prefixes": [
                {"up_to": name, "reproduced": outcome.reproduced, "detail": outcome.error or outcome.detail}
                for name, outcome in zip(self.stages, self.outcomes)
            ],
            "broken_at": self.broken_at,
            "culprit": self.culprit,
            "detail": self.detail,
        }


def _first_hit(observation: Observation, chunk_id: str) -> Hit | None:
    return next((hit for hit in observation.ranking.hits if hit.id == chunk_id), None)


def _packed_tokens(observation: Observation, upto: Hit, count: Any) -> int:
    """Tokens of the final context up to and including `upto` (texts from the hits, else the corpus)."""
    used = 0
    for hit in observation.ranking.hits:
        chunk = observation.world.corpus.get(hit.id)
        text = hit.text if hit.text is not None else (chunk.text if chunk is not None else "")
        used += count(text)
        if hit is upto:
            break
    return used


def _lost(before: Observation, after: Observation, stage: Any, name: str) -> str | None:
    """How `stage` lost a gold chunk (or its supporting span) that `before` still had, in words; None if it did not."""
    case = after.world.case
    for chunk_id in case.gold_ids:
        span = case.spans.get(chunk_id)
        had = _first_hit(before, chunk_id)
        if had is None or not had.keeps(span):
            continue
        now = _first_hit(after, chunk_id)
        if now is None:
            return f"dropped by {name}: gold chunk {chunk_id!r} is not in its output at k={after.world.params.k}"
        if span is None or now.kept is None or now.keeps(span):
            continue  # (a hit without a kept range, or a gold chunk without a span, keeps everything)
        end = now.kept[1]
        budget = getattr(stage, "token_budget", None)
        count = getattr(stage, "count_tokens", whitespace_tokens)
        where = (
            f"before its supporting span, which starts at character {span[0]}"
            if end <= span[0]
            else f"inside its supporting span [{span[0]}, {span[1]}), which starts at character {span[0]}"
        )
        if budget is None:
            return f"lost in {name}: {chunk_id!r} truncated at character {end} {where}"
        used = _packed_tokens(after, now, count)
        return (
            f"lost in {name}: {chunk_id!r} truncated at {used} tokens of context (token budget {budget}) {where} "
            f"(the packed text ends at character {end})"
        )
    return None


def attribute(
    spec: RetrieverSpec, pipeline: Pipeline, found: Replayable, *, last: ReplayOutcome | None = None
) -> StageAttribution:
    """Run `found` on every prefix of `pipeline`, shortest first, and return where it first reproduces.

    Each prefix is built fresh by the pipeline (a factory) over the minimal world, named after `spec`. `last`,
    when given, is the outcome already known for the whole pipeline (the runner's own minimal probe).
    """
    outcomes: list[ReplayOutcome] = []
    broken_at = None
    count = len(pipeline.stages)
    for index in range(count):
        if index == count - 1 and last is not None:
            outcome = last
        else:
            prefix = RetrieverSpec(f"{spec.name} up to {pipeline.names[index]}", pipeline.prefix(index), spec.traits)
            outcome = run_replayable(prefix, found)
        outcomes.append(outcome)
        if outcome.reproduced:
            broken_at = index
            break
    lost = None
    if broken_at:
        before, after = outcomes[broken_at - 1].probe, outcomes[broken_at].probe
        if before is not None and after is not None:
            lost = _lost(before.follow, after.follow, pipeline.stages[broken_at], pipeline.names[broken_at])
    return StageAttribution(stages=pipeline.names, outcomes=tuple(outcomes), broken_at=broken_at, lost=lost)


def attribute_stages(path: str | Path, pipeline: Pipeline) -> StageAttribution:
    """Replay the violation saved at `path` on every prefix of `pipeline`, shortest first, and return where it
    first reproduces. Each prefix is built fresh by the pipeline (a factory), over the replay's minimal world."""
    if not isinstance(pipeline, Pipeline):
        raise UsageError(f"expected a ragmorph.adapters.Pipeline, got pipeline={describe(pipeline)}")
    found, stored = read_replayable(path)
    traits: Sequence[str] = stored.get("traits", ())
    spec = RetrieverSpec(stored.get("name") or repr(pipeline), pipeline, tuple(traits))
    return attribute(spec, pipeline, found)
