"""Vectorised metrics over many rankings given as plain dicts (TREC-style run and qrels).

The cost of batch evaluation is walking the caller's dicts: every score must be read, and every relevant judged
document looked up in its run. A relevant document's rank is the number of documents of its query that score
higher, plus, on an exact tie, the tied documents with a larger id (trec_eval's tie order); rankings are never
put in order.

Two paths compute those ranks, with identical results (tests/metrics/test_batch_kernel.py):

- the compiled kernel `_ranks.c`, built at install time when a C compiler is there (`BATCH_BACKEND` says
  which path runs). The lookups cost cache misses (the judged id, the run's hash index, colliding ids), and only
  a tight C loop keeps several of them in flight;
- the numpy path below, which needs no compiler: block by block of queries, the scores are read into a padded
  matrix by `np.fromiter`, and the judged documents are looked up with nested C-level `map(run.get, ...)`, so no
  Python frame runs per document. Each lookup still sits between thousands of interpreter instructions, so its
  misses are paid one after another.

Measured on 100,000 rankings of depth 100 (`python benchmarks/bench_metrics.py --repeat 3`, which times
both paths): compiled 0.50 s, numpy 0.93 s, pytrec_eval 4.32 s, ranx (warm) 24.2 s. The compiled ranks take
about 0.3 s of the 0.5; reading the qrels and the nDCG ideal gains about 0.1 s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, islice, repeat
from operator import attrgetter

import numpy as np

from ..errors import UsageError, describe
from ._names import MEASURES, Metric, parse_metrics
from ._single import QueryScores

try:
    from . import _ranks as _kernel
except ImportError:  # built without a C compiler: the numpy path gives the same numbers, more slowly
    _kernel = None

__all__ = ["BATCH_BACKEND", "BatchResult", "evaluate_batch"]

BATCH_BACKEND: str = "compiled" if _kernel is not None else "numpy"
"""Which path `evaluate_batch` ranks scored runs with: "compiled" (the C kernel) or "numpy" (no compiler)."""

# Queries whose padded score matrix is built and compared at once (about 400 kB at depth 100);
# _BLOCK_CELLS caps a block when some rankings are very long.
_BLOCK_ROWS = 512
_BLOCK_CELLS = 1 << 20
_GET = attrgetter("get")
_NAN_DEFAULTS = repeat(repeat(math.nan))  # one endless NaN default per query; map stops at the judged ids


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


def _within_group_positions(rows: np.ndarray, count: int) -> np.ndarray:
    """0-based position of each entry within its run of equal `rows` (rows must be grouped, non-decreasing)."""
    sizes = np.bincount(rows, minlength=count)
    return np.arange(len(rows)) - (np.cumsum(sizes) - sizes)[rows]


def _order_within_groups(rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A permutation sorting grouped `rows` entries by non-negative integer `keys` within each group."""
    if len(rows) == 0:
        return np.arange(0)
    # One integer sort on a composite key is several times faster than np.lexsort on two keys.
    return np.argsort(rows * (int(keys.max()) + 1) + keys)


class _Judged:
    """The relevant documents found in the run: their query row, 0-based rank and gain, sorted by (row, rank)."""

    def __init__(self, rows: np.ndarray, ranks: np.ndarray, gains: np.ndarray, count: int) -> None:
        order = _order_within_groups(rows, ranks)
        self.rows = rows[order]
        self.ranks = ranks[order]
        self.gains = gains[order]
        # 1-based position of each found document among its query's found documents.
        self.nth = _within_group_positions(self.rows, count) + 1


