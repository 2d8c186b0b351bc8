"""The documentation stays true: generated references match the code, every code block is run or checked, the site
builds with warnings as errors, and no page carries machine paths, commit hashes or notes about how it was made.

Generated blocks sit between `<!-- NAME:start -->` and `<!-- NAME:end -->` markers in docs/. After changing the
parser, the config file's keys, the pytest options, the relation catalog or a measure, rewrite them with

    RAGMORPH_UPDATE_DOCS=1 pytest tests/test_docs.py

How a code block is checked, by its language and the HTML comment right before it (invisible on the site):

- `bash`: each command is parsed (`ragmorph` commands by ragmorph's own parser, `pip install` extras against
  pyproject.toml, paths of `pytest` and `python` commands, benchmark options against the script's --help).
  After `<!-- test: run NAME -->` the commands are run, in order, in scenario NAME's own temporary folder
  (one per page); a trailing `# exit N` is the exit code expected (default 0).
- `<!-- test: file NAME PATH -->`: the block is written to PATH in scenario NAME's folder before later commands.
- `<!-- test: output NAME -->`: every line of the block appears in the output of scenario NAME's commands so far
  (`...` stands for any text; a line that is only `...` is skipped).
- `python`: executed in a temporary folder holding examples/data as data/. `toml`: loaded as a config file in a
  folder `ragmorph init` made. `json`: every line parses. `yaml`: parses.
- `--8<-- "path"` includes a file the test-suite runs (examples/).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from ragmorph.metrics import MEASURES
from ragmorph.strategies import CATALOG

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
UPDATE = bool(os.environ.get("RAGMORPH_UPDATE_DOCS"))


def pages() -> list[Path]:
    """README.md and every Markdown page of docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def _cell(text: str) -> str:
    """One table cell: a single line, pipes escaped, and `<name>` outside code spans shown rather than read as HTML."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else re.sub(r"<(?=[A-Za-z/])", "&lt;", part) for i, part in enumerate(parts))


# ------------------------------------------------------------------------------------------- generated blocks


def catalog_table() -> str:
    """The relation catalog as a Markdown table, from `ragmorph.strategies.CATALOG`."""
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
    """The metric registry as a Markdown table, from `ragmorph.metrics.MEASURES`."""
    rows = ["| measure | formula | edge cases |", "| --- | --- | --- |"]
    for name, info in MEASURES.items():
        shown = f"`{name}`" if name == "EmptyOK" else f"`{name}@k`"
        rows.append(f"| {shown} | {_cell(info.formula)} | {_cell(info.edge_cases)} |")
    return "\n".join(rows)


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    shown = ", ".join(f"`{flag}`" for flag in action.option_strings)
    if action.nargs == 0:
        return shown
    metavar = action.metavar or (("{" + ",".join(map(str, action.choices)) + "}") if action.choices else action.dest.upper())
    return f"{shown} `{metavar}`"


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | meaning |", "| --- | --- |"]
    for action in parser._actions:  # noqa: SLF001 - argparse has no public list of its actions
        if action.help == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):  # noqa: SLF001
            continue
        meaning = action.help or ""
        if action.required:
            meaning = "required; " + meaning
        if action.choices and action.option_strings and action.metavar is None:
            meaning += f" (one of {', '.join(map(str, action.choices))})"
        rows.append(f"| {_flags(action)} | {_cell(meaning)} |")
    return rows


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


def cli_reference() -> str:
    """Every `ragmorph` command with its options, from `ragmorph.cli.build_parser()`, and the exit codes."""
    from ragmorph.cli import build_parser
    from ragmorph.errors import ExitCode

    parser = build_parser()
    lines = ["## Exit codes", "", "The same for every command.", "", "| code | meaning |", "| --- | --- |"]
    lines += [f"| {int(code)} | {code.meaning} |" for code in ExitCode]
    lines += ["", "## `ragmorph`", "", _cell(parser.description), "", *_options_table(parser)]
    for name, sub in _subcommands(parser).items():
        lines += ["", f"## `ragmorph {name}`", "", _cell(sub.description), "", *_options_table(sub)]
        example = (sub.epilog or "").split("\n\n")[0]
        if example.startswith("example:"):
            lines += ["", "Examples:", "", "```text", *textwrap_dedent(example.split("\n", 1)[1]), "```"]
    return "\n".join(lines)


def textwrap_dedent(text: str) -> list[str]:
    import textwrap

    return textwrap.dedent(text).strip("\n").splitlines()


# The command-line option that sets each key of the config file (`--retriever` sets `[retrievers]`).
_CONFIG_FLAGS = {
    "corpus": "--corpus", "cases": "--cases", "format": "--format", "beir": "--beir", "split": "--split",
    "ks": "--k", "strategies": "--strategies", "profile": "--profile", "max_examples": "--max-examples",
    "budget": "--budget", "seed": "--seed", "timeout": "--timeout", "fail_fast": "--fail-fast",
    "json": "--json", "html": "--html", "junit": "--junit", "replays": "--replay-dir",
}
_TOML_TYPES = {
    "Path | None": "string (a path, relative to the config file)",
    "str": "string",
    "str | None": "string",
    "tuple[int, ...] | None": "array of positive integers",
    "tuple[str, ...] | None": "array of strings",
    "int | None": "integer",
    "float | None": "number (seconds)",
    "bool | None": "boolean",
}


def config_reference() -> str:
    """The config file's keys, from `ragmorph.config.Config`, each with the command-line option that beats it."""
    from ragmorph.cli import build_parser
    from ragmorph.config import FORMATS, PROFILES, Config, RetrieverEntry
    from ragmorph.runner import BUDGETS

    run = _subcommands(build_parser())["run"]
    helps = {flag: action.help for action in run._actions for flag in action.option_strings}  # noqa: SLF001
    outputs = {"json", "html", "junit", "replays"}
    top, nested = ["| key | type | default | option | meaning |", "| --- | --- | --- | --- | --- |"], []
    nested = ["| key | type | option | meaning |", "| --- | --- | --- | --- |"]
    for field in attrs.fields(Config):
        if field.name in ("path", "retrievers"):
            continue
        flag = _CONFIG_FLAGS[field.name]
        kind = _TOML_TYPES[field.type]
        if field.name in outputs:
            nested.append(f"| `{field.name}` | {kind} | `{flag}` | {_cell(helps[flag])} |")
            continue
        default = "" if field.default is None else f"`{json.dumps(field.default)}`"
        top.append(f"| `{field.name}` | {kind} | {default} | `{flag}` | {_cell(helps[flag])} |")
    entry = ["| key | type | meaning |", "| --- | --- | --- |"]
    kinds = {"spec": "string", "traits": "array of strings", "options": "table"}
    meanings = {
        "spec": "`package.module:attr` or `path/to/file.py:attr`: a factory (called with the corpus) or a retriever",
        "traits": "declared traits (see Concepts, Traits)",
        "options": "keyword arguments for the factory, `factory(corpus, **options)`; recorded in reports, so a "
        "name that looks like a secret (`api_key`, `token`) is refused",
    }
    for field in attrs.fields(RetrieverEntry):
        if field.name != "name":
            entry.append(f"| `{field.name}` | {kinds[field.name]} | {meanings[field.name]} |")
    profiles = ["| profile | budget |", "| --- | --- |"]
    profiles += [f"| `{name}` | {_cell(profile.summary)} |" for name, profile in PROFILES.items()]
    return "\n".join([
        "### Top-level keys", "", *top, "",
        f"`format` is one of {', '.join(f'`{f}`' for f in FORMATS)}; `budget` one of "
        f"{', '.join(f'`{b}`' for b in BUDGETS)}; `profile` one of {', '.join(f'`{p}`' for p in PROFILES)}.", "",
        "### `[outputs]`", "", *nested, "",
        "### `[retrievers]`", "",
        "Each key is a retriever's name in reports. Its value is a spec string, or a table with these keys "
        f"(option `--retriever` `NAME=SPEC`, repeatable, replaces the table):", "", *entry, "",
        "### Profiles", "", *profiles,
    ])


