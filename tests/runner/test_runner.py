"""Runner contracts: call cache, shared base runs, reverted deltas, errors, not_applicable reasons, determinism,
picklable units, report shape and replay round trips."""

from __future__ import annotations

import json
import pickle
import random

import pytest

from ragmorph.adapters import BM25Retriever, DenseRetriever
from ragmorph.errors import UsageError
from ragmorph.runner import BUDGETS, CallCache, CheckReport, budget_problem, check, execute, plan, replay
from support import engine_retrievers as er

CORPUS, CASES = er.small_world()


def _no_created(report: CheckReport) -> dict:
    data = report.to_dict()
    data["manifest"].pop("created")
    return data


def test_no_identical_call_is_made_twice_outside_the_repeat_family() -> None:
    er.CALL_LOG.clear()
    check(er.CountingBM25, CORPUS, CASES, strategies=["cutoff", "tenancy", "query", "removal", "distractors"], max_examples=15)
    assert er.CALL_LOG, "the retriever was never called"
    assert len(er.CALL_LOG) == len(set(er.CALL_LOG))


def test_base_world_is_run_once_and_shared_by_every_perturbation() -> None:
    cache = CallCache()
    units = plan(er.CountingBM25, CORPUS, CASES[:1], strategies=["cutoff", "query"], max_examples=15, ks=(3,))
    er.CALL_LOG.clear()
    for unit in units:
        execute(unit, cache)
    base_calls = [c for c in er.CALL_LOG if c[1] == CASES[0].query and c[2] == 3]
    assert len(base_calls) == 1
    assert cache.hits > 0


def test_deltas_are_reverted_even_when_the_retriever_fails() -> None:
    er.INSTANCES.clear()
    report = check({"exploding": er.ExplodingBM25}, CORPUS, CASES, strategies=["distractors"], max_examples=5)
    assert {r.status for r in report.results} == {"error"}
    assert all("index corrupted" in r.reason for r in report.results)
    assert report.exit_code == 3
    assert er.INSTANCES and all(inst.live == set(CORPUS.ids) for inst in er.INSTANCES)


def test_an_erroring_retriever_does_not_stop_the_others() -> None:
    report = check({"exploding": er.ExplodingBM25, "bm25": BM25Retriever}, CORPUS, CASES[:1], strategies=["distractors"], max_examples=5)
    statuses = {r.retriever: {x.status for x in report.results if x.retriever == r.retriever} for r in report.results}
    assert statuses["exploding"] == {"error"}
    assert "error" not in statuses["bm25"] and "pass" in statuses["bm25"]


def test_a_failing_factory_is_an_error_naming_the_factory_never_a_pass() -> None:
    def broken_factory(corpus: object) -> BM25Retriever:
        raise OSError("index directory is read-only")

    report = check({"broken": broken_factory}, CORPUS, CASES[:1], strategies=["cutoff"], max_examples=5)
    assert {r.status for r in report.results} == {"error"}
    reason = report.results[0].reason
    assert "factory broken" in reason and "OSError" in reason and "read-only" in reason, reason
    assert report.exit_code == 3


def test_not_applicable_results_say_why() -> None:
    black_box = BM25Retriever(CORPUS)
    report = check({"fixed": black_box}, CORPUS, CASES, strategies=["removal", "tenancy", "cutoff"], max_examples=5)
    by = {(r.case, r.strategy): r for r in report.results}
    assert by[("q1", "removal")].status == "not_applicable" and "black-box" in by[("q1", "removal")].reason
    assert by[("q2", "tenancy")].status == "not_applicable" and "no tenant" in by[("q2", "tenancy")].reason
    assert by[("q1", "cutoff")].status == "pass"
    assert report.to_dict()["manifest"]["retrievers"][0]["kind"] == "black_box"


def test_missing_traits_make_hard_relations_not_applicable_with_the_fix() -> None:
    # A dense retriever declares no `lexical` trait: unrelated text may score above zero there.
    report = check(DenseRetriever, CORPUS, CASES[:1], strategies=["distractors"], max_examples=5)
    row = next(r for r in report.results if r.relation == "distractors.unrelated_below_gold")
    assert row.status == "not_applicable" and "lexical" in row.reason and "traits" in row.reason


