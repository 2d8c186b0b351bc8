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
    "where": 0,
    "secrets": 0,
    "support": 0,
    "metrics": 1,
    "io": 1,
    "worlds": 1,
    "adapters": 2,
    "judges": 2,
    "relations": 3,
    "strategies": 3,
    "runner": 4,
    "evaluator": 4,
    "compare": 4,
    "triage": 4,
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


def _module_name(path: Path) -> str:
    """The dotted module name of a source file (strategies/x.py is ragmorph.strategies.x)."""
    parts = (("strategies",) + path.relative_to(STRATEGIES).parts) if path.is_relative_to(STRATEGIES) else path.relative_to(SRC).parts
    dotted = ["ragmorph", *parts]
    dotted[-1] = dotted[-1].removesuffix(".py")
    return ".".join(dotted[:-1] if dotted[-1] == "__init__" else dotted)


def _imported(path: Path) -> list[tuple[str, str]]:
    """(absolute module, imported name) for every ragmorph import in a file ("" as name for `import x.y`)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name.startswith("ragmorph")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("ragmorph"):
                found += [(module, alias.name) for alias in node.names]
    return found


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


# Imports the layer order alone would allow, which DESIGN rules out: relations judge observations whose metrics
# the runner attached (no metric computation in strategies or relations), and the pytest plugin does not lean on
# the CLI.
FORBIDDEN: dict[str, set[str]] = {"strategies": {"metrics"}, "relations": {"metrics"}, "pytest_plugin": {"cli"}}
# Known exceptions, each with the reason and where it is tracked; the list only shrinks.
EXCEPTIONS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(("top", "path"), _modules(), ids=lambda v: str(v).split("ragmorph/")[-1])
def test_no_private_names_of_another_package_and_no_forbidden_imports(top: str, path: Path) -> None:
    own = _top(_module_name(path))
    problems = []
    for module, name in _imported(path):
        other = _top(module)
        forbidden = other in FORBIDDEN.get(own, set()) or (other == "" and name in FORBIDDEN.get(own, set()))
        if forbidden and (path.name, module) not in EXCEPTIONS:
            problems.append(f"{module} (forbidden for {own})")
        if other in ("", own):
            continue
        private_module = any(part.startswith("_") for part in module.split(".")[2:])
        private_name = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
        if private_module or private_name:
            problems.append(f"{module}:{name or '*'}")
    assert not problems, f"{path} imports private names of other packages or forbidden modules: {problems}"


def test_the_rule_itself_sees_private_and_forbidden_imports() -> None:
    # The scanner reads relative imports the way Python does; check it on the shapes it must reject.
    sample = STRATEGIES / "_core.py"
    imports = _imported(sample)
    assert ("ragmorph.adapters", "default_tokenize") in imports
    assert _module_name(SRC / "runner" / "_engine.py") == "ragmorph.runner._engine"
    assert _module_name(STRATEGIES / "__init__.py") == "ragmorph.strategies"
    engine = _imported(SRC / "runner" / "_engine.py")
    assert ("ragmorph.strategies.contract", "VALID_RESPONSE") in engine and ("ragmorph.runner._executor", "Executor") in engine


def _newcomer_family():  # noqa: ANN202 - the whole of a new family, as README's development section describes it
    """A new family whose perturbation needs its own kind of call: the same instance, then a fresh index."""
    from typing import ClassVar

    import attrs
    from hypothesis import strategies as st

    from ragmorph.model import World
    from ragmorph.relations import Call, Direction, Instance, Plan, Relation, Role, Severity, Verdict, compare_up_to_ties
    from ragmorph.strategies import Family, PerturbationBase

    @attrs.frozen
    class AskFreshIndex(PerturbationBase):
        """Ask the base world on the instance as earlier calls left it, then on a freshly built index."""

        family: ClassVar[str] = "fresh"
        k: int

        def plan(self, world: World) -> Plan:
            base = self.base(world)
            return Plan((Call(base, Instance.SAME, role=Role.BASE), Call(base, Instance.FRESH, role=Role.FOLLOW)))

    def same_as_fresh(base, follow) -> Verdict:  # noqa: ANN001
        verdict = compare_up_to_ties(base.ranking.hits, follow.ranking.hits)
        return verdict if verdict.holds else Verdict.broken(f"a fresh index answers otherwise: {verdict.detail}")

    relation = Relation(
        name="fresh.same_as_fresh", family="fresh", summary="a used instance answers like a fresh index",
        target="ranking@k", direction=Direction.INVARIANT_UP_TO_TIES, severity=Severity.HARD, check=same_as_fresh,
    )
    return Family(
        name="fresh", summary="compare the used instance with a fresh index", relations=(relation,),
        draw=lambda world, *, ks, **_: st.builds(AskFreshIndex, k=st.integers(1, max(ks))),
    )


def test_a_newcomer_adds_a_family_with_a_new_kind_of_call_in_under_40_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from ragmorph.adapters import BM25Retriever
    from ragmorph.runner import check
    from ragmorph.strategies import FAMILIES
    from support import engine_retrievers as er

    assert len(inspect.getsourcelines(_newcomer_family)[0]) < 40
    # Registering it is one line in strategies/__init__.py (FAMILIES); the test registers it for itself.
    monkeypatch.setitem(FAMILIES, "fresh", _newcomer_family())
    corpus, cases = er.small_world()
    correct = check({"bm25": BM25Retriever}, corpus, cases[:1], strategies=["fresh"], max_examples=10)
    assert {r.status for r in correct.results if r.relation == "fresh.same_as_fresh"} == {"pass"}
    # A retriever that degrades with use is caught, minimised and explained like any built-in family's finding.
    worn = check({"worn": er.WearsOut}, corpus, cases[:1], strategies=["fresh"], max_examples=10, ks=(10,))
    (failure,) = [r for r in worn.results if r.status == "fail"]
    assert failure.relation == "fresh.same_as_fresh" and "fresh index answers otherwise" in failure.reason