class _Qrels:
    """Every judgement flattened in query order: levels (floats) and query rows; doc ids stay in `maps`."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str]) -> None:
        empty: dict[str, int] = {}
        maps = list(map(qrels.get, qids, repeat(empty)))
        if set(map(type, maps)) - {dict}:
            # Only then check one by one: an ABC isinstance check costs about a microsecond per query.
            for qid, levels in zip(qids, maps):
                if not isinstance(levels, Mapping):
                    raise UsageError(
                        f"expected qrels[{qid!r}] to map doc ids to relevance levels, got {describe(levels)}"
                    )
            # Real dicts let map(dict.values) and dict.get run in C, several times faster than generic views.
            maps = [m if type(m) is dict else dict(m) for m in maps]
        self.maps: list[dict[str, int]] = maps
        count = len(maps)
        self.sizes = np.fromiter(map(len, self.maps), dtype=np.int64, count=count)
        total = int(self.sizes.sum())
        try:
            self.levels = np.fromiter(chain.from_iterable(map(dict.values, self.maps)), dtype=np.float64, count=total)
        except (TypeError, ValueError, OverflowError) as error:
            raise UsageError(f"expected numeric relevance levels in qrels, got an error: {error}") from None
        self.starts = np.cumsum(self.sizes) - self.sizes
        self.rows = np.repeat(np.arange(count), self.sizes)
        self.positive = self.levels > 0
        self.relevant_total = np.bincount(self.rows[self.positive], minlength=count).astype(np.float64)

    def doc(self, index: int) -> str:
        """The doc id of flattened judgement `index` (rare: used for ties and ranked lists only)."""
        row = int(self.rows[index])
        position = int(index - self.starts[row])
        return next(islice(iter(self.maps[row]), position, None))


def _score_block(maps: list[dict[str, float]], lengths: np.ndarray) -> np.ndarray:
    """The rankings' scores as rows of a matrix padded with -inf, read straight from the dicts (all in C)."""
    width = max(int(lengths.max()), 1)
    try:
        # One flat read, padded afterwards by numpy: interleaving the padding into the iterator (a chain per
        # query) made a block with a single short ranking about a third slower to read.
        values = np.fromiter(chain.from_iterable(map(dict.values, maps)), dtype=np.float64, count=int(lengths.sum()))
    except (TypeError, ValueError, OverflowError) as error:
        raise UsageError(f"expected numeric scores in the run, got an error: {error}") from None
    if np.isnan(values).any():
        raise UsageError("expected numeric scores in the run, got NaN; drop or fix those entries")
    if len(values) == len(maps) * width:
        return values.reshape(len(maps), width)
    matrix = np.full((len(maps), width), -math.inf)
    matrix[np.arange(width) < lengths[:, None]] = values
    return matrix


