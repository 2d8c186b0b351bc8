"""JSON report: the shipped schema, the dependency-free validator, agreement with `jsonschema`, file round trips."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmorph.errors import InputError
from ragmorph.reporting import SCHEMA, load_report, report_schema, validate_report, write_json
from support.report_samples import sample_report
from support.report_strategies import reports


def reference_errors(report: Any) -> list[str]:
    """Messages of the reference JSON Schema implementation (empty when valid)."""
    validator = jsonschema.Draft202012Validator(report_schema())
    return [error.message for error in validator.iter_errors(report)]


def required_key_paths(value: Any, schema: dict, definitions: dict, path: tuple = ()) -> list[tuple]:
    """Every (path to object, required key) present in `value` according to `schema`."""
    if "$ref" in schema:
        return required_key_paths(value, definitions[schema["$ref"].rsplit("/", 1)[-1]], definitions, path)
    found: list[tuple] = []
    if "anyOf" in schema and value is not None:
        for option in schema["anyOf"]:
            if option.get("type") != "null":
                found += required_key_paths(value, option, definitions, path)
    if isinstance(value, dict):
        found += [(path, key) for key in schema.get("required", ()) if key in value]
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                found += required_key_paths(item, sub, definitions, (*path, key))
    if isinstance(value, list) and "items" in schema:
        for position, item in enumerate(value):
            found += required_key_paths(item, schema["items"], definitions, (*path, position))
    return found


def test_schema_is_valid_json_schema_and_names_the_format() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == SCHEMA == "ragmorph.report/1"


def test_sample_report_is_valid_for_both_validators() -> None:
    report = sample_report()
    validate_report(report)
    assert reference_errors(report) == []


MUTATIONS = [
    ("results.0.status", "passed", "results[0].status", "expected one of 'pass', 'fail'"),
    ("results.0.severity", "medium", "results[0].severity", "expected one of 'hard', 'soft'"),
    ("results.0.examples", -1, "results[0].examples", "expected a number >= 0"),
    ("manifest.seed", True, "manifest.seed", "expected an integer, got seed=True (bool)"),
    ("manifest.retrievers.0.kind", "library", "manifest.retrievers[0].kind", "factory"),
    ("summary.exit_code", 2, "summary.exit_code", "expected one of 0, 1, 3"),
    ("results.11.violation.base.ranking.0.score", "12.5", "results[11].violation.base.ranking[0].score",
     "expected a number or null"),
    ("results.12.rate.held", "23", "results[12].rate.held", "expected an integer"),
    ("metrics.bm25.P@5.queries", None, "metrics.bm25.P@5.queries", "expected an integer"),
    ("manifest.settings.ks", "1,3,5", "manifest.settings.ks", "expected an array"),
]


def _set(report: dict, dotted: str, value: Any) -> None:
    *parents, last = [int(p) if p.isdigit() else p for p in dotted.split(".")]
    target: Any = report
    for part in parents:
        target = target[part]
    target[last] = value


@pytest.mark.parametrize(("where", "value", "field", "message"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_schema_mismatches_name_the_field(where: str, value: Any, field: str, message: str) -> None:
    report = sample_report()
    ordered = report["results"]
    # The failing result sits at index 11 of the sample (cached-bm25, q03, removal); index 12 is its soft twin.
    assert ordered[11]["violation"] is not None and ordered[12]["rate"] is not None
    _set(report, where, value)
    with pytest.raises(InputError) as raised:
        validate_report(report)
    assert raised.value.field == field
    assert message in str(raised.value)
    assert reference_errors(report), "jsonschema should reject this report too"


def test_non_finite_numbers_are_rejected_with_advice() -> None:
    report = sample_report()
    report["metrics"]["bm25"]["P@5"]["macro"] = math.nan
    with pytest.raises(InputError, match="use null for undefined"):
        validate_report(report)


def test_wrong_schema_names_the_likely_mix_up() -> None:
    with pytest.raises(InputError, match="metrics file or a replay file"):
        validate_report({"schema": "ragmorph.metrics/1", "metrics": {}})
    with pytest.raises(InputError, match="expected a report object"):
        validate_report([1, 2])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_dropping_any_required_key_is_caught_by_both_validators(data: st.DataObject) -> None:
    report = sample_report()
    schema = report_schema()
    paths = required_key_paths(report, schema, schema["$defs"])
    path, key = data.draw(st.sampled_from(paths))
    target: Any = report
    for part in path:
        target = target[part]
    del target[key]
    with pytest.raises(InputError) as raised:
        validate_report(report)
    assert key in str(raised.value)
    assert reference_errors(report)


@settings(max_examples=25, deadline=None)
@given(report=reports())
def test_generated_reports_validate_and_round_trip(report: dict, tmp_path_factory: pytest.TempPathFactory) -> None:
    validate_report(report)
    assert reference_errors(report) == []
    path = write_json(report, tmp_path_factory.mktemp("json") / "report.json")
    assert load_report(path) == json.loads(json.dumps(report))


def test_write_json_is_stable_and_golden(tmp_path, golden) -> None:
    path = write_json(sample_report(), tmp_path / "out" / "report.json")
    text = path.read_text(encoding="utf-8")
    assert text == write_json(sample_report(), tmp_path / "again.json").read_text(encoding="utf-8")
    golden("report.json", text)


def test_lone_surrogates_survive_as_json_escapes(tmp_path) -> None:
    report = sample_report()
    report["results"][11]["violation"]["query"] = "lone \ud800 surrogate"
    path = write_json(report, tmp_path / "r.json")
    assert "\\ud800" in path.read_text(encoding="ascii")
    assert load_report(path)["results"][11]["violation"]["query"] == "lone \ud800 surrogate"


def test_write_json_refuses_an_invalid_report(tmp_path) -> None:
    report = sample_report()
    del report["summary"]
    with pytest.raises(InputError, match="'summary'"):
        write_json(report, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_load_report_names_file_and_line(tmp_path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "ragmorph.report/1",\n  "manifest": }\n', encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_report(broken)
    assert raised.value.file == str(broken) and raised.value.line == 2
    wrong = tmp_path / "wrong.json"
    report = copy.deepcopy(sample_report())
    report["results"][0]["status"] = "ok"
    wrong.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_report(wrong)
    assert raised.value.file == str(wrong) and raised.value.field == "results[0].status"
    with pytest.raises(InputError, match="readable report file"):
        load_report(tmp_path / "missing.json")
