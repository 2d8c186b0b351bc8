"""Context-relevance judges: a one-method protocol and label, lexical, embedding and Ragas-backed judges.

A judge answers `score(query, text) -> float in [0, 1]`: how relevant `text` is to `query`. Judges that give
different answers to the same question (an LLM at temperature > 0, a sampled ensemble) set `stochastic = True`;
relations over them are checked by repeated comparison with a binomial test (see `ragmorph.evaluator`).

`RagasContextMetric` wraps Ragas' non-LLM context metrics (precision and recall over a ranked context list), the
metric-shaped counterpart of `RagasJudge`. Both run offline: no LLM, no API key.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import types
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .adapters import default_tokenize
from .adapters.embedders import CachedEmbedder, Embedder, HashingEmbedder
from .errors import AdapterError, UsageError, describe
from .metrics import TokenSupport
from .model import Case, Chunk, Corpus

__all__ = [
    "EmbeddingJudge",
    "EmbeddingSupport",
    "Judge",
    "LabelJudge",
    "LexicalJudge",
    "RAGAS_CONTEXT_METRICS",
    "RagasContextMetric",
    "RagasJudge",
    "RagasSupport",
    "SUPPORT_JUDGES",
    "is_stochastic",
    "judge_score",
]

def _tokens(text: str) -> set[str]:
    return set(default_tokenize(text))


@runtime_checkable
class Judge(Protocol):
    """Anything that scores the relevance of `text` to `query` in [0, 1] (1 = relevant)."""

    def score(self, query: str, text: str) -> float:
        """Relevance of `text` to `query`, in [0, 1]."""
        ...


def is_stochastic(judge: Judge) -> bool:
    """Whether `judge` declares that repeated calls may disagree (`stochastic = True`); False when undeclared."""
    return bool(getattr(judge, "stochastic", False))


def judge_score(judge: Judge, query: str, text: str) -> float:
    """Call `judge.score` and check the contract: a finite number in [0, 1], else AdapterError naming the value."""
    value = judge.score(query, text)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise AdapterError(
            f"expected the judge {type(judge).__name__} to return a number in [0, 1], got score={describe(value)}",
            query=query,
            excerpt=text[:80],
        )
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise AdapterError(
            f"expected the judge {type(judge).__name__} to return a number in [0, 1], got score={value!r}; "
            "clip or rescale its output",
            query=query,
            excerpt=text[:80],
        )
    return value


class LabelJudge:
    """Relevance from gold labels: 1 for the text of a chunk named by the case's evidence, else 0.

    Takes the case and the corpus holding its gold chunks; a text counts as gold when it equals a gold chunk's
    text exactly (judges see text, not ids). `score_id` answers from the id directly.
    """

    stochastic = False

    def __init__(self, case: Case, corpus: Corpus | Mapping[str, Chunk]) -> None:
        missing = [chunk_id for chunk_id in case.gold_ids if corpus.get(chunk_id) is None]
        if missing:
            raise UsageError(
                f"expected the corpus to hold every gold chunk of case {case.id!r}, got missing ids {missing[:5]}"
            )
        self.case = case
        self.gold_ids = frozenset(case.gold_ids)
        self.gold_texts = frozenset(corpus[chunk_id].text for chunk_id in case.gold_ids)

    def __repr__(self) -> str:
        return f"LabelJudge(case={self.case.id!r}, gold={len(self.gold_ids)})"

    def score(self, query: str, text: str) -> float:
        """1.0 when `text` is the text of a gold chunk of the case, else 0.0 (`query` is not consulted)."""
        return 1.0 if text in self.gold_texts else 0.0

    def score_id(self, chunk_id: str) -> float:
        """1.0 when `chunk_id` is a gold id of the case, else 0.0."""
        return 1.0 if chunk_id in self.gold_ids else 0.0


class LexicalJudge:
    """Token overlap: the share of the query's distinct word tokens that occur in the text.

    Tokens are casefolded runs of word characters. A query with no tokens scores 0.0 against every text (there
    is nothing to be relevant to). Symmetric in nothing: extra words in the text never lower the score.
    """

    stochastic = False

    def __repr__(self) -> str:
        return "LexicalJudge()"

    def score(self, query: str, text: str) -> float:
        """|query tokens ∩ text tokens| / |query tokens|, 0.0 for a query without tokens."""
        wanted = _tokens(query)
        if not wanted:
            return 0.0
        return len(wanted & _tokens(text)) / len(wanted)


class EmbeddingJudge:
    """Cosine similarity of query and text embeddings, clipped at 0 (opposite directions are just irrelevant).

    Defaults to the deterministic `HashingEmbedder`; pass `MiniLMEmbedder()` for real sentence embeddings.
    Embeddings are cached by text, so repeated judging of the same contexts embeds them once.
    """

    stochastic = False

    def __init__(self, embedder: Embedder | None = None) -> None:
        inner = embedder if embedder is not None else HashingEmbedder()
        if not callable(getattr(inner, "embed", None)):
            raise UsageError(f"expected an embedder with an embed(texts) method, got embedder={describe(inner)}")
        self.embedder = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(inner)

    def __repr__(self) -> str:
        return f"EmbeddingJudge({self.embedder.inner!r})"

    def score(self, query: str, text: str) -> float:
        """max(0, cosine(embed(query), embed(text)))."""
        rows = self.embedder.embed([query, text])
        cosine = float(np.dot(rows[0], rows[1]))
        # float32 rounding can push a perfect match a hair above 1.
        return min(1.0, max(0.0, cosine))


def _check_support_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < float(threshold) <= 1.0:
        raise UsageError(f"expected a threshold in (0, 1], got threshold={describe(threshold)}")
    return float(threshold)


class EmbeddingSupport:
    """Claim support for `ClaimR(judge=embedding)@k`: cosine(claim, text) >= `threshold`, by an `EmbeddingJudge`.

    The default `HashingEmbedder` measures word overlap more than meaning; pass `MiniLMEmbedder()` for real
    sentence embeddings. Unlike the token judge, it does not check numbers and dates exactly.
    """

    method = "embedding"

    def __init__(self, embedder: Embedder | None = None, *, threshold: float = 0.7) -> None:
        self.threshold = _check_support_threshold(threshold)
        self.judge = EmbeddingJudge(embedder)

    def __repr__(self) -> str:
        return f"EmbeddingSupport({self.judge.embedder.inner!r}, threshold={self.threshold})"

    def supports(self, claim: str, text: str) -> bool:
        """Whether the claim and the text embed at least `threshold` apart in cosine similarity."""
        return judge_score(self.judge, claim, text) >= self.threshold


class RagasSupport:
    """Claim support for `ClaimR(judge=ragas)@k`: Ragas' non-LLM string similarity of the claim to the text.

    A `RagasJudge` whose one reference is the claim; the text supports the claim when the similarity is at
    least `threshold`. Edit distance punishes a long text for holding more than the claim, so this suits
    claims that quote their chunk closely (Ragas' own context recall uses it on whole reference contexts).
    """

    method = "ragas"

    def __init__(self, *, distance: str = "levenshtein", threshold: float = 0.5) -> None:
        self.threshold = _check_support_threshold(threshold)
        self.distance = distance
        self._judges: dict[str, RagasJudge] = {}
        RagasJudge(["probe"], distance=distance)  # fail now, not mid-run, when ragas or the distance is wrong

    def __repr__(self) -> str:
        return f"RagasSupport(distance={self.distance!r}, threshold={self.threshold})"

    def supports(self, claim: str, text: str) -> bool:
        """Whether Ragas rates the text at least `threshold` similar to the claim."""
        judge = self._judges.get(claim)
        if judge is None:
            judge = self._judges[claim] = RagasJudge([claim], distance=self.distance)
        return judge_score(judge, claim, text) >= self.threshold


SUPPORT_JUDGES: dict[str, Any] = {"tokens": TokenSupport, "embedding": EmbeddingSupport, "ragas": RagasSupport}
"""Support judge method -> class, for `--claims-judge` style options."""


_RAGAS_LOADED: dict[str, Any] = {}


def _shim_removed_vertexai_module() -> None:
    """Let ragas 0.4.3 import with langchain-community 0.4, which removed `chat_models.vertexai`.

    Ragas imports ChatVertexAI only for its LLM wrappers, never for the non-LLM metrics used here, so an empty
    stand-in module is enough; nothing is replaced when the real module exists.
    """
    name = "langchain_community.chat_models.vertexai"
    if name in sys.modules or importlib.util.find_spec("langchain_community") is None:
        return
    try:
        importlib.import_module(name)
    except ImportError:
        shim = types.ModuleType(name)
        shim.ChatVertexAI = type("ChatVertexAI", (), {})  # type: ignore[attr-defined]
        sys.modules[name] = shim


def _load_ragas() -> Any:
    """Import ragas offline, once; UsageError saying what to install when it is missing."""
    if "metrics" in _RAGAS_LOADED:
        return _RAGAS_LOADED["metrics"]
    # Ragas posts usage analytics unless told not to; there is no network here and tests must not try.
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            _shim_removed_vertexai_module()
            from ragas import SingleTurnSample
            from ragas.metrics import (
                IDBasedContextPrecision,
                IDBasedContextRecall,
                NonLLMContextPrecisionWithReference,
                NonLLMContextRecall,
                NonLLMStringSimilarity,
            )
            from ragas.metrics._string import DistanceMeasure
    except ImportError as error:
        raise UsageError(
            f"expected the packages ragas and rapidfuzz for the Ragas judges, got ImportError: {error}; "
            "install them with `pip install ragas rapidfuzz`"
        ) from error
    loaded = types.SimpleNamespace(
        SingleTurnSample=SingleTurnSample,
        NonLLMStringSimilarity=NonLLMStringSimilarity,
        DistanceMeasure=DistanceMeasure,
        metrics={
            "non_llm_context_precision": NonLLMContextPrecisionWithReference,
            "non_llm_context_recall": NonLLMContextRecall,
            "id_context_precision": IDBasedContextPrecision,
            "id_context_recall": IDBasedContextRecall,
        },
    )
    _RAGAS_LOADED["metrics"] = loaded
    return loaded


class RagasJudge:
    """Ragas' non-LLM string similarity (1 - normalised edit distance) of a text to its closest reference context.

    This is exactly the per-context similarity Ragas' `NonLLMContextPrecisionWithReference` thresholds; the
    references are the texts that should have been retrieved (`RagasJudge.for_case` takes the gold chunks).
    `distance` is one of Ragas' measures: levenshtein, hamming, jaro, jaro_winkler.
    """

    stochastic = False

    def __init__(self, reference_contexts: Sequence[str], *, distance: str = "levenshtein") -> None:
        if isinstance(reference_contexts, str) or not reference_contexts:
            raise UsageError(
                f"expected a non-empty list of reference texts, got reference_contexts={describe(reference_contexts)}"
            )
        ragas = _load_ragas()
        measures = {member.value: member for member in ragas.DistanceMeasure}
        if distance not in measures:
            raise UsageError(f"expected distance in {sorted(measures)}, got distance={describe(distance)}")
        self.references = tuple(reference_contexts)
        self.distance = distance
        self._similarity = ragas.NonLLMStringSimilarity(distance_measure=measures[distance])
        self._sample = ragas.SingleTurnSample

    @classmethod
    def for_case(cls, case: Case, corpus: Corpus, *, distance: str = "levenshtein") -> RagasJudge:
        """A judge whose references are the texts of the case's gold chunks."""
        return cls([corpus[chunk_id].text for chunk_id in case.gold_ids], distance=distance)

    def __repr__(self) -> str:
        return f"RagasJudge(references={len(self.references)}, distance={self.distance!r})"

    def score(self, query: str, text: str) -> float:
        """The highest Ragas string similarity of `text` to any reference (`query` is not consulted)."""
        best = 0.0
        for reference in self.references:
            sample = self._sample(reference=text, response=reference)
            best = max(best, float(self._similarity.single_turn_score(sample)))
        return min(1.0, max(0.0, best))


# name -> (Ragas metric, whether it is a precision or a recall: which relations apply).
RAGAS_CONTEXT_METRICS: dict[str, str] = {
    "non_llm_context_precision": "precision",
    "non_llm_context_recall": "recall",
    "id_context_precision": "precision",
    "id_context_recall": "recall",
}


class RagasContextMetric:
    """One of Ragas' non-LLM context metrics over a ranked context list, as `metric(case, contexts) -> float`.

    `non_llm_context_precision` / `non_llm_context_recall` compare texts (string similarity >= `threshold`
    counts as a match); `id_context_precision` / `id_context_recall` compare ids. The references are the case's
    gold chunks, taken from `references` (chunks) when the metric is called. Returns None where Ragas returns
    NaN (nothing retrieved).
    """

    def __init__(self, name: str, *, threshold: float = 0.5) -> None:
        if name not in RAGAS_CONTEXT_METRICS:
            raise UsageError(f"expected a metric name in {sorted(RAGAS_CONTEXT_METRICS)}, got name={describe(name)}")
        ragas = _load_ragas()
        cls = ragas.metrics[name]
        self.name = name
        self.kind = RAGAS_CONTEXT_METRICS[name]
        self._metric = cls(threshold=threshold) if name.startswith("non_llm") else cls()
        self._sample = ragas.SingleTurnSample

    def __repr__(self) -> str:
        return f"RagasContextMetric({self.name!r})"

    def __call__(self, case: Case, contexts: Sequence[Chunk], references: Sequence[Chunk]) -> float | None:
        """The Ragas score of `contexts` (best first) against `references` (the gold chunks)."""
        if not contexts or not references:
            return None
        sample = self._sample(
            user_input=case.query,
            retrieved_contexts=[chunk.text for chunk in contexts],
            retrieved_context_ids=[chunk.id for chunk in contexts],
            reference_contexts=[chunk.text for chunk in references],
            reference_context_ids=[chunk.id for chunk in references],
        )
        value = float(self._metric.single_turn_score(sample))
        return None if math.isnan(value) else value
