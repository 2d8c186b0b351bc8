"""Contract tests for the world model: immutability, validation messages, corpus lookup and fingerprint."""

from __future__ import annotations

import datetime as dt
import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import InputError
from ragmorph.model import Case, Chunk, Corpus, Filters, FrozenMap, Hit, Params, Ranking, World, validate_cases


def make_corpus() -> Corpus:
    return Corpus(
        [
            Chunk("hr-12#3", "Leave starts 1 September", source="hr-12", tenant="acme", version=2,
                  effective_from="2026-09-01"),
            Chunk("hr-12#1", "Leave starts 1 March", source="hr-12", tenant="acme", version=1,
                  superseded_by="hr-12#3"),
            Chunk("shared#1", "Office hours are 9 to 5"),
            Chunk("gx#1", "Globex leave policy", tenant="globex"),
        ]
    )


def test_chunk_is_frozen_and_parses_dates() -> None:
    chunk = Chunk("a", "text", effective_from="2026-09-01", metadata={"lang": "en"})
    assert chunk.effective_from == dt.date(2026, 9, 1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        chunk.text = "other"  # type: ignore[misc]
    assert hash(chunk) == hash(Chunk("a", "text", effective_from=dt.date(2026, 9, 1), metadata={"lang": "en"}))


def test_metadata_is_read_only_and_detached_from_the_caller() -> None:
    source = {"lang": "en"}
    chunk = Chunk("a", "t", metadata=source)
    source["lang"] = "de"
    assert chunk.metadata["lang"] == "en"
    with pytest.raises(TypeError):
        chunk.metadata["lang"] = "fr"  # type: ignore[index]
    assert isinstance(chunk.metadata, FrozenMap)


@pytest.mark.parametrize(
    ("build", "field", "fragment"),
    [
        (lambda: Chunk("", "t"), "id", "non-empty string"),
        (lambda: Chunk("a", 42), "text", "42 (int)"),
        (lambda: Chunk("a", "t", version="2"), "version", "integer"),
        (lambda: Chunk("a", "t", effective_from="tomorrow"), "effective_from", "ISO date"),
        (lambda: Chunk("a", "t", metadata=["x"]), "metadata", "mapping"),
        (lambda: Case("q", "query", evidence=[[]]), "evidence[0]", "at least one chunk id"),
        (lambda: Case("q", "query", evidence=[["a", 3]]), "evidence[0]", "3 (int)"),
        (lambda: Case("q", "query", tags="hr"), "tags", "list of strings"),
        (lambda: Params(k=0), "k", "positive integer"),
        (lambda: Params(k=True), "k", "positive integer"),
    ],
)
def test_invalid_values_raise_one_error_type_naming_field_and_value(build, field: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        build()
    assert info.value.field == field
    assert fragment in str(info.value)
    assert field in str(info.value)


def test_duplicate_ids_are_an_input_error() -> None:
    with pytest.raises(InputError, match=r"unique chunk ids.*'a'.*positions 0 and 2"):
        Corpus([Chunk("a", "x"), Chunk("b", "y"), Chunk("a", "z")])


def test_corpus_lookup_and_edits_return_new_corpora() -> None:
    corpus = make_corpus()
    assert corpus["shared#1"].text == "Office hours are 9 to 5"
    assert "gx#1" in corpus and "nope" not in corpus
    assert corpus.get("nope") is None
    assert corpus.position("shared#1") == 2
    smaller = corpus.without(["gx#1"])
    assert len(smaller) == 3 and len(corpus) == 4
    bigger = corpus.with_chunks([Chunk("new", "n")], at=1)
    assert bigger.ids[:2] == ("hr-12#3", "new")
    assert corpus.reordered([3, 2, 1, 0]).ids == tuple(reversed(corpus.ids))
    assert corpus.is_stale(corpus["hr-12#1"]) and not smaller.without(["hr-12#3"]).is_stale(corpus["hr-12#1"])
    with pytest.raises(InputError, match="unknown ids"):
        corpus.without(["nope"])
    with pytest.raises(InputError, match="permutation"):
        corpus.reordered([0, 0, 1, 2])


def test_fingerprint_is_a_stable_known_value() -> None:
    # Pinned: the fingerprint goes into report manifests and replay files, so it must not drift.
    corpus = Corpus([Chunk("a", "alpha"), Chunk("b", "beta")])
    assert corpus.fingerprint == Corpus([Chunk("a", "alpha"), Chunk("b", "beta")]).fingerprint
    assert corpus.fingerprint == "c67c64c02ac31bdc786e0300a6a3a46da6e5af6704744076f37d5cd7954fd758"


@given(st.lists(st.text("abc#1", min_size=1, max_size=5), min_size=2, max_size=6, unique=True))
def test_fingerprint_changes_with_any_id_text_or_order(ids: list[str]) -> None:
    corpus = Corpus(Chunk(i, f"text of {i}") for i in ids)
    renamed = Corpus(Chunk(i + "-renamed" if n == 0 else i, f"text of {i}") for n, i in enumerate(ids))
    retexted = Corpus(Chunk(i, f"text of {i}!" if n == len(ids) - 1 else f"text of {i}") for n, i in enumerate(ids))
    swapped = corpus.reordered([1, 0, *range(2, len(ids))])
    prints = {corpus.fingerprint, renamed.fingerprint, retexted.fingerprint, swapped.fingerprint}
    assert len(prints) == 4


def test_case_gold_ids_and_answerable_default() -> None:
    case = Case("q7", "When?", tenant="acme", evidence=[["hr-12#3"], ["hr-14#1", "hr-15#1", "hr-14#1"], "x"])
    assert case.evidence == (("hr-12#3",), ("hr-14#1", "hr-15#1"), ("x",))
    assert case.gold_ids == ("hr-12#3", "hr-14#1", "hr-15#1", "x")
    assert case.is_answerable
    assert not Case("q8", "Unknown?").is_answerable
    assert Case("q9", "Forced", answerable=False).is_answerable is False
    with pytest.raises(InputError, match="answerable=false"):
        Case("q10", "Contradictory", answerable=False, evidence=[["a"]])


def test_validate_cases_names_case_id_and_line() -> None:
    corpus = make_corpus()
    cases = [Case("ok", "q", evidence=[["shared#1"]]), Case("bad", "q", evidence=[["shared#1"], ["ghost"]])]
    with pytest.raises(InputError) as info:
        validate_cases(corpus, cases, file="cases.jsonl")
    message = str(info.value)
    assert "cases.jsonl:2" in message and "'bad'" in message and "'ghost'" in message
    assert info.value.field == "evidence[1]"


def test_filters_tenant_current_and_metadata() -> None:
    corpus = make_corpus()
    acme = Filters(tenant="acme")
    assert [c.id for c in corpus if acme.allows(c)] == ["hr-12#3", "hr-12#1", "shared#1"]
    current = Filters(tenant="acme", current_only=True)
    assert [c.id for c in corpus if current.allows(c)] == ["hr-12#3", "shared#1"]
    assert Filters().is_empty and not acme.is_empty
    tagged = Chunk("m", "t", metadata={"lang": "en"})
    assert Filters(metadata={"lang": "en"}).allows(tagged)
    assert not Filters(metadata={"lang": "de"}).allows(tagged)
    assert not Filters(metadata={"lang": "en"}).allows(Chunk("n", "t"))


def test_ranking_keeps_order_and_repeats() -> None:
    ranking = Ranking([Hit("b", 2.0), Hit("a", 3.0), Hit("b", 1.0)])
    assert ranking.ids == ("b", "a", "b")
    assert ranking.top(2).ids == ("b", "a")
    assert Ranking.of(["x", "y"]).ids == ("x", "y")
    with pytest.raises(InputError):
        Ranking(["x"])  # type: ignore[list-item]


def test_hit_accepts_non_finite_scores_so_the_validator_can_report_them() -> None:
    assert not Hit("a", float("nan")).has_finite_score
    assert Hit("a", 1).has_finite_score
    with pytest.raises(InputError, match="score"):
        Hit("a", "high")  # type: ignore[arg-type]


def test_world_holds_typed_parts() -> None:
    world = World(make_corpus(), Case("q", "x"), Params(k=5))
    assert world.params.filters == Filters()
    assert attrs.evolve(world, params=Params(k=3)).params.k == 3
    with pytest.raises(TypeError):
        World(make_corpus(), "case", Params(k=1))  # type: ignore[arg-type]


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), min_size=1, max_size=7, unique=True),
    st.lists(
        st.tuples(st.sampled_from(["add", "readd", "remove", "replace", "reorder"]), st.integers(0, 20)),
        max_size=12,
    ),
)
def test_derived_corpora_behave_exactly_like_freshly_built_ones(ids: list[str], steps: list[tuple[str, int]]) -> None:
    corpus = Corpus(Chunk(i, f"text {i}") for i in ids)
    fresh_id = 0
    for op, n in steps:
        if op == "add":
            fresh_id += 1
            corpus = corpus.with_chunks([Chunk(f"new{fresh_id}", "added")], at=n % (len(corpus) + 1))
        elif op == "readd" and [i for i in ids if i not in corpus]:
            corpus = corpus.with_chunks([Chunk([i for i in ids if i not in corpus][0], "back")], at=n % (len(corpus) + 1))
        elif op == "remove" and len(corpus) > 1:
            corpus = corpus.without([corpus.chunks[n % len(corpus)].id])
        elif op == "replace" and len(corpus):
            corpus = corpus.replaced(Chunk(corpus.chunks[n % len(corpus)].id, f"replaced {n}"))
        elif op == "reorder" and len(corpus) > 1:
            corpus = corpus.reordered([*range(1, len(corpus)), 0])
        rebuilt = Corpus(corpus.chunks)
        assert corpus == rebuilt and corpus.fingerprint == rebuilt.fingerprint
        probes = [*rebuilt.ids, *ids, "new1", "missing"]
        assert corpus.missing(probes) == {probe for probe in probes if probe not in rebuilt}  # before any index is built
        for probe in probes:
            assert (probe in corpus) == (probe in rebuilt)
            assert corpus.get(probe) == rebuilt.get(probe)
        for chunk_id in rebuilt.ids:
            assert corpus.position(chunk_id) == rebuilt.position(chunk_id)
        assert set(corpus.id_keys()) == set(rebuilt.ids)


