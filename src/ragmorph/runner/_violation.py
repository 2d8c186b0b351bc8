"""Typed violation records: what a shrunk failure shows, serialised to the report schemas.

`Violation` holds what every violation has (relation, case, perturbation, detail, calls spent); the retriever
runner records a `RetrieverViolation` (rankings, minimal corpus, replay file: the `violation` block of
"ragmorph.report/1"), the evaluator mode a `MetricViolation` (values and context lists of
"ragmorph.evaluator/1"). A violation reads as its JSON form (`violation["detail"]`), so callers that walk
report dicts and callers holding records see the same thing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from ..errors import RagmorphError
from ..relations import Observation
from ..secrets import clip

__all__ = ["MetricViolation", "RetrieverViolation", "Violation", "observation_dict", "perturbation_dict"]

_TEXT_SNIPPET = 160


@attrs.frozen(eq=False)
class Violation(Mapping[str, Any]):
    """A shrunk violation of one relation: the relation, the case, the minimal perturbation, the calls it cost."""

    relation: str
    case: str
    query: str
    perturbation: Mapping[str, Any]
    detail: str
    calls_to_first_failure: int
    calls_shrinking: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the common head, the subclass's evidence, the calls spent, then any trailer."""
        return {
            "relation": self.relation,
            "case": self.case,
            "query": self.query,
            "perturbation": dict(self.perturbation),
            "detail": self.detail,
            **self._evidence(),
            "calls_to_first_failure": self.calls_to_first_failure,
            "calls_shrinking": self.calls_shrinking,
            **self._trailer(),
        }

    def _evidence(self) -> dict[str, Any]:
        return {}

    def _trailer(self) -> dict[str, Any]:
        return {}

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


@attrs.frozen(eq=False)
class RetrieverViolation(Violation):
    """A violation found against a retriever: both observations, the minimal corpus and the replay file."""

    base: Mapping[str, Any]
    follow_up: Mapping[str, Any]
    minimal_corpus: tuple[Mapping[str, Any], ...]
    # What renderers mark in the ranking diff: gold evidence, and the ids the perturbation added or removed.
    evidence: tuple[tuple[str, ...], ...]
    injected: tuple[str, ...]
    removed: tuple[str, ...]
    one_minimal: bool | None
    minimal_reason: str | None
    # The follow-up ids that break the relation, when it names them (renderers highlight their rows).
    culprits: tuple[str, ...] = ()
    replay: str | None = None
    # For a retriever declared as a Pipeline: which stage first breaks the relation on the minimal case, and how
    # (StageAttribution.to_dict()); None otherwise, and then the JSON block has no `stages` key.
    stages: Mapping[str, Any] | None = None

    def _evidence(self) -> dict[str, Any]:
        # The `violation` block of a "ragmorph.report/1" result.
        return {
            "base": dict(self.base),
            "follow_up": dict(self.follow_up),
            "minimal_corpus": [dict(c) for c in self.minimal_corpus],
            "evidence": [list(group) for group in self.evidence],
            "injected": list(self.injected),
            "removed": list(self.removed),
            "one_minimal": self.one_minimal,
            "minimal_reason": self.minimal_reason,
            "culprits": list(self.culprits),
        }

    def _trailer(self) -> dict[str, Any]:
        return {"replay": self.replay, **({} if self.stages is None else {"stages": dict(self.stages)})}


@attrs.frozen(eq=False)
class MetricViolation(Violation):
    """A violation found against a metric or judge (evaluator mode): its values and the two context lists."""

    before: float | None
    after: float | None
    base_contexts: tuple[str, ...]
    follow_up_contexts: tuple[str, ...]

    def _evidence(self) -> dict[str, Any]:
        # The `violation` block of a "ragmorph.evaluator/1" result.
        return {
            "before": self.before,
            "after": self.after,
            "base_contexts": list(self.base_contexts),
            "follow_up_contexts": list(self.follow_up_contexts),
        }


def perturbation_dict(perturbation: Any) -> dict[str, Any]:
    """`{"type", "repr", "fields"}` of a perturbation (fields in their JSON encoding)."""
    return {"type": type(perturbation).__name__, "repr": repr(perturbation), "fields": perturbation.to_dict()["fields"]}


def _metric_values(observation: Observation, names: Sequence[str]) -> dict[str, float | None]:
    # The executor attached the metrics; a value that cannot be computed (an id the corpus no longer holds)
    # leaves the block empty rather than half-filled.
    try:
        return {name: observation.metrics[name] for name in names}
    except (RagmorphError, KeyError):
        return {}


def observation_dict(observation: Observation) -> dict[str, Any]:
    """The `base`/`follow_up` block of a violation: params, ranking with text snippets, metric values."""
    corpus = observation.world.corpus
    k = observation.world.params.k
    ranking = []
    for hit in observation.ranking.hits:
        chunk = corpus.get(hit.id)
        text = hit.text if hit.text is not None else (chunk.text if chunk is not None else None)
        row = {"id": hit.id, "score": hit.score, "text": None if text is None else clip(text, _TEXT_SNIPPET, "")}
        if hit.kept is not None:
            row["kept"] = list(hit.kept)  # a packing stage cut this hit's text to that character range
        ranking.append(row)
    names = [f"P@{k}", f"R@{k}", f"GroupR@{k}", f"nDCG@{k}", f"Unauthorized@{k}", f"Stale@{k}"]
    if observation.world.case.spans:
        names.append(f"SpanR(cover=all)@{k}")  # final-context recall: were the supporting spans kept?
    block = {
        "params": {"k": k, "filters": observation.world.params.filters.to_dict()},
        "query": observation.world.case.query,
        "ranking": ranking,
        "metrics": {} if observation.invalid is not None else _metric_values(observation, names),
    }
    if observation.invalid is not None:
        block["invalid"] = observation.invalid
    return block
