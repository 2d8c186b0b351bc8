"""Vectorised metrics over many rankings given as plain dicts (TREC-style run and qrels).

The cost of batch evaluation is walking Python dicts, so every per-document step runs in C: the scores of all
rankings are flattened with one `np.fromiter`, and only the judged relevant documents (a few per query) are
looked up one by one. A relevant document's rank is the number of documents of its query that score higher,
plus, on an exact tie, the tied documents with a larger id (trec_eval's tie order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

import numpy as np

from ..errors import UsageError, describe
from ._names import MEASURES, Metric, parse_metrics
from ._single import QueryScores

__all__ = ["BatchResult", "evaluate_batch"]

# Rows of the padded score matrix compared at once; bounds the temporary to about 40 MB at depth 100.
_BLOCK_ROWS = 50_000


class BatchResult(dict):  # type: ignore[type-arg]
    """Metric name -> float64 array over `query_ids` (NaN where the metric is undefined, i.e. None)."""

    def __init__(
        self,
        arrays: Mapping[str, np.ndarray],
        *,
        query_ids: Sequence[str],
        parts: Mapping[str, tuple[np.ndarray, np.ndarray]],
        gold_ids: np.ndarray,
        returned_ids: np.ndarray,
    ) -> None:
        super().__init__(arrays)
        self.query_ids: tuple[str, ...] = tuple(query_ids)
        self.parts = dict(parts)
        self.gold_ids = gold_ids
        self.returned_ids = returned_ids

    def per_query(self, tags: Mapping[str, Sequence[str]] | None = None) -> dict[str, QueryScores]:
        """The same numbers as `{qid: QueryScores}` (NaN -> None), ready for `aggregate`."""
        tags = tags or {}
        names = list(self)
        columns = [self[name].tolist() for name in names]
        part_columns = {name: (num.tolist(), den.tolist()) for name, (num, den) in self.parts.items()}
        gold = self.gold_ids.tolist()
        returned = self.returned_ids.tolist()
        result: dict[str, QueryScores] = {}
        for row, qid in enumerate(self.query_ids):
            values = {name: (None if column[row] != column[row] else column[row]) for name, column in zip(names, columns)}
            parts = {
                name: (num[row], den[row]) for name, (num, den) in part_columns.items() if values[name] is not None
            }
            result[qid] = QueryScores(
                values, parts=parts, gold_ids=gold[row], returned_ids=returned[row], tags=tags.get(qid, ())
            )
        return result


class _Judged:
    """The relevant documents found in the run: their query row, 0-based rank and gain, sorted by (row, rank)."""

    def __init__(self, rows: np.ndarray, ranks: np.ndarray, gains: np.ndarray) -> None:
        order = np.lexsort((ranks, rows))
        self.rows = rows[order]
        self.ranks = ranks[order]
        self.gains = gains[order]
        # 1-based position of each found document among its query's found documents.
        starts = np.searchsorted(self.rows, self.rows, side="left")
        self.nth = np.arange(1, len(self.rows) + 1) - starts


def _positive_judgements(qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str]) -> list[list[tuple[str, float]]]:
    judged = []
    for qid in qids:
        levels = qrels.get(qid)
        if not levels:
            judged.append([])
            continue
        if not isinstance(levels, Mapping):
            raise UsageError(f"expected qrels[{qid!r}] to map doc ids to relevance levels, got {describe(levels)}")
        judged.append([(doc, float(level)) for doc, level in levels.items() if level > 0])
    return judged


def _scored_ranks(
    maps: list[Mapping[str, float]], judged: list[list[tuple[str, float]]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ranks of the relevant documents in score-ordered runs; also returns each query's length."""
    count = len(maps)
    lengths = np.fromiter(map(len, maps), dtype=np.int64, count=count)
    total = int(lengths.sum())
    scores = np.fromiter(chain.from_iterable([m.values() for m in maps]), dtype=np.float64, count=total)
    if np.isnan(scores).any():
        raise UsageError("expected numeric scores in the run, got NaN; drop or fix those entries")
    width = int(lengths.max()) if count else 0
    uniform = count > 0 and bool((lengths == width).all())
    if uniform:
        matrix = scores.reshape(count, width)
    else:
        matrix = np.full((count, max(width, 1)), -np.inf)
        rows = np.repeat(np.arange(count), lengths)
        columns = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        matrix[rows, columns] = scores

    rows_found: list[int] = []
    scores_found: list[float] = []
    gains_found: list[float] = []
    docs_found: list[str] = []
    for row, (ranking, positives) in enumerate(zip(maps, judged)):
        for doc, gain in positives:
            score = ranking.get(doc)
            if score is not None:
                rows_found.append(row)
                scores_found.append(score)
                gains_found.append(gain)
                docs_found.append(doc)
    found_rows = np.asarray(rows_found, dtype=np.int64)
    found_scores = np.asarray(scores_found, dtype=np.float64)
    ranks = np.empty(len(found_rows), dtype=np.int64)
    tied = np.zeros(len(found_rows), dtype=bool)
    for start in range(0, len(found_rows), _BLOCK_ROWS):
        block = slice(start, start + _BLOCK_ROWS)
        candidates = matrix[found_rows[block]]
        target = found_scores[block, None]
        ranks[block] = (candidates > target).sum(axis=1)
        equal = candidates == target
        if not uniform:
            equal &= np.arange(matrix.shape[1]) < lengths[found_rows[block], None]
        tied[block] = equal.sum(axis=1) > 1
    for index in np.flatnonzero(tied).tolist():
        # trec_eval orders equal scores by doc id, descending: larger ids come first.
        doc, score = docs_found[index], scores_found[index]
        ranks[index] += sum(1 for other, value in maps[rows_found[index]].items() if value == score and other > doc)
    return found_rows, ranks, np.asarray(gains_found, dtype=np.float64), lengths