def test_same_seed_gives_the_same_report() -> None:
    args = dict(strategies=["removal", "tenancy", "repeat"], max_examples=10, seed=7)
    first = check({"leaky": er.IgnoresTenantFilter}, CORPUS, CASES, **args)
    second = check({"leaky": er.IgnoresTenantFilter}, CORPUS, CASES, **args)
    assert _no_created(first) == _no_created(second)
    assert first.exit_code == 1


def test_units_are_picklable_and_give_the_same_results_elsewhere() -> None:
    units = plan({"leaky": "support.engine_retrievers:IgnoresTenantFilter"}, CORPUS, CASES[:1], strategies=["tenancy"], max_examples=8)
    copies = pickle.loads(pickle.dumps(units))
    here = [execute(u) for u in units]
    there = [execute(u) for u in copies]
    assert [[r.to_dict() for r in rs] for rs in here] == [[r.to_dict() for r in rs] for rs in there]


def test_report_from_results_is_order_independent_and_has_the_contract_shape() -> None:
    units = plan(BM25Retriever, CORPUS, CASES, strategies=["cutoff", "tenancy"], max_examples=5)
    results = [r for u in units for r in execute(u)]
    shuffled = results[:]
    random.Random(3).shuffle(shuffled)
    kwargs = dict(corpus=CORPUS, cases=CASES, retrievers=[units[0].retriever], strategies=["cutoff", "tenancy"], seed=0, settings=units[0].settings, created="t")
    a, b = CheckReport.from_results(results, **kwargs), CheckReport.from_results(shuffled, **kwargs)
    assert a.to_dict() == b.to_dict()
    data = json.loads(json.dumps(a.to_dict()))
    assert data["schema"] == "ragmorph.report/1"
    assert set(data) == {"schema", "manifest", "results", "metrics", "queries", "slices", "summary", "suggestions"}
    assert set(data["manifest"]) == {"ragmorph_version", "created", "corpus", "cases", "retrievers", "strategies", "seed", "settings"}
    assert set(data["manifest"]["settings"]) == {"max_examples", "derandomize", "ks", "timeout", "budget"}
    row = data["results"][0]
    assert set(row) == {"retriever", "case", "strategy", "relation", "severity", "status", "examples", "retriever_calls", "reason", "rate", "violation"}
    assert set(data["summary"]) == {
        "pass", "fail", "error", "not_applicable", "hard_failures", "soft_breaks", "exit_code", "retriever_calls",
        "calls_per_case", "calls_by_retriever",
    }
    name = units[0].retriever.name
    assert {"P@1", "R@10", "GroupR@5"} <= set(data["metrics"][name])


def test_violation_is_shrunk_minimised_and_replayable(tmp_path) -> None:
    spec = "support.engine_retrievers:StaleDeleteBM25"
    report = check({"stale": spec}, CORPUS, CASES[:1], strategies=["removal"], max_examples=20, replay_dir=tmp_path)
    assert report.exit_code == 1
    row = next(r for r in report.violations if r.relation == "removal.removed_never_returned")
    violation = row.violation
    assert violation["perturbation"]["repr"] == "RemoveChunks(k=1, ids=('gold',), group=0)"
    assert [c["id"] for c in violation["minimal_corpus"]] == ["gold"]
    assert violation["one_minimal"] is True
    assert violation["base"]["ranking"][0]["id"] == "gold" and violation["follow_up"]["ranking"][0]["id"] == "gold"
    assert violation["calls_to_first_failure"] >= 1
    stored = json.loads(open(violation["replay"], encoding="utf-8").read())
    assert stored["schema"] == "ragmorph.replay/1" and stored["retriever"]["spec"] == spec
    assert replay(violation["replay"]).reproduced
    fixed = replay(violation["replay"], retriever=BM25Retriever)
    assert not fixed.reproduced and fixed.exit_code == 0


