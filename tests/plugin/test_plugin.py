"""The pytest plugin through pytester: ids, verdicts, failure text, settings, options, header and xdist."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import settings

# Imported here so pytester's in-process runs find them already loaded: its sys.modules snapshot drops modules
# an inner run imports, and numpy's C extension cannot be loaded twice in one process.
import ragmorph.adapters  # noqa: F401
import ragmorph.demo  # noqa: F401
import ragmorph.reporting  # noqa: F401
import ragmorph.runner  # noqa: F401
import ragmorph.worlds  # noqa: F401
from ragmorph.strategies import CATALOG

pytest_plugins = ["pytester"]

# A small generated world keeps every engine run here to a fraction of a second.
WORLD = """
from ragmorph.worlds import generate

WORLD = generate(3, chunks=24, cases=3)
"""

SUITE = WORLD + """
from ragmorph.adapters import BM25Retriever
from ragmorph.pytest_plugin import suite

ragmorph_suite = suite(retrievers={{"bm25": BM25Retriever}}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies={strategies!r}, ks=(1, 3, 5))
"""

FAST = ("--ragmorph-max-examples", "3", "-p", "no:cacheprovider")


def _relations(*families: str) -> list[str]:
    own = [f"{r.family}-{r.name.removeprefix(r.family + '.')}" for r in CATALOG if r.family in families]
    # Every family also reports contract breaches found in its own perturbed worlds.
    return own + [f"{family}-valid_response" for family in families if family != "contract"]


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k in ("passed", "failed", "skipped", "errors")}


def test_one_item_per_retriever_strategy_and_relation_with_readable_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_retriever=SUITE.format(strategies=("tenancy", "cutoff")))
    result = pytester.runpytest_inprocess("--collect-only", "-q", *FAST)
    expected = [f"test_retriever.py::bm25[{name}]" for name in _relations("tenancy", "cutoff")]
    collected = [line for line in result.outlines if "::" in line and not line.startswith("ragmorph:")]
    assert sorted(collected) == sorted(expected)
    assert len(expected) >= 2


def test_a_correct_retriever_passes_every_hard_relation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_retriever=SUITE.format(strategies=("tenancy", "cutoff")))
    result = pytester.runpytest_inprocess(*FAST)
    outcomes = _outcomes(result)
    assert outcomes.get("failed", 0) == 0, result.stdout.str()
    assert outcomes.get("passed", 0) >= 1


def test_the_planted_bug_fails_with_the_minimal_case_and_the_replay_command(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_buggy=WORLD
        + """
from ragmorph.demo import PostFilteredPipeline
from ragmorph.pytest_plugin import suite

ragmorph_suite = suite(retrievers={"postfilter": PostFilteredPipeline}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("tenancy",), ks=(1, 3, 5))
"""
    )
    replays = pytester.path / "replays"
    result = pytester.runpytest_inprocess("--ragmorph-max-examples", "10", "--ragmorph-replay-dir", str(replays))
    assert _outcomes(result).get("failed", 0) >= 1, result.stdout.str()
    text = result.stdout.str()
    assert "hard relation violated" in text
    assert "ragmorph replay" in text
    assert "Traceback" not in text
    assert any(replays.iterdir())


def test_report_header_prints_the_seed_and_hypothesis_seed_drives_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_retriever=SUITE.format(strategies=("cutoff",)))
    result = pytester.runpytest_inprocess("--hypothesis-seed", "7", "--collect-only", *FAST)
    result.stdout.fnmatch_lines(["ragmorph: seed=7 max_examples=3 *--hypothesis-seed=7*"])


def test_hypothesis_profile_sets_max_examples_and_derandomize(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from hypothesis import settings
settings.register_profile("tiny", max_examples=2, derandomize=True)
"""
    )
    pytester.makepyfile(test_retriever=SUITE.format(strategies=("cutoff",)))
    junit = pytester.path / "junit.xml"
    active = settings.get_current_profile_name()
    try:
        result = pytester.runpytest_inprocess("--hypothesis-profile", "tiny", f"--junitxml={junit}")
    finally:
        # Profiles are process-global: loading "tiny" in-process must not leak into the tests that follow.
        settings.load_profile(active)
    result.stdout.fnmatch_lines(["ragmorph: seed=0 max_examples=2 derandomize=True*"])
    properties = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert properties["ragmorph_max_examples"] == "2"
    assert properties["ragmorph_derandomize"] == "True"


