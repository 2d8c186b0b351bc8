"""load_retriever and describe_capabilities: import strings, factories versus black boxes, clear errors."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from ragmorph.adapters import (
    BM25Retriever,
    Capabilities,
    DenseRetriever,
    FunctionRetriever,
    describe_capabilities,
    load_retriever,
)
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus, Filters

MODULE = '''
from ragmorph.adapters import BM25Retriever
from ragmorph.model import Chunk, Corpus

import_count = 0

class BlackBox:
    def retrieve(self, query, *, k, filters=None):
        return []

class NoFilters:
    def retrieve(self, query, *, k):
        return []

class Delta(BlackBox):
    def add(self, chunks): pass
    def remove(self, ids): pass
    def retrieve_batch(self, queries, *, k, filters=None): return [[] for _ in queries]
    async def aretrieve(self, query, *, k, filters=None): return []

black_box = BlackBox()

def build(corpus) -> BM25Retriever:
    return BM25Retriever(corpus)

def search(query, k):
    return []

class Settings:
    retriever = BlackBox()

not_a_retriever = 42
'''


@pytest.fixture()
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "ragmorph_c_user_retrievers"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / "ragmorph_c_broken.py").write_text("import ragmorph_c_missing_dependency\n")
    (tmp_path / "ragmorph_c_raises.py").write_text("raise RuntimeError('config missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in (name, "ragmorph_c_broken", "ragmorph_c_raises"):
        sys.modules.pop(module, None)


def test_loads_factories_retrievers_and_functions(user_module: str) -> None:
    assert load_retriever("ragmorph.adapters:BM25Retriever") is BM25Retriever
    black_box = load_retriever(f"{user_module}:black_box")
    assert describe_capabilities(black_box).kind == "black_box"
    assert describe_capabilities(load_retriever(f"{user_module}:build")).kind == "factory"
    assert describe_capabilities(load_retriever(f"{user_module}:Settings.retriever")).kind == "black_box"
    wrapped = load_retriever(f"{user_module}:search")
    assert isinstance(wrapped, FunctionRetriever) and not wrapped.supports_filters


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ragmorph.adapters.BM25Retriever", "package.module:attr"),
        ("a:b:c", "package.module:attr"),
        (":BM25Retriever", "both a module and an attribute"),
        ("ragmorph_c_nowhere:thing", "module 'ragmorph_c_nowhere' not found"),
        ("ragmorph_c_broken:thing", "imports the missing module 'ragmorph_c_missing_dependency'"),
        ("ragmorph_c_raises:thing", "RuntimeError: config missing"),
        ("{module}:missing", "has no attribute 'missing'; it has"),
        ("{module}:Settings.nothing", "has no attribute 'nothing'"),
        ("{module}:not_a_retriever", "expected a retriever"),
    ],
)
def test_errors_name_the_string_and_the_problem(user_module: str, spec: str, message: str) -> None:
    spec = spec.format(module=user_module)
    with pytest.raises(UsageError, match=message.replace("(", r"\(")) as caught:
        load_retriever(spec)
    assert spec in str(caught.value)


def test_capabilities_of_each_kind(user_module: str) -> None:
    module = importlib.import_module(user_module)
    assert describe_capabilities(BM25Retriever) == Capabilities(
        has_factory=True,
        supports_delta=True,
        supports_batch=False,
        supports_async=False,
        supports_filters=True,
        supports_rollback=True,
    )
    rich = describe_capabilities(module.Delta())
    assert (rich.supports_delta, rich.supports_batch, rich.supports_async, rich.has_factory) == (
        True,
        True,
        True,
        False,
    )
    assert not describe_capabilities(module.NoFilters()).supports_filters
    # A factory function annotated with its product class is judged by that class.
    assert describe_capabilities(module.build).supports_delta
    built = DenseRetriever(Corpus([Chunk("a", "x")]))
    assert describe_capabilities(lambda corpus: built, built=built).supports_rollback
    with pytest.raises(UsageError, match="expected a retriever"):
        describe_capabilities(42)


def test_why_not_explains_inapplicable_perturbations() -> None:
    black_box = describe_capabilities(FunctionRetriever(lambda query, k: []))
    assert "corpus edits need a factory" in (black_box.why_not("corpus") or "")
    assert "TenantFilter" in (black_box.why_not("filters") or "")
    assert black_box.why_not("query") is None and black_box.why_not("params") is None
    factory = describe_capabilities(BM25Retriever)
    assert factory.why_not("corpus") is None and factory.why_not("filters") is None
    assert factory.to_dict()["kind"] == "factory"
    with pytest.raises(UsageError, match="perturbation kind"):
        factory.why_not("weather")


def test_function_retriever_passes_filters_by_signature() -> None:
    seen: list[object] = []
    three = FunctionRetriever(lambda query, k, filters: seen.append(filters) or ["a"])
    assert three.supports_filters
    three.retrieve("q", k=1, filters=Filters(tenant="t"))
    assert seen == [Filters(tenant="t")]
    with pytest.raises(UsageError, match="fn\\(query, k\\)"):
        FunctionRetriever(lambda query: [])
    with pytest.raises(UsageError, match="callable"):
        FunctionRetriever("search")  # type: ignore[arg-type]