def test_tenant_leak_shrinks_to_two_chunks() -> None:
    report = check({"leaky": er.IgnoresTenantFilter}, CORPUS, CASES[:1], strategies=["tenancy"], max_examples=20)
    row = next(r for r in report.violations if r.relation == "tenancy.unauthorized_zero")
    assert sorted(c["id"] for c in row.violation["minimal_corpus"]) == ["gold", "other"]


def test_bad_arguments_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="strategy families"):
        check(BM25Retriever, CORPUS, CASES, strategies=["nope"])
    with pytest.raises(UsageError, match="ks"):
        check(BM25Retriever, CORPUS, CASES, ks=(0,))
    with pytest.raises(UsageError, match="distinct"):
        check([BM25Retriever, BM25Retriever], CORPUS, CASES)
    with pytest.raises(UsageError, match=r"^budget: expected one of adaptive, full, got 'Full' \(str\)$"):
        check(BM25Retriever, CORPUS, CASES, budget="Full")


def test_budget_problem_names_the_budgets_and_what_it_got() -> None:
    assert [budget_problem(name) for name in BUDGETS] == [None, None]
    assert budget_problem("half") == "expected one of adaptive, full, got 'half' (str)"
    assert budget_problem(["full"]) == "expected one of adaptive, full, got ['full'] (list)"


class _PostFilteredByRagmorph(BM25Retriever):
    """A correct BM25 that declares its filters are applied by ragmorph (as a post-filtering integration does)."""

    ragmorph_filtered_by = "ragmorph"


def test_relations_judging_filtering_are_not_applicable_where_ragmorph_filters() -> None:
    from ragmorph.strategies import CATALOG

    report = check({"post": _PostFilteredByRagmorph}, CORPUS, CASES[:1], strategies=["tenancy", "supersede", "distractors"], max_examples=5)
    judging = {r.name for r in CATALOG if r.judges_filtering}
    assert {"tenancy.unauthorized_zero", "supersede.stale_zero", "distractors.lookalike_unauthorized_zero"} <= judging
    rows = [r for r in report.results if r.relation in judging]
    assert rows and {r.status for r in rows} == {"not_applicable"}
    assert {r.reason for r in rows} == {"filtering is done by ragmorph, not by the retriever"}
    others = [r for r in report.results if r.relation not in judging]
    assert others and all(r.reason != "filtering is done by ragmorph, not by the retriever" for r in others)


class _SelectorBM25(BM25Retriever):
    """A correct BM25 declaring that ragmorph computes the admitted ids and it searches among them (as FAISS)."""

    ragmorph_filtered_by = "selector"


def test_where_ragmorph_computes_the_admitted_set_only_the_relations_judging_it_are_not_applicable() -> None:
    from ragmorph.adapters import Capabilities
    from ragmorph.strategies import CATALOG

    reason = Capabilities(False, False, False, False, filtered_by_kind="selector").admission_not_judged()
    assert reason is not None and reason.startswith("the admitted set is computed by ragmorph")
    admission = {r.name for r in CATALOG if r.judges_admission}
    search = {r.name for r in CATALOG if r.judges_filtering and not r.judges_admission}
    assert {"tenancy.unauthorized_zero", "filters.admitted_only"} <= admission
    # Under-return judges the search among the admitted ids (FAISS's HNSW with a selector runs dry), not the set.
    under_return = {f"{family}.full_k" for family in ("filters", "tenancy", "approximate", "scale")}
    assert search == {"tenancy.filtered_equals_visible", "filters.filtered_equals_admitted"} | under_return
    report = check({"selector": _SelectorBM25}, CORPUS, CASES[:1], strategies=["tenancy", "filters"], max_examples=8)
    rows = [r for r in report.results if r.relation in admission]
    assert rows and {(r.status, r.reason) for r in rows} == {("not_applicable", reason)}
    judged = [r for r in report.results if r.relation in search]
    assert judged and {r.status for r in judged} == {"pass"} and all(r.rate and r.rate[1] > 0 for r in judged)


class _DeclaresWhenBuilt(BM25Retriever):
    """Declares who filters on the instance only, as an adapter built with `post_filter=True` does."""

    def __init__(self, corpus, **options):
        super().__init__(corpus, **options)
        self.ragmorph_filtered_by = "ragmorph"


