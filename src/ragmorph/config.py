"""The project config file: `ragmorph.toml`, or `[tool.ragmorph]` in `pyproject.toml`, read by CLI and plugin.

    corpus = "data/corpus.jsonl"          # paths are relative to the config file
    cases = "data/cases.jsonl"            # with format = "ragas": Ragas rows (the corpus comes from them)
    # beir = "data/scifact"               # instead of corpus/cases: a BEIR folder (split = "test")
    ks = [1, 3, 5, 10]
    strategies = ["tenancy", "cutoff"]    # default: the default suite
    profile = "smoke"                     # "default", "smoke" (seconds, for a pre-commit loop) or "scale"
    max_examples = 25                     # beats the profile
    budget = "adaptive"                   # "full": every family draws max_examples (docs/concepts.md, "Budgets")
    seed = 0
    timeout = 10.0                        # seconds per call into the retriever (factory, edits, retrieve)
    fail_fast = false

    [retrievers]
    bm25 = { spec = "ragmorph.adapters:BM25Retriever", options = { k1 = 1.2 } }
    mine = { spec = "adapter.py:factory", traits = ["lexical"] }

    [outputs]                             # default: ragmorph-report/ with replays/ in it
    json = "ragmorph-report/report.json"
    html = "ragmorph-report/report.html"
    junit = "ragmorph-report/junit.xml"
    replays = "ragmorph-report/replays"

Precedence, highest first: a command-line flag, a key of the file, the profile, the built-in default; a profile
named on the command line (`--profile smoke`) also beats the file's budget keys (ks, max_examples, fail_fast).
An output flag (`--json`, `--html`, `--junit`, `--replay-dir`) replaces the whole `[outputs]` table.
Every key is checked: an unknown key, a wrong type or a missing file is an InputError naming the file and key.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .errors import InputError, describe

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "CONFIG_NAMES",
    "PROFILES",
    "Config",
    "Profile",
    "RetrieverEntry",
    "describe_profiles",
    "find_config",
    "load_config",
    "load_world",
    "retriever_entries",
]

CONFIG_NAMES = ("ragmorph.toml", "pyproject.toml")
DEFAULT_OUTPUT_DIR = "ragmorph-report"
DEFAULT_KS = (1, 3, 5, 10)


@attrs.frozen
class Profile:
    """A named budget: perturbations per unit, cutoffs, whether the run stops at the first hard violation, and
    the strategy families it runs (None: the default suite)."""

    max_examples: int
    ks: tuple[int, ...]
    fail_fast: bool
    summary: str
    strategies: tuple[str, ...] | None = None


PROFILES: dict[str, Profile] = {
    "default": Profile(25, DEFAULT_KS, False, "25 perturbations per retriever x case x strategy, k 1,3,5,10"),
    # Few examples, every family on every case: one hard violation must not hide the others (a run that stopped
    # at the first one ran 23 of 336 units and never reached the removal family). k 20 looks past a candidate
    # pool of 10, where a chunk an index still holds after a delete, or another tenant's, lands in a hybrid.
    "smoke": Profile(5, (1, 5, 20), False, "5 perturbations, k 1,5,20, every family (one violation hides no other)"),
    # The opt-in scale family alone: every example builds two indexes of 5,000 chunks, so few examples, and the
    # k at which candidate pools (ef_search = 40) are asked for a full page.
    "scale": Profile(
        2, (10,), False, "worlds of 5,000 chunks, 1 in 50 the asking tenant's: under-return under its filter, k 10",
        strategies=("scale",),
    ),
}


@attrs.frozen
class RetrieverEntry:
    """One retriever of the config: its report name, import spec, declared traits and factory keyword options."""

    name: str
    spec: str
    traits: tuple[str, ...] = ()
    options: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Config:
    """A run's settings as the file (or flags) gave them; None means "not set" so precedence can apply."""

    path: Path | None = None
    retrievers: tuple[RetrieverEntry, ...] = ()
    corpus: Path | None = None
    cases: Path | None = None
    format: str = "native"
    beir: Path | None = None
    split: str = "test"
    ks: tuple[int, ...] | None = None
    strategies: tuple[str, ...] | None = None
    profile: str = "default"
    max_examples: int | None = None
    seed: int | None = None
    timeout: float | None = None
    fail_fast: bool | None = None
    # How units spend their examples (runner.BUDGETS): "adaptive", "full"; None: adaptive. The profile's
    # settings are `profile_settings` (a profile is a budget of examples and cutoffs, this is how they are spent).
    budget: str | None = None
    json: Path | None = None
    html: Path | None = None
    junit: Path | None = None
    replays: Path | None = None

    @property
    def profile_settings(self) -> Profile:
        """The profile this config names."""
        return PROFILES[self.profile]

    @property
    def effective_ks(self) -> tuple[int, ...]:
        """Cutoffs: the key or flag, else the profile's."""
        return self.ks if self.ks is not None else self.profile_settings.ks

    @property
    def effective_strategies(self) -> tuple[str, ...] | None:
        """Strategy families: the key or flag, else the profile's (None: the default suite)."""
        return self.strategies if self.strategies is not None else self.profile_settings.strategies

    @property
    def effective_max_examples(self) -> int:
        """Perturbations per unit: the key or flag, else the profile's."""
        return self.max_examples if self.max_examples is not None else self.profile_settings.max_examples

    @property
    def effective_fail_fast(self) -> bool:
        """Whether to stop at the first hard violation: the key or flag, else the profile's."""
        return self.fail_fast if self.fail_fast is not None else self.profile_settings.fail_fast

    @property
    def replay_dir(self) -> Path:
        """Where replay files go: `outputs.replays`, else `replays/` next to the first report, else the default."""
        if self.replays is not None:
            return self.replays
        for report in (self.json, self.html, self.junit):
            if report is not None:
                return report.parent / "replays"
        base = self.path.parent if self.path is not None else Path()
        return base / DEFAULT_OUTPUT_DIR / "replays"

    def traits(self) -> dict[str, tuple[str, ...]]:
        """Declared traits per retriever name (for `check(traits=...)`)."""
        return {entry.name: entry.traits for entry in self.retrievers if entry.traits}

    def targets(self) -> dict[str, Any]:
        """Retriever name -> what `check` gets: the spec string, or a Configured factory when options are set."""
        from .adapters import Configured

        return {e.name: Configured(e.spec, dict(e.options)) if e.options else e.spec for e in self.retrievers}


