"""`ragmorph demo`: the default suite on a built-in world, two correct retrievers and one with a planted bug.

The planted bug (`PostFilteredPipeline`) is the classic vector-store mistake: the application asks the index for
the k best chunks of *everyone* and applies the tenant filter afterwards. Nothing leaks, but a tenant whose
chunks are crowded out of the global top k gets fewer than k chunks, often without its evidence. A correct
pipeline filters before the cut to k. The tenancy relation "filtered ranking equals the unfiltered ranking's
visible chunks, cut to k" catches it; the demo shows the shrunk minimal case and its replay command.

Exit code: 0 when the demo behaves as expected (the planted bug is caught, the built-in retrievers pass every
hard relation), 1 otherwise (which would be a bug in ragmorph).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from .adapters import BM25Retriever
from .errors import ExitCode
from .model import Corpus, Filters, Hit

__all__ = ["BUGGY_NAME", "CORRECT_NAMES", "DEMO_MAX_EXAMPLES", "PostFilteredPipeline", "demo_retrievers", "run_demo"]

BUGGY_NAME = "bm25-postfilter"
CORRECT_NAMES = ("bm25", "dense")
# Tuned so the whole demo finishes well under a minute on a 2-core machine (measured in tests/cli).
DEMO_MAX_EXAMPLES = 6


class PostFilteredPipeline:
    """BM25 with the planted bug: the tenant filter runs after the top-k cut instead of before it."""

    def __init__(self, corpus: Corpus) -> None:
        self._corpus = corpus
        self._index = BM25Retriever(corpus)

    def __repr__(self) -> str:
        return f"PostFilteredPipeline({len(self._corpus)} chunks)"

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The k best chunks of every tenant, then the caller's tenant filter (the bug: too late)."""
        if filters is None or filters.tenant is None:
            return list(self._index.retrieve(query, k=k, filters=filters))
        untenanted = Filters(current_only=filters.current_only, metadata=filters.metadata)
        hits = self._index.retrieve(query, k=k, filters=untenanted)
        return [hit for hit in hits if self._corpus[hit.id].visible_to(filters.tenant)]


def demo_retrievers() -> dict[str, str]:
    """The demo's retrievers by name, as import strings so replay files can rebuild them in a fresh process."""
    return {
        "bm25": "ragmorph.adapters:BM25Retriever",
        "dense": "ragmorph.adapters:DenseRetriever",
        BUGGY_NAME: f"{__name__}:PostFilteredPipeline",
    }


def _hard_failures(results: Sequence[Mapping[str, Any]], retriever: str) -> list[Mapping[str, Any]]:
    return [r for r in results if r["retriever"] == retriever and r["status"] == "fail" and r["severity"] == "hard"]


def run_demo(
    *, out_dir: Path, seed: int = 0, max_examples: int | None = None, out: TextIO, err: TextIO
) -> int:
    """Run the demo, print the outcome, write report.json and report.html into `out_dir`; return the exit code."""
    from .io import write_cases, write_corpus
    from .reporting import WRITERS, ProgressBar, render_summary, render_violation, write_reports
    from .runner import check
    from .worlds import demo_world

    started = time.perf_counter()
    world = demo_world()
    out.write(f"ragmorph demo: {world.description}\n")
    out.write(f"world: {len(world.corpus)} chunks, {len(world.cases)} cases; retrievers: "
              f"{', '.join(CORRECT_NAMES)} (correct) and {BUGGY_NAME} (planted bug: tenant filter after the top-k cut)\n\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    world_dir = out_dir / "world"
    world_dir.mkdir(exist_ok=True)
    write_corpus(world.corpus, world_dir / "corpus.jsonl")
    write_cases(world.cases, world_dir / "cases.jsonl")

    bar = ProgressBar(0, err)
    try:
        report = check(
            demo_retrievers(),
            world.corpus,
            world.cases,
            max_examples=max_examples or DEMO_MAX_EXAMPLES,
            seed=seed,
            replay_dir=out_dir / "replays",
            progress=bar,
        )
    finally:
        bar.close()
    data = report.to_dict()
    results = data["results"]
    out.write(render_summary(data) + "\n")

    caught = _hard_failures(results, BUGGY_NAME)
    false_alarms = [r for name in CORRECT_NAMES for r in _hard_failures(results, name)]
    if caught:
        first = caught[0]
        out.write(f"\nThe planted bug, caught by {first['relation']} and shrunk to a minimal case:\n")
        out.write(render_violation(first["violation"], retriever=BUGGY_NAME) + "\n")
    json_path, html_path = out_dir / WRITERS["json"].filename, out_dir / WRITERS["html"].filename
    write_reports(data, {"json": json_path, "html": html_path})
    elapsed = time.perf_counter() - started
    out.write(f"\nreports: {html_path}\n         {json_path}\n")
    if caught and caught[0]["violation"].get("replay"):
        out.write(f"replay the minimal case: ragmorph replay {caught[0]['violation']['replay']}\n")
    out.write(
        "try your own retriever on this world: ragmorph run --retriever mypkg.search:factory "
        f"--corpus {world_dir / 'corpus.jsonl'} --cases {world_dir / 'cases.jsonl'}\n"
    )
    out.write(f"finished in {elapsed:.1f} s\n")
    if false_alarms:
        names = sorted({f"{r['retriever']}:{r['strategy']}.{r['relation']}" for r in false_alarms})
        err.write(f"ragmorph: error: a correct built-in retriever failed a hard relation ({', '.join(names)}); "
                  "this is a ragmorph bug, please report it\n")
        return int(ExitCode.VIOLATIONS)
    if not caught:
        err.write(f"ragmorph: error: the planted bug in {BUGGY_NAME} was not caught with seed={seed}\n")
        return int(ExitCode.VIOLATIONS)
    return int(ExitCode.OK)