def test_a_declaration_made_by_the_built_retriever_counts_in_every_family_even_when_calls_are_cached() -> None:
    factory = lambda corpus: _DeclaresWhenBuilt(corpus)  # noqa: E731 - nothing to read before it is built
    report = check({"built": factory}, CORPUS, CASES[:1], strategies=["tenancy", "filters", "odd_query"], max_examples=5)
    from ragmorph.strategies import CATALOG

    judging = {r.name for r in CATALOG if r.judges_filtering}
    rows = [r for r in report.results if r.relation in judging]
    assert {r.strategy for r in rows} == {"tenancy", "filters", "odd_query"}
    assert {(r.status, r.reason) for r in rows} == {("not_applicable", "filtering is done by ragmorph, not by the retriever")}


def test_where_ragmorph_computes_the_admitted_set_a_wrong_restricted_search_still_fails() -> None:
    from ragmorph.worlds import demo_world
    from support.zoo import TenantFilterAfterTruncation

    class SelectorAfterTruncation(TenantFilterAfterTruncation):
        """Declares the selector split, but its restricted search keeps only the admitted hits of the top k."""

        ragmorph_filtered_by = "selector"

    world = demo_world()
    report = check({"selector": SelectorAfterTruncation}, world.corpus, world.cases, strategies=["tenancy"])
    failed = {r.relation for r in report.results if r.status == "fail"}
    # Keeping the admitted hits of the top k also returns fewer than the visible chunks: the under-return too.
    assert failed == {"tenancy.filtered_equals_visible", "tenancy.full_k"}, failed


def _judging_family(check_pair, precondition=None, k_to=None, k=None):  # noqa: ANN001, ANN202 - a one-relation family for these tests
    from hypothesis import strategies as st

    from ragmorph.relations import Direction, Relation, Severity
    from ragmorph.strategies import Family
    from ragmorph.strategies.cutoff import RaiseCutoff

    relation = Relation(
        name="probe.judged", family="probe", summary="a relation under test", target="ranking@k",
        direction=Direction.EQUAL, severity=Severity.HARD, check=check_pair, precondition=precondition,
    )
    k_tos = st.integers(11, 30) if k_to is None else k_to
    draw = lambda world, *, ks, **_: st.builds(RaiseCutoff, k=st.sampled_from(ks) if k is None else k, k_to=k_tos)  # noqa: E731
    return Family(name="probe", summary="raise k", relations=(relation,), draw=draw, max_examples=8)


