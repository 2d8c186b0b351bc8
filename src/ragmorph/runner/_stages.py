"""Stage attribution: when a relation fails on a declared Pipeline, replay it on each prefix and name the first
stage that breaks it."""

from __future__ import annotations

from pathlib import Path
import attrs

from ..adapters import Pipeline
from ..errors import UsageError, describe
from ._replay import ReplayOutcome, replay

__all__ = ["StageAttribution", "attribute_stages"]


@attrs.frozen
class StageAttribution:
    """Which prefix of a pipeline first reproduces a violation.

    `outcomes[i]` is the replay on the retriever and its first i stages; `broken_at` is the index into
    `stages` of the first stage whose prefix reproduces the violation (0: the retriever itself), or None when no
    prefix reproduces it (not even the whole pipeline: the bug is gone, or needs more than the minimal world).
    """

    stages: tuple[str, ...]
    outcomes: tuple[ReplayOutcome, ...]
    broken_at: int | None

    @property
    def detail(self) -> str:
        """One sentence: where the relation still held and which stage broke it, with the replay's reason."""
        if self.broken_at is None:
            return f"no prefix of {' -> '.join(self.stages)} reproduces the violation"
        culprit = self.stages[self.broken_at]
        reason = self.outcomes[self.broken_at].detail
        if self.broken_at == 0:
            return f"already broken by the retriever {culprit}, before any stage: {reason}"
        return f"holds after {self.stages[self.broken_at - 1]}, broken in {culprit}: {reason}"


def attribute_stages(path: str | Path, pipeline: Pipeline) -> StageAttribution:
    """Replay the violation saved at `path` on every prefix of `pipeline`, shortest first, and return where it
    first reproduces. Each prefix is built fresh by the pipeline (a factory), over the replay's minimal world."""
    if not isinstance(pipeline, Pipeline):
        raise UsageError(f"expected a ragmorph.adapters.Pipeline, got pipeline={describe(pipeline)}")
    outcomes: list[ReplayOutcome] = []
    broken_at = None
    for index in range(len(pipeline.stages)):
        outcome = replay(path, retriever=pipeline.prefix(index))
        outcomes.append(outcome)
        if outcome.reproduced:
            broken_at = index
            break
    return StageAttribution(stages=pipeline.names, outcomes=tuple(outcomes), broken_at=broken_at)