# --------------------------------------------------------------------------------------------- finding


def _ragmorph_table(path: Path) -> dict[str, Any] | None:
    """The ragmorph table of `path` (`[tool.ragmorph]` in pyproject.toml, the whole file otherwise), or None."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"expected valid TOML, got {error}", file=str(path)) from error
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"expected a readable UTF-8 file, got {type(error).__name__}: {error}", file=str(path)) from error
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get("ragmorph") if isinstance(tool, dict) else None  # `tool = 1` is another tool's business
        if table is not None and not isinstance(table, dict):
            raise InputError(f"expected a table, got {describe(table)}", file=str(path), field="tool.ragmorph")
        return table
    return data


# A pyproject.toml that mentions the table (`[tool.ragmorph]`, `[tool.ragmorph.retrievers]`, `tool.ragmorph = ...`).
_MENTIONS_RAGMORPH = re.compile(r"^\s*(\[\s*tool\s*\.\s*ragmorph\b|tool\s*\.\s*ragmorph\b|ragmorph\s*=)", re.MULTILINE)


def _is_ragmorph_pyproject(path: Path) -> bool:
    """Whether `path` holds a `[tool.ragmorph]` table; an invalid file is an error only when it mentions one.

    Any other project's pyproject.toml in a folder above (invalid, or unreadable) is none of ragmorph's business:
    refusing it would make every run fail for a file the user never meant ragmorph to read.
    """
    try:
        return _ragmorph_table(path) is not None
    except InputError:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        if _MENTIONS_RAGMORPH.search(text):
            raise
        return False


def find_config(start: str | os.PathLike[str] = ".") -> Path | None:
    """The nearest `ragmorph.toml`, or `pyproject.toml` with a `[tool.ragmorph]` table, in `start` or above."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / "ragmorph.toml").is_file():
            return candidate / "ragmorph.toml"
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _is_ragmorph_pyproject(pyproject):
            return pyproject
    return None


# --------------------------------------------------------------------------------------------- parsing


_KEYS = {
    "corpus", "cases", "format", "beir", "split", "ks", "strategies", "profile", "max_examples", "seed", "timeout",
    "fail_fast", "budget", "retrievers", "outputs",
}
_OUTPUT_KEYS = {"json", "html", "junit", "replays"}
_RETRIEVER_KEYS = {"spec", "traits", "options"}
FORMATS = ("native", "ragas")
_SECRET_NAME = re.compile(r"authorization|key|token|secret|cookie|password|passwd|credential", re.IGNORECASE)