def test_an_error_inside_a_relation_is_raised_not_reported_as_not_applicable(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmorph.strategies import FAMILIES

    def broken(base, follow):  # noqa: ANN001, ANN202
        raise ZeroDivisionError("a bug in a relation")

    monkeypatch.setitem(FAMILIES, "probe", _judging_family(broken))
    # Before: the replay of the failing example was skipped as "already judged", Hypothesis saw a flaky test and
    # the relation came out not_applicable ("no drawn perturbation could test this relation"), a false pass.
    with pytest.raises(ZeroDivisionError, match="a bug in a relation"):
        check({"bm25": BM25Retriever}, CORPUS, CASES[:1], strategies=["probe"], ks=(3, 5))


def test_a_perturbation_no_relation_can_judge_costs_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from hypothesis import strategies as st

    from ragmorph.relations import Verdict
    from ragmorph.strategies import FAMILIES
    from ragmorph.strategies._core import ruled_out

    def above_20(base, follow):  # noqa: ANN001, ANN202
        return None if follow.params.k > 20 else "only judged above k 20"

    judged_at: list[int] = []

    def judged(base, follow):  # noqa: ANN001, ANN202
        judged_at.append(follow.world.params.k)
        return ruled_out(above_20, base, follow) or Verdict.ok("judged")

    # k 3, 12 and 24 are calls the contract unit makes too (ks 3 and 12, and twice the largest), so the contract
    # relation does not keep them worth their calls (see the next test for calls it does not make).
    probe = _judging_family(judged, above_20, k_to=st.sampled_from((12, 24)), k=st.just(3))
    monkeypatch.setitem(FAMILIES, "probe", probe)
    families = ["probe", "contract"]
    adaptive = check({"bm25": BM25Retriever}, CORPUS, CASES[:1], strategies=families, ks=(3, 12))
    assert judged_at and all(k > 20 for k in judged_at), "calls were made for a pair no relation judges"
    (row,) = [r for r in adaptive.results if r.relation == "probe.judged"]
    assert row.status == "pass" and row.rate is not None and row.rate[1] >= 1
    judged_at.clear()
    check({"bm25": BM25Retriever}, CORPUS, CASES[:1], strategies=families, ks=(3, 12), budget="full")
    assert any(k <= 20 for k in judged_at), "the full budget makes every drawn call (the reference)"


def test_the_full_budget_tries_the_explicit_perturbations_first_too() -> None:
    from ragmorph.model import Case, Params, World
    from ragmorph.strategies import FAMILIES

    asked: list[str] = []

    class Recording(BM25Retriever):
        def retrieve(self, query, *, k, filters=None):  # noqa: ANN001, ANN202
            asked.append(query)
            return super().retrieve(query, k=k, filters=filters)

    # A decomposed é and a composed ï: each of the four Unicode forms differs from the query.
    case = Case("mixed", "cafe\u0301 na\u00efve office flights")
    forms = {p.query for p in FAMILIES["odd_query"].explicit(World(CORPUS, case, Params(5)), ks=(5,))}
    assert len(forms) == 4
    # Five draws alone would pick all four forms about once in 3000 runs (each is one draw in 24).
    report = check({"rec": Recording}, CORPUS, [case], strategies=["odd_query"], ks=(5,), max_examples=5, budget="full")
    assert forms <= set(asked), forms - set(asked)
    assert {r.examples for r in report.results if r.strategy == "odd_query"} == {5}, "explicit ones count in max_examples"


def test_a_skipped_perturbation_never_hides_a_contract_breach_no_contract_unit_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    from hypothesis import strategies as st

    from ragmorph.relations import Verdict
    from ragmorph.strategies import FAMILIES
    from ragmorph.strategies._core import ruled_out

    def above_20(base, follow):  # noqa: ANN001, ANN202
        return None if follow.params.k > 20 else "only judged above k 20"

    def judged(base, follow):  # noqa: ANN001, ANN202
        return ruled_out(above_20, base, follow) or Verdict.ok("judged")

    class RepeatsAtMidK(BM25Retriever):
        """Repeats its first hit when asked for 11 to 20 results: calls only the probe family makes."""

        def retrieve(self, query, *, k, filters=None):  # noqa: ANN001, ANN201
            hits = list(super().retrieve(query, k=k, filters=filters))
            return [hits[0], *hits[:-1]] if 11 <= k <= 20 and len(hits) > 1 else hits

    monkeypatch.setitem(FAMILIES, "probe", _judging_family(judged, above_20, k_to=st.integers(11, 20)))
    # Before: every such pair was ruled out for probe.judged and skipped without a call, and the contract unit
    # asks k 3 and 6 only, so the breach was never seen and contract.valid_response passed.
    report = check({"repeats": RepeatsAtMidK}, CORPUS, CASES[:1], strategies=["probe", "contract"], ks=(3,))
    found = {r.strategy: r.status for r in report.results if r.relation == "contract.valid_response"}
    assert found.get("probe") == "fail", found


class _PadsPastTheIndexDense(DenseRetriever):
    """Bug: asked for more hits than it holds, it pads the ranking to k with its last hit, as an adapter does that
    maps FAISS's -1 labels (no result) through `ids[label]` to the last id."""

    def retrieve(self, query, *, k, filters=None):  # noqa: ANN001, ANN201
        hits = super().retrieve(query, k=k, filters=filters)
        return hits + hits[-1:] * (k - len(hits)) if hits else hits


def test_a_kind_only_the_contract_judges_gets_calls_once_per_unit() -> None:
    asked: list[int] = []

    class Asked(DenseRetriever):
        """The built-in dense retriever (not lexical: depth's own relation is not judged on it), recording each k."""

        def retrieve(self, query, *, k, filters=None):  # noqa: ANN001, ANN202
            asked.append(k)
            return super().retrieve(query, k=k, filters=filters)

    past_corpus = len(CORPUS) + 1
    report = check({"dense": Asked}, CORPUS, CASES[:1], strategies=["depth"])
    (row,) = [r for r in report.results if r.relation == "depth.no_newcomer"]
    assert row.status == "not_applicable" and "lexical" in (row.reason or "")
    # After the base ranking at the largest default k (the unit's base metrics): the base ranking past the corpus,
    # and one removal asked there (depth's simplest example). No other drawn removal makes a call, as only the
    # contract would judge it.
    assert asked == [10, past_corpus, past_corpus], asked
    asked.clear()
    check({"dense": Asked}, CORPUS, CASES[:1], strategies=["depth"], budget="full")
    assert len(asked) > 3 and set(asked) == {10, past_corpus, 21}, "the full budget makes every drawn call"


def test_depth_still_finds_a_contract_breach_past_the_index_on_a_retriever_not_lexical() -> None:
    report = check({"dense": _PadsPastTheIndexDense}, CORPUS, CASES[:1], strategies=["depth"])
    (row,) = [r for r in report.results if r.relation == "contract.valid_response"]
    assert row.status == "fail" and "expected distinct ids" in (row.reason or ""), (row.status, row.reason)
    # The default cutoffs never ask past the 22 chunks the case's tenant sees, so the contract unit cannot see it.
    contract = check({"dense": _PadsPastTheIndexDense}, CORPUS, CASES[:1], strategies=["contract"])
    assert {r.status for r in contract.results} == {"pass"}
    correct = check({"dense": DenseRetriever}, CORPUS, CASES[:1], strategies=["depth"])
    assert {r.status for r in correct.results} == {"not_applicable"}, [(r.relation, r.status) for r in correct.results]


def test_answers_of_an_instance_edits_were_undone_on_are_not_served_to_other_units() -> None:
    from quality.zoo2.bugs import RemoveShiftsRows
    from ragmorph.worlds import demo_world

    # A multi-id remove that deletes the wrong rows leaves the removal unit's instance corrupted after each undo.
    # Its later calls were kept under the base state's keys, so the cutoff unit was served them: cutoff.prefix
    # failed on q04, q05 and q09 with violations that no fresh index reproduces (56 chunks, not minimised),
    # blaming "randomness, time, or state shared between instances" for what the runner itself had shared.
    world = demo_world()
    report = check({"rows": RemoveShiftsRows}, world.corpus, world.cases, strategies=["removal", "cutoff"])
    assert [r.relation for r in report.results if r.status == "fail"] == [], [r.reason for r in report.results if r.status == "fail"]
    # The bug is the repeat family's to find, from its own calls, on two chunks.
    found = check({"rows": RemoveShiftsRows}, world.corpus, world.cases[:6], strategies=["repeat"])
    caught = [r.violation for r in found.results if r.status == "fail" and r.violation is not None]
    assert caught and all(v.one_minimal and len(v.minimal_corpus) <= 3 for v in caught)


def test_a_second_relation_broken_by_the_same_perturbation_starts_from_the_first_ones_minimal_corpus() -> None:
    from ragmorph.worlds import demo_world
    from support.zoo import TenantFilterAfterTruncation

    world = demo_world()
    report = check({"a": TenantFilterAfterTruncation}, world.corpus, world.cases[:1], strategies=["tenancy"])
    first, second = (r.violation for r in report.results if r.violation is not None)
    assert (first.relation, second.relation) == ("tenancy.filtered_equals_visible", "tenancy.full_k")
    assert first.perturbation == second.perturbation and first.one_minimal and second.one_minimal
    assert {c["id"] for c in second.minimal_corpus} == {c["id"] for c in first.minimal_corpus}
    # From scratch the second minimisation spends what the first did (32 calls here); the first's corpus works.
    assert second.calls_shrinking < first.calls_shrinking, (first.calls_shrinking, second.calls_shrinking)
