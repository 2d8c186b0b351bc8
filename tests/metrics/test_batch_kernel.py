"""The compiled kernel and the numpy path of evaluate_batch give identical numbers, and the same errors."""

from __future__ import annotations

import math
import shutil
import sysconfig

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import UsageError
from ragmorph.metrics import BATCH_BACKEND, evaluate_batch
from support.backends import KERNEL_BUILT

NAMES = [f"{m}@{k}" for k in (1, 3, 10, 100) for m in ("P", "P_ret", "R", "CP", "AP", "RR", "nDCG", "Hit", "F1")]
needs_kernel = pytest.mark.skipif(not KERNEL_BUILT, reason="ragmorph.metrics._ranks was not compiled")

# Few distinct values make ties common; infinities and ints are scores numpy's path accepts too.
_scores = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, math.inf, -math.inf]),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-5, 5),
    st.booleans(),
)
_docs = st.sampled_from([f"d{i}" for i in range(120)])


@st.composite
def _worlds(draw: st.DrawFn) -> tuple[dict, dict]:
    """Runs of 0..120 scored docs (long ones with many relevant hits reach the kernel's sorted branch)."""
    queries = draw(st.integers(1, 6))
    run, qrels = {}, {}
    for number in range(queries):
        qid = f"q{number}"
        run[qid] = draw(st.dictionaries(_docs, _scores, max_size=draw(st.sampled_from([0, 5, 30, 120]))))
        judged = draw(st.dictionaries(_docs, st.integers(-1, 3), max_size=40))
        # Judge many of the run's own docs, so that hits (and ties between them) are the common case.
        for doc in list(run[qid])[: draw(st.integers(0, 40))]:
            judged.setdefault(doc, draw(st.integers(0, 3)))
        qrels[qid] = judged
    for number in range(draw(st.integers(0, 2))):  # judged queries the run never answered
        qrels[f"missing{number}"] = {"d0": 1}
    return run, qrels


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(world=_worlds())
def test_compiled_and_numpy_paths_agree_exactly(world: tuple[dict, dict]) -> None:
    run, qrels = world
    compiled = evaluate_batch(run, qrels, NAMES, backend="compiled")
    numpy_path = evaluate_batch(run, qrels, NAMES, backend="numpy")
    assert compiled.query_ids == numpy_path.query_ids
    for name in NAMES:
        assert np.array_equal(compiled[name], numpy_path[name], equal_nan=True), name
    assert np.array_equal(compiled.gold_ids, numpy_path.gold_ids)
    assert np.array_equal(compiled.returned_ids, numpy_path.returned_ids)


@needs_kernel
def test_many_hits_in_a_long_tied_run_rank_like_trec_eval() -> None:
    # 200 docs on 4 score levels with 50 relevant ones: the kernel sorts and binary-searches, then walks ties.
    run = {"q": {f"d{i:03d}": float(i % 4) for i in range(200)}}
    qrels = {"q": {f"d{i:03d}": 1 for i in range(0, 200, 4)}}
    order = sorted(run["q"], key=lambda doc: (-run["q"][doc], [-ord(c) for c in doc]))
    first_relevant = next(rank for rank, doc in enumerate(order) if doc in qrels["q"])
    for backend in ("compiled", "numpy"):
        result = evaluate_batch(run, qrels, "RR@200,AP@200", backend=backend)
        assert result["RR@200"][0] == 1 / (first_relevant + 1), backend
    assert np.array_equal(
        evaluate_batch(run, qrels, NAMES, backend="compiled")["AP@100"],
        evaluate_batch(run, qrels, NAMES, backend="numpy")["AP@100"],
    )


@pytest.mark.parametrize(
    ("score", "message"),
    [(math.nan, "NaN"), ("high", "numeric scores"), (None, "numeric scores"), (10**400, "numeric scores")],
    ids=["nan", "text", "none", "huge-int"],
)
def test_a_bad_score_is_reported_the_same_way_on_every_path(score: object, message: str) -> None:
    # The bad score sits in a run with no relevant hit: the kernel must still read (and reject) it.
    run = {"q1": {"a": 1.0}, "q2": {"b": score, "c": 0.5}}
    qrels = {"q1": {"a": 1}, "q2": {"z": 1}}
    for backend in (None, "numpy", *(("compiled",) if KERNEL_BUILT else ())):
        with pytest.raises(UsageError, match=message):
            evaluate_batch(run, qrels, "P@3", backend=backend)


def test_backend_names_are_checked() -> None:
    with pytest.raises(UsageError, match="'compiled' or 'numpy'"):
        evaluate_batch({"q": {"a": 1.0}}, {"q": {"a": 1}}, "P@3", backend="fortran")


def test_kernel_is_built_wherever_a_c_compiler_was_at_install_time() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not KERNEL_BUILT and shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) here: evaluate_batch runs its numpy path")
    assert BATCH_BACKEND == "compiled", "a C compiler is installed but ragmorph.metrics._ranks was not built"


@needs_kernel
def test_kernel_checks_its_own_contract() -> None:
    from ragmorph.metrics import _ranks

    slots = np.zeros(4, dtype=np.int64)
    with pytest.raises(ValueError, match="differ in length"):
        _ranks.scored_ranks([{}], [], b"", slots, slots.copy())
    with pytest.raises(TypeError, match="lists of dicts"):
        _ranks.scored_ranks([[]], [{}], b"", slots, slots.copy())
    with pytest.raises(ValueError, match="positive flags"):
        _ranks.scored_ranks([{"a": 1.0}], [{"a": 1}], b"", slots, slots.copy())
    with pytest.raises(ValueError, match="room"):
        _ranks.scored_ranks([{"a": 1.0}], [{"a": 1}], b"\x01", np.zeros(0, dtype=np.int64), slots)
    found, ranks = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    assert _ranks.scored_ranks([{"a": 1.0, "b": 2.0}], [{"x": 3, "a": 1}], b"\x01\x01", found, ranks) == 1
    assert (found[0], ranks[0]) == (1, 1)  # judgement 1 ("a"), below "b"


def test_a_level_too_large_for_a_float_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="numeric relevance levels"):
        evaluate_batch({"q": {"a": 1.0}}, {"q": {"a": 10**400}}, "P@3")