class _Reader:
    """Typed access to one table of the file; every error names the file and the dotted key."""

    def __init__(self, path: Path, prefix: str) -> None:
        self.path = path
        self.prefix = prefix

    def error(self, key: str, message: str) -> InputError:
        return InputError(message, file=str(self.path), field=f"{self.prefix}{key}")

    def check_keys(self, table: Mapping[str, Any], allowed: set[str], where: str = "") -> None:
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.error(
                f"{where}{unknown[0]}", f"expected one of {', '.join(sorted(allowed))}, got unknown key {unknown[0]!r}"
            )

    def text(self, table: Mapping[str, Any], key: str, where: str = "") -> str | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"{where}{key}", f"expected a non-empty string, got {describe(value)}")
        return value

    def path_value(self, table: Mapping[str, Any], key: str, where: str = "") -> Path | None:
        value = self.text(table, key, where)
        return None if value is None else _relative(self.path.parent / value)

    def integers(self, table: Mapping[str, Any], key: str) -> tuple[int, ...] | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not value or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in value):
            raise self.error(key, f"expected a non-empty list of positive integers like [1, 3, 5, 10], got {describe(value)}")
        return tuple(sorted(set(value)))

    def names(self, table: Mapping[str, Any], key: str, where: str = "") -> tuple[str, ...] | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or any(not isinstance(v, str) or not v for v in value):
            raise self.error(f"{where}{key}", f"expected a list of names like [\"a\", \"b\"], got {describe(value)}")
        return tuple(value)

    def number(self, table: Mapping[str, Any], key: str, kind: type, *, positive: bool) -> Any:
        value = table.get(key)
        if value is None:
            return None
        accepted = (int, float) if kind is float else (int,)
        # inf (valid TOML) or 1e300 as a timeout would fail every retriever call inside Thread.join instead.
        too_big = kind is float and not (isinstance(value, (int, float)) and math.isfinite(value) and value <= threading.TIMEOUT_MAX)
        if isinstance(value, bool) or not isinstance(value, accepted) or (positive and value <= 0) or too_big:
            noun = "a positive number" if kind is float else ("a positive integer" if positive else "an integer")
            noun += " (finite)" if kind is float else ""
            raise self.error(key, f"expected {noun}, got {describe(value)}")
        return kind(value)

    def flag(self, table: Mapping[str, Any], key: str) -> bool | None:
        value = table.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise self.error(key, f"expected true or false, got {describe(value)}")


def _relative(path: Path) -> Path:
    """`path` relative to the working folder when inside it (shorter reports), else absolute."""
    absolute = path.resolve()
    try:
        return absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute


