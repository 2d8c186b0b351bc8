"""The world generators draw valid, varied worlds, and the variety they promise actually shows up."""

from __future__ import annotations

import json
import unicodedata

import pytest

from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from support.generators import case_for, cases_for, chunks, corpora, texts, worlds

from ragmorph.model import Case, Corpus, World, validate_cases

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _utf8_ok(text: str) -> bool:
    text.encode("utf-8")
    return True


@FAST
@given(worlds())
def test_worlds_are_valid(world: World) -> None:
    validate_cases(world.corpus, [world.case])
    ids = world.corpus.ids
    assert len(ids) == len(set(ids))
    for chunk in world.corpus:
        assert not any(character.isspace() for character in chunk.id)
        assert _utf8_ok(chunk.text)
        json.dumps(chunk.to_dict(), allow_nan=False)
        if chunk.superseded_by is not None:
            assert chunk.superseded_by != chunk.id
            if chunk.superseded_by in world.corpus:
                assert world.corpus.position(chunk.superseded_by) > world.corpus.position(chunk.id)
    for member in world.case.gold_ids:
        assert world.corpus[member].visible_to(world.case.tenant)
    if world.case.evidence:
        assert world.case.answerable in (None, True)
    else:
        assert world.case.answerable in (None, False)
    assert world.params.filters.tenant in (None, world.case.tenant)


@FAST
@given(corpora(min_size=0, max_size=5).flatmap(lambda corpus: st.tuples(st.just(corpus), cases_for(corpus))))
def test_cases_for_gives_unique_ids_over_the_corpus(drawn: tuple[Corpus, tuple[Case, ...]]) -> None:
    corpus, cases = drawn
    assert [case.id for case in cases] == [f"q{n}" for n in range(len(cases))]
    validate_cases(corpus, cases)
    if len(corpus) == 0:
        assert all(not case.is_answerable for case in cases)


@FAST
@given(corpora(min_size=3, max_size=3))
def test_corpora_respect_size_bounds(corpus: Corpus) -> None:
    assert len(corpus) == 3


def _reachable(strategy: st.SearchStrategy, *conditions, budget: int = 150) -> None:
    """Fail unless each condition holds for some example within `budget` generated ones (no shrinking: cheap).

    Derandomized: with a fresh random sample each run, rare conditions (a non-BMP character) were missed in about
    one run out of five, so the test failed by chance; a fixed sample fails only when the generators change.
    """
    met: set[str] = set()

    @settings(max_examples=budget, phases=[Phase.generate], database=None, deadline=None, derandomize=True)
    @given(strategy)
    def explore(value: object) -> None:
        met.update(condition.__name__ for condition in conditions if condition(value))

    explore()
    missing = [condition.__name__ for condition in conditions if condition.__name__ not in met]
    assert not missing, f"no example out of {budget} satisfied {missing}"


def test_variety_tenants_shared_and_private() -> None:
    def shared_and_private(c: Corpus) -> bool:
        return any(x.tenant is None for x in c) and any(x.tenant == "acme" for x in c)

    _reachable(corpora(), shared_and_private)


def test_variety_superseded_present_absent_and_chained() -> None:
    def successor_present(c: Corpus) -> bool:
        return any(c.is_stale(x) for x in c)

    def successor_absent(c: Corpus) -> bool:
        return any(x.superseded_by and x.superseded_by not in c for x in c)

    def chain(c: Corpus) -> bool:
        return any(x.superseded_by in c and c[x.superseded_by].superseded_by in c for x in c)

    _reachable(corpora(min_size=3), successor_present, successor_absent, chain)


def test_variety_cases() -> None:
    def multi_member_and_several_groups(w: World) -> bool:
        return len(w.case.evidence) >= 2 and any(len(g) >= 2 for g in w.case.evidence)

    def unanswerable(w: World) -> bool:
        return w.case.answerable is False and w.case.evidence == ()

    def claims_and_tags(w: World) -> bool:
        return bool(w.case.claims and w.case.tags)

    def tenant_filter(w: World) -> bool:
        return w.params.filters.tenant is not None

    _reachable(worlds(), multi_member_and_several_groups, unanswerable, claims_and_tags, tenant_filter)


def test_variety_unicode_non_bmp_and_combining() -> None:
    def non_bmp(t: str) -> bool:
        return any(ord(ch) > 0xFFFF for ch in t)

    def combining(t: str) -> bool:
        return any(unicodedata.combining(ch) for ch in t)

    _reachable(texts(), non_bmp, combining)


def test_variety_chunk_fields() -> None:
    def has_metadata(c) -> bool:
        return bool(c.metadata)

    def has_date(c) -> bool:
        return c.effective_from is not None

    def has_version(c) -> bool:
        return c.version is not None

    def has_source(c) -> bool:
        return c.source is not None

    def nested_metadata(c) -> bool:
        return any(isinstance(v, (list, dict)) for v in c.metadata.values())

    _reachable(chunks(), has_metadata, has_date, has_version, has_source, nested_metadata)


@pytest.mark.slow
def test_a_stale_corpus_shrinks_to_two_chunks() -> None:
    # Hypothesis stops after 500 successful shrinks, so assert only the structure a shrink must reach.
    # derandomize: a random run can stop at a 3-chunk local minimum (deleting a middle chunk re-points successors).
    minimal = find(
        corpora(max_size=6),
        lambda c: any(c.is_stale(x) for x in c),
        settings=settings(database=None, derandomize=True),
    )
    assert len(minimal) == 2
    assert minimal.chunks[0].superseded_by == minimal.chunks[1].id


@FAST
@given(corpora(min_size=2).flatmap(lambda corpus: st.tuples(st.just(corpus), case_for(corpus))))
def test_case_for_tenant_sees_its_evidence(drawn: tuple[Corpus, Case]) -> None:
    corpus, case = drawn
    assert all(corpus[i].visible_to(case.tenant) for i in case.gold_ids)