def pytest_reference() -> str:
    """The plugin's `--ragmorph-*` options, from its `pytest_addoption`, and `suite()`'s keywords."""
    import inspect

    from ragmorph import pytest_plugin

    class Group:
        def __init__(self) -> None:
            self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

        def addoption(self, *names: str, **attrs_: Any) -> None:
            self.options.append((names, attrs_))

    class Parser:
        def __init__(self) -> None:
            self.groups: dict[str, Group] = {}

        def getgroup(self, name: str, description: str = "") -> Group:
            return self.groups.setdefault(name, Group())

    parser = Parser()
    pytest_plugin.pytest_addoption(parser)  # type: ignore[arg-type]
    rows = ["| option | meaning |", "| --- | --- |"]
    for group in parser.groups.values():
        for names, options in group.options:
            metavar = options.get("metavar") or ("{" + ",".join(options["choices"]) + "}" if options.get("choices") else "VALUE")
            rows.append(f"| {', '.join(f'`{n}`' for n in names)} `{metavar}` | {_cell(options.get('help', ''))} |")
    signature = inspect.signature(pytest_plugin.suite)
    params = ["| keyword | default |", "| --- | --- |"]
    for name, param in signature.parameters.items():
        default = "" if param.default is inspect.Parameter.empty else f"`{param.default!r}`"
        params.append(f"| `{name}` | {default} |")
    doc = inspect.getdoc(pytest_plugin.suite) or ""
    return "\n".join(["### Options", "", *rows, "", "### `suite()`", "", _cell(doc.replace("\n\n", " ")), "", *params])


