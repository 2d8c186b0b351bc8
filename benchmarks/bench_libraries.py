"""What the default suite finds in real retrieval libraries: every integration over a built-in world and real text.

    python benchmarks/bench_libraries.py [--libraries faiss-flat,pgvector-hnsw] [--worlds demo,pydoc,scale]
                                               [--strategies tenancy,filters] [--max-examples 25] [--seed 0]
                                               [--json findings.json]
                                               [--reports DIR] [--markdown findings.json]

Runs `check()` with its defaults (every family, k 1,3,5,10, 25 examples) on each integration, one library at a
time, over `demo_world()` (56 generated chunks, 12 cases) and `pydoc_world()` (the Python reference topics of
the running interpreter: 12 topics, 8 cases whose query is a sentence found in exactly one chunk). Printed per
library and world: the hard failures by relation (cases failed, and the smallest corpus each violation was
minimised to), the soft relations and the exact-search relations measured as rates for an approximate index
that held in fewer than all probes (held/tested), and the seconds the suite took. The library versions come
from the installed distributions (and the PostgreSQL server itself for PostgreSQL and pgvector). The `scale`
run is ragmorph's `scale` profile (the opt-in family that grows the corpus to thousands of chunks, 1 in 50 the
asking tenant's) on the vector stores, over the demo world's first two cases asked by a tenant.

The integrations are the factories ragmorph ships, with the library defaults they document: pgvector
(pgserver's PostgreSQL, exact scan and HNSW with `hnsw.ef_search` 40), Qdrant local mode, FAISS flat and HNSW
(efSearch 16, filters as an ID selector), Haystack 2 in-memory BM25 and embedding, LanceDB flat, IVF_HNSW_FLAT
with prefilter and the same index with `prefilter=False`, Chroma, llama-index-retrievers-bm25, and
langchain-community's BM25Retriever (rank-bm25). The dense ones embed with ragmorph's `HashingEmbedder`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import attrs  # noqa: E402

from ragmorph.runner import check  # noqa: E402
from ragmorph.worlds import BuiltinWorld, demo_world, pydoc_world  # noqa: E402


def _version(*distributions: str) -> str:
    found = []
    for name in distributions:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def _postgres_versions(uri: str) -> str:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as connection:
        server = connection.execute("SHOW server_version").fetchone()[0]
        vector = connection.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    return f"PostgreSQL {server}, pgvector {vector[0] if vector else '(missing)'}, {_version('pgserver', 'psycopg')}"


def _lancedb_postfilter() -> Callable[..., Any]:
    from ragmorph.adapters.lancedb import LanceDBRetriever, lancedb_factory

    def lancedb_ann_postfilter(corpus: Any) -> LanceDBRetriever:
        """LanceDB's IVF_HNSW_FLAT index with `prefilter=False`: the filter runs on the index's nearest rows."""
        return LanceDBRetriever(corpus, index="IVF_HNSW_FLAT", index_options={"num_partitions": 1}, prefilter=False)

    lancedb_ann_postfilter.ragmorph_traits = ("approximate",)  # type: ignore[attr-defined]
    lancedb_ann_postfilter.ragmorph_twin = lancedb_factory  # type: ignore[attr-defined]
    return lancedb_ann_postfilter


EXACT, APPROXIMATE = "exact", "approximate"
# Chroma searches an HNSW index (hnswlib) but its adapter does not declare the trait: its hard relations stay hard.
UNDECLARED = "HNSW, not declared approximate"


def libraries() -> dict[str, tuple[Callable[[], Any], Callable[[], str], str]]:
    """name -> (build the factory, its versions, its search); factories are built lazily (servers start)."""

    def pg(index: str) -> Callable[[], Any]:
        def build() -> Any:
            from ragmorph.adapters.pgvector import pgvector_factory
            from support.servers import postgres_uri

            return pgvector_factory(postgres_uri(), index=index)

        return build

    def pg_versions() -> str:
        from support.servers import postgres_uri

        return _postgres_versions(postgres_uri())

    def attr(module: str, name: str) -> Callable[[], Any]:
        return lambda: getattr(__import__(module, fromlist=[name]), name)

    return {
        "pgvector-exact": (pg("exact"), pg_versions, EXACT),
        "pgvector-hnsw": (pg("hnsw"), pg_versions, APPROXIMATE),
        "qdrant-local": (attr("ragmorph.adapters.qdrant", "qdrant_factory"), lambda: _version("qdrant-client"), EXACT),
        "faiss-flat": (attr("ragmorph.adapters.faiss", "faiss_flat_factory"), lambda: _version("faiss-cpu"), EXACT),
        "faiss-hnsw": (attr("ragmorph.adapters.faiss", "faiss_hnsw_factory"), lambda: _version("faiss-cpu"), APPROXIMATE),
        "haystack-bm25": (attr("ragmorph.adapters.haystack", "haystack_bm25_factory"), lambda: _version("haystack-ai"), EXACT),
        "haystack-embedding": (
            attr("ragmorph.adapters.haystack", "haystack_embedding_factory"), lambda: _version("haystack-ai"), EXACT),
        "lancedb-flat": (attr("ragmorph.adapters.lancedb", "lancedb_factory"), lambda: _version("lancedb"), EXACT),
        "lancedb-ann-prefilter": (attr("ragmorph.adapters.lancedb", "lancedb_ann_factory"), lambda: _version("lancedb"), APPROXIMATE),
        "lancedb-ann-postfilter": (_lancedb_postfilter, lambda: _version("lancedb"), APPROXIMATE),
        "chroma": (attr("ragmorph.adapters.chroma", "chroma_factory"), lambda: _version("chromadb"), UNDECLARED),
        "llamaindex-bm25": (
            attr("ragmorph.adapters.llamaindex", "llamaindex_bm25_factory"),
            lambda: _version("llama-index-retrievers-bm25", "bm25s"), EXACT),
        "langchain-bm25": (
            attr("ragmorph.adapters.langchain", "langchain_bm25_factory"),
            lambda: _version("langchain-community", "rank-bm25"), EXACT),
    }


WORLDS: dict[str, Callable[[], BuiltinWorld]] = {
    "demo": demo_world,
    "pydoc": lambda: pydoc_world(8, topics=12),
}
# The vector stores the `scale` profile is for: it grows the corpus to thousands of chunks around the query.
STORES = ("pgvector-exact", "pgvector-hnsw", "qdrant-local", "faiss-flat", "faiss-hnsw", "lancedb-flat",
          "lancedb-ann-prefilter", "lancedb-ann-postfilter")
SCALE_CASES = 2


def _scale_settings() -> dict[str, Any] | None:
    """check() settings of ragmorph's `scale` profile, None where this ragmorph has none."""
    from ragmorph.config import PROFILES

    profile = PROFILES.get("scale")
    if profile is None:
        return None
    return {"strategies": profile.strategies, "ks": profile.ks, "max_examples": profile.max_examples}