def test_option_beats_suite_beats_profile(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_retriever=SUITE.format(strategies=("cutoff",)).replace("ks=(1, 3, 5))", "ks=(1, 3, 5), max_examples=4)")
    )
    junit = pytester.path / "junit.xml"
    pytester.runpytest_inprocess(f"--junitxml={junit}")
    assert {p.get("value") for p in ET.parse(junit).iter("property") if p.get("name") == "ragmorph_max_examples"} == {"4"}
    pytester.runpytest_inprocess("--ragmorph-max-examples", "3", f"--junitxml={junit}")
    assert {p.get("value") for p in ET.parse(junit).iter("property") if p.get("name") == "ragmorph_max_examples"} == {"3"}


def test_the_budget_option_beats_the_suite_and_a_bad_one_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_retriever=SUITE.format(strategies=("cutoff",)).replace("ks=(1, 3, 5))", "ks=(1, 3, 5), budget='full')")
    )
    junit = pytester.path / "junit.xml"

    def budgets() -> set[str | None]:
        return {p.get("value") for p in ET.parse(junit).iter("property") if p.get("name") == "ragmorph_budget"}

    pytester.runpytest_inprocess(*FAST, f"--junitxml={junit}")
    assert budgets() == {"full"}
    pytester.runpytest_inprocess(*FAST, "--ragmorph-budget", "adaptive", f"--junitxml={junit}")
    assert budgets() == {"adaptive"}
    result = pytester.runpytest_inprocess(*FAST, "--ragmorph-budget", "half")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ragmorph-budget: expected one of adaptive, full, got 'half' (str)*"])


def test_strategies_option_keeps_only_the_named_families(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_retriever=SUITE.format(strategies=("tenancy", "cutoff")))
    result = pytester.runpytest_inprocess("--collect-only", "-q", "--ragmorph-strategies", "cutoff", *FAST)
    collected = [line for line in result.outlines if "::" in line and not line.startswith("ragmorph:")]
    assert collected and all("[cutoff-" in line for line in collected)


def test_a_black_box_retriever_skips_corpus_edits_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_blackbox=WORLD
        + """
from ragmorph.adapters import BM25Retriever
from ragmorph.pytest_plugin import suite

class FixedIndex:
    # A black box: a retriever over a fixed corpus, with no factory and no add/remove.
    def __init__(self):
        self._inner = BM25Retriever(WORLD.corpus)
    def retrieve(self, query, *, k, filters=None):
        return self._inner.retrieve(query, k=k, filters=filters)

ragmorph_suite = suite(retrievers={"fixed": FixedIndex()}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("removal",), ks=(3,))
"""
    )
    result = pytester.runpytest_inprocess("-rs", *FAST)
    outcomes = _outcomes(result)
    assert outcomes.get("skipped", 0) >= 1 and outcomes.get("failed", 0) == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*not applicable*"])


def test_retriever_errors_fail_the_item_saying_no_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_broken=WORLD
        + """
from ragmorph.pytest_plugin import suite

class Broken:
    def __init__(self, corpus):
        pass
    def retrieve(self, query, *, k, filters=None):
        raise ConnectionError("index server down")

ragmorph_suite = suite(retrievers={"broken": Broken}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("cutoff",), ks=(3,))
"""
    )
    result = pytester.runpytest_inprocess(*FAST)
    assert _outcomes(result).get("failed", 0) >= 1
    result.stdout.fnmatch_lines(["*retriever errors prevented a verdict*"])


def test_paths_and_file_retrievers_resolve_relative_to_the_test_file(pytester: pytest.Pytester) -> None:
    from ragmorph.io import write_cases, write_corpus
    from ragmorph.worlds import generate

    world = generate(3, chunks=24, cases=3)
    data = pytester.mkdir("data")
    write_corpus(world.corpus, data / "corpus.jsonl")
    write_cases(world.cases, data / "cases.jsonl")
    pytester.mkdir("adapters").joinpath("mine.py").write_text(
        "from ragmorph.adapters import BM25Retriever\n\ndef factory(corpus):\n    return BM25Retriever(corpus)\n",
        encoding="utf-8",
    )
    tests = pytester.mkdir("tests")
    tests.joinpath("test_files.py").write_text(
        "from ragmorph.pytest_plugin import suite\n"
        "ragmorph_suite = suite(retrievers={'mine': '../adapters/mine.py:factory'}, corpus='../data/corpus.jsonl',"
        " cases='../data/cases.jsonl', strategies=('cutoff',), ks=(1, 3))\n",
        encoding="utf-8",
    )
    result = pytester.runpytest_inprocess(str(tests), *FAST)
    outcomes = _outcomes(result)
    assert outcomes.get("passed", 0) >= 1 and outcomes.get("failed", 0) == 0, result.stdout.str()


