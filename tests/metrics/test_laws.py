"""Hypothesis laws every metric obeys: bounds, monotonicity in k and rank, duplicates, batch == single."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.metrics import GOLD_MEASURES, evaluate, evaluate_batch, parse_metric
from ragmorph.model import Case, Ranking
from support.backends import BACKENDS
from support.metric_worlds import DOC_IDS, cases, ranked_lists, single_member_cases, trec_order

KS = (1, 2, 3, 5, 8, 13, 21)
# Canonical names (`SpanR@1` is reported as `SpanR(cover=all)@1`), so values can be looked up by them.
GOLD_NAMES = [str(parse_metric(f"{measure}@{k}")) for k in KS for measure in sorted(GOLD_MEASURES)]
BATCH_NAMES = [f"{measure}@{k}" for k in KS for measure in ("P", "P_ret", "R", "CP", "AP", "RR", "nDCG", "Hit", "F1")]

laws = settings(max_examples=100, deadline=None)


@laws
@given(case=cases(), ids=ranked_lists(unique=False))
def test_every_gold_metric_lies_in_the_unit_interval(case: Case, ids: list[str]) -> None:
    values = evaluate(Ranking.of(ids), case, GOLD_NAMES)
    for name, value in values.items():
        assert value is None or 0.0 <= value <= 1.0 + 1e-12, (name, value)
    # Only P_ret is undefined for an answerable case, and only when nothing came back.
    assert all(value is not None for name, value in values.items() if not name.startswith("P_ret") or ids)


@laws
@given(case=cases(), ids=ranked_lists(unique=False))
def test_recall_and_group_recall_never_fall_as_k_grows(case: Case, ids: list[str]) -> None:
    values = evaluate(Ranking.of(ids), case, [f"{m}@{k}" for k in KS for m in ("R", "GroupR", "Hit")])
    for measure in ("R", "GroupR", "Hit"):
        series = [values[f"{measure}@{k}"] for k in KS]
        assert series == sorted(series), (measure, series)


@st.composite
def _swappable(draw: st.DrawFn) -> tuple[Case, list[str], int, int]:
    """A case, a ranking of distinct ids, and positions i < j with an irrelevant hit at i and a relevant one at j."""
    case = draw(cases())
    gold = set(case.gold_ids)
    ids = draw(ranked_lists(unique=True))
    irrelevant = [i for i, doc in enumerate(ids) if doc not in gold]
    relevant = [j for j, doc in enumerate(ids) if doc in gold]
    pairs = [(i, j) for i in irrelevant for j in relevant if i < j]
    if not pairs:
        filler = [doc for doc in DOC_IDS if doc not in gold][0]
        ids = [filler] + [doc for doc in ids if doc != filler] + [case.gold_ids[0]]
        ids = list(dict.fromkeys(ids))
        pairs = [(0, ids.index(case.gold_ids[0]))]
    i, j = draw(st.sampled_from(pairs))
    return case, ids, i, j


@laws
@given(_swappable())
def test_moving_a_relevant_hit_above_an_irrelevant_one_never_lowers_ap_or_cp(data: tuple) -> None:
    case, ids, i, j = data
    swapped = list(ids)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    names = [f"{m}@{k}" for k in KS for m in ("AP", "CP", "nDCG", "RR", "R", "P")]
    before = evaluate(Ranking.of(ids), case, names)
    after = evaluate(Ranking.of(swapped), case, names)
    for k in KS:
        for measure in ("AP", "nDCG", "RR", "R", "P"):
            assert after[f"{measure}@{k}"] >= before[f"{measure}@{k}"] - 1e-12, (measure, k)
        if j < k:
            # CP@k is only monotone while both hits stay inside the top k (see test_policies for the boundary).
            assert after[f"CP@{k}"] >= before[f"CP@{k}"] - 1e-12, k


@st.composite
def _with_repeat(draw: st.DrawFn) -> tuple[Case, list[str], list[str]]:
    """A ranking, and the same ranking with a repeat of one of its ids inserted after that id's first rank."""
    case = draw(cases())
    ids = draw(ranked_lists(unique=False, max_size=15).filter(bool))
    source = draw(st.integers(0, len(ids) - 1))
    at = draw(st.integers(source + 1, len(ids)))
    return case, ids, ids[:at] + [ids[source]] + ids[at:]


