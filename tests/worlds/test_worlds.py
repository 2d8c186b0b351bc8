"""Built-in worlds: exact sizes, seeded determinism, pinned fingerprints, and labels true by construction."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import UsageError
from ragmorph.model import Filters, validate_cases
from ragmorph.worlds import DEFAULT_TENANTS, BuiltinWorld, demo_world, generate
from ragmorph.worlds._vocab import PRODUCT_ATTRIBUTES, SHARED_TOPICS, TENANT_TOPICS

NUMBER = re.compile(r"\d+")


def cases_fingerprint(world: BuiltinWorld) -> str:
    """SHA-256 of the cases' JSON form, in order."""
    payload = json.dumps([c.to_dict() for c in world.cases], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def contains_phrase(text: str, phrase: str) -> bool:
    """True when `phrase` occurs in `text` as whole words (so '84 days' is not found in '184 days')."""
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def check_labels_true_by_construction(world: BuiltinWorld) -> None:
    """Each gold chunk holds its group's answer; no other chunk the asking tenant can see holds it."""
    corpus = world.corpus
    validate_cases(corpus, world.cases)
    for case in world.cases:
        visible = [c for c in corpus if case.tenant is None or c.visible_to(case.tenant)]
        if not case.is_answerable:
            assert case.evidence == () and case.claims == ()
            (missing,) = world.facts[case.id]
            stating = [c.id for c in visible if c.metadata.get("fact") == missing]
            assert stating == [], f"{case.id} is unanswerable but {stating} state {missing}"
            continue
        assert len(case.claims) == len(case.evidence), case
        assert len(world.facts[case.id]) == len(case.evidence)
        gold = set(case.gold_ids)
        for group, claim, fact in zip(case.evidence, case.claims, world.facts[case.id]):
            for member in group:
                chunk = corpus[member]
                assert chunk.visible_to(case.tenant) or case.tenant is None, (case.id, member)
                assert chunk.superseded_by is None, f"gold {member} of {case.id} is superseded"
                assert chunk.metadata["fact"] == fact
                assert contains_phrase(chunk.text, claim), (case.id, member, claim, chunk.text)
            leaks = [c.id for c in visible if c.id not in gold and contains_phrase(c.text, claim)]
            assert leaks == [], f"{case.id}: non-gold visible chunks {leaks} state the answer {claim!r}"


def test_generate_default_shape() -> None:
    world = generate()
    assert len(world.corpus) == 60
    assert len(world.cases) == 12
    assert world.seed == 0
    assert {c.tenant for c in world.corpus} == {*DEFAULT_TENANTS, None}
    assert "60 chunks" in world.description and "12 cases" in world.description


def test_same_seed_same_world_other_seed_other_world() -> None:
    first, again, other = generate(3), generate(3), generate(4)
    assert first.corpus == again.corpus and first.cases == again.cases
    assert first.corpus.fingerprint != other.corpus.fingerprint


def test_golden_fingerprints() -> None:
    # Pinned: a change here changes every seeded run and replay file users have; update only on purpose.
    world = generate(0)
    assert world.corpus.fingerprint == "63cb4131b404cc6d9c7a3b9d8a5021a7a7178315395d3438d5d333c6c62bc24d"
    assert cases_fingerprint(world) == "5092d7e306a4ec96a0346f914f50b80b8a2b76baae479a6a4fd16c384d4c0af0"
    demo = demo_world()
    assert demo.corpus.fingerprint == "fabd4f634a6a828f08626acfb6d0d87f6cd9c38f217da43e211725746ee88fe9"
    assert cases_fingerprint(demo) == "f8f21d442cce06a50268ad2b030a57f3831625d9ded7ee29c798d40de41fd227"


def test_demo_world_covers_every_kind_of_case() -> None:
    world = demo_world()
    assert 40 <= len(world.corpus) <= 80 and 10 <= len(world.cases) <= 15
    tags = Counter(tag for case in world.cases for tag in case.tags)
    for kind in ("single-hop", "multi-hop", "alternatives", "unanswerable", "date-sensitive", "shared"):
        assert tags[kind] >= 1, f"demo world has no {kind} case: {dict(tags)}"
    assert {c.tenant for c in world.cases} >= set(DEFAULT_TENANTS)
    assert any(len(group) > 1 for case in world.cases for group in case.evidence)
    assert any(len(case.evidence) == 2 for case in world.cases)
    check_labels_true_by_construction(world)


def test_superseded_chains_point_forward_in_time() -> None:
    corpus = generate(1, chunks=300).corpus
    old = [c for c in corpus if c.superseded_by is not None]
    assert old, "expected revised documents"
    for chunk in old:
        successor = corpus[chunk.superseded_by]
        assert successor.superseded_by is None
        assert successor.tenant == chunk.tenant and successor.source == chunk.source
        assert successor.version == chunk.version + 1
        assert successor.effective_from > chunk.effective_from
        assert chunk.metadata["fact"] == successor.metadata["fact"]
        assert set(NUMBER.findall(chunk.text)).isdisjoint(
            n for n in NUMBER.findall(successor.text) if int(n) >= 32 and not 1900 <= int(n) <= 2100
        ), "a revision must change the stated value"


def test_current_only_filter_drops_exactly_the_old_versions() -> None:
    corpus = demo_world().corpus
    current = [c.id for c in corpus if Filters(current_only=True).allows(c)]
    assert len(current) == len(corpus) - sum(1 for c in corpus if corpus.is_stale(c))


@pytest.mark.parametrize("topic", [*TENANT_TOPICS, *SHARED_TOPICS, *PRODUCT_ATTRIBUTES], ids=lambda t: t.key)
def test_every_statement_contains_its_answer_phrase(topic) -> None:
    statement = topic.statement.format(org="Acme", product="Silver Falcon", v=4242)
    assert contains_phrase(statement, topic.phrase.format(v=4242))
    assert "{" not in topic.question.format(org="Acme", product="Silver Falcon")
    assert "{" not in topic.noun.format(org="Acme", product="Silver Falcon")


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    chunks=st.integers(1, 220),
    tenants=st.sampled_from([DEFAULT_TENANTS, ("solo",), ("north-wind", "contoso"), ("a", "b", "c", "d", "e")]),
)
def test_any_world_has_exact_size_and_true_labels(seed: int, chunks: int, tenants: tuple[str, ...]) -> None:
    world = generate(seed, chunks=chunks, tenants=tenants)
    assert len(world.corpus) == chunks
    assert len(world.cases) == max(1, chunks // 5)
    assert {c.tenant for c in world.corpus} <= {*tenants, None}
    assert len({c.id for c in world.cases}) == len(world.cases)
    check_labels_true_by_construction(world)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), cases=st.integers(0, 40))
