"""Quality: every bug of the second zoo (real tracker reports, user-style adapters) fails a hard relation and
shrinks to a small world; the correct user-style retrievers fail none.

Each member runs check() with default settings except `strategies`, restricted to the families that catch it
(so the whole file stays well under two minutes), on three cases of the demo world. The full default suite on
all twelve cases is tests/quality/zoo2/zoo2_report.py; its table is in docs/bug-zoo.md.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from quality.zoo2.bugs import ZOO2, Zoo2Member
from quality.zoo2.plain import PlainBM25, PlainBM25TiesByIdDesc, PlainNFKCBM25
from ragmorph.reporting import validate_report
from ragmorph.runner import check
from ragmorph.worlds import demo_world

pytestmark = pytest.mark.slow

CASES = ("q01", "q02", "q05")


@functools.lru_cache(maxsize=None)
def report_of(name: str, factory: Any, families: tuple[str, ...], traits: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ragmorph.report/1 dict of check() on the quality cases with `families` only (cached)."""
    world = demo_world()
    cases = [case for case in world.cases if case.id in CASES]
    return check({name: factory}, world.corpus, cases, strategies=families, traits={name: list(traits)}).to_dict()


def test_the_second_zoo_holds_fifteen_reported_bugs_and_cites_them() -> None:
    assert len({m.name for m in ZOO2}) == len(ZOO2) >= 15
    for member in ZOO2:
        doc = member.factory.__doc__ or ""
        assert doc.startswith("Bug:") and "Sources:" in doc and "#" in doc, member.name
    assert sum(not m.caught_before for m in ZOO2) >= 11


@pytest.mark.parametrize("member", ZOO2, ids=lambda m: m.name)
def test_each_bug_fails_a_hard_relation_and_shrinks(member: Zoo2Member) -> None:
    report = report_of(member.name, member.factory, member.families)
    validate_report(report)
    failed = [r for r in report["results"] if r["status"] == "fail" and r["severity"] == "hard"]
    caught = [r for r in failed if r["relation"] in member.caught_by]
    assert caught, f"expected one of {member.caught_by} to fail, got {sorted({r['relation'] for r in failed})}"
    assert report["summary"]["exit_code"] == 1
    smallest = min(len(r["violation"]["minimal_corpus"]) for r in caught)
    assert smallest <= member.max_minimal


@pytest.mark.parametrize(
    "name, factory, traits",
    [
        ("plain", PlainBM25, ("lexical", "normalising", "exact_deltas")),
        ("ties_by_id_desc", PlainBM25TiesByIdDesc, ("lexical", "normalising", "exact_deltas")),
        ("nfkc", PlainNFKCBM25, ("exact_deltas",)),
    ],
)
def test_the_correct_user_style_retrievers_pass_the_new_families(name: str, factory: Any, traits: tuple[str, ...]) -> None:
    report = report_of(name, factory, ("filters", "depth", "odd_query", "state", "lifecycle"), traits)
    problems = [(r["relation"], r["reason"]) for r in report["results"] if r["status"] in ("fail", "error")]
    assert not problems and report["summary"]["exit_code"] == 0
    assert any(r["status"] == "pass" and r["relation"] == "lifecycle.edit_equals_fresh" for r in report["results"])