def test_adding_an_existing_id_is_an_input_error() -> None:
    corpus = make_corpus()
    with pytest.raises(InputError, match="already in the corpus"):
        corpus.with_chunks([Chunk("gx#1", "again")])
    with pytest.raises(InputError, match="already in the corpus"):
        corpus.with_chunks([Chunk("n", "x"), Chunk("n", "y")])


def _plain(op: str, chunks: list[Chunk], n: int, fresh: int, ids: list[str]) -> list[Chunk] | None:
    """What a derivation step does, on a plain list of chunks (None when the step does not apply)."""
    if op == "add":
        at = n % (len(chunks) + 1)
        return chunks[:at] + [Chunk(f"new{fresh}", "added")] + chunks[at:]
    if op == "append":
        return chunks + [Chunk(f"new{fresh}", "appended"), Chunk(f"more{fresh}", "appended")]
    if op == "readd":
        gone = [i for i in ids if i not in {c.id for c in chunks}]
        if not gone:
            return None
        at = n % (len(chunks) + 1)
        return chunks[:at] + [Chunk(gone[0], "back")] + chunks[at:]
    if op in ("remove", "remove2") and len(chunks) > 2:
        drop = {chunks[n % len(chunks)].id, chunks[(n * 7 + 1) % len(chunks)].id} if op == "remove2" else {chunks[n % len(chunks)].id}
        return [c for c in chunks if c.id not in drop]
    if op in ("replace", "same") and chunks:
        old = chunks[n % len(chunks)]
        new = old if op == "same" else Chunk(old.id, f"replaced {n}")
        return [new if c.id == old.id else c for c in chunks]
    return None


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), min_size=1, max_size=7, unique=True),
    st.lists(
        st.tuples(
            st.sampled_from(["add", "append", "readd", "remove", "remove2", "replace", "same"]),
            st.integers(0, 20),
            st.booleans(),
        ),
        max_size=14,
    ),
)
def test_unbuilt_derived_corpora_answer_like_plain_lists(ids: list[str], steps: list[tuple[str, int, bool]]) -> None:
    """Derived corpora build their chunk tuple on first read; reading it or not, at any step of a chain (past the
    overlay depth too), they hold, compare, pickle and restore exactly like corpora built from plain lists."""
    import pickle

    base = Corpus(Chunk(i, f"text {i}") for i in ids)
    corpus, plain = base, list(base.chunks)
    chain = [(base, list(plain))]
    for fresh, (op, n, read) in enumerate(steps):
        expected = _plain(op, plain, n, fresh, ids)
        if expected is None:
            continue
        if op in ("add", "readd"):
            corpus = corpus.with_chunks([expected[n % (len(plain) + 1)]], at=n % (len(plain) + 1))
        elif op == "append":
            corpus = corpus.with_chunks(expected[-2:])
        elif op.startswith("remove"):
            corpus = corpus.without({c.id for c in plain} - {c.id for c in expected})
        else:
            corpus = corpus.replaced(expected[n % len(plain)])
        plain = expected
        assert len(corpus) == len(plain)  # known before the tuple is built
        if read:
            assert corpus.chunks == tuple(plain)
        chain.append((corpus, list(plain)))
    for derived, held in chain:
        # Equality (read from the recipes when they tell, else by content) against every other corpus of the chain.
        for other, other_held in chain:
            assert (derived == other) == (held == other_held)
        assert derived.missing([*ids, "new0", "none"]) == {i for i in [*ids, "new0", "none"] if i not in {c.id for c in held}}
        assert [derived.get(c.id) for c in held] == held
    for derived, held in chain:
        assert derived.chunks == tuple(held) and list(derived) == held and len(derived) == len(held)
        assert derived.fingerprint == Corpus(held).fingerprint and hash(derived) == hash(Corpus(held))
        copied = pickle.loads(pickle.dumps(derived))
        assert copied == derived and copied.chunks == tuple(held)


