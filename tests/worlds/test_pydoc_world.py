"""The real-text world (Python reference topics): labels true by construction, seeded, checked arguments."""

from __future__ import annotations

import re

import pytest

from ragmorph.errors import UsageError
from ragmorph.model import validate_cases
from ragmorph.worlds import pydoc_world


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


@pytest.mark.parametrize(("cases", "topics", "seed"), [(12, 20, 0), (30, None, 3)])
def test_each_query_is_found_in_its_gold_chunk_and_in_no_other(cases: int, topics: int | None, seed: int) -> None:
    world = pydoc_world(cases, topics=topics, seed=seed)
    validate_cases(world.corpus, world.cases)
    assert len(world.cases) == cases and len({c.id for c in world.cases}) == cases
    for case in world.cases:
        ((gold,),) = case.evidence
        holding = [c.id for c in world.corpus if _normal(case.query) in _normal(c.text)]
        assert holding == [gold], (case.id, holding)
        assert case.claims == (case.query,) and world.facts[case.id] == (gold,)
        assert world.corpus[gold].visible_to(case.tenant)
        assert len(case.query.split()) >= 8


def test_the_world_is_seeded_and_names_its_python() -> None:
    first, again, other = pydoc_world(6, topics=10), pydoc_world(6, topics=10), pydoc_world(6, topics=10, seed=1)
    assert first.corpus.fingerprint == again.corpus.fingerprint and first.cases == again.cases
    assert first.corpus.fingerprint != other.corpus.fingerprint
    assert first.description.startswith("Python 3.") and "10 topics" in first.description
    tenants = {c.tenant for c in pydoc_world(12).corpus}
    assert None in tenants and len(tenants) > 2  # shared topics and private ones, for the tenancy families
    assert all(len(c.text) <= 900 or "\n\n" not in c.text for c in first.corpus)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [({"cases": -1}, "cases"), ({"seed": "0"}, "seed"), ({"topics": 0}, "topics"), ({"tenants": "acme"}, "tenants")],
)
def test_bad_arguments_are_usage_errors_naming_them(kwargs: dict[str, object], named: str) -> None:
    with pytest.raises(UsageError, match=named):
        pydoc_world(**kwargs)  # type: ignore[arg-type]