def _retrievers(reader: _Reader, table: Any) -> tuple[RetrieverEntry, ...]:
    if table is None:
        return ()
    if not isinstance(table, dict):
        raise reader.error("retrievers", f"expected a table name = \"module:attr\", got {describe(table)}")
    from .adapters import is_file_spec
    from .runner import trait_problem

    entries = []
    for name, value in table.items():
        where = f"retrievers.{name}."
        if any(ch in name for ch in "[]:/= "):
            raise reader.error(f"retrievers.{name}", "expected a retriever name without spaces, brackets, ':', '/' or '='")
        if isinstance(value, str):
            value = {"spec": value}
        if not isinstance(value, dict):
            raise reader.error(f"retrievers.{name}", f"expected \"module:attr\" or a table with spec, got {describe(value)}")
        reader.check_keys(value, _RETRIEVER_KEYS, where)
        spec = reader.text(value, "spec", where)
        if spec is None:
            raise reader.error(f"{where}spec", "expected the retriever's import spec, e.g. \"adapter.py:factory\"")
        if is_file_spec(spec):
            target, _, attr = spec.rpartition(":")
            spec = f"{_relative(reader.path.parent / target).as_posix()}:{attr}"
        options = value.get("options", {})
        if not isinstance(options, dict):
            raise reader.error(f"{where}options", f"expected a table of keyword arguments, got {describe(options)}")
        secret = next((key for key in options if _SECRET_NAME.search(key)), None)
        if secret is not None:
            # Options are recorded in reports and replay files, which get shared: a secret must never reach them.
            raise reader.error(
                f"{where}options.{secret}",
                "expected no secrets in options (reports and replay files record them); read it from an "
                "environment variable in your factory instead",
            )
        traits = reader.names(value, "traits", where) or ()
        problem = trait_problem(traits)
        if problem is not None:
            # A misspelt trait would enable nothing while the user believes the stricter relations run.
            raise reader.error(f"{where}traits", problem)
        entries.append(RetrieverEntry(name, spec, traits, options))
    return tuple(entries)


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and check a config file (`ragmorph.toml`, or `pyproject.toml` with `[tool.ragmorph]`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("expected an existing config file, got no such file", file=str(path))
    table = _ragmorph_table(path)
    if table is None:
        raise InputError("expected a [tool.ragmorph] table, got none", file=str(path), field="tool.ragmorph")
    reader = _Reader(path, "tool.ragmorph." if path.name == "pyproject.toml" else "")
    reader.check_keys(table, _KEYS)
    outputs = table.get("outputs", {})
    if not isinstance(outputs, dict):
        raise reader.error("outputs", f"expected a table with json, html, junit, replays, got {describe(outputs)}")
    reader.check_keys(outputs, _OUTPUT_KEYS, "outputs.")
    fmt = reader.text(table, "format") or "native"
    if fmt not in FORMATS:
        raise reader.error("format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    profile = reader.text(table, "profile") or "default"
    if profile not in PROFILES:
        raise reader.error("profile", f"expected one of {', '.join(PROFILES)}, got {profile!r}")
    from .runner import budget_problem, strategies_problem

    budget = table.get("budget")
    problem = None if budget is None else budget_problem(budget)
    if problem is not None:
        raise reader.error("budget", problem)
    strategies = reader.names(table, "strategies")
    problem = None if strategies is None else strategies_problem(list(strategies))
    if problem is not None:
        # `strategies = []` would run nothing and report "every hard relation holds".
        raise reader.error("strategies", problem)
    config = Config(
        path=path,
        retrievers=_retrievers(reader, table.get("retrievers")),
        corpus=reader.path_value(table, "corpus"),
        cases=reader.path_value(table, "cases"),
        format=fmt,
        beir=reader.path_value(table, "beir"),
        split=reader.text(table, "split") or "test",
        ks=reader.integers(table, "ks"),
        strategies=strategies,
        profile=profile,
        max_examples=reader.number(table, "max_examples", int, positive=True),
        seed=reader.number(table, "seed", int, positive=False),
        timeout=reader.number(table, "timeout", float, positive=True),
        fail_fast=reader.flag(table, "fail_fast"),
        budget=budget,
        **{key: reader.path_value(outputs, key, "outputs.") for key in sorted(_OUTPUT_KEYS)},
    )
    _check_world_keys(config, reader)
    return config


def _check_world_keys(config: Config, reader: _Reader) -> None:
    if config.beir is not None and (config.corpus is not None or config.cases is not None):
        raise reader.error("beir", "expected either beir or corpus/cases, got both")
    if config.format == "ragas" and config.corpus is not None:
        raise reader.error("corpus", "expected no corpus with format = \"ragas\": the corpus comes from the rows")


# --------------------------------------------------------------------------------------------- the world


def load_world(
    *,
    corpus: Path | None,
    cases: Path | None,
    format: str = "native",
    beir: Path | None = None,
    split: str = "test",
    source: str = "",
) -> tuple[Any, tuple[Any, ...]]:
    """Read the corpus and cases from native files, Ragas rows or a BEIR folder (`source` names the setting)."""
    from . import io

    if beir is not None:
        if corpus is not None or cases is not None:
            raise InputError(f"expected either a BEIR folder or corpus and cases{source}, got both", file=str(beir))
        return io.read_beir(beir, split)
    if format == "ragas":
        if cases is None:
            raise InputError(f"expected the Ragas rows as cases{source}, got none", field="cases")
        if corpus is not None:
            raise InputError(f"expected no corpus with the ragas format{source}: the corpus comes from the rows", field="corpus")
        data = io.read_ragas(cases)
        return data.corpus, data.cases
    if format != "native":
        raise InputError(f"expected a format among {', '.join(FORMATS)}{source}, got {format!r}", field="format")
    if corpus is None or cases is None:
        missing = " and ".join(name for name, value in (("corpus", corpus), ("cases", cases)) if value is None)
        raise InputError(f"expected a corpus and cases{source}, got no {missing}", field=missing.split(" ")[0])
    read = io.read_corpus(corpus)
    return read, tuple(io.read_cases(cases, corpus=read))


def describe_profiles() -> str:
    """One line per profile, for help texts."""
    return "; ".join(f"{name}: {profile.summary}" for name, profile in PROFILES.items())


def retriever_entries(specs: Sequence[str]) -> tuple[RetrieverEntry, ...]:
    """`[name=]spec` strings (the CLI's --retriever) as entries; a bare spec is named after its attribute."""
    entries: list[RetrieverEntry] = []
    taken: set[str] = set()
    for raw in specs:
        name, equals, spec = raw.partition("=")
        if not equals or ":" in name or "/" in name:
            name, spec = "", raw
        name = name or spec.rpartition(":")[2]
        unique, suffix = name, 2
        while unique in taken:
            unique, suffix = f"{name}-{suffix}", suffix + 1
        taken.add(unique)
        entries.append(RetrieverEntry(unique, spec))
    return tuple(entries)