GENERATED = {
    "catalog": catalog_table,
    "measures": measures_table,
    "cli": cli_reference,
    "config": config_reference,
    "pytest-options": pytest_reference,
}
_MARKERS = re.compile(r"<!-- ([a-z-]+):start -->\n(.*?)<!-- \1:end -->", re.S)


def _replace(text: str, name: str, body: str) -> str:
    return re.sub(
        rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", lambda m: m.group(1) + body + "\n" + m.group(2), text,
        flags=re.S,
    )


def test_generated_references_match_the_code() -> None:
    found: dict[str, Path] = {}
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in _MARKERS.finditer(text):
            name = match.group(1)
            assert name in GENERATED, f"{page.relative_to(ROOT)}: unknown generated block {name!r}"
            assert name not in found, f"generated block {name!r} is in {found[name]} and {page}"
            found[name] = page
        if UPDATE:
            for name in [m.group(1) for m in _MARKERS.finditer(text)]:
                text = _replace(text, name, GENERATED[name]())
            page.write_text(text, encoding="utf-8")
    assert set(found) == set(GENERATED), f"pages lack the generated blocks {sorted(set(GENERATED) - set(found))}"
    for name, page in found.items():
        shown = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", page.read_text(encoding="utf-8"), re.S)
        assert shown and shown.group(1).strip() == GENERATED[name]().strip(), (
            f"{page.relative_to(ROOT)}: the {name} block is stale: rerun with RAGMORPH_UPDATE_DOCS=1"
        )


def test_the_config_reference_lists_every_key_the_reader_accepts() -> None:
    from ragmorph import config

    documented = {f.name for f in attrs.fields(config.Config)} - {"path", "json", "html", "junit", "replays"}
    assert documented | {"outputs"} == config._KEYS  # noqa: SLF001 - the reader's own list of keys
    assert {"json", "html", "junit", "replays"} == config._OUTPUT_KEYS  # noqa: SLF001
    assert {f.name for f in attrs.fields(config.RetrieverEntry)} - {"name"} == config._RETRIEVER_KEYS  # noqa: SLF001


# ------------------------------------------------------------------------------------------------- hygiene

# What a product page must not carry: paths of one machine, commit hashes, and words of how the work was organised.
_FORBIDDEN = {
    "a machine path": re.compile(r"/work/|/root/|/home/[a-z]|/tmp/\S*venv|venvprobe"),
    "a commit hash": re.compile(r"(?<![\w#/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/.-])"),
    "internal process words": re.compile(
        r"\b(?:stop \d+|this stop|last stop|stops? \d+ ?-|session|helper|engineer|issue \d+)\b", re.IGNORECASE
    ),
}


def _hygiene_problems(text: str) -> list[str]:
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in _FORBIDDEN.items():
            for match in pattern.finditer(line):
                problems.append(f"line {number}: {what}: {match.group(0)!r}")
    return problems


