"""Fault injection: every way a retriever can misbehave ends as `error` or a contract failure, never a verdict.

The matrix runs each fault of `reliability.faults` through `ragmorph.check` and asserts that no result is a
pass or a failure of a relation other than the retriever contract, and that no metric is reported as if the
faulty retriever had been scored. Items 1, 2, 13 of issue 12 (BaseException, invalid shapes, corpus edits) and
the CLI's exit codes for them are covered here too.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from ragmorph import check
from ragmorph.adapters import GuardedRetriever, validate_hits
from ragmorph.cli import EXIT_ERRORS, EXIT_USAGE, main
from ragmorph.errors import InvalidResponse, RetrieverFailed, UsageError
from ragmorph.model import Chunk, Corpus, Params
from ragmorph.strategies.contract import VALID_RESPONSE
from reliability import faults
from reliability.worldfiles import CASES, CHUNKS, run_args

from ragmorph.io import case_from_dict, chunk_from_dict

CORPUS = Corpus(chunk_from_dict(row) for row in CHUNKS)
WORLD_CASES = tuple(case_from_dict(row) for row in CASES)

RAISING = ["raises", "exits_zero", "exits_one", "base_exception", "generator_exits", "mutates_corpus"]
INVALID = ["returns_set", "returns_dict", "bool_scores", "string_scores", "returns_none", "nan_scores",
           "unknown_ids", "huge_output"]


def _run(fault: str, **options: object) -> dict:
    report = check({fault: f"reliability.faults:{fault}"}, CORPUS, WORLD_CASES, strategies=["cutoff", "repeat"],
                   ks=(1, 3), max_examples=3, **options)
    return report.to_dict()


def _assert_no_verdict(data: dict, fault: str) -> None:
    statuses = {(row["relation"], row["status"]) for row in data["results"]}
    assert statuses, "the run produced no results"
    for relation, status in statuses:
        assert status != "pass", f"{fault}: {relation} passed"
        if status == "fail":
            assert relation == VALID_RESPONSE.name, f"{fault}: {relation} failed instead of an error"
    assert any(status in ("error", "fail") for _, status in statuses)
    for name, aggregate in (data.get("metrics") or {}).get(fault, {}).items():
        assert not aggregate.get("queries"), f"{fault}: {name} was scored over {aggregate['queries']} queries"
    assert data["summary"]["exit_code"] != 0


@pytest.mark.parametrize("fault", RAISING + INVALID)
def test_every_fault_ends_as_an_error_or_a_contract_failure(fault: str) -> None:
    data = _run(fault)
    _assert_no_verdict(data, fault)
    if fault in RAISING:
        assert {row["status"] for row in data["results"]} <= {"error", "not_applicable"}
        assert all(len(row.get("reason") or "") < 2000 for row in data["results"])


def test_a_hang_past_the_timeout_is_an_error() -> None:
    data = _run("hangs", timeout=0.05)
    _assert_no_verdict(data, "hangs")
    assert any("timeout" in (row.get("reason") or "") for row in data["results"])


def test_huge_output_is_reported_with_a_bounded_excerpt() -> None:
    with pytest.raises(InvalidResponse, match="at most k=3 hits, got 200006") as caught:
        validate_hits(faults.FAULTS["huge_output"]([], CORPUS), k=3, query="q", corpus=CORPUS)
    assert len(str(caught.value)) < 500


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ([("hr-1", True)], "numeric score at rank 1, got True"),
        ([("hr-1", "0.5")], "numeric score at rank 1, got '0.5'"),
        ({"hr-1", "it-1"}, "got a set, which has no order"),
        (frozenset({"hr-1"}), "got a frozenset, which has no order"),
        ({"hr-1": 1.0}, "got a dict (its scores would be dropped)"),
    ],
)
def test_bool_and_string_scores_sets_and_dicts_are_invalid(response: object, message: str) -> None:
    with pytest.raises(InvalidResponse) as caught:
        validate_hits(response, k=3, query="q", corpus=CORPUS)
    assert message in str(caught.value)


def test_numbers_that_are_not_floats_and_ordered_views_still_work() -> None:
    numpy = pytest.importorskip("numpy")
    from decimal import Decimal

    hits = validate_hits([("hr-1", numpy.float32(2.5)), ("it-1", Decimal("1"))], k=3, query="q", corpus=CORPUS)
    assert [hit.score for hit in hits] == [2.5, 1.0]
    assert [hit.id for hit in validate_hits({"hr-1": 2.0, "it-1": 1.0}.items(), k=3, query="q")] == ["hr-1", "it-1"]


@pytest.mark.parametrize("error", [SystemExit(0), SystemExit("bye"), faults._CustomBaseException("x")])
def test_base_exceptions_from_user_code_become_retriever_failures(error: BaseException) -> None:
    guarded = GuardedRetriever(faults.Faulty(CORPUS, faults._raise(error)), corpus=CORPUS, name="mine")
    with pytest.raises(RetrieverFailed, match=f"retriever mine raised {type(error).__name__}"):
        guarded.retrieve("leave", Params(3))


def test_keyboard_interrupt_still_stops_the_run() -> None:
    guarded = GuardedRetriever(faults.interrupted(CORPUS), corpus=CORPUS)
    with pytest.raises(KeyboardInterrupt):
        guarded.retrieve("leave", Params(3))


def test_sys_exit_zero_in_a_retriever_exits_3_through_the_cli(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    assert main(run_args(world, "reliability.faults:exits_zero", "--json", str(report))) == EXIT_ERRORS
    data = json.loads(report.read_text(encoding="utf-8"))
    reasons = {row["reason"] for row in data["results"] if row["status"] == "error"}
    assert reasons and all("SystemExit (sys.exit(0))" in reason for reason in reasons)
    assert "exit code 3" in capsys.readouterr().out


def test_a_retriever_file_calling_sys_exit_on_import_is_a_usage_error(
    world: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = tmp_path / "adapter.py"
    adapter.write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    assert main(run_args(world, f"{adapter}:factory")) == EXIT_USAGE
    assert "SystemExit" in capsys.readouterr().err


def test_a_retriever_replacing_the_corpus_chunks_is_an_error_naming_it() -> None:
    corpus = Corpus([Chunk("a", "alpha"), Chunk("b", "beta")])
    guarded = GuardedRetriever(faults.mutates_corpus(corpus), corpus=corpus, name="editor")
    with pytest.raises(RetrieverFailed, match="retriever editor to leave the Corpus it was given unchanged"):
        guarded.retrieve("alpha", Params(2))


def test_a_factory_editing_the_corpus_is_an_error_naming_it() -> None:
    corpus = Corpus([Chunk("a", "alpha"), Chunk("b", "beta")])
    guarded = GuardedRetriever(faults.mutates_corpus_when_built(corpus), corpus=corpus, name="builder")
    with pytest.raises(RetrieverFailed, match="retriever builder to leave the Corpus"):
        guarded.retrieve("beta", Params(2))


class _SwapsGivenChunks:
    """Swaps the chunks of the derived corpus it was handed, before or without ever reading them."""

    def __init__(self, corpus: Corpus, read_first: bool) -> None:
        self.corpus, self.read_first = corpus, read_first

    def retrieve(self, query: str, *, k: int, filters: object = None) -> list[str]:
        """No hits; the given corpus's chunks replaced by one foreign chunk."""
        if self.read_first:
            assert self.corpus.chunks
        object.__setattr__(self.corpus, "chunks", (Chunk("zz", "foreign"),))
        return []