def _listed_ranks(
    lists: list[Sequence[str]], judged: list[list[tuple[str, float]]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ranks of the relevant documents in ranked id lists (first occurrence of a repeated id counts)."""
    rows_found: list[int] = []
    ranks: list[int] = []
    gains: list[float] = []
    for row, (ranking, positives) in enumerate(zip(lists, judged)):
        for doc, gain in positives:
            try:
                rank = ranking.index(doc)
            except ValueError:
                continue
            rows_found.append(row)
            ranks.append(rank)
            gains.append(gain)
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    return (
        np.asarray(rows_found, dtype=np.int64),
        np.asarray(ranks, dtype=np.int64),
        np.asarray(gains, dtype=np.float64),
        lengths,
    )


def _ideal_dcg(judged: list[list[tuple[str, float]]], ks: Iterable[int]) -> dict[int, np.ndarray]:
    count = len(judged)
    sizes = np.fromiter(map(len, judged), dtype=np.int64, count=count)
    gains = np.fromiter((gain for positives in judged for _doc, gain in positives), dtype=np.float64, count=int(sizes.sum()))
    rows = np.repeat(np.arange(count), sizes)
    order = np.lexsort((-gains, rows))
    gains, rows = gains[order], rows[order]
    positions = np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    discounted = gains / np.log2(positions + 2.0)
    return {k: np.bincount(rows[positions < k], weights=discounted[positions < k], minlength=count) for k in ks}


def _run_kind(run: Mapping[str, object]) -> str:
    for value in run.values():
        if isinstance(value, Mapping):
            return "scored"
        if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
            return "listed"
        raise UsageError(
            f"expected run values to be {{doc_id: score}} dicts or lists of doc ids, got {describe(value)}"
        )
    return "scored"


def evaluate_batch(
    run: Mapping[str, Mapping[str, float]] | Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Iterable[Metric | str] | str,
) -> BatchResult:
    """Evaluate many rankings at once: `{"P@10": array([...]), ...}` over `result.query_ids`.

    `run` maps query id -> {doc_id: score} (ranked by score descending, ties by doc id descending as in
    trec_eval) or query id -> ranked doc ids. `qrels` maps query id -> {doc_id: level}; level > 0 is relevant
    and is the nDCG gain. Queries come in run order, then qrels queries missing from the run, scored as empty
    rankings. NaN marks undefined values (queries without a relevant document, policy no_gold).
    Agrees exactly with `evaluate()` on binary qrels.
    """
    parsed = parse_metrics(metrics)
    unsupported = [str(m) for m in parsed if not MEASURES[m.measure].batch]
    if unsupported:
        valid = ", ".join(f"{name}@k" for name, info in MEASURES.items() if info.batch)
        raise UsageError(
            f"expected metrics the batch path supports ({valid}), got {unsupported}; "
            "use evaluate() with cases and a corpus for the others"
        )
    if not isinstance(run, Mapping) or not isinstance(qrels, Mapping):
        raise UsageError(f"expected run and qrels as dicts keyed by query id, got run={describe(run)}")
    qids = list(run) + [qid for qid in qrels if qid not in run]
    judged = _positive_judgements(qrels, qids)
    kind = _run_kind(run)
    empty: Mapping[str, float] | Sequence[str] = {} if kind == "scored" else ()
    rankings = [run.get(qid, empty) for qid in qids]
    for qid, ranking in zip(qids, rankings):
        if kind == "scored" and not isinstance(ranking, Mapping):
            raise UsageError(f"expected every run value to be a {{doc_id: score}} dict, got run[{qid!r}]={describe(ranking)}")
        if kind == "listed" and (isinstance(ranking, (str, bytes, Mapping)) or not isinstance(ranking, Sequence)):
            raise UsageError(f"expected every run value to be a list of doc ids, got run[{qid!r}]={describe(ranking)}")
    if kind == "scored":
        rows, ranks, gains, lengths = _scored_ranks(rankings, judged)  # type: ignore[arg-type]
        distinct = lengths
    else:
        rows, ranks, gains, lengths = _listed_ranks(rankings, judged)  # type: ignore[arg-type]
        distinct = np.fromiter((len(set(r)) for r in rankings), dtype=np.int64, count=len(rankings))
    found = _Judged(rows, ranks, gains)
    count = len(qids)
    relevant_total = np.fromiter(map(len, judged), dtype=np.int64, count=count).astype(np.float64)
    defined = relevant_total > 0
    ks = sorted({m.k for m in parsed if m.k is not None})
    ideal = _ideal_dcg(judged, ks) if any(m.measure == "nDCG" for m in parsed) else {}
    precision_at = found.nth / (found.ranks + 1.0)
    discounted = found.gains / np.log2(found.ranks + 2.0)
    first_rank = np.full(count, np.iinfo(np.int64).max)
    is_first = found.nth == 1
    first_rank[found.rows[is_first]] = found.ranks[is_first]

    arrays: dict[str, np.ndarray] = {}
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for metric in parsed:
            k = metric.k
            inside = found.ranks < k
            hits_k = np.bincount(found.rows[inside], minlength=count).astype(np.float64)
            slots = np.minimum(lengths, k).astype(np.float64)
            measure = metric.measure
            numerator = denominator = None
            if measure == "P":
                numerator, denominator = hits_k, np.full(count, float(k))
            elif measure == "P_ret":
                numerator, denominator = hits_k, slots
            elif measure == "R":
                numerator, denominator = hits_k, relevant_total
            elif measure == "Hit":
                numerator, denominator = (hits_k > 0).astype(np.float64), np.ones(count)
            elif measure == "F1":
                numerator, denominator = 2.0 * hits_k, k + relevant_total
            if numerator is not None:
                values = numerator / denominator
                parts[str(metric)] = (numerator, denominator)
            elif measure in ("AP", "CP"):
                summed = np.bincount(found.rows[inside], weights=precision_at[inside], minlength=count)
                if measure == "AP":
                    values = summed / relevant_total
                else:
                    values = np.where(hits_k > 0, summed / hits_k, 0.0)
            elif measure == "RR":
                values = np.where(first_rank < k, 1.0 / (first_rank + 1.0), 0.0)
            else:  # nDCG
                values = np.bincount(found.rows[inside], weights=discounted[inside], minlength=count) / ideal[k]
            # P_ret@k is also undefined when nothing came back (0/0 already gives NaN there).
            arrays[str(metric)] = np.where(defined, values, np.nan)
    return BatchResult(
        arrays,
        query_ids=qids,
        parts=parts,
        gold_ids=relevant_total.astype(np.int64),
        returned_ids=distinct,
    )
