"""Stage attribution: a relation that fails on a declared Pipeline is replayed on each prefix, and the first stage
that breaks it is named (a correct prefix holds, the stage that reshuffles by k breaks)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.generators import worlds

from ragmorph.adapters import BM25Retriever, ContextPacker, Pipeline, Reranker, TenantFilter
from ragmorph.cli import EXIT_VIOLATIONS, main
from ragmorph.runner import attribute_stages, check
from ragmorph.worlds import demo_world


def shortest_first(query: str, text: str) -> float:
    """A reranker score that ignores the query: reranking a deeper candidate list at a larger k reshuffles the top."""
    return -float(len(text))


PIPELINE = Pipeline([BM25Retriever, TenantFilter(), Reranker(score_fn=shortest_first), ContextPacker(token_budget=400)])


@pytest.fixture(scope="module")
def replay_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    world = demo_world()
    folder = tmp_path_factory.mktemp("replays")
    report = check({"pipe": PIPELINE}, world.corpus, world.cases[:3], strategies=["cutoff"], max_examples=10, replay_dir=folder)
    failed = [r for r in report.results if r.status == "fail" and r.relation == "cutoff.prefix"]
    assert failed, [(r.case, r.relation, r.status) for r in report.results]
    return Path(failed[0].violation.to_dict()["replay"])


def test_the_first_breaking_stage_is_named(replay_file: Path) -> None:
    found = attribute_stages(replay_file, PIPELINE)
    assert found.stages == ("BM25Retriever", "TenantFilter", "Reranker", "ContextPacker")
    assert found.broken_at == 2 and found.culprit == "Reranker"
    assert [o.reproduced for o in found.outcomes] == [False, False, True]  # stops at the first breaking prefix
    assert found.detail.startswith("holds after TenantFilter, broken in Reranker: top ")


def test_check_attaches_the_same_attribution_to_every_violation_of_a_pipeline(replay_file: Path) -> None:
    # One implementation: the run attributes the minimal case itself, and replaying its file says the same.
    written = json.loads(replay_file.read_text(encoding="utf-8"))
    world = demo_world()
    report = check({"pipe": PIPELINE}, world.corpus, world.cases[:3], strategies=["cutoff"], max_examples=10)
    (row,) = [
        r for r in report.results
        if r.status == "fail" and r.relation == "cutoff.prefix" and r.case == written["world"]["case"]["id"]
    ]
    stages = row.violation.to_dict()["stages"]
    assert stages == {**attribute_stages(replay_file, PIPELINE).to_dict(), "stages": list(PIPELINE.names)}
    assert stages["culprit"] == "Reranker"
    assert [(p["up_to"], p["reproduced"]) for p in stages["prefixes"]] == [
        ("BM25Retriever", False), ("TenantFilter", False), ("Reranker", True)
    ]
    # The same stages behind a plain factory are not declared as a Pipeline: no attribution, no `stages` key.
    nested = check({"pipe": lambda corpus: PIPELINE(corpus)}, world.corpus, world.cases[:3], strategies=["cutoff"], max_examples=10)
    violations = [r.to_dict()["violation"] for r in nested.results if r.violation is not None]
    assert violations and all("stages" not in v for v in violations)


def test_replay_stages_on_the_command_line(replay_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(replay_file), "--stages", "--retriever", f"{__file__}:PIPELINE"])
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATIONS
    assert "broken in Reranker" in out and "TenantFilter" in out
    assert main(["replay", str(replay_file), "--stages", "--retriever", "ragmorph.adapters:BM25Retriever"]) == 2
    assert "Pipeline" in capsys.readouterr().err


@settings(
    max_examples=int(os.environ.get("RAGMORPH_SOUNDNESS_WORLDS", "6")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.nested_given],
)
@given(world=worlds(min_size=1, max_size=8), seed=st.integers(0, 2**16), budget=st.integers(1, 25))
def test_a_correct_truncating_packer_never_breaks_the_cutoff_relations(world, seed: int, budget: int) -> None:
    # Generated cases carry supporting spans, so cutoff.recall judges the spans the packer keeps as k grows.
    packed = Pipeline([BM25Retriever, ContextPacker(token_budget=budget)])
    report = check({"packed": packed}, world.corpus, [world.case], strategies=["cutoff"], max_examples=6, seed=seed)
    assert [(r.relation, r.reason) for r in report.results if r.status in ("fail", "error")] == []


@pytest.mark.parametrize("truncate", [True, False])
def test_a_packers_short_lists_are_not_read_as_exhausted(truncate: bool) -> None:
    # A budget ends the unfiltered list early; the filtered call spends the same budget on admitted chunks only,
    # so it lists admitted chunks the unfiltered one never reached. Reading the short list as "no other chunk
    # matches" made filters.filtered_equals_admitted and tenancy.filtered_equals_visible fail on every world.
    from ragmorph.worlds import generate

    world = generate(1, chunks=40, cases=3)
    packed = Pipeline([BM25Retriever, ContextPacker(token_budget=40, truncate=truncate)])
    report = check({"packed": packed}, world.corpus, world.cases, strategies=["filters", "tenancy"], max_examples=10, seed=1)
    assert not [(r.case, r.relation, r.reason) for r in report.results if r.status in ("fail", "error") and r.severity == "hard"]
    judged = {r.relation for r in report.results if r.status == "pass"}
    assert {"filters.filtered_equals_admitted", "tenancy.filtered_equals_visible"} <= judged