def _scale_world() -> BuiltinWorld:
    """The demo world's first cases asked by a tenant (the scale family grows the corpus around the tenant)."""
    world = demo_world()
    cases = tuple(c for c in world.cases if c.tenant is not None)[:SCALE_CASES]
    return attrs.evolve(world, cases=cases, description=f"{world.description} Scale profile: its first "
                        f"{len(cases)} cases with a tenant.")


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """Hard failures by relation (cases, minimal corpus sizes), rates held below 100%, errors, from a report.

    Rates are split: `rated` are the approximate family's recall against the exact twin and the hard exact-search
    relations measured as rates because the index declares the trait 'approximate', `soft` the other soft
    relations (many are evidence for a trait, e.g. `lexical`, that a dense retriever is not expected to have).
    """
    hard: dict[str, dict[str, Any]] = defaultdict(lambda: {"cases": [], "minimal_chunks": []})
    rates: dict[str, dict[str, list[int]]] = {"rated": defaultdict(lambda: [0, 0]), "soft": defaultdict(lambda: [0, 0])}
    errors = []
    for row in report["results"]:
        if row["status"] == "fail" and row["severity"] == "hard":
            entry = hard[row["relation"]]
            entry["cases"].append(row["case"])
            violation = row.get("violation") or {}
            # A family that grows the corpus (scale) bisects over the grown size instead of minimising the corpus.
            grown = ((violation.get("perturbation") or {}).get("fields") or {}).get("size")
            entry["minimal_chunks"].append(grown if isinstance(grown, int) else len(violation.get("minimal_corpus") or ()))
            entry.setdefault("example", (row.get("reason") or "")[:240])
            if violation.get("minimal_reason"):
                entry.setdefault("minimal_reason", violation["minimal_reason"][:240])
        elif row["status"] == "error":
            errors.append(f"{row['case']}/{row['relation']}: {(row.get('reason') or '')[:160]}")
        if row["severity"] == "soft" and row.get("rate"):
            rated = row["relation"].startswith("approximate.") or (row.get("reason") or "").startswith(
                "the retriever declares the trait")
            kind = "rated" if rated else "soft"
            rates[kind][row["relation"]][0] += row["rate"]["held"]
            rates[kind][row["relation"]][1] += row["rate"]["tested"]
    summary: dict[str, Any] = {"hard": dict(sorted(hard.items())), "errors": errors}
    for kind, found in rates.items():
        summary[f"{kind}_below_1"] = {name: tuple(rate) for name, rate in sorted(found.items()) if rate[0] < rate[1]}
        summary[f"{kind}_at_1"] = sum(1 for rate in found.values() if rate[0] == rate[1] and rate[1])
    return summary


