"""README stays a short product page: the two commands CI runs come first, and its links lead to pages that exist.

Its code blocks are run or checked by tests/test_docs.py, with the documentation site's.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def test_readme_starts_with_the_two_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)[:2]
    assert commands == ['pip install . && ragmorph demo', 'pip install -e ".[test]" && pytest']
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]" && pytest' in ci


def test_readme_is_a_short_product_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 350, f"README.md has {len(lines)} lines: move detail into docs/"
    headings = [line for line in lines if line.startswith("## ")]
    for needed in ("What ragmorph finds", "A five-minute tour", "The config file", "pytest and CI", "Documentation"):
        assert any(needed in heading for heading in headings), needed


def test_readme_links_lead_to_files_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    links = [link for link in re.findall(r"\]\(([^)]+)\)", text) if not link.startswith(("http://", "https://"))]
    assert any(link.startswith("docs/") for link in links), "README links into the docs"
    for link in links:
        assert (ROOT / link.split("#")[0]).exists(), f"README links to {link}, which does not exist"