def test_a_derived_corpus_edited_before_its_chunks_are_built_is_restored() -> None:
    """An edit behind the frozen class's back (object.__setattr__) on a corpus whose tuple is not built yet."""
    base = Corpus(Chunk(i, f"text {i}") for i in "abcd")
    derived = base.without(["b"])
    object.__setattr__(derived, "chunks", ())
    assert len(derived) == 0 and derived.chunks == ()
    assert derived.restore_if_changed() and [c.id for c in derived.chunks] == ["a", "c", "d"]
    assert not derived.restore_if_changed() and not base.without(["c"]).restore_if_changed()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        derived.chunks = ()  # type: ignore[misc]


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=0, max_size=5, unique=True),
    st.lists(st.tuples(st.sampled_from(["reorder", "remove", "add", "replace", "rebuild"]), st.integers(0, 9)), max_size=6),
)
def test_a_corpus_known_to_permute_another_holds_its_very_chunks(ids: list[str], steps: list[tuple[str, int]]) -> None:
    """`is_permutation_of` never says True wrongly: the two corpora then hold the same chunk objects, each once;
    and a reordering of a corpus (or of a reordering of it) is known as one."""
    chain = [Corpus(Chunk(i, f"text {i}") for i in ids)]
    root = None  # the corpus the last run of reorderings started from
    for number, (op, n) in enumerate(steps):
        corpus = chain[-1]
        if op == "reorder" and len(corpus):
            root = corpus if root is None else root
            corpus = corpus.reordered([*range(n % len(corpus), len(corpus)), *range(n % len(corpus))])
            assert corpus.is_permutation_of(root)
            chain.append(corpus)
            continue
        root = None
        if op == "remove" and len(corpus):
            corpus = corpus.without([corpus.chunks[n % len(corpus)].id])
        elif op == "add":
            corpus = corpus.with_chunks([Chunk(f"new{number}", "added")])
        elif op == "replace" and len(corpus):
            corpus = corpus.replaced(Chunk(corpus.chunks[n % len(corpus)].id, "replaced"))
        elif op == "rebuild":
            corpus = Corpus(corpus.chunks)
        chain.append(corpus)
    for one in chain:
        for other in chain:
            if one.is_permutation_of(other):
                assert len(one) == len(other) and {id(c) for c in one.chunks} == {id(c) for c in other.chunks}


