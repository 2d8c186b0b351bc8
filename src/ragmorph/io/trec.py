"""TREC qrels and run files, read and written so that ragmorph's metrics agree with trec_eval.

qrels: ``qid iter docid rel`` (4 whitespace-separated columns; iter is ignored, rel an integer).
run:   ``qid Q0 docid rank score tag`` (6 columns; Q0 and tag are ignored by trec_eval and here).

trec_eval ignores the rank column and orders each query's documents by score descending, breaking ties by
docid descending (byte order). ``read_trec_run`` applies exactly that order, so a ranking read here and scored
by ragmorph matches trec_eval's numbers. Blank lines are skipped; anything else malformed is an InputError
naming the file, the line and the column.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Literal

from ..errors import InputError
from ..model import Hit, Ranking
from ._lines import FirstSeen, atomic_write_text, iter_text_lines

__all__ = ["read_trec_qrels", "read_trec_run", "trec_order", "write_trec_run"]

PathLike = str | os.PathLike


def _columns(text: str, count: int, layout: str, *, file: str, line: int) -> list[str]:
    columns = text.split()
    if len(columns) != count:
        raise InputError(
            f"expected {count} whitespace-separated columns ({layout}), got {len(columns)}: {text.strip()[:80]!r}",
            file=file,
            line=line,
        )
    return columns


def read_trec_qrels(path: PathLike) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file into ``{qid: {docid: relevance}}`` (first-seen order; zero and negative kept)."""
    file = str(path)
    qrels: dict[str, dict[str, int]] = {}
    pairs = FirstSeen("each docid once per query", file=file, field="docid")
    for line, text in iter_text_lines(path):
        qid, _iteration, docid, rel_text = _columns(text, 4, "qid iter docid rel", file=file, line=line)
        try:
            relevance = int(rel_text)
        except ValueError:
            raise InputError(
                f"expected an integer relevance in column 4, got {rel_text!r}", file=file, line=line,
                field="rel", value=rel_text,
            ) from None
        pairs.add((qid, docid), line=line, shown=f"{docid!r} for query {qid!r}")
        qrels.setdefault(qid, {})[docid] = relevance
    return qrels


def trec_order(hits: list[Hit]) -> list[Hit]:
    """Hits in trec_eval's order: score descending, ties by docid descending (scores must be numbers)."""
    return sorted(hits, key=lambda hit: (hit.score, hit.id), reverse=True)


def read_trec_run(path: PathLike) -> dict[str, Ranking]:
    """Read a TREC run into ``{qid: Ranking}``, each ranking in trec_eval's order (see the module docstring).

    Scores must be finite numbers; ranks integers (read, then ignored like trec_eval does); a docid may appear
    once per query. Queries keep their first-seen order.
    """
    file = str(path)
    hits: dict[str, list[Hit]] = {}
    pairs = FirstSeen("each docid once per query", file=file, field="docid")
    for line, text in iter_text_lines(path):
        qid, _q0, docid, rank_text, score_text, _tag = _columns(
            text, 6, "qid Q0 docid rank score tag", file=file, line=line
        )
        try:
            int(rank_text)
        except ValueError:
            raise InputError(
                f"expected an integer rank in column 4, got {rank_text!r}", file=file, line=line,
                field="rank", value=rank_text,
            ) from None
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise InputError(
                f"expected a finite number as score in column 5, got {score_text!r}", file=file, line=line,
                field="score", value=score_text,
            )
        pairs.add((qid, docid), line=line, shown=f"{docid!r} for query {qid!r}", note="; trec_eval rejects it too")
        hits.setdefault(qid, []).append(Hit(docid, score))
    return {qid: Ranking(trec_order(query_hits)) for qid, query_hits in hits.items()}


def _check_token(value: str, what: str, file: str) -> None:
    if not value or any(character.isspace() for character in value):
        raise InputError(
            f"expected a {what} without whitespace for a TREC file, got {value!r}", file=file, field=what, value=value
        )


def write_trec_run(
    runs: Mapping[str, Ranking],
    path: PathLike,
    tag: str = "ragmorph",
    *,
    scores: Literal["auto", "keep", "rank"] = "auto",
) -> None:
    """Write ``{qid: Ranking}`` as a TREC run (ranks 1..n in ranking order), atomically.

    trec_eval re-sorts by score, so the written scores decide the order it sees. ``scores="keep"`` writes the
    hits' own scores and raises when they would not reproduce the ranking's order (a missing score, a tie or a
    rise); ``"rank"`` writes ``n - rank + 1`` so the order always survives; ``"auto"`` (default) keeps the own
    scores when they reproduce the order and falls back to rank scores for that query otherwise. A repeated id
    in a ranking cannot be expressed (trec_eval rejects it) and is an error.
    """
    file = str(path)
    _check_token(tag, "tag", file)
    lines: list[str] = []
    for qid, ranking in runs.items():
        _check_token(qid, "query id", file)
        seen: set[str] = set()
        for hit in ranking:
            _check_token(hit.id, "docid", file)
            if hit.id in seen:
                raise InputError(
                    f"expected each docid once per query, got {hit.id!r} twice for query {qid!r}"
                    " (drop the repeat before writing)",
                    file=file, field="docid", value=hit.id,
                )
            seen.add(hit.id)
        own_scores_survive = all(hit.has_finite_score for hit in ranking) and trec_order(list(ranking)) == list(
            ranking
        )
        if scores == "keep" and not own_scores_survive:
            raise InputError(
                f"expected scores that reproduce the ranking of query {qid!r} under trec_eval's order (descending,"
                " ties by docid descending), got missing, tied or rising scores; use scores='rank' or 'auto'",
                file=file, field="score",
            )
        use_own = own_scores_survive and scores != "rank"
        count = len(ranking)
        for rank, hit in enumerate(ranking, start=1):
            score = float(hit.score) if use_own else float(count - rank + 1)  # type: ignore[arg-type]
            lines.append(f"{qid} Q0 {hit.id} {rank} {score!r} {tag}\n")
    atomic_write_text(path, "".join(lines))