@pytest.mark.slow
def test_xdist_two_workers_give_the_same_outcomes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_retriever=SUITE.format(strategies=("tenancy", "cutoff")))
    serial = _outcomes(pytester.runpytest_inprocess(*FAST))
    parallel = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "--dist", "loadgroup", *FAST)
    assert _outcomes(parallel) == serial, parallel.stdout.str()
    parallel.stdout.fnmatch_lines(["*2 workers*"])


def test_suite_rejects_bad_declarations() -> None:
    from ragmorph.errors import UsageError
    from ragmorph.pytest_plugin import suite

    with pytest.raises(UsageError, match="exactly one of retriever"):
        suite(corpus="c.jsonl", cases="q.jsonl")
    with pytest.raises(UsageError, match="names without spaces"):
        suite(retrievers={"my retriever": object()}, corpus="c.jsonl", cases="q.jsonl")
    with pytest.raises(UsageError, match=r"^suite\(budget=\): expected one of adaptive, full, got 'half' \(str\)$"):
        suite(budget="half")
    declared = suite("ragmorph.adapters:BM25Retriever", corpus=Path("c.jsonl"), cases="q.jsonl")
    assert list(declared.retrievers) == ["BM25Retriever"]


def test_an_invalid_response_in_a_perturbed_world_fails_that_familys_valid_response_item(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_overfull=WORLD
        + """
from ragmorph.adapters import BM25Retriever
from ragmorph.pytest_plugin import suite


class OneTooMany(BM25Retriever):
    '''Returns k + 1 hits whenever a filter is set: a contract breach only the tenancy family provokes.'''

    def retrieve(self, query, *, k, filters=None):
        hits = super().retrieve(query, k=k + 1 if filters else k, filters=filters)
        return hits


ragmorph_suite = suite(retrievers={"overfull": OneTooMany}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("tenancy",), ks=(1, 3, 5))
"""
    )
    result = pytester.runpytest_inprocess("-q", *FAST)
    assert "overfull[tenancy-valid_response]" in result.stdout.str()
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert any("tenancy-valid_response" in line for line in failed), result.stdout.str()


def test_report_dir_writes_every_registered_format_per_engine_run(pytester: pytest.Pytester) -> None:
    from ragmorph.reporting import WRITERS, load_report

    pytester.makepyfile(test_retriever=SUITE.format(strategies=("cutoff",)))
    out = pytester.path / "reports"
    result = pytester.runpytest_inprocess("--ragmorph-report-dir", str(out), *FAST)
    assert result.ret == 0
    stem = "test_retriever-ragmorph_suite-bm25-cutoff"
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(f"{stem}{Path(w.filename).suffix}" for w in WRITERS.values())
    assert {r["strategy"] for r in load_report(out / f"{stem}.json")["results"]} == {"cutoff"}


def test_failure_messages_mask_registered_secrets(pytester: pytest.Pytester) -> None:
    # A retriever error that echoes its API key (as an HTTP client's error text may) must not print the key.
    pytester.makepyfile(test_leaky=WORLD + """
from ragmorph.adapters import FunctionRetriever
from ragmorph.pytest_plugin import suite
from ragmorph.secrets import register_secret

KEY = "sk-live-7f3a9c1e5b"
register_secret(KEY)


def leaky(corpus):
    def search(query, k, filters=None):
        raise RuntimeError(f"401 Unauthorized for api_key={KEY}")
    return FunctionRetriever(search)


ragmorph_suite = suite(retrievers={"leaky": leaky}, corpus=WORLD.corpus, cases=WORLD.cases,
                       strategies=("cutoff",), ks=(1, 3))
""")
    result = pytester.runpytest_inprocess(*FAST)
    text = "\n".join(result.outlines + result.errlines)
    assert "retriever errors prevented a verdict" in text
    assert "sk-live-7f3a9c1e5b" not in text


def test_a_pipeline_failure_names_the_stage_that_lost_the_evidence(pytester: pytest.Pytester) -> None:
    # tests/ is on sys.path (pyproject's pythonpath), so the inner run reuses the quality test's pipeline and world.
    pytester.makepyfile(
        test_pipeline="""
from quality.test_stage_attribution import CASE, CORPUS, EvenSharePacker, pipeline
from ragmorph.pytest_plugin import suite

ragmorph_suite = suite(retrievers={"even-share": pipeline(EvenSharePacker(token_budget=60))}, corpus=CORPUS,
                       cases=[CASE], strategies=("cutoff",))
"""
    )
    result = pytester.runpytest_inprocess(*FAST)
    text = result.stdout.str()
    assert _outcomes(result).get("failed") == 1, text
    assert "stage         evidence present after Reranker, lost in EvenSharePacker: 'hr-12#3' truncated at 30" in text
