"""Metric values, the one parser for their names, and the registry documenting every measure."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import attrs

from ..errors import UsageError, describe
from ..model import FrozenMap

__all__ = [
    "DEFAULT_SUPPORT_METHOD",
    "GOLD_MEASURES",
    "GOVERNANCE_MEASURES",
    "MEASURES",
    "POLICIES",
    "MeasureInfo",
    "Metric",
    "measures_markdown",
    "parse_metric",
    "parse_metrics",
    "standard_metrics",
]


@attrs.frozen
class MeasureInfo:
    """What a measure computes, its edge cases and its inputs; the CLI and docs/metrics.md are generated from these.

    `micro` says how `aggregate` pools the measure over queries (None: no natural pooled form, micro is None).
    """

    name: str
    formula: str
    edge_cases: str
    needs_corpus: bool = False
    needs_k: bool = True
    needs_judge: bool = False
    needs_support: bool = False
    # The measure's one `Measure(parameter=value)@k` parameter, its allowed values (empty: any name) and default.
    parameter: str | None = None
    choices: tuple[str, ...] = ()
    default: str | None = None
    batch: bool = False
    micro: str | None = None
    summary: str = ""


_NO_GOLD = "None when the case has no gold ids or is unanswerable (policy no_gold)."
_DUPS = "A repeated id counts once, at its first rank (policy duplicates)."

_INFOS: tuple[MeasureInfo, ...] = (
    MeasureInfo(
        "P",
        "relevant ids in the top k / k",
        f"Divides by k even when fewer than k hits were returned, as trec_eval does (policy fewer_than_k). "
        f"{_DUPS} {_NO_GOLD}",
        batch=True,
        micro="sum of relevant in top k / sum of k (equals macro over the same queries)",
        summary="precision at k (trec_eval P)",
    ),
    MeasureInfo(
        "P_ret",
        "relevant ids in the top k / hits returned in the top k",
        f"None when nothing was returned (0/0). A repeated id fills its slot but is never relevant again. "
        f"{_NO_GOLD}",
        batch=True,
        micro="sum of relevant in top k / sum of hits returned in top k",
        summary="precision over what was actually returned",
    ),
    MeasureInfo(
        "R",
        "distinct gold ids in the top k / distinct gold ids",
        f"{_DUPS} {_NO_GOLD}",
        batch=True,
        micro="sum of relevant in top k / sum of gold ids",
        summary="recall at k (trec_eval recall)",
    ),
    MeasureInfo(
        "GroupR",
        "evidence groups with at least one member in the top k / evidence groups",
        f"Equals R@k when every group has exactly one (distinct) member. {_NO_GOLD} Not in the batch path: "
        "qrels carry no groups.",
        micro="sum of covered groups / sum of groups",
        summary="evidence-group recall: alternatives within a group are interchangeable",
    ),
    MeasureInfo(
        "CP",
        "sum over relevant ranks i <= k of P@i / relevant ids in the top k",
        "Ragas context precision. 0.0 when gold exists but nothing relevant is in the top k. Moving a relevant "
        "hit above an irrelevant one never lowers it while both stay in the top k, but pulling a relevant hit "
        f"into the top k from below can lower it (the denominator grows). {_DUPS} {_NO_GOLD}",
        batch=True,
        summary="Ragas-style context precision",
    ),
    MeasureInfo(
        "AP",
        "sum over relevant ranks i <= k of P@i / distinct gold ids",
        f"trec_eval map_cut: the denominator counts every gold id, retrieved or not. {_DUPS} {_NO_GOLD}",
        batch=True,
        summary="average precision cut at k (trec_eval map_cut)",
    ),
    MeasureInfo(
        "RR",
        "1 / rank of the first relevant hit within the top k, else 0",
        f"{_NO_GOLD}",
        batch=True,
        summary="reciprocal rank cut at k",
    ),
    MeasureInfo(
        "nDCG",
        "sum over ranks i <= k of gain_i / log2(i + 1), divided by the same sum over the ideal ranking",
        "Binary gains for cases; the batch path uses the graded qrels values as gains (values <= 0 gain "
        f"nothing), exactly as trec_eval ndcg_cut. {_DUPS} {_NO_GOLD}",
        batch=True,
        summary="normalised discounted cumulative gain (trec_eval ndcg_cut)",
    ),
    MeasureInfo(
        "Hit",
        "1 when any gold id is in the top k, else 0",
        f"{_NO_GOLD}",
        batch=True,
        micro="queries with a hit / queries (equals macro)",
        summary="hit rate (success) at k",
    ),
    MeasureInfo(
        "F1",
        "2 * P@k * R@k / (P@k + R@k) = 2 * relevant in top k / (k + gold ids)",
        f"0.0 when nothing relevant is in the top k. Uses P@k (divides by k), as ranx does. {_NO_GOLD}",
        batch=True,
        micro="2 * sum of relevant in top k / (sum of k + sum of gold ids): the harmonic mean of micro P and R",
        summary="harmonic mean of P@k and R@k",
    ),
    MeasureInfo(
        "Unauthorized",
        "distinct ids in the top k whose chunk the case's tenant may not see (chunk.tenant set and != case.tenant)",
        "A count, defined for every case (0.0 when nothing returned). With case.tenant None every private "
        "chunk counts. Ids missing from the corpus are not counted (policy unknown_ids).",
        needs_corpus=True,
        micro="sum of counts / sum of distinct ids returned in the top k (a rate, not a count)",
        summary="tenant leaks in the top k",
    ),
    MeasureInfo(
        "Stale",
        "distinct ids in the top k whose superseded_by successor is in the corpus",
        "A count, defined for every case. Ids missing from the corpus are not counted (policy unknown_ids).",
        needs_corpus=True,
        micro="sum of counts / sum of distinct ids returned in the top k (a rate, not a count)",
        summary="outdated chunks whose replacement exists",
    ),
    MeasureInfo(
        "Superseded",
        "distinct ids in the top k whose chunk has superseded_by set (successor present or not)",
        "A count, defined for every case. Ids missing from the corpus are not counted (policy unknown_ids).",
        needs_corpus=True,
        micro="sum of counts / sum of distinct ids returned in the top k (a rate, not a count)",
        summary="any superseded chunk in the top k",
    ),
    MeasureInfo(
        "Dup",
        "hits in the top k that repeat an earlier hit's id or an earlier hit's exact text",
        "A count, defined for every case. Text comes from the hit, else from the corpus when one is given; a "
        "hit whose text is unknown can only repeat by id.",
        micro="sum of counts / sum of hits returned in the top k (a rate, not a count)",
        summary="duplicate ids or identical texts in the top k",
    ),
    MeasureInfo(
        "Relevance",
        "mean judge(query, text) over the distinct ids in the top k",
        "None when nothing was returned. Text comes from the hit, else from the corpus. Needs evaluate(..., "
        "judge=); judge scores must lie in [0, 1]. Stochastic judges give stochastic values.",
        needs_judge=True,
        micro="sum of judge scores / number of judged hits, pooled over queries",
        summary="context relevance from a pluggable judge",
    ),
    MeasureInfo(
        "ClaimR",
        "claims of the case supported by at least one distinct text in the top k / claims of the case",
        "None when the case has no claims (policy no_claims). The support judge is part of the name: "
        "`ClaimR@5` means `ClaimR(judge=tokens)@5`, the default token judge (a text supports a claim when it "
        "holds >= 80% of the claim's content words and every number and date exactly); `judge=embedding` and "
        "`judge=ragas` need evaluate(..., support=) with ragmorph.judges.EmbeddingSupport / RagasSupport. Text "
        "comes from the hit, else from the corpus.",
        needs_support=True,
        parameter="judge",
        default="tokens",
        micro="sum of supported claims / sum of claims",
        summary="claim recall: share of the case's claims the top-k texts support",
    ),
    MeasureInfo(
        "SpanR",
        "distinct gold ids in the top k whose supporting span survived in the final context / distinct gold ids",
        "Final-context recall. A gold id counts when its first hit in the top k keeps its span: `cover=all` (the "
        "default, `SpanR@5` means `SpanR(cover=all)@5`) needs the whole span inside the hit's kept character "
        "range, `cover=any` one character of it. A hit with no kept range (nothing packed it) keeps its whole "
        "text, and a gold id cited without a span counts whenever it is returned, so without spans or without "
        "packing SpanR@k equals R@k. The range is Hit.kept, which ContextPacker sets on what it truncates. "
        f"{_DUPS} {_NO_GOLD}",
        parameter="cover",
        choices=("all", "any"),
        default="all",
        micro="sum of gold ids whose span survived in the top k / sum of gold ids",
        summary="span-aware final-context recall: a chunk counts only when its supporting span survived packing",
    ),
    MeasureInfo(
        "EmptyOK",
        "1 when the ranking is empty, else 0; only for unanswerable cases",
        "No cutoff: the retriever's own threshold decides. None for answerable cases (policy unanswerable).",
        needs_k=False,
        micro="unanswerable queries answered with nothing / unanswerable queries (equals macro)",
        summary="an unanswerable case got no hits",
    ),
)

MEASURES: FrozenMap = FrozenMap((info.name, info) for info in _INFOS)
"""Registry: measure name -> MeasureInfo, in documentation order."""

GOLD_MEASURES: frozenset[str] = frozenset(
    {"P", "P_ret", "R", "GroupR", "CP", "AP", "RR", "nDCG", "Hit", "F1", "SpanR"}
)
"""Measures defined only for cases with gold ids (policy no_gold)."""

GOVERNANCE_MEASURES: frozenset[str] = frozenset({"Unauthorized", "Stale", "Superseded", "Dup"})
"""Counts in the top k that are defined for every case, answerable or not."""

POLICIES: FrozenMap = FrozenMap(
    {
        "fewer_than_k": "P@k divides by k even when fewer than k hits came back (trec_eval); P_ret@k divides by "
        "what came back.",
        "no_gold": "Gold-based measures (P, P_ret, R, GroupR, CP, AP, RR, nDCG, Hit, F1, SpanR) are None for a case "
        "with no gold ids or with answerable=false: never a fake 0 or 1. Such cases are scored by EmptyOK.",
        "duplicates": "A repeated id keeps its first rank; later repeats occupy their slot (they push later hits "
        "down and count in P_ret's denominator) but are never relevant again, so duplicates never add hits. "
        "Dup@k counts them.",
        "no_claims": "ClaimR is None for a case without claims, answerable or not: there is nothing to support.",
        "unanswerable": "EmptyOK is 1.0 when an unanswerable case gets an empty ranking, 0.0 otherwise, and None "
        "for answerable cases.",
        "unknown_ids": "Governance counts skip ids that are not in the corpus: nothing is known about them "
        "(adapters reject such hits before metrics run).",
        "ties": "evaluate() never re-sorts. evaluate_batch() ranks a scored run by score descending and breaks "
        "ties by doc id descending, exactly as trec_eval does.",
    }
)
"""Named edge-case policies, referenced from MeasureInfo.edge_cases and tested one by one."""

_CANONICAL = {name.lower(): name for name in MEASURES}
# ir_measures' parameter syntax, `Measure(param=value)@k`; each measure names its one parameter (MeasureInfo).
_SYNTAX = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([A-Za-z_]+)\s*=\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\))?\s*(?:@\s*(\S+))?\s*$"
)
DEFAULT_SUPPORT_METHOD = "tokens"
_PARAMETERS = frozenset(info.parameter for info in _INFOS if info.parameter is not None)


def _valid_names() -> str:
    return ", ".join(f"{name}@k" if info.needs_k else name for name, info in MEASURES.items()) + (
        ", ClaimR(judge=METHOD)@k, SpanR(cover=all|any)@k"
    )


def _check_measure(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value not in MEASURES:
        raise UsageError(f"expected a measure among {_valid_names()}; got measure={describe(value)}")


def _check_k(instance: Metric, attribute: attrs.Attribute, value: object) -> None:
    info = MEASURES[instance.measure]
    if not info.needs_k:
        if value is not None:
            raise UsageError(f"expected {info.name} without a cutoff (write {info.name!r}), got k={describe(value)}")
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(
            f"expected a positive integer cutoff for {info.name} (e.g. '{info.name}@10'), got k={describe(value)}"
        )


def _default_judge(instance: Metric) -> str | None:
    info = MEASURES.get(instance.measure)
    return DEFAULT_SUPPORT_METHOD if info is not None and info.needs_support else None


def _default_cover(instance: Metric) -> str | None:
    info = MEASURES.get(instance.measure)
    return info.default if info is not None and info.parameter == "cover" else None


def _check_cover(instance: Metric, attribute: attrs.Attribute, value: object) -> None:
    info = MEASURES[instance.measure]
    if info.parameter != "cover":
        if value is not None:
            raise UsageError(f"expected no cover for {info.name} (only SpanR takes one), got cover={describe(value)}")
        return
    if value not in info.choices:
        raise UsageError(f"expected cover to be one of {list(info.choices)} for {info.name}, got cover={describe(value)}")


def _check_judge(instance: Metric, attribute: attrs.Attribute, value: object) -> None:
    info = MEASURES[instance.measure]
    if not info.needs_support:
        if value is not None:
            raise UsageError(f"expected no judge for {info.name} (only ClaimR takes one), got judge={describe(value)}")
        return
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", value):
        raise UsageError(f"expected a support judge method such as 'tokens' or 'embedding', got judge={describe(value)}")


@attrs.frozen(order=False)
class Metric:
    """One measure at one cutoff, e.g. `Metric("nDCG", 10)`; `str(metric)` is its canonical name `nDCG@10`.

    Claim measures also name their support judge: `Metric("ClaimR", 5)` is `ClaimR(judge=tokens)@5`; span recall
    names how much of a span must survive: `Metric("SpanR", 5)` is `SpanR(cover=all)@5`.
    """

    measure: str = attrs.field(validator=_check_measure)
    k: int | None = attrs.field(default=None, validator=_check_k)
    judge: str | None = attrs.field(
        default=attrs.Factory(_default_judge, takes_self=True), validator=_check_judge, kw_only=True
    )
    cover: str | None = attrs.field(
        default=attrs.Factory(_default_cover, takes_self=True), validator=_check_cover, kw_only=True
    )

    def __str__(self) -> str:
        head = self.measure
        if self.judge is not None:
            head = f"{self.measure}(judge={self.judge})"
        elif self.cover is not None:
            head = f"{self.measure}(cover={self.cover})"
        return head if self.k is None else f"{head}@{self.k}"

    @property
    def info(self) -> MeasureInfo:
        """The registry entry of this metric's measure."""
        return MEASURES[self.measure]

    @property
    def bounds(self) -> tuple[float, float]:
        """The closed range of one query's value: counts in the top k for governance measures, else [0, 1]."""
        # Readers of saved reports check values against it: a hostile 1e308 would otherwise overflow a mean.
        if self.measure in GOVERNANCE_MEASURES:
            return (0.0, float(self.k if self.k is not None else 0))
        return (0.0, 1.0)