@pytest.mark.parametrize("page", [*pages(), ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml"], ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_carry_no_machine_paths_hashes_or_process_notes(page: Path) -> None:
    problems = _hygiene_problems(page.read_text(encoding="utf-8"))
    assert not problems, f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_hygiene_check_catches_what_it_is_for() -> None:
    for bad in ("measured at 1803dc2", "python at /tmp/venvprobe/bin", "see /work/main/README", "in stop 23",
                "this stop cut it", "a session note", "/root/.cache", "fixed by the helper"):
        assert _hygiene_problems(bad), bad
    for fine in ("stop words only", "SHA-256 fingerprint", "k 1,3,5,10", "llama_index#22897", "1e300", "2,000 rows",
                 "`ragmorph-report/replays`", "ef_search 40", "a decade"):
        assert not _hygiene_problems(fine), fine


def test_the_init_templates_point_to_pages_that_exist(tmp_path: Path) -> None:
    from ragmorph.cli import scaffold_files

    files = scaffold_files(folder=tmp_path, corpus=tmp_path / "data" / "c.jsonl", cases=tmp_path / "data" / "q.jsonl")
    text = "\n".join(files.values())
    assert "README, section" not in text
    pointed = re.findall(r"docs/[\w/.-]+\.md", text)
    assert pointed, "the config template names its reference page"
    for page in pointed:
        assert (ROOT / page).is_file(), f"ragmorph init's templates point to {page}, which does not exist"


# ------------------------------------------------------------------------------------------------ code blocks


@attrs.frozen
class Block:
    page: Path
    line: int
    lang: str
    text: str
    marker: tuple[str, ...]  # ("run", NAME), ("file", NAME, PATH), ("output", NAME), ("usage",) or ()

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_MARKER = re.compile(r"^\s*<!-- test: (.+?) -->\s*$")


def blocks(page: Path) -> Iterator[Block]:
    """The fenced code blocks of a page, outside generated regions, each with the test marker right before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    generated = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if re.match(r"<!-- [a-z-]+:start -->", line):
            generated = True
        elif re.match(r"<!-- [a-z-]+:end -->", line):
            generated = False
        fence = _FENCE.match(line)
        if not fence:
            index += 1
            continue
        indent, lang = fence.groups()
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        body = "\n".join(text[len(indent):] for text in lines[index + 1:end])
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marker = _MARKER.match(before)
        if not generated:
            yield Block(page, index + 1, lang, body, tuple(marker.group(1).split()) if marker else ())
        index = end + 1


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def commands(text: str) -> list[tuple[str, int]]:
    """Each command of a bash block (continuation lines joined) with the exit code its `# exit N` comment expects."""
    found = []
    for line in text.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        comment = re.search(r"\s#\s*(.*)$", line)
        code = line[: comment.start()] if comment else line
        expected = re.search(r"exit (\d+)", comment.group(1)) if comment else None
        found.append((" ".join(code.split()), int(expected.group(1)) if expected else 0))
    return found


_SNIPPET = re.compile(r'^--8<-- "([^"]+)"$')
# Tools outside ragmorph that pages tell you to run; their commands are shown as their own documentation gives them.
_EXTERNAL = {"ray", "apt-get", "cd"}


def _extras() -> set[str]:
    import tomllib

    return set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])


_HELP: dict[str, str] = {}


def _script_help(script: Path) -> str:
    if script not in _HELP:
        done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120)
        _HELP[script] = done.stdout if done.returncode == 0 else ""
    return _HELP[script]


def _plugin_options() -> set[str]:
    return {line.split()[1].strip("`") for line in pytest_reference().splitlines() if line.startswith("| `--ragmorph")}


def check_command(command: str, where: str) -> None:
    """A command shown (not run) on a page: it parses, and what it names exists."""
    from ragmorph.cli import build_parser

    for part in command.split(" && "):
        words = shlex.split(part)
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:]
        tool, args = words[0], words[1:]
        if tool == "ragmorph":
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(sys, "stderr", open(os.devnull, "w"))  # noqa: SIM115 - argparse's message is ours below
                try:
                    build_parser().parse_args(args)
                except SystemExit:
                    pytest.fail(f"{where}: `{part}` does not parse: try `ragmorph {' '.join(args)}` by hand")
        elif tool == "pip":
            assert args[0] == "install", f"{where}: {part}"
            for arg in args[1:]:
                extras = re.search(r"\[([\w,-]+)\]", arg)
                if extras:
                    unknown = set(extras.group(1).split(",")) - _extras()
                    assert not unknown, f"{where}: `{part}` names extras pyproject.toml lacks: {sorted(unknown)}"
        elif tool == "pytest":
            for arg in args:
                if arg.startswith("--ragmorph-"):
                    assert arg.split("=")[0] in _plugin_options(), f"{where}: `{part}`: no such option {arg}"
                elif not arg.startswith("-") and not re.match(r"^(not |\d)", arg):
                    assert (ROOT / arg.split("::")[0]).exists(), f"{where}: `{part}` names {arg}, which does not exist"
        elif tool == "python":
            script = ROOT / args[0]
            assert script.is_file(), f"{where}: `{part}` runs {args[0]}, which does not exist"
            if "argparse" in script.read_text(encoding="utf-8"):
                shown = _script_help(script)
                for option in (a.split("=")[0] for a in args[1:] if a.startswith("--")):
                    assert option in shown, f"{where}: `{part}`: {args[0]} has no option {option}"
        elif tool == "mkdocs":
            assert args[0] in ("build", "serve"), f"{where}: {part}"
        else:
            assert tool in _EXTERNAL, f"{where}: `{part}`: no check for the tool {tool!r}; add one"


def check_usage(text: str, where: str) -> None:
    """A synopsis block: every option it shows belongs to the command it shows."""
    from ragmorph.cli import build_parser

    subs = _subcommands(build_parser())
    current = None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["ragmorph"]:
            current = subs[words[1]]
        assert current is not None, f"{where}: a usage block starts with a ragmorph command"
        flags = {flag for action in current._actions for flag in action.option_strings}  # noqa: SLF001
        for option in re.findall(r"--[a-z-]+", line):
            assert option in flags, f"{where}: `{option}` is not an option of this command"


def _data_folder(folder: Path) -> Path:
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for name in ("corpus.jsonl", "cases.jsonl"):
        shutil.copy(ROOT / "examples" / "data" / name, folder / "data" / name)
    return folder


def check_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Check one block that no scenario runs."""
    snippet = _SNIPPET.match(block.text.strip())
    if snippet:
        path = snippet.group(1)
        assert (ROOT / path).is_file() and path.startswith("examples/"), (
            f"{block.where}: includes {path}: only files of examples/, which the test-suite runs, are included"
        )
        return
    if block.lang == "bash":
        for command, _ in commands(block.text):
            check_command(command, block.where)
    elif block.lang == "python":
        monkeypatch.chdir(_data_folder(tmp_path))
        monkeypatch.syspath_prepend(str(tmp_path))
        exec(compile(block.text, block.where, "exec"), {"__name__": "docs_block"})  # noqa: S102 - the page's own code
    elif block.lang == "toml":
        from ragmorph.config import load_config

        done = subprocess.run([str(Path(sys.executable).parent / "ragmorph"), "init", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        (tmp_path / "ragmorph.toml").write_text(block.text, encoding="utf-8")
        load_config(tmp_path / "ragmorph.toml")
    elif block.lang == "json":
        for line in filter(str.strip, block.text.splitlines()):
            json.loads(line)
    elif block.lang == "yaml":
        import yaml

        yaml.safe_load(block.text)
    elif block.lang == "text" and block.marker == ("usage",):
        check_usage(block.text, block.where)
    else:
        pytest.fail(f"{block.where}: a {block.lang or 'plain'} block no test runs or checks: mark it (see this module)")


_SHOWN = [b for b in all_blocks() if not b.marker or b.marker == ("usage",)]


@pytest.mark.parametrize("block", _SHOWN, ids=[b.where for b in _SHOWN])
def test_every_shown_block_is_checked(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_block(block, tmp_path, monkeypatch)


def _scenarios() -> dict[tuple[Path, str], list[Block]]:
    found: dict[tuple[Path, str], list[Block]] = {}
    for block in all_blocks():
        if block.marker and block.marker[0] in ("run", "file", "output"):
            found.setdefault((block.page, block.marker[1]), []).append(block)
    return found


def _matches(expected: str, output: list[str]) -> bool:
    pattern = re.compile(".*".join(re.escape(part) for part in expected.strip().split("...")))
    return any(pattern.search(line) for line in output)


def run_scenario(steps: list[Block], folder: Path) -> None:
    """Write the scenario's files, run its commands in order and check what they print."""
    (folder / "examples").symlink_to(ROOT / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RAGMORPH_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "200"
    cwd, output = folder, []
    for block in steps:
        kind = block.marker[0]
        if kind == "file":
            (cwd / block.marker[2]).write_text(block.text + "\n", encoding="utf-8")
        elif kind == "run":
            assert block.lang == "bash", block.where
            for command, expected in commands(block.text):
                if command.startswith("cd "):
                    cwd = cwd / command[3:].strip()
                    continue
                done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                                      timeout=600, stdin=subprocess.DEVNULL)
                output += (done.stdout + done.stderr).splitlines()
                assert done.returncode == expected, (
                    f"{block.where}: `{command}` exited {done.returncode}, the page says {expected}\n"
                    + "\n".join(output[-40:])
                )
        else:
            for line in block.text.splitlines():
                if line.strip() and line.strip() != "...":
                    assert _matches(line, output), f"{block.where}: the output lacks the line\n{line}"


_SCENARIOS = _scenarios()


@pytest.mark.slow
@pytest.mark.parametrize("key", list(_SCENARIOS), ids=[f"{p.relative_to(ROOT)}:{n}" for p, n in _SCENARIOS])
def test_every_scenario_runs_as_the_page_shows(key: tuple[Path, str], tmp_path: Path) -> None:
    run_scenario(_SCENARIOS[key], tmp_path)


# ------------------------------------------------------------------------------------------------- the site


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for page in ("index.html", "reference/cli/index.html", "integrations/pgvector/index.html", "img/report.png"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert str(page.relative_to(DOCS)) in nav, f"{page.relative_to(ROOT)} is not in mkdocs.yml's nav"
