"""CLI contract tests that need no engine: help texts, version, usage errors, error rendering and `init`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragmorph import __version__
from ragmorph.adapters import load_retriever as load_retriever_spec
from ragmorph.cli import EXIT_OK, EXIT_USAGE, format_error, main
from ragmorph.errors import InputError, UsageError

COMMANDS = ("metrics", "run", "report", "replay", "strategies", "demo", "init")


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == f"ragmorph {__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == EXIT_OK
    text = capsys.readouterr().out
    assert f"usage: ragmorph {command}" in text
    assert "example:" in text
    assert f"ragmorph {command}" in text.split("example:", 1)[1]


def test_top_level_help_lists_every_command_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    text = capsys.readouterr().out
    for command in COMMANDS:
        assert command in text
    assert "3  retriever errors prevented a verdict" in text


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == EXIT_USAGE
    assert "usage: ragmorph" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["frobnicate"], "invalid choice"),
        (["run", "--k", "3"], "expected --retriever MOD:ATTR or a config file"),
        (["run", "--retriever", "a:b", "--corpus", "c", "--cases", "q", "--k", "0,3"], "expected positive integers"),
        (["run", "--retriever", "a:b", "--corpus", "c", "--cases", "q", "--max-examples", "many"], "positive integer"),
        (["run", "--retriever", "a:b", "--corpus", "c", "--cases", "q", "--timeout", "-1"], "positive number"),
    ],
)
def test_usage_errors_exit_2_and_name_the_problem(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_missing_input_file_is_one_line_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--retriever", "ragmorph.adapters:BM25Retriever", "--corpus", str(tmp_path / "nope.jsonl"),
                 "--cases", str(tmp_path / "cases.jsonl")])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.count("\n") == 1
    assert err.startswith("ragmorph: error: expected an existing file for --corpus")
    assert "Traceback" not in err


def test_input_error_renders_file_line_field_and_message() -> None:
    error = InputError("expected a string, got 42 (int)", file="corpus.jsonl", line=3, field="text", value=42)
    assert format_error(error) == "corpus.jsonl:3: field 'text': expected a string, got 42 (int)"
    assert format_error(InputError("bad", field="k")) == "field 'k': bad"
    assert format_error(UsageError("plain message")) == "plain message"


def test_retriever_spec_without_colon_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="expected a retriever as 'package.module:attr'"):
        load_retriever_spec("mypkg.search")


def test_retriever_file_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="expected an existing Python file"):
        load_retriever_spec(f"{tmp_path / 'missing.py'}:factory")


def test_retriever_file_without_the_attribute_lists_what_it_has(tmp_path: Path) -> None:
    source = tmp_path / "search.py"
    source.write_text("def build(corpus):\n    return None\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"has no attribute 'factory'; it has \['build'\]"):
        load_retriever_spec(f"{source}:factory")


def test_retriever_file_that_raises_on_import_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "broken.py"
    source.write_text("raise RuntimeError('no index server')\n", encoding="utf-8")
    with pytest.raises(UsageError, match="importing .* failed: RuntimeError: no index server"):
        load_retriever_spec(f"{source}:factory")


# ---------------------------------------------------------------------------------------------------- init


def test_init_writes_a_config_an_adapter_a_test_file_and_sample_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "retrieval"
    assert main(["init", str(target)]) == EXIT_OK
    adapter = (target / "ragmorph_adapter.py").read_text(encoding="utf-8")
    test_file = (target / "test_ragmorph.py").read_text(encoding="utf-8")
    compile(adapter, "ragmorph_adapter.py", "exec")
    compile(test_file, "test_ragmorph.py", "exec")
    assert "def factory(corpus: Corpus)" in adapter
    assert "ragmorph_suite = suite()" in test_file
    config = (target / "ragmorph.toml").read_text(encoding="utf-8")
    assert 'spec = "ragmorph_adapter.py:factory"' in config and 'corpus = "data/corpus.jsonl"' in config
    assert (target / "data" / "corpus.jsonl").stat().st_size > 0 and (target / "data" / "cases.jsonl").stat().st_size > 0
    out = capsys.readouterr().out
    assert f"created {target / 'ragmorph_adapter.py'}" in out
    assert f"cd {target} && ragmorph run" in out


def test_init_paths_in_the_config_are_relative_to_it_and_existing_data_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.jsonl").write_text("mine\n", encoding="utf-8")
    (tmp_path / "data" / "cases.jsonl").write_text("mine\n", encoding="utf-8")
    assert main(["init", "tests/rag", "--corpus", "data/corpus.jsonl", "--cases", "data/cases.jsonl"]) == EXIT_OK
    text = (tmp_path / "tests" / "rag" / "ragmorph.toml").read_text(encoding="utf-8")
    assert 'corpus = "../../data/corpus.jsonl"' in text
    assert 'cases = "../../data/cases.jsonl"' in text
    assert (tmp_path / "data" / "corpus.jsonl").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("existing", ["ragmorph.toml", "ragmorph_adapter.py", "test_ragmorph.py"])
def test_init_keeps_an_existing_file_writes_the_missing_ones_and_names_what_it_kept(
    existing: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / existing).write_text("# mine\n", encoding="utf-8")
    assert main(["init", str(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"kept {tmp_path / existing} (exists; ragmorph init never overwrites)" in out
    assert (tmp_path / existing).read_text(encoding="utf-8") == "# mine\n"
    others = {"ragmorph.toml", "ragmorph_adapter.py", "test_ragmorph.py"} - {existing}
    for name in others:
        assert f"created {tmp_path / name}" in out
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "data" / "corpus.jsonl").is_file()


def test_init_with_every_file_present_writes_nothing_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path)]) == EXIT_OK
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["init", str(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "created" not in out and out.count("kept ") == 3
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.jsonl").write_text("mine\n", encoding="utf-8")  # corpus without cases: refused
    with pytest.raises(UsageError):
        main(["--debug", "init", str(tmp_path)])
    with pytest.raises(UsageError):
        main(["init", str(tmp_path), "--debug"])


def test_console_script_exits_with_the_code_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cases.jsonl").write_text("mine\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ragmorph.cli", "init", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == EXIT_USAGE
    assert done.stderr.startswith("ragmorph: error: ")
    assert "Traceback" not in done.stderr


def test_retriever_file_loads_a_factory_and_wraps_a_plain_function(tmp_path: Path) -> None:
    source = tmp_path / "my-search.py"
    source.write_text(
        "from ragmorph.adapters import BM25Retriever\n"
        "def factory(corpus):\n    return BM25Retriever(corpus)\n"
        "def search(query, k):\n    return ['a'][:k]\n",
        encoding="utf-8",
    )
    factory = load_retriever_spec(f"{source}:factory")
    assert callable(factory) and factory.__name__ == "factory"
    wrapped = load_retriever_spec(f"{source}:search")
    assert list(wrapped.retrieve("q", k=1)) != []
    # The same file loads once per process: both attributes come from one module object.
    assert factory.__module__ == load_retriever_spec(f"{source}:factory").__module__