def parse_metric(text: str | Metric) -> Metric:
    """Parse a metric name like `P@5`, `nDCG@10`, `ClaimR(judge=embedding)@5` or `EmptyOK` (case-insensitive).

    Raises UsageError naming the text and listing the valid measures.
    """
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        raise UsageError(f"expected a metric name such as 'P@5', got {describe(text)}")
    return _parse_text(text)


@functools.lru_cache(maxsize=1024)
def _parse_text(text: str) -> Metric:
    # Cached: the runner evaluates the same few dozen names on every observation.
    match = _SYNTAX.match(text)
    measure = _CANONICAL.get(match.group(1).lower()) if match else None
    if match is None or measure is None:
        raise UsageError(f"expected a metric such as 'P@5' or 'EmptyOK' (valid: {_valid_names()}), got {text!r}")
    option: dict[str, str] = {}
    if match.group(2) is not None:
        parameter = match.group(2).lower()
        if parameter not in _PARAMETERS:
            raise UsageError(
                f"expected a parameter among {sorted(_PARAMETERS)} (e.g. 'ClaimR(judge=tokens)@5'), got {text!r}"
            )
        # The Metric validators say which measure takes which parameter.
        option = {parameter: match.group(3).lower()}
    cutoff = match.group(4)
    if cutoff is None:
        return Metric(measure, **option)
    if not cutoff.isdigit() or int(cutoff) <= 0:
        raise UsageError(f"expected a positive integer cutoff after '@' in {text!r}, e.g. '{measure}@10'")
    return Metric(measure, int(cutoff), **option)


