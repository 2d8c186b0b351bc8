"""TREC qrels and runs: golden parses, trec_eval's tie order checked against pytrec_eval, writer round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmorph.errors import InputError
from ragmorph.io import read_trec_qrels, read_trec_run, write_trec_run
from ragmorph.model import Hit, Ranking

RUN = """\
q1 Q0 d3 1 2.5 sys
q1 Q0 d1 2 2.5 sys

q1 Q0 d10 3 7 sys
q2 Q0 d9 1 -1e-3 sys
"""


def test_qrels_golden(tmp_path: Path) -> None:
    path = tmp_path / "qrels.trec"
    path.write_text("q1 0 d1 1\nq1 0 d2 0\n\nq2\t0\td9\t2\n", encoding="utf-8")
    assert read_trec_qrels(path) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d9": 2}}


def test_run_golden_orders_like_trec_eval(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text(RUN, encoding="utf-8")
    runs = read_trec_run(path)
    # Score descending; the 2.5 tie goes to the larger docid first (d3 > d1); the rank column is ignored.
    assert runs == {
        "q1": Ranking([Hit("d10", 7.0), Hit("d3", 2.5), Hit("d1", 2.5)]),
        "q2": Ranking([Hit("d9", -0.001)]),
    }


@pytest.mark.integration
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["d1", "d2", "d10", "d9", "a", "b", "é"]), st.sampled_from([0.0, 1.0, 2.5])),
        min_size=1, max_size=7, unique_by=lambda pair: pair[0],
    ),
    st.data(),
)
def test_reciprocal_rank_agrees_with_pytrec_eval_under_ties(tmp_path: Path, pairs, data) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    relevant = data.draw(st.sampled_from([doc for doc, _ in pairs]))
    path = tmp_path / "run.trec"
    path.write_text("".join(f"q Q0 {doc} 1 {score} t\n" for doc, score in pairs), encoding="utf-8")
    ranking = read_trec_run(path)["q"]
    ours = 1.0 / (ranking.ids.index(relevant) + 1)
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"})
    theirs = evaluator.evaluate({"q": dict(pairs)})["q"]["recip_rank"]
    assert ours == pytest.approx(theirs)


@pytest.mark.parametrize(
    ("reader", "content", "line", "needle"),
    [
        (read_trec_qrels, "q1 0 d1\n", 1, "expected 4 whitespace-separated columns"),
        (read_trec_qrels, "q1 0 d1 1\nq1 0 d1 high\n", 2, "integer relevance"),
        (read_trec_qrels, "q1 0 d1 1\nq1 0 d1 0\n", 2, "first on line 1"),
        (read_trec_run, "q1 Q0 d1 1 2.0\n", 1, "expected 6 whitespace-separated columns"),
        (read_trec_run, "q1 Q0 d1 1 high sys\n", 1, "finite number as score"),
        (read_trec_run, "q1 Q0 d1 1 nan sys\n", 1, "finite number as score"),
        (read_trec_run, "q1 Q0 d1 first 1.0 sys\n", 1, "integer rank"),
        (read_trec_run, "q1 Q0 d1 1 1.0 sys\n\nq1 Q0 d1 2 0.5 sys\n", 3, "first on line 1"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, reader, content: str, line: int, needle: str) -> None:
    path = tmp_path / "input.trec"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        reader(path)
    assert (caught.value.file, caught.value.line) == (str(path), line)
    assert needle in str(caught.value) and f"{path}:{line}" in str(caught.value)


def test_write_golden_keeps_order_and_scores(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    write_trec_run({"q1": Ranking([Hit("b", 0.75), Hit("a", 0.5)])}, path, tag="bm25")
    assert path.read_text(encoding="utf-8") == "q1 Q0 b 1 0.75 bm25\nq1 Q0 a 2 0.5 bm25\n"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.sampled_from(["q1", "q2", "ü"]),
        st.lists(st.sampled_from(["a", "b", "c", "d10", "d9"]), max_size=5, unique=True).flatmap(
            lambda ids: st.lists(
                st.one_of(st.none(), st.floats(-5, 5, allow_nan=False)), min_size=len(ids), max_size=len(ids)
            ).map(lambda scores: Ranking(Hit(i, s) for i, s in zip(ids, scores)))
        ),
        max_size=3,
    )
)
def test_write_then_read_preserves_every_ranking_order(tmp_path: Path, runs: dict[str, Ranking]) -> None:
    path = tmp_path / "run.trec"
    write_trec_run(runs, path)
    read_back = read_trec_run(path)
    assert {qid: r.ids for qid, r in read_back.items()} == {qid: r.ids for qid, r in runs.items() if len(r)}


def test_auto_falls_back_to_rank_scores_on_ties(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    tied = Ranking([Hit("a", 1.0), Hit("b", 1.0)])
    write_trec_run({"q": tied}, path)
    assert path.read_text(encoding="utf-8") == "q Q0 a 1 2.0 ragmorph\nq Q0 b 2 1.0 ragmorph\n"
    with pytest.raises(InputError, match="scores='rank'"):
        write_trec_run({"q": tied}, path, scores="keep")


@pytest.mark.parametrize(
    ("runs", "needle"),
    [
        ({"q 1": Ranking.of(["a"])}, "query id without whitespace"),
        ({"q": Ranking.of(["a b"])}, "docid without whitespace"),
        ({"q": Ranking.of(["a", "a"])}, "twice for query 'q'"),
    ],
)
def test_writer_rejects_what_trec_cannot_hold(tmp_path: Path, runs, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        write_trec_run(runs, tmp_path / "run.trec")
