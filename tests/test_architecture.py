"""Architecture guards: layers import downward only, the package list is complete, public names are curated."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ragmorph"
STRATEGIES = ROOT / "strategies"

# Lowest first. A module may import ragmorph modules of its own layer or of a lower one, never a higher one.
LAYERS: dict[str, int] = {
    "errors": 0,
    "model": 0,
    "metrics": 1,
    "io": 1,
    "worlds": 1,
    "adapters": 2,
    "judges": 2,
    "relations": 3,
    "strategies": 3,
    "runner": 4,
    "evaluator": 4,
    "reporting": 5,
    "cli": 6,
    "config": 6,
    "pytest_plugin": 6,
    "demo": 6,
}


def _modules() -> list[tuple[str, Path]]:
    found = [(path.relative_to(SRC).parts[0].removesuffix(".py"), path) for path in SRC.rglob("*.py")]
    found += [("strategies", path) for path in STRATEGIES.rglob("*.py")]
    return [(top, path) for top, path in found if top != "__init__"]


def _ragmorph_imports(path: Path, top: str) -> set[str]:
    """The top-level ragmorph modules a file imports (absolute or relative)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_package_depth = len(path.relative_to(STRATEGIES if top == "strategies" else SRC).parts) - 1
    if top == "strategies":
        in_package_depth += 1  # strategies/x.py is ragmorph/strategies/x.py
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ragmorph" and len(parts) > 1:
                    names.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("ragmorph"):
                parts = node.module.split(".")
                if len(parts) > 1:
                    names.add(parts[1])
                else:
                    names.update(alias.name for alias in node.names)
            elif node.level > 0:
                climbs = node.level - 1
                if climbs >= in_package_depth:
                    if node.module:
                        names.add(node.module.split(".")[0])
                    else:
                        names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize(("top", "path"), _modules(), ids=lambda v: str(v).split("ragmorph/")[-1])
def test_layers_import_downward_only(top: str, path: Path) -> None:
    if top not in LAYERS:
        pytest.fail(f"{path}: module {top!r} has no layer; add it to LAYERS in this test")
    level = LAYERS[top]
    upward = {name for name in _ragmorph_imports(path, top) if LAYERS.get(name, -1) > level}
    assert not upward, f"{path} (layer {level}) imports higher layers: {sorted(upward)}"


def test_reporting_renders_without_hypothesis() -> None:
    for path in (SRC / "reporting").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("hypothesis") for a in node.names), path
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("hypothesis"), path


def test_every_package_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = {"ragmorph"} | {
        "ragmorph." + ".".join(p.parent.relative_to(SRC).parts) for p in SRC.rglob("__init__.py") if p.parent != SRC
    }
    on_disk |= {"ragmorph.strategies"}
    assert on_disk == listed


def test_no_second_strategies_package_inside_src() -> None:
    assert not (SRC / "strategies").exists(), "strategies/ is mapped by package-dir; never create src/ragmorph/strategies"


@pytest.mark.parametrize(
    "module",
    ["ragmorph", "ragmorph.metrics", "ragmorph.io", "ragmorph.adapters", "ragmorph.strategies", "ragmorph.runner",
     "ragmorph.reporting", "ragmorph.worlds"],
)
def test_public_namespaces_export_exactly_their_all(module: str) -> None:
    mod = importlib.import_module(module)
    exported = getattr(mod, "__all__", None)
    assert exported is not None, f"{module} has no __all__"
    assert len(exported) == len(set(exported)), f"{module}.__all__ has duplicates"
    missing = [name for name in exported if not hasattr(mod, name)]
    assert not missing, f"{module}.__all__ names missing attributes: {missing}"
    public = {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", "").startswith(module)}
    undeclared = public - set(exported) - {"annotations"}
    assert not undeclared, f"{module} defines public names not in __all__: {sorted(undeclared)}"


def test_strategies_import_only_as_ragmorph_strategies() -> None:
    strategies = importlib.import_module("ragmorph.strategies")
    assert strategies.__name__ == "ragmorph.strategies"
    if sys.path and Path(sys.path[0] or ".").resolve() == ROOT:
        pytest.skip("`python -m pytest` puts the repo root on sys.path; README's command is plain `pytest`")
    # The repo root must not be on sys.path, or a second top-level `strategies` would shadow the real one.
    # (tests/strategies may show up as a namespace package because tests/ is on pythonpath; that one is harmless.)
    spec = importlib.util.find_spec("strategies")
    locations = [] if spec is None else [Path(p).resolve() for p in (spec.submodule_search_locations or [])]
    assert STRATEGIES.resolve() not in locations