def test_requested_case_count_is_honoured(seed: int, cases: int) -> None:
    world = generate(seed, chunks=80, cases=cases)
    assert len(world.cases) == cases
    check_labels_true_by_construction(world)


def test_world_and_case_lookup() -> None:
    world = demo_world()
    first = world.cases[0]
    built = world.world(first.id, k=3, filters=Filters(tenant=first.tenant))
    assert built.case is first and built.params.k == 3 and built.corpus is world.corpus
    with pytest.raises(UsageError, match="expected a case id of this world"):
        world.case("nope")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seed": "1"}, "expected an integer seed"),
        ({"chunks": 0}, "expected a positive integer number of chunks"),
        ({"cases": -1}, "expected a non-negative integer"),
        ({"tenants": "acme"}, "expected a non-empty sequence of tenant names"),
        ({"tenants": ()}, "expected a non-empty sequence of tenant names"),
        ({"tenants": ("acme", "acme")}, "expected distinct tenant names"),
        ({"tenants": ("shared",)}, "reserved for shared documents"),
        ({"tenants": ("two words",)}, "expected tenant names of letters"),
    ],
)
def test_bad_arguments_raise_usage_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        generate(**kwargs)


def test_too_many_cases_for_a_tiny_world_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="ask for more chunks or fewer cases"):
        generate(0, chunks=2, cases=500, tenants=("solo",))


@pytest.mark.slow
def test_hundred_thousand_chunks_keep_answers_unique() -> None:
    world = generate(5, chunks=100_000)
    assert len(world.corpus) == 100_000
    # Values are unique numbers, so the chunks stating a value are exactly that fact's current chunks.
    stating: dict[str, list[str]] = {}
    for chunk in world.corpus:
        for number in NUMBER.findall(chunk.text):
            if int(number) >= 32 and not 1900 <= int(number) <= 2100:
                stating.setdefault(number, []).append(chunk.id)
    for case in world.cases:
        for group, claim in zip(case.evidence, case.claims):
            (value,) = NUMBER.findall(claim)
            assert sorted(stating[value]) == sorted(group), (case.id, claim)
    assert min(c.effective_from for c in world.corpus) >= dt.date(2021, 1, 1)