def main() -> int:
    """Run the default suite per library and world; print the findings (and write them as JSON on --json)."""
    known = libraries()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libraries", default=",".join(known), help="comma-separated, from: " + ", ".join(known))
    runs = [*WORLDS, "scale"]
    parser.add_argument("--worlds", default=",".join(runs),
                        help="comma-separated, from: " + ", ".join(runs) + " (scale: the stores under the scale profile)")
    parser.add_argument("--strategies", help="comma-separated families instead of the default suite (not for scale)")
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    parser.add_argument("--reports", type=Path, help="also write each run's full JSON report into this folder")
    parser.add_argument("--markdown", type=Path, nargs="+", metavar="FINDINGS_JSON",
                        help="print the findings of earlier --json runs (merged) as the Markdown table of docs/findings.md, run nothing")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(merged([json.loads(path.read_text(encoding="utf-8")) for path in args.markdown])))
        return 0
    chosen = [name.strip() for name in args.libraries.split(",") if name.strip()]
    worlds = [name.strip() for name in args.worlds.split(",") if name.strip()]
    unknown = [n for n in chosen if n not in known] + [w for w in worlds if w not in runs]
    if unknown:
        parser.error(f"unknown libraries or worlds: {', '.join(unknown)}")
    scale = _scale_settings()
    if "scale" in worlds and scale is None:
        print("(this ragmorph has no 'scale' profile: the scale run is skipped)")
        worlds.remove("scale")
    warnings.simplefilter("ignore")  # library deprecation chatter; the findings are the output
    suite = f"families {args.strategies}" if args.strategies else "default suite"
    print(f"Python {sys.version.split()[0]}; {suite} (max_examples {args.max_examples}, seed {args.seed})")
    findings: dict[str, Any] = {"python": sys.version.split()[0], "max_examples": args.max_examples,
                                "seed": args.seed, "suite": suite, "worlds": {}, "libraries": {}}
    for world_name in worlds:
        world = _scale_world() if world_name == "scale" else WORLDS[world_name]()
        settings = scale if world_name == "scale" else {"max_examples": args.max_examples}
        if args.strategies and world_name != "scale":
            settings["strategies"] = [name.strip() for name in args.strategies.split(",") if name.strip()]
        findings["worlds"][world_name] = world.description
        print(f"\n== {world_name}: {world.description}")
        for name in chosen:
            if world_name == "scale" and name not in STORES:
                continue
            build, versions, search = known[name]
            factory = build()
            findings["libraries"].setdefault(name, {"versions": versions(), "search": search})
            started = time.perf_counter()
            report = check({name: factory}, world.corpus, world.cases, seed=args.seed, **settings).to_dict()
            seconds = time.perf_counter() - started
            if args.reports:
                args.reports.mkdir(parents=True, exist_ok=True)
                (args.reports / f"{world_name}-{name}.json").write_text(json.dumps(report), encoding="utf-8")
            summary = {**summarise(report), "seconds": round(seconds, 1)}
            findings["libraries"][name][world_name] = summary
            _print(name, findings["libraries"][name]["versions"], search, summary)
            if args.json:  # after every run, so an interrupted bench keeps what it measured
                args.json.write_text(json.dumps(findings, indent=2) + "\n", encoding="utf-8")
    return 0