def _scored_ranks(
    runs: list[dict[str, float]], judged: _Qrels, *, backend: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ranks of the relevant documents in score-ordered runs (real dicts); also returns each query's length.

    Rows, ranks and gains are in judgement order. `backend` forces a path ("compiled" or "numpy"; tests and the
    benchmark compare them); by default the compiled kernel runs when it was built.
    """
    lengths = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
    if (backend or BATCH_BACKEND) == "compiled":
        if _kernel is None:
            raise UsageError("expected the compiled batch kernel, but ragmorph was installed without a C compiler")
        capacity = int(np.count_nonzero(judged.positive))
        found = np.empty(capacity, dtype=np.int64)
        ranks = np.empty(capacity, dtype=np.int64)
        written = _kernel.scored_ranks(runs, judged.maps, judged.positive, found, ranks)
        # None: some score is not a plain number; the numpy path below reads it again and names the problem.
        if written is not None:
            found = found[:written]
            return judged.rows[found], ranks[:written], judged.levels[found], lengths
    return _numpy_scored_ranks(runs, judged, lengths)


def _numpy_scored_ranks(
    runs: list[dict[str, float]], judged: _Qrels, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_scored_ranks` without the compiler: numpy over blocks of queries, dicts read by C-level iterators."""
    count = len(runs)
    bounds = np.searchsorted(judged.rows, np.arange(count + 1))  # judgements of query q: bounds[q]:bounds[q+1]
    # A rank never exceeds the depth: the narrowest counter that holds it keeps the sums cheap.
    count_type = np.uint16 if int(lengths.max(initial=0)) < 1 << 16 else np.int64
    found_parts: list[np.ndarray] = []
    score_parts: list[np.ndarray] = []
    rank_parts: list[np.ndarray] = []
    tied_parts: list[np.ndarray] = []
    done = 0  # found documents in the blocks before this one
    first = 0
    # Block by block of queries, so the padded score matrix and the comparison temporaries stay small (and
    # in cache) even next to a very long ranking.
    while first < count:
        last = min(count, first + _BLOCK_ROWS)
        while last - first > 1 and (last - first) * int(lengths[first:last].max()) > _BLOCK_CELLS:
            last = first + (last - first) // 2
        block_runs = runs[first:last]
        matrix = _score_block(block_runs, lengths[first:last])
        lo, hi = int(bounds[first]), int(bounds[last])
        # map(run.get, judged ids, nan) per query, nested in C: no Python frame per document.
        lookups = map(map, map(_GET, block_runs), judged.maps[first:last], _NAN_DEFAULTS)
        scores = np.fromiter(chain.from_iterable(lookups), dtype=np.float64, count=hi - lo)
        retrieved = judged.positive[lo:hi] & ~np.isnan(scores)
        found, target = np.flatnonzero(retrieved) + lo, scores[retrieved]
        # One column per found document holding its query's scores: the comparisons and the count then run
        # across columns (vectorised), not as one short reduction per document.
        candidates = matrix.T[:, judged.rows[found] - first]
        rank_parts.append(np.add.reduce(candidates > target, axis=0, dtype=count_type))
        # Ties are rare in float scores: sorting each row finds the queries that have any at all (cheaper than
        # comparing every found document for equality), and only their documents are checked one by one.
        # -inf padding may pose as a tie; the exact count below only looks at real documents.
        ordered = np.sort(matrix, axis=1)
        repeated = ordered[:, 1:] == ordered[:, :-1]
        suspects = np.flatnonzero(repeated.any(axis=1)[judged.rows[found] - first]) if repeated.any() else ()
        if len(suspects):
            equal = np.count_nonzero(candidates[:, suspects] == target[suspects], axis=0)
            tied_parts.append(suspects[equal > 1] + done)
        found_parts.append(found)
        score_parts.append(target)
        done += len(found)
        first = last
    if not found_parts:
        nothing = np.zeros(0, dtype=np.int64)
        return nothing, nothing, np.zeros(0), lengths
    found = np.concatenate(found_parts)
    found_scores = np.concatenate(score_parts)
    ranks = np.concatenate(rank_parts).astype(np.int64)
    found_rows = judged.rows[found]
    for index in np.concatenate([np.zeros(0, dtype=np.int64), *tied_parts]).tolist():
        # trec_eval orders equal scores by doc id, descending: larger ids come first.
        doc, score = judged.doc(found[index]), found_scores[index]
        ranks[index] += sum(1 for other, value in runs[found_rows[index]].items() if value == score and other > doc)
    return found_rows, ranks, judged.levels[found], lengths


def _listed_ranks(
    lists: list[Sequence[str]], judged: _Qrels
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ranks of the relevant documents in ranked id lists (first occurrence of a repeated id counts)."""
    found: list[int] = []
    ranks: list[int] = []
    rows = judged.rows.tolist()
    for index in np.flatnonzero(judged.positive).tolist():
        try:
            ranks.append(lists[rows[index]].index(judged.doc(index)))
        except ValueError:
            continue
        found.append(index)
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    chosen = np.asarray(found, dtype=np.int64)
    return judged.rows[chosen], np.asarray(ranks, dtype=np.int64), judged.levels[chosen], lengths


def _ideal_dcg(judged: _Qrels, ks: Iterable[int]) -> dict[int, np.ndarray]:
    count = len(judged.sizes)
    gains, rows = judged.levels[judged.positive], judged.rows[judged.positive]
    if len(gains) and np.array_equal(gains, np.floor(gains)) and gains.max() <= 64:
        # Levels are nearly always a few small integers: count each level per query and add up stretches of
        # the discount prefix sums, instead of sorting every judgement.
        top = int(gains.max())
        histogram = np.bincount(rows * top + (top - gains.astype(np.int64)), minlength=count * top)
        counts = histogram.reshape(count, top)  # column j: judgements at level top - j (best first)
        ends = np.cumsum(counts, axis=1)
        starts = ends - counts
        levels = np.arange(top, 0, -1, dtype=np.float64)
        prefix = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(int(ends[:, -1].max())) + 2.0))))
        return {
            k: (levels * (prefix[np.minimum(ends, k)] - prefix[np.minimum(starts, k)])).sum(axis=1) for k in ks
        }
    if len(gains) and gains.min() != gains.max():
        # The ideal ranking puts the largest gains first.
        order = np.lexsort((-gains, rows))
        gains, rows = gains[order], rows[order]
    positions = _within_group_positions(rows, count)
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
    *,
    backend: str | None = None,
) -> BatchResult:
    """Evaluate many rankings at once: `{"P@10": array([...]), ...}` over `result.query_ids`.

    `run` maps query id -> {doc_id: score} (ranked by score descending, ties by doc id descending as in
    trec_eval) or query id -> ranked doc ids. `qrels` maps query id -> {doc_id: level}; level > 0 is relevant
    and is the nDCG gain. Queries come in run order, then qrels queries missing from the run, scored as empty
    rankings. NaN marks undefined values (queries without a relevant document, policy no_gold).
    Agrees exactly with `evaluate()` on binary qrels. `backend` ("compiled" or "numpy") forces how scored runs
    are ranked, to compare the two; by default the compiled kernel runs when it was built (`BATCH_BACKEND`).
    """
    if backend not in (None, "compiled", "numpy"):
        raise UsageError(f"expected backend 'compiled' or 'numpy', got {backend!r}")
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
    # The subset test runs in C; the ordered list of missing queries is only built when there are some.
    missing = [] if qrels.keys() <= run.keys() else [qid for qid in qrels if qid not in run]
    qids = [*run, *missing]
    judged = _Qrels(qrels, qids)
    kind = _run_kind(run)
    empty: Mapping[str, float] | Sequence[str] = {} if kind == "scored" else ()
    rankings = [*run.values(), *repeat(empty, len(missing))]
    kinds = set(map(type, rankings))
    plain = dict if kind == "scored" else list
    for qid, ranking in zip(qids, rankings) if kinds - {plain} else ():
        if kind == "scored" and not isinstance(ranking, Mapping):
            raise UsageError(f"expected every run value to be a {{doc_id: score}} dict, got run[{qid!r}]={describe(ranking)}")
        if kind == "listed" and (isinstance(ranking, (str, bytes, Mapping)) or not isinstance(ranking, Sequence)):
            raise UsageError(f"expected every run value to be a list of doc ids, got run[{qid!r}]={describe(ranking)}")
    if kind == "scored":
        # dict.get and dict.values run in C on real dicts only.
        runs = [r if type(r) is dict else dict(r) for r in rankings] if kinds - {dict} else rankings
        rows, ranks, gains, lengths = _scored_ranks(runs, judged, backend=backend)  # type: ignore[arg-type]
        distinct = lengths
    else:
        rows, ranks, gains, lengths = _listed_ranks(rankings, judged)  # type: ignore[arg-type]
        distinct = np.fromiter((len(set(r)) for r in rankings), dtype=np.int64, count=len(rankings))
    found = _Judged(rows, ranks, gains, len(qids))
    count = len(qids)
    relevant_total = judged.relevant_total
    defined = relevant_total > 0
    ks = sorted({m.k for m in parsed if m.k is not None})
    ideal = _ideal_dcg(judged, ks) if any(m.measure == "nDCG" for m in parsed) else {}
    precision_at = found.nth / (found.ranks + 1.0)
    discounted = found.gains / np.log2(found.ranks + 2.0)
    first_rank = np.full(count, np.iinfo(np.int64).max)
    is_first = found.nth == 1
    first_rank[found.rows[is_first]] = found.ranks[is_first]

    # P@k, R@k, F1@k, Hit@k, ... share one cutoff's counts: computed once per k, not once per metric.
    cut: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k in ks:
        inside = found.ranks < k
        cut[k] = inside, np.bincount(found.rows[inside], minlength=count).astype(np.float64)

    arrays: dict[str, np.ndarray] = {}
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for metric in parsed:
            k = metric.k
            inside, hits_k = cut[k]
            measure = metric.measure
            numerator = denominator = None
            if measure == "P":
                numerator, denominator = hits_k, np.full(count, float(k))
            elif measure == "P_ret":
                numerator, denominator = hits_k, np.minimum(lengths, k).astype(np.float64)
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