def parse_metrics(metrics: Iterable[Metric | str] | str) -> tuple[Metric, ...]:
    """Parse several metrics (a comma-separated string or an iterable), dropping repeats, keeping order."""
    items = metrics.split(",") if isinstance(metrics, str) else metrics
    seen: dict[Metric, None] = {}
    for item in items:
        seen.setdefault(parse_metric(item), None)
    return tuple(seen)


def standard_metrics(
    ks: Iterable[int], *, governance: bool = True, claims: bool = False, spans: bool = False
) -> tuple[Metric, ...]:
    """The metrics a report shows at every cutoff in `ks`: P, R, GroupR, CP, AP, RR, nDCG, Hit, F1 (+ governance,
    + ClaimR with the default token judge when `claims`, + SpanR(cover=all) when `spans`)."""
    measures = ["P", "R", "GroupR", "CP", "AP", "RR", "nDCG", "Hit", "F1"]
    if governance:
        measures += ["Unauthorized", "Stale", "Superseded", "Dup"]
    if claims:
        measures.append("ClaimR")
    if spans:
        measures.append("SpanR")
    return tuple(Metric(measure, k) for k in ks for measure in measures) + (Metric("EmptyOK"),)


def measures_markdown() -> str:
    """The registry as a Markdown table (name, formula, edge cases, micro average) for docs/metrics.md and `--help` text."""
    lines = ["| metric | formula | edge cases | micro average |", "| --- | --- | --- | --- |"]
    for name, info in MEASURES.items():
        spelled = f"`{name}@k`" if info.needs_k else f"`{name}`"
        cells = [spelled, info.formula, info.edge_cases, info.micro or "none (micro is null)"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