@laws
@given(_with_repeat())
def test_a_repeated_id_never_adds_a_hit(data: tuple) -> None:
    case, ids, repeated = data
    before = evaluate(Ranking.of(ids), case, GOLD_NAMES)
    after = evaluate(Ranking.of(repeated), case, GOLD_NAMES)
    for name in GOLD_NAMES:
        if not name.startswith("CP"):  # pushing a late relevant hit out of the top k can raise CP (see policies)
            assert after[name] <= before[name] + 1e-12, name


@laws
@given(case=cases(), ids=ranked_lists(unique=False))
def test_a_repeat_scores_like_an_irrelevant_filler_in_its_slot(case: Case, ids: list[str]) -> None:
    filler = iter(f"filler{i}" for i in range(100))
    seen: set[str] = set()
    replaced = []
    for doc in ids:
        replaced.append(doc if doc not in seen else next(filler))
        seen.add(doc)
    assert evaluate(Ranking.of(ids), case, GOLD_NAMES) == evaluate(Ranking.of(replaced), case, GOLD_NAMES)


@laws
@given(case=cases(), ids=ranked_lists(unique=False))
def test_group_recall_equals_recall_when_groups_have_one_member(case: Case, ids: list[str]) -> None:
    values = evaluate(Ranking.of(ids), case, [f"{m}@{k}" for k in KS for m in ("R", "GroupR")])
    single = Case(id="q", query="q", evidence=[[doc] for doc in case.gold_ids])
    single_values = evaluate(Ranking.of(ids), single, [f"{m}@{k}" for k in KS for m in ("R", "GroupR")])
    for k in KS:
        assert values[f"GroupR@{k}"] >= 0.0
        assert single_values[f"GroupR@{k}"] == single_values[f"R@{k}"]
        # Alternatives in a group: covering a group never needs all its members, so GroupR is 0 only when R is.
        assert (values[f"GroupR@{k}"] == 0.0) == (values[f"R@{k}"] == 0.0)


@BACKENDS
@laws
@given(
    cases_and_runs=st.lists(
        st.tuples(
            single_member_cases(),
            st.dictionaries(st.sampled_from(DOC_IDS), st.integers(0, 5).map(float), max_size=20),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_batch_on_scored_runs_equals_single_evaluation(cases_and_runs: list, backend: str) -> None:
    run = {f"q{n}": scores for n, (_case, scores) in enumerate(cases_and_runs)}
    qrels = {f"q{n}": {doc: 1 for doc in case.gold_ids} for n, (case, _scores) in enumerate(cases_and_runs)}
    batch = evaluate_batch(run, qrels, BATCH_NAMES, backend=backend)
    per_query = batch.per_query()
    for n, (case, scores) in enumerate(cases_and_runs):
        single = evaluate(Ranking.of(trec_order(scores)), case, BATCH_NAMES)
        assert dict(per_query[f"q{n}"]) == _close_to(single), f"q{n}"
        assert per_query[f"q{n}"].parts.keys() <= single.parts.keys()


@laws
@given(
    cases_and_lists=st.lists(st.tuples(single_member_cases(), ranked_lists(unique=False)), min_size=1, max_size=6)
)
def test_batch_on_ranked_lists_with_repeats_equals_single_evaluation(cases_and_lists: list) -> None:
    run = {f"q{n}": ids for n, (_case, ids) in enumerate(cases_and_lists)}
    qrels = {f"q{n}": {doc: 1 for doc in case.gold_ids} for n, (case, _ids) in enumerate(cases_and_lists)}
    per_query = evaluate_batch(run, qrels, BATCH_NAMES).per_query()
    for n, (case, ids) in enumerate(cases_and_lists):
        assert dict(per_query[f"q{n}"]) == _close_to(evaluate(Ranking.of(ids), case, BATCH_NAMES)), f"q{n}"


def _close_to(expected: dict) -> dict:
    """Expected values wrapped so that floats compare to 1e-12 and None compares to None only."""
    return {name: (None if value is None else pytest.approx(value, abs=1e-12)) for name, value in expected.items()}