_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, -1.0, 0.5]), st.sampled_from(["", "1", "a"]))
_JSON_VALUES = st.recursive(_JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xy"), inner, max_size=2), max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), _JSON_VALUES, max_size=3), st.dictionaries(st.sampled_from("abc"), _JSON_VALUES, max_size=3))
def test_frozen_maps_that_are_equal_hash_alike(left: dict[str, object], right: dict[str, object]) -> None:
    a, b = FrozenMap(left), FrozenMap(right)
    if a == b:
        assert hash(a) == hash(b)
    # Equal exactly when the values are equal and JSON spells them alike (1, 1.0 and true are three values).
    assert (a == b) == (left == right and json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True))
    assert (a == right) == (a == b)


def test_metadata_changed_from_one_to_true_is_a_change() -> None:
    one = Chunk("c1", "leave policy", metadata={"flag": 1})
    assert FrozenMap({"flag": 1}) != FrozenMap({"flag": True})
    assert FrozenMap({"flag": 1}) != FrozenMap({"flag": 1.0})
    assert FrozenMap({"flag": 1}) == {"flag": 1}
    assert one != attrs.evolve(one, metadata={"flag": True})
    assert one == attrs.evolve(one, metadata={"flag": 1})


@settings(max_examples=200, deadline=None)
@given(size=st.integers(0, 6), order=st.lists(st.integers(-2, 7), max_size=8))
def test_reordered_takes_exactly_the_permutations_of_the_corpus_positions(size: int, order: list[int]) -> None:
    corpus = Corpus([Chunk(f"c{i}", f"text {i}") for i in range(size)])
    if sorted(order) == list(range(size)):
        assert corpus.reordered(order).chunks == tuple(corpus.chunks[i] for i in order)
        assert corpus.reordered(order).is_permutation_of(corpus)
    else:
        with pytest.raises(InputError, match="expected a permutation"):
            corpus.reordered(order)


