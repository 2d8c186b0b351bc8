"""The CI recipe runs: the baseline and compare steps of examples/ci/github-workflow.yml, exactly as written."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from ragmorph.cli import EXIT_OK, EXIT_VIOLATIONS, main

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-workflow.yml"


def _steps() -> dict[str, list[str]]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return {
        step["name"]: shlex.split(step["run"])
        for step in workflow["jobs"]["ragmorph"]["steps"]
        if step.get("run", "").startswith("ragmorph ")
    }


@pytest.mark.slow
def test_the_workflow_gates_the_candidate_with_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # The workflow runs from the repository root; a copy of examples/ keeps the report folder out of the repo.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    steps = _steps()
    baseline = next(argv for name, argv in steps.items() if name.startswith("Baseline"))
    gate = next(argv for name, argv in steps.items() if name.startswith("Gate"))
    assert gate[:2] == ["ragmorph", "compare"] and "--critical" in gate
    assert main(baseline[1:]) == EXIT_OK
    assert main(gate[1:]) == EXIT_OK, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "exit code 0 (no regression)" in out
    data = json.loads((tmp_path / "ragmorph-report" / "compare.json").read_text(encoding="utf-8"))
    critical = [row["case"] for row in data["queries"] if row["critical"]]
    assert critical == ["q2"] and data["lost_critical"] == []
    assert (tmp_path / "ragmorph-report" / "compare.html").is_file()
    assert (tmp_path / "ragmorph-report" / "compare-junit.xml").is_file()
    baseline_report = json.loads((tmp_path / "ragmorph-report" / "baseline.json").read_text(encoding="utf-8"))
    assert baseline_report["slices"]["production"], "the baseline report carries its slices"
    # The same candidate loses q8's evidence: naming q8's tag critical makes the gate fail.
    lost = [row for row in data["queries"] if row["lost"]]
    assert lost, "the example candidate is expected to lose some evidence"
    tag = lost[0]["tags"][0]
    strict = [*gate[1:gate.index("--critical")], "--critical", tag, "--max-examples", "3"]
    assert main(strict) == EXIT_VIOLATIONS
    assert f"LOST CRITICAL CASES: {lost[0]['case']}" in capsys.readouterr().out