def _print(name: str, versions: str, search: str, summary: dict[str, Any]) -> None:
    print(f"\n{name} ({search}; {versions}): {summary['seconds']:.0f} s")
    if not summary["hard"]:
        print("  hard failures: none")
    for relation, entry in summary["hard"].items():
        sizes = sorted(entry["minimal_chunks"])
        size_text = f"{sizes[0]}" if sizes[0] == sizes[-1] else f"{sizes[0]}-{sizes[-1]}"
        print(f"  FAIL {relation}: {len(entry['cases'])} case(s), minimal corpus {size_text} chunks")
        print(f"       e.g. {entry['example']}")
        if entry.get("minimal_reason"):
            print(f"       minimal: {entry['minimal_reason']}")
    for kind, label in (("rated", "exact-search relation measured as a rate"), ("soft", "soft relation")):
        for relation, (held, tested) in summary[f"{kind}_below_1"].items():
            print(f"  {label}: {relation} {held}/{tested} ({held / tested:.0%})")
        print(f"  {label}s holding in every probe: {summary[f'{kind}_at_1']}")
    for error in summary["errors"][:5]:
        print(f"  ERROR {error}")


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several --json runs as one (e.g. one run per world); a later run's figures win for the same library and world."""
    out: dict[str, Any] = {"worlds": {}, "libraries": {}}
    for run in runs:
        out["worlds"].update(run["worlds"])
        for name, entry in run["libraries"].items():
            out["libraries"].setdefault(name, {}).update(entry)
    return out


def _hard_text(summary: dict[str, Any]) -> str:
    parts = []
    for relation, entry in summary["hard"].items():
        low, high = min(entry["minimal_chunks"]), max(entry["minimal_chunks"])
        cases = len(entry["cases"])
        parts.append(f"`{relation}` {cases} case{'s' if cases != 1 else ''}, minimal {low}" + (f"-{high}" if high != low else "")
                     + " chunks")
    return "; ".join(parts) or "none"


def markdown(findings: dict[str, Any]) -> str:
    """The table of docs/findings.md: per library, hard failures per world with minimal sizes, approximate rates, seconds."""
    worlds = list(findings["worlds"])
    head = ["library", "versions"] + [f"hard failures, {w}" for w in worlds] + [
        "approximate: recall vs exact, exact-search relations below 100%", "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, entry in findings["libraries"].items():
        ran = [w for w in worlds if w in entry]
        rated: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for world in ran:
            for relation, (held, tested) in entry[world].get("rated_below_1", {}).items():
                rated[relation][0] += held
                rated[relation][1] += tested
        rates = ", ".join(f"`{r}` {held}/{tested}" for r, (held, tested) in sorted(rated.items())) or (
            "none" if entry["search"] == APPROXIMATE else "-")
        cells = [f"{name} ({entry['search']})", entry["versions"]]
        cells += [_hard_text(entry[w]) if w in entry else "not run" for w in worlds]
        cells += [rates, " / ".join(f"{entry[w]['seconds']:.0f}" for w in ran)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