@pytest.mark.parametrize("read_first", [False, True])
@pytest.mark.parametrize("derive", ["without", "with_chunks", "replaced", "reordered"])
def test_a_retriever_swapping_the_chunks_of_a_lazily_built_derived_corpus_is_named_and_undone(
    derive: str, read_first: bool
) -> None:
    base = Corpus([Chunk(f"c{i}", f"alpha {i}") for i in range(6)])
    made = {
        "without": lambda: base.without(["c1"]),
        "with_chunks": lambda: base.with_chunks([Chunk("n", "new")]),
        "replaced": lambda: base.replaced(Chunk("c2", "updated")),
        "reordered": lambda: base.reordered(range(5, -1, -1)),
    }[derive]
    expected, given = made().ids, made()
    guarded = GuardedRetriever(_SwapsGivenChunks(given, read_first), corpus=base, name="swapper")
    with pytest.raises(RetrieverFailed, match=rf"retriever swapper to leave the Corpus .*\({len(expected)} -> 1 chunks"):
        guarded.retrieve("alpha", Params(3), corpus=given)
    assert given.ids == expected and len(given) == len(expected)
    assert base.ids == tuple(f"c{i}" for i in range(6))


def test_mutating_factories_end_as_errors_in_a_run() -> None:
    corpus = Corpus(chunk_from_dict(row) for row in CHUNKS)
    data = check({"builder": faults.mutates_corpus_when_built}, corpus, WORLD_CASES, strategies=["cutoff"],
                 ks=(1, 3), max_examples=3).to_dict()
    _assert_no_verdict(data, "builder")


def test_a_factory_returning_none_says_so() -> None:
    with pytest.raises(UsageError, match="did the factory forget to `return` the retriever"):
        GuardedRetriever(faults.returns_nothing(CORPUS))


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, float("nan"), 0.0])
def test_guard_refuses_timeouts_threads_cannot_wait_for(timeout: float) -> None:
    with pytest.raises(UsageError, match="finite timeout"):
        GuardedRetriever(faults.raises(CORPUS), timeout=timeout)
    assert threading.TIMEOUT_MAX < 1e300


def test_metrics_say_how_many_cases_errored_next_to_every_average(tmp_path: Path) -> None:
    data = check({"outage": faults.PartialOutage}, CORPUS, WORLD_CASES, strategies=["cutoff"], ks=(1, 3),
                 max_examples=3).to_dict()
    metrics = data["metrics"]["outage"]
    assert metrics and all(value["queries"] <= 1 and value["errored"] == 1 for value in metrics.values())
    from ragmorph.reporting import render_html

    assert "1 case errored and is not in its averages" in render_html(data)
    assert "(1 scored, 1 errored)" in render_html(data)
