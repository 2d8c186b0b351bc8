"""The one parser and the registry: canonical spellings, clear errors, documentation for every measure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmorph.metrics as metrics
from ragmorph.errors import UsageError
from ragmorph.metrics import MEASURES, Metric, parse_metric, parse_metrics, standard_metrics


@pytest.mark.parametrize(
    ("text", "measure", "k"),
    [
        ("P@5", "P", 5),
        ("nDCG@10", "nDCG", 10),
        ("GroupR@3", "GroupR", 3),
        ("EmptyOK", "EmptyOK", None),
        ("F1@1", "F1", 1),
        ("P_ret@20", "P_ret", 20),
        (" ndcg @ 10 ", "nDCG", 10),
        ("unauthorized@4", "Unauthorized", 4),
    ],
)
def test_parse_metric_accepts_canonical_and_case_insensitive_names(text: str, measure: str, k: int | None) -> None:
    metric = parse_metric(text)
    assert metric == Metric(measure, k)
    assert str(metric) == (measure if k is None else f"{measure}@{k}")


@settings(max_examples=60)
@given(measure=st.sampled_from(list(MEASURES)), k=st.integers(1, 10_000))
def test_canonical_names_round_trip(measure: str, k: int) -> None:
    metric = Metric(measure, k if MEASURES[measure].needs_k else None)
    assert parse_metric(str(metric)) == metric
    assert parse_metric(metric) is metric


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("recall@5", "valid: P@k"),
        ("P", "cutoff"),
        ("P@0", "positive integer cutoff"),
        ("P@x", "positive integer cutoff"),
        ("P@-1", "positive integer cutoff"),
        ("EmptyOK@3", "without a cutoff"),
        ("", "valid:"),
        ("P@5@6", "positive integer cutoff"),
    ],
)
def test_bad_metric_names_raise_a_usage_error_naming_the_text_or_field(text: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        parse_metric(text)


def test_bad_names_list_every_valid_measure() -> None:
    with pytest.raises(UsageError) as error:
        parse_metric("MRR@10")
    message = str(error.value)
    assert "'MRR@10'" in message
    for name, info in MEASURES.items():
        assert (f"{name}@k" if info.needs_k else name) in message


def test_metric_constructor_validates_like_the_parser() -> None:
    with pytest.raises(UsageError, match="measure="):
        Metric("Precision", 5)
    with pytest.raises(UsageError, match="k=True"):
        Metric("P", True)
    with pytest.raises(UsageError):
        parse_metric(5)  # type: ignore[arg-type]


def test_parse_metrics_takes_a_comma_string_or_an_iterable_and_drops_repeats() -> None:
    assert parse_metrics("P@5, R@5,P@5") == (Metric("P", 5), Metric("R", 5))
    assert parse_metrics([Metric("nDCG", 3), "nDCG@3", "EmptyOK"]) == (Metric("nDCG", 3), Metric("EmptyOK"))


def test_standard_metrics_cover_every_k() -> None:
    names = [str(m) for m in standard_metrics([1, 5])]
    assert names[:2] == ["P@1", "R@1"] and "GroupR@5" in names and "Unauthorized@5" in names
    assert names[-1] == "EmptyOK"
    assert not any(name.startswith("Stale") for name in map(str, standard_metrics([3], governance=False)))


def test_registry_documents_every_measure_and_micro_rule() -> None:
    expected = {"P", "P_ret", "R", "GroupR", "CP", "AP", "RR", "nDCG", "Hit", "F1", "Unauthorized", "Stale",
                "Superseded", "Dup", "Relevance", "ClaimR", "SpanR", "EmptyOK"}
    assert set(MEASURES) == expected
    for name, info in MEASURES.items():
        assert info.name == name
        assert info.formula and info.edge_cases and info.summary
    assert {name for name, info in MEASURES.items() if info.micro is None} == {"CP", "AP", "RR", "nDCG"}
    assert {name for name, info in MEASURES.items() if info.needs_corpus} == {"Unauthorized", "Stale", "Superseded"}


def test_policies_are_referenced_from_the_registry() -> None:
    text = " ".join(info.edge_cases for info in MEASURES.values())
    for policy in ("fewer_than_k", "no_gold", "duplicates", "unanswerable", "unknown_ids"):
        assert policy in metrics.POLICIES
        assert f"policy {policy}" in text


def test_public_namespace_is_curated() -> None:
    assert sorted(metrics.__all__) == sorted(set(metrics.__all__))
    for name in metrics.__all__:
        assert getattr(metrics, name).__doc__ or name.isupper(), name


def test_markdown_table_lists_every_measure_once() -> None:
    table = metrics.measures_markdown()
    rows = table.strip().splitlines()
    assert len(rows) == 2 + len(MEASURES)
    assert all(row.startswith("| ") and row.count(" | ") == 3 for row in rows[2:])
    assert "`nDCG@k`" in table and "`EmptyOK`" in table and "none (micro is null)" in table