@pytest.mark.parametrize("order", [["1", "0"], [1.5, 0], [None, 0], [True, False], [[1], [0]]])
def test_reordered_refuses_positions_that_are_not_integers(order: list[object]) -> None:
    corpus = Corpus([Chunk("a", "x"), Chunk("b", "y")])
    with pytest.raises(InputError, match="expected a permutation of 0..1"):
        corpus.reordered(order)  # type: ignore[arg-type]


@given(size=st.integers(0, 6), data=st.data())
def test_reordered_takes_every_permutation(size: int, data: st.DataObject) -> None:
    corpus = Corpus([Chunk(f"c{i}", f"text {i}") for i in range(size)])
    order = data.draw(st.permutations(range(size)))
    assert corpus.reordered(order).ids == tuple(f"c{i}" for i in order)


_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False), st.sampled_from(["1", "true", ""]))


@given(stored=_JSON_SCALARS, wanted=_JSON_SCALARS)
def test_metadata_equality_filters_compare_values_by_json_type(stored, wanted) -> None:
    from ragmorph.model import json_equal

    chunk = Chunk(id="c", text="t", metadata={"pinned": stored})
    admitted = Filters(metadata={"pinned": wanted}).allows(chunk)
    assert admitted == (type(stored) is type(wanted) and stored == wanted)
    assert admitted == json_equal(stored, wanted)


def test_true_one_and_one_point_zero_are_three_metadata_values() -> None:
    chunks = [Chunk(id=str(i), text="t", metadata={"pinned": v}) for i, v in enumerate([True, 1, 1.0])]
    for i, value in enumerate([True, 1, 1.0]):
        assert [c.id for c in chunks if Filters(metadata={"pinned": value}).allows(c)] == [str(i)]
