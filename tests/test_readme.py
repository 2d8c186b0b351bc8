"""README stays true: its catalog and metric tables are generated from the registries, and its commands exist.

Run with RAGMORPH_UPDATE_README=1 to rewrite the generated blocks after changing the catalog or a measure.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ragmorph.metrics import MEASURES
from ragmorph.strategies import CATALOG

README = Path(__file__).resolve().parents[1] / "README.md"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def catalog_table() -> str:
    """The relation catalog as a Markdown table."""
    rows = [
        "| family | relation | direction | severity | hard for | rationale and assumptions |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for relation in CATALOG:
        text = relation.summary
        if relation.assumptions:
            text += " *Assumes:* " + "; ".join(relation.assumptions)
        rows.append(
            f"| {relation.family} | `{relation.name}` | {relation.direction.value} | {relation.severity.value} | "
            f"{_cell(relation.holds_for)} | {_cell(text)} |"
        )
    return "\n".join(rows)


def measures_table() -> str:
    """The metric registry as a Markdown table."""
    rows = ["| measure | formula | edge cases |", "| --- | --- | --- |"]
    for name, info in MEASURES.items():
        shown = f"`{name}`" if name == "EmptyOK" else f"`{name}@k`"
        rows.append(f"| {shown} | {_cell(info.formula)} | {_cell(info.edge_cases)} |")
    return "\n".join(rows)


def _block(text: str, name: str) -> str:
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"README.md lacks the <!-- {name}:start/end --> markers"
    return match.group(1).strip()


def _replace(text: str, name: str, body: str) -> str:
    return re.sub(
        rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", lambda m: m.group(1) + body + "\n" + m.group(2), text,
        flags=re.S,
    )


def test_generated_tables_match_the_registries() -> None:
    text = README.read_text(encoding="utf-8")
    expected = {"catalog": catalog_table(), "measures": measures_table()}
    if os.environ.get("RAGMORPH_UPDATE_README"):
        for name, body in expected.items():
            text = _replace(text, name, body)
        README.write_text(text, encoding="utf-8")
    for name, body in expected.items():
        assert _block(text, name) == body, f"README {name} table is stale: rerun with RAGMORPH_UPDATE_README=1"


def test_readme_starts_with_the_two_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)[:2]
    assert commands == ['pip install . && ragmorph demo', 'pip install -e ".[test]" && pytest']
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]" && pytest' in ci
