"""Issue 31, config and run options: nothing to run is refused, a misspelt trait is refused wherever it is declared,
a factory that takes options is read as a factory, and another project's invalid pyproject.toml is ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmorph.cli import EXIT_OK, EXIT_USAGE, main
from ragmorph.errors import InputError, UsageError
from ragmorph.model import Case, Chunk, Corpus
from ragmorph.runner import TRAITS, check
from ragmorph.strategies import CATALOG
from reliability.worldfiles import run_args

FACTORY_WITH_OPTIONS = '''
from ragmorph.adapters import BM25Retriever


def factory(corpus, k1):
    return BM25Retriever(corpus, k1=k1)
'''


def _config(folder: Path, body: str) -> Path:
    path = folder / "ragmorph.toml"
    path.write_text('corpus = "corpus.jsonl"\ncases = "cases.jsonl"\nmax_examples = 2\n' + body, encoding="utf-8")
    return path


def test_an_empty_strategies_list_in_the_config_is_an_input_error(world, monkeypatch, capsys) -> None:
    folder = world[0].parent
    _config(folder, 'strategies = []\n[retrievers]\nbm25 = "ragmorph.adapters:BM25Retriever"\n')
    monkeypatch.chdir(folder)
    assert main(["run"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "ragmorph.toml: field 'strategies': expected at least one strategy family, got an empty list" in err


def test_an_empty_strategies_list_given_to_check_is_a_usage_error() -> None:
    corpus = Corpus([Chunk("a", "alpha")])
    with pytest.raises(UsageError, match="expected at least one strategy family"):
        check({"bm25": "ragmorph.adapters:BM25Retriever"}, corpus, [Case("q", "alpha", evidence=[["a"]])], strategies=[])


def test_a_misspelt_family_in_the_config_names_the_key_and_the_close_match(world, monkeypatch, capsys) -> None:
    _config(world[0].parent, 'strategies = ["cutof"]\n[retrievers]\nbm25 = "ragmorph.adapters:BM25Retriever"\n')
    monkeypatch.chdir(world[0].parent)
    assert main(["run"]) == EXIT_USAGE
    assert "field 'strategies'" in (err := capsys.readouterr().err) and "did you mean 'cutoff'?" in err


def test_a_misspelt_trait_is_refused_by_the_config(world, monkeypatch, capsys) -> None:
    _config(world[0].parent, '[retrievers]\nbm25 = { spec = "ragmorph.adapters:BM25Retriever", traits = ["lexcial"] }\n')
    monkeypatch.chdir(world[0].parent)
    assert main(["run"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "field 'retrievers.bm25.traits': expected traits among" in err and "did you mean 'lexical'?" in err


def test_a_misspelt_trait_is_refused_by_the_traits_option(world, capsys) -> None:
    assert main(run_args(world, "bm25=ragmorph.adapters:BM25Retriever", "--traits", "bm25=lexcial")) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--traits bm25=...: expected traits among" in err and "got 'lexcial'" in err and "Traceback" not in err


def test_a_misspelt_trait_is_refused_by_check() -> None:
    corpus = Corpus([Chunk("a", "alpha")])
    with pytest.raises(UsageError, match="traits of retriever 'bm25': .*got 'lexcial'"):
        check({"bm25": "ragmorph.adapters:BM25Retriever"}, corpus, [Case("q", "alpha", evidence=[["a"]])],
              strategies=["cutoff"], traits={"bm25": ["lexcial"]})


def test_the_known_traits_are_every_trait_a_relation_presumes() -> None:
    presumed = {trait for relation in CATALOG for trait in (*relation.requires, *relation.hard_with)}
    assert presumed < TRAITS and TRAITS - presumed == {"approximate"}


def test_a_factory_with_required_options_is_built_with_them(world, capsys) -> None:
    folder = world[0].parent
    (folder / "adapter.py").write_text(FACTORY_WITH_OPTIONS, encoding="utf-8")
    _config(folder, 'strategies = ["cutoff"]\n[retrievers]\nmine = { spec = "adapter.py:factory", options = { k1 = 1.2 } }\n')
    assert main(["run", "--config", str(folder / "ragmorph.toml")]) == EXIT_OK, capsys.readouterr().out
    # The wrong option name, or none, is one usage error naming the missing option, before any unit runs.
    _config(folder, 'strategies = ["cutoff"]\n[retrievers]\nmine = { spec = "adapter.py:factory", options = { k2 = 1.2 } }\n')
    capsys.readouterr()
    assert main(["run", "--config", str(folder / "ragmorph.toml")]) == EXIT_USAGE
    assert "factory(corpus, k1) accepts after the corpus, got options ['k2']" in capsys.readouterr().err
    _config(folder, 'strategies = ["cutoff"]\n[retrievers]\nmine = "adapter.py:factory"\n')
    assert main(["run", "--config", str(folder / "ragmorph.toml")]) == EXIT_USAGE
    assert "which also requires k1; give them as options" in capsys.readouterr().err


def test_an_unrelated_invalid_pyproject_above_is_ignored(world, tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.black\nline-length = 100\n", encoding="utf-8")
    inner = world[0].parent / "project"
    inner.mkdir()
    monkeypatch.chdir(inner)
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever")) == EXIT_OK, capsys.readouterr().err
    # One that mentions ragmorph's table is ragmorph's business: its error names the file.
    (tmp_path / "pyproject.toml").write_text("[tool.ragmorph\nseed = 1\n", encoding="utf-8")
    capsys.readouterr()
    assert main(run_args(world, "ragmorph.adapters:BM25Retriever")) == EXIT_USAGE
    assert f"{tmp_path / 'pyproject.toml'}: expected valid TOML" in capsys.readouterr().err


def test_a_pyproject_whose_tool_key_is_not_a_table_is_not_a_config(tmp_path) -> None:
    from ragmorph.config import find_config

    (tmp_path / "pyproject.toml").write_text("tool = 1\n", encoding="utf-8")
    assert find_config(tmp_path) is None or find_config(tmp_path) != tmp_path / "pyproject.toml"


def test_a_broken_config_still_names_file_and_key(tmp_path) -> None:
    from ragmorph.config import load_config

    path = tmp_path / "ragmorph.toml"
    path.write_text('[retrievers]\nx = { spec = "a:b", traits = ["fresh"] }\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert caught.value.field == "retrievers.x.traits" and caught.value.file == str(path)
