"""pytest plugin: ragmorph's metamorphic relations as pytest items.

A test module declares a suite at module level; the plugin turns it into one item per retriever x strategy x
relation (`test_retriever.py::bm25[tenancy-filtered_equals_visible]`)::

    from ragmorph.pytest_plugin import suite

    ragmorph_suite = suite(
        retrievers={"bm25": "ragmorph.adapters:BM25Retriever", "mine": "adapters/mine.py:factory"},
        corpus="data/corpus.jsonl",   # paths are relative to the test file
        cases="data/cases.jsonl",
    )

Items of one retriever x strategy share one engine run (cached per process). A hard violation fails the item
with the shrunk minimal case and the replay command; retriever errors fail it too, saying no verdict was
possible; a relation that applies to no case is skipped with the reason; a soft relation never fails, its
break rate is recorded in `user_properties` and raised as a `SoftRelationBroken` warning.

Settings: `--ragmorph-budget` (adaptive or full) beats `suite(budget=)` and the config file's `budget`.
`--ragmorph-max-examples` beats `--ragmorph-profile` (`smoke`: 5 examples, k 1,5, a budget of
seconds), which beats `suite(max_examples=)` and the config file, which beat an explicitly loaded Hypothesis
profile (`--hypothesis-profile`), which beats the default of 25. `derandomize` follows the active Hypothesis
profile. The run seed is `--hypothesis-seed` when given, else the suite's `seed=` or the config file's `seed`, else 0
(so plain runs and xdist workers agree);
the report header prints it, and one line per suite after collection prints the
settings that suite's runs use. With pytest-xdist, `--dist loadgroup` keeps the items of one retriever x strategy
on one worker (each carries an `xdist_group` mark); plain `-n N` also works but may repeat engine runs.

This module stays light: the engine, Hypothesis and the reporting code are imported inside hooks only.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from .errors import UsageError
from .secrets import redact

__all__ = ["SoftRelationBroken", "Suite", "suite"]

DEFAULT_MAX_EXAMPLES = 25
_CACHE_KEY = pytest.StashKey[dict]()


class SoftRelationBroken(UserWarning):
    """A soft relation broke on some perturbations: reported as a rate, never as a failure."""


def _to_named(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    raise UsageError(f"expected retrievers as a mapping name -> retriever, got retrievers={value!r} ({type(value).__name__})")


@attrs.frozen
class Suite:
    """What to test: retrievers (objects, factories or 'mod:attr' / 'file.py:attr' strings), corpus and cases.

    `corpus` and `cases` are paths (relative to `base`, else to the test file) or an already-built `Corpus` /
    sequence of `Case`. A suite declared with `config=` (or with nothing) is read from the config file at
    collection.
    """

    retrievers: Mapping[str, Any] = attrs.field(converter=_to_named)
    corpus: Any
    cases: Any
    strategies: tuple[str, ...] | None = None
    ks: tuple[int, ...] = (1, 3, 5, 10)
    max_examples: int | None = None
    timeout: float | None = None
    traits: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    seed: int | None = None
    format: str = "native"
    beir: Any = None
    split: str = "test"
    replays: Path | None = None
    base: Path | None = None
    config: str | Path | None = None
    budget: str | None = None


def suite(
    retriever: Any = None,
    *,
    retrievers: Mapping[str, Any] | None = None,
    corpus: Any = None,
    cases: Any = None,
    strategies: Sequence[str] | None = None,
    ks: Sequence[int] = (1, 3, 5, 10),
    max_examples: int | None = None,
    timeout: float | None = None,
    traits: Mapping[str, Sequence[str]] | None = None,
    seed: int | None = None,
    config: str | Path | None = None,
    budget: str | None = None,
) -> Suite:
    """Declare a ragmorph suite in a test module (assign it to a module-level name, e.g. `ragmorph_suite`).

    Give one `retriever` (named after its attribute) or several `retrievers={"name": ...}` with `corpus` and
    `cases`; or `suite()` / `suite(config="ragmorph.toml")` to test what the project's config file declares
    (found from the test file's folder upward; its paths are relative to the config file). `budget` is how
    units spend their examples ("adaptive", the default, or "full"; `--ragmorph-budget` beats it).
    """
    if budget is not None:
        from .runner import budget_problem

        problem = budget_problem(budget)
        if problem is not None:
            raise UsageError(f"suite(budget=): {problem}")
    _check_declared(strategies, traits)
    if retriever is None and retrievers is None and corpus is None and cases is None:
        return Suite(retrievers={}, corpus=None, cases=None, config=config or "", budget=budget)
    if config is not None:
        raise UsageError("expected either config=... or retrievers, corpus and cases, got both")
    if (retriever is None) == (retrievers is None):
        raise UsageError("expected exactly one of retriever=... or retrievers={name: ...}, got "
                         + ("both" if retriever is not None else "neither"))
    if corpus is None or cases is None:
        raise UsageError("expected corpus= and cases= (paths, or a Corpus and its cases), got "
                         + " and ".join(n for n, v in (("no corpus", corpus), ("no cases", cases)) if v is None))
    if retrievers is None:
        retrievers = {_default_name(retriever): retriever}
    if not retrievers:
        raise UsageError("expected at least one retriever, got retrievers={}")
    for name in retrievers:
        if not isinstance(name, str) or not name or any(ch in name for ch in "[]:/ "):
            raise UsageError(f"expected retriever names without spaces, brackets, ':' or '/', got {name!r}")
    return Suite(
        retrievers=retrievers,
        corpus=corpus,
        cases=cases,
        strategies=None if strategies is None else tuple(strategies),
        ks=tuple(ks),
        max_examples=max_examples,
        timeout=timeout,
        traits={name: tuple(values) for name, values in (traits or {}).items()},
        seed=_seed(seed),
        budget=budget,
    )


def _check_declared(strategies: Any, traits: Any) -> None:
    """A misspelt family or trait, or no family at all, is a usage error: it would silently test less."""
    if strategies is None and not traits:
        return
    from .runner import strategies_problem, trait_problem

    problem = None if strategies is None else strategies_problem(
        list(strategies) if isinstance(strategies, (tuple, set, frozenset)) else strategies
    )
    if problem is not None:
        raise UsageError(f"suite(strategies=): {problem}")
    if traits is not None and not isinstance(traits, Mapping):
        raise UsageError(f"expected suite(traits=) as a mapping retriever name -> trait names, got {traits!r}")
    for name, values in (traits or {}).items():
        problem = trait_problem(values)
        if problem is not None:
            raise UsageError(f"suite(traits=) of {name!r}: {problem}")


def _seed(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise UsageError(f"expected seed= as an integer, got seed={value!r} ({type(value).__name__})")


def _from_config(declared: Suite, folder: Path) -> Suite:
    """The concrete suite a `suite(config=...)` declaration names (paths relative to the config file)."""
    from .config import find_config, load_config

    path = Path(declared.config) if declared.config else find_config(folder)
    if path is None:
        raise UsageError(
            f"expected a config file (ragmorph.toml, or [tool.ragmorph] in pyproject.toml) in {str(folder)!r} or "
            "above for suite(), got none; `ragmorph init` writes one"
        )
    config = load_config(path if path.is_absolute() else folder / path)
    if not config.retrievers:
        raise UsageError(f"expected retrievers in {config.path}, got none")
    return Suite(
        retrievers=config.targets(),
        corpus=None if config.corpus is None else config.corpus.resolve(),
        cases=None if config.cases is None else config.cases.resolve(),
        strategies=config.effective_strategies,
        ks=config.effective_ks,
        max_examples=config.max_examples if config.max_examples is not None else (
            config.profile_settings.max_examples if config.profile != "default" else None
        ),
        budget=declared.budget or config.budget,
        timeout=config.timeout,
        traits=config.traits(),
        seed=config.seed,
        format=config.format,
        beir=None if config.beir is None else config.beir.resolve(),
        split=config.split,
        replays=None if config.replays is None else config.replays.resolve(),
        base=config.path.parent.resolve() if config.path is not None else None,
    )


def _default_name(retriever: Any) -> str:
    if isinstance(retriever, str):
        return retriever.rpartition(":")[2] or retriever
    return getattr(retriever, "__name__", type(retriever).__name__)


# ------------------------------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options under one `--ragmorph-*` prefix."""
    group = parser.getgroup("ragmorph", "ragmorph metamorphic retriever tests")
    group.addoption("--ragmorph-max-examples", type=int, default=None, help="perturbations per retriever x case x strategy")
    group.addoption("--ragmorph-strategies", default=None, help="comma-separated strategy families to keep")
    group.addoption("--ragmorph-ks", default=None, help="comma-separated cutoffs, overriding each suite's ks")
    from .config import PROFILES, describe_profiles

    group.addoption("--ragmorph-profile", default=None, choices=tuple(PROFILES),
                    help=f"budget over every suite's ({describe_profiles()})")
    group.addoption(
        "--ragmorph-budget", default=None, metavar="NAME",
        help="how units spend their examples: adaptive (default; each family draws what its perturbations need) or "
        "full (every family draws max_examples); beats the config file's budget",
    )
    group.addoption("--ragmorph-timeout", type=float, default=None, help="time limit in seconds of each call into the retriever (factory, edits, close, retrieve)")
    group.addoption(
        "--ragmorph-replay-dir",
        default=None,
        help="where replay files of violations go (default: <rootdir>/.ragmorph/replays)",
    )
    group.addoption(
        "--ragmorph-report-dir",
        default=None,
        help="write every engine run's report here, in each format ragmorph writes (JSON, JUnit XML, HTML)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker the plugin puts on its items."""
    config.addinivalue_line("markers", "ragmorph: a ragmorph metamorphic relation item")
    # The plugin marks its items for `--dist loadgroup`; registered here too so runs without xdist do not warn.
    config.addinivalue_line("markers", "xdist_group(name): pytest-xdist runs items of one group on one worker")
    config.stash[_CACHE_KEY] = {}
    for option, problem in _option_problems(config):
        # pytest prints a UsageError as one line and exits 4: no item runs, no traceback.
        raise pytest.UsageError(f"{option}: {problem}")


def _positive_ints(text: str) -> tuple[int, ...] | None:
    """`1,3,5` as positive ints; None when `text` is not such a list."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    try:
        values = tuple(int(part) for part in parts)
    except ValueError:
        return None
    return values if values and all(v > 0 for v in values) else None


def _option_problems(config: pytest.Config) -> list[tuple[str, str]]:
    """Every `--ragmorph-*` option given with a value no engine run can use, with what was expected."""
    import math
    import threading

    found = []
    max_examples = config.getoption("--ragmorph-max-examples", default=None)
    if max_examples is not None and max_examples <= 0:
        found.append(("--ragmorph-max-examples", f"expected a positive integer, got {max_examples}"))
    ks = config.getoption("--ragmorph-ks", default=None)
    if ks is not None and _positive_ints(ks) is None:
        found.append(("--ragmorph-ks", f"expected comma-separated positive integers like 1,3,5,10, got {ks!r}"))
    timeout = config.getoption("--ragmorph-timeout", default=None)
    # inf or 1e300 would fail every call inside Thread.join, blamed on the retriever; 0 would time out every call.
    if timeout is not None and not (math.isfinite(timeout) and 0 < timeout <= threading.TIMEOUT_MAX):
        found.append((
            "--ragmorph-timeout",
            f"expected a positive, finite number of seconds up to {threading.TIMEOUT_MAX:.0f}, got {timeout!r}; "
            "leave it out for no limit",
        ))
    budget = config.getoption("--ragmorph-budget", default=None)
    only = config.getoption("--ragmorph-strategies", default=None)
    if budget is None and only is None:
        return found
    from .runner import budget_problem, strategies_problem

    problem = None if budget is None else budget_problem(budget)
    if problem is not None:
        found.append(("--ragmorph-budget", problem))
    # A misspelt family would keep nothing: every suite would collect no item and the session would "pass" empty.
    problem = None if only is None else strategies_problem([part.strip() for part in only.split(",") if part.strip()])
    if problem is not None:
        found.append(("--ragmorph-strategies", problem))
    return found


def _settings(config: pytest.Config, declared: Suite | None = None) -> dict[str, Any]:
    """The effective seed, max_examples, derandomize and ks for this session and suite (what engine runs use)."""
    import hypothesis

    seed_option = config.getoption("--hypothesis-seed", default=None)
    declared_seed = declared.seed if declared is not None and declared.seed is not None else 0
    try:
        seed = int(seed_option) if seed_option is not None else declared_seed
    except ValueError:
        # Hypothesis accepts any string as a seed; derive a stable integer the same way on every worker.
        seed = zlib.crc32(str(seed_option).encode())
    profile = hypothesis.settings.default
    from_profile = hypothesis.settings.get_current_profile_name() != "default"
    max_examples = config.getoption("--ragmorph-max-examples")
    profile_name = config.getoption("--ragmorph-profile", default=None)
    ks_option = config.getoption("--ragmorph-ks", default=None)
    from .config import PROFILES

    if max_examples is None and profile_name:
        max_examples = PROFILES[profile_name].max_examples
    if max_examples is None and declared is not None:
        max_examples = declared.max_examples
    if max_examples is None:
        max_examples = profile.max_examples if from_profile else DEFAULT_MAX_EXAMPLES
    if ks_option:
        ks: tuple[int, ...] | None = _positive_ints(ks_option)  # checked in pytest_configure
    elif profile_name:
        ks = PROFILES[profile_name].ks
    else:
        ks = declared.ks if declared is not None else None
    budget = config.getoption("--ragmorph-budget", default=None) or (declared.budget if declared is not None else None)
    return {
        "seed": seed, "max_examples": int(max_examples), "derandomize": bool(profile.derandomize), "ks": ks,
        "budget": budget or "adaptive",
    }


def _settings_text(effective: Mapping[str, Any]) -> str:
    ks = "" if effective["ks"] is None else " ks=" + ",".join(str(k) for k in effective["ks"])
    return f"seed={effective['seed']} max_examples={effective['max_examples']} derandomize={effective['derandomize']}{ks}"


def pytest_report_header(config: pytest.Config) -> str:
    """Print the seed so every run can be repeated (and the budget, when the command line fixes it)."""
    effective = _settings(config)
    repeat = f"(repeat with --hypothesis-seed={effective['seed']})"
    if config.getoption("--ragmorph-max-examples") is None and not config.getoption("--ragmorph-profile", default=None):
        # suite(max_examples=) and the config file may set the budget: each suite's line follows collection.
        return f"ragmorph: seed={effective['seed']} derandomize={effective['derandomize']} {repeat}"
    return f"ragmorph: {_settings_text(effective)} {repeat}"


def pytest_report_collectionfinish(config: pytest.Config, items: Sequence[pytest.Item]) -> list[str]:
    """One line per collected suite with the settings its engine runs use (suite(), config file and options)."""
    lines = []
    for key, (declared, _world) in config.stash.get(_CACHE_KEY, {}).items():
        if len(key) == 3 and key[2] == "suite":
            effective = _settings(config, declared)
            own = declared.seed is not None and config.getoption("--hypothesis-seed", default=None) is None
            suffix = f" (its own seed; repeat with --hypothesis-seed={effective['seed']})" if own else ""
            lines.append(f"ragmorph: {_settings_text(effective)} for {key[0]}::{key[1]}{suffix}")
    return lines


# ---------------------------------------------------------------------------------------------- collection


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[pytest.Item] | None:
    """Turn a module-level Suite into one item per retriever x strategy x relation."""
    if not isinstance(obj, Suite) or not isinstance(collector, pytest.Module):
        return None
    from .errors import RagmorphError
    from .strategies import CATALOG, DEFAULT_SUITE

    config = collector.config
    try:
        obj = _prepared(collector, name, obj)
    except RagmorphError as error:
        # One collection error naming the problem, instead of one failing item (and traceback) per relation.
        raise collector.CollectError(f"ragmorph suite {name!r}: {error}") from None
    from .config import PROFILES

    only = config.getoption("--ragmorph-strategies")
    profile_name = config.getoption("--ragmorph-profile", default=None)
    # A profile that names its families (`scale`) beats the suite's, as its budget does.
    profiled = PROFILES[profile_name].strategies if profile_name else None
    families = profiled if profiled is not None else obj.strategies if obj.strategies is not None else tuple(DEFAULT_SUITE)
    if only:
        keep = {part.strip() for part in only.split(",") if part.strip()}
        families = tuple(f for f in families if f in keep)
    known = {relation.family for relation in CATALOG}
    unknown = [f for f in families if f not in known]
    if unknown:
        raise collector.CollectError(f"ragmorph suite {name!r}: expected strategy families among {sorted(known)}, got {unknown}")
    prefix = "" if name == "ragmorph_suite" else f"{name}-"
    # A response that breaks the retriever contract inside another family's perturbed world is reported by
    # that family's run, so every family also gets its own `<family>-valid_response` item.
    contract = [relation for relation in CATALOG if relation.family == "contract"]
    pairs = [(relation.family, relation) for relation in CATALOG if relation.family in families]
    pairs += [(family, relation) for family in families if family != "contract" for relation in contract]
    items: list[pytest.Item] = []
    for retriever in obj.retrievers:
        for family, relation in pairs:
            short = relation.name.rsplit(".", 1)[-1] if relation.family != family else relation.name.removeprefix(
                family + "."
            )
            item = RelationItem.from_parent(
                collector,
                name=f"{prefix}{retriever}[{family}-{short}]",
                suite_name=name,
                retriever=retriever,
                family=family,
                relation=relation.name,
                severity=relation.severity.value,
            )
            item.add_marker(pytest.mark.ragmorph)
            item.add_marker(pytest.mark.xdist_group(f"ragmorph-{collector.nodeid}-{name}-{retriever}-{family}"))
            items.append(item)
    return items


# ------------------------------------------------------------------------------------------------- running


class RelationFailed(Exception):
    """A hard relation was violated (message: the minimal case and the replay command)."""


class NoVerdict(Exception):
    """Retriever errors prevented a verdict."""


class RelationItem(pytest.Item):
    """One retriever x strategy x relation, aggregated over every case of the suite."""

    def __init__(self, *, suite_name: str, retriever: str, family: str, relation: str, severity: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.suite_name = suite_name
        self.retriever = retriever
        self.family = family
        self.relation = relation
        self.severity = severity

    def runtest(self) -> None:
        """Look up (or compute) the engine run of this retriever x strategy and judge this relation."""
        report = _engine_report(self)
        results = [
            r
            for r in report["results"]
            if r["relation"] == self.relation and r["strategy"] == self.family and r["retriever"] == self.retriever
        ]
        settings = report["manifest"].get("settings", {})
        self.user_properties.append(("ragmorph_seed", report["manifest"].get("seed")))
        self.user_properties.append(("ragmorph_max_examples", settings.get("max_examples")))
        self.user_properties.append(("ragmorph_derandomize", settings.get("derandomize")))
        self.user_properties.append(("ragmorph_budget", settings.get("budget")))
        failures = [r for r in results if r["status"] == "fail"]
        errors = [r for r in results if r["status"] == "error"]
        if not results:
            # A contract relation judged inside another family's run has rows only when a response breaks it; an
            # errored unit gave it no response to check, so its item has no verdict either, never a pass.
            by_case = {
                r["case"]: r for r in reversed(report["results"])
                if r["status"] == "error" and r["strategy"] == self.family and r["retriever"] == self.retriever
            }
            errors = list(reversed(by_case.values()))
        if self.severity == "soft":
            held = sum((r.get("rate") or {}).get("held", 0) for r in results)
            tested = sum((r.get("rate") or {}).get("tested", 0) for r in results)
            self.user_properties.append(("ragmorph_rate", f"{held}/{tested}"))
            if tested and held < tested:
                import warnings

                warnings.warn(SoftRelationBroken(f"{self.name}: held in {held} of {tested} perturbations"), stacklevel=1)
        # Failure texts quote retriever errors and rankings: mask every registered secret (HTTP headers, keys).
        if failures:
            raise RelationFailed(redact(_failure_text(failures)))
        if errors:
            reasons = "; ".join(f"case {r['case']}: {r.get('reason')}" for r in errors[:3])
            from .reporting import plural

            raise NoVerdict(redact(f"retriever errors prevented a verdict on {plural(len(errors), 'case')}: {reasons}"))
        if results and all(r["status"] == "not_applicable" for r in results):
            reasons = sorted({str(r.get("reason")) for r in results})
            pytest.skip(redact(f"not applicable: {'; '.join(reasons)}"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        """The minimal case instead of a traceback into ragmorph."""
        if isinstance(excinfo.value, (RelationFailed, NoVerdict)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, None, str]:
        """Where the item comes from (the test module) and its readable name."""
        # Relation names already start with their family (`tenancy.unauthorized_zero`); a contract relation
        # judged inside another family's run says which family found it.
        where = self.relation if self.relation.startswith(self.family + ".") else f"{self.family}: {self.relation}"
        return self.path, None, f"ragmorph {self.retriever}: {where} ({self.severity})"


def _failure_text(failures: Sequence[Mapping[str, Any]]) -> str:
    from .reporting import plural, render_violation
    from .triage import triage

    parts = [f"hard relation violated on {plural(len(failures), 'case')}: {', '.join(str(r['case']) for r in failures)}"]
    # One retriever x relation is one triage group: show its smallest minimal case.
    for group in triage({"results": [r for r in failures if r.get("violation")]})[:1]:
        parts[0] += f"; the smallest minimal case ({group.representative['case']}) follows"
        parts.append(render_violation(group.representative["violation"]))
    if len(parts) == 1:
        parts.append(str(failures[0].get("reason")))
    return "\n\n".join(parts)


def _resolve_path(value: Any, base: Path) -> Any:
    if isinstance(value, (str, Path)):
        path = Path(value)
        return path if path.is_absolute() else base / path
    return value


def _load_world(declared: Suite, base: Path) -> tuple[Any, Any]:
    from .config import load_world
    from .model import Corpus, validate_cases

    corpus, cases = _resolve_path(declared.corpus, base), _resolve_path(declared.cases, base)
    if declared.beir is not None or declared.format != "native":
        return load_world(
            corpus=corpus, cases=cases, format=declared.format, beir=_resolve_path(declared.beir, base),
            split=declared.split,
        )
    from .io import read_cases, read_corpus

    if isinstance(corpus, Path):
        corpus = read_corpus(corpus)
    elif not isinstance(corpus, Corpus):
        raise UsageError(f"expected corpus= as a path or a Corpus, got {type(corpus).__name__}")
    if isinstance(cases, Path):
        return corpus, read_cases(cases, corpus=corpus)
    cases = tuple(cases)
    validate_cases(corpus, cases)
    return corpus, cases


def _load_retriever(value: Any, base: Path) -> Any:
    """A suite's retriever as `check` should get it: specs stay strings (so replay files record them).

    A relative file spec is made absolute against the suite's folder, so the replay command works anywhere.
    """
    if not isinstance(value, str):
        return value
    from .adapters import is_file_spec, load_retriever

    if is_file_spec(value):
        target, _, attr = value.rpartition(":")
        value = f"{(base / target).resolve() if not Path(target).is_absolute() else target}:{attr}"
    load_retriever(value)  # fail on a typo now, as a usage error, not as one error result per unit
    return value


def _prepared(collector: pytest.Module, name: str, declared: Suite) -> Suite:
    """The suite of `collector.name` with its config read, world loaded and retrievers checked (cached)."""
    cache = collector.config.stash[_CACHE_KEY]
    key = (collector.nodeid, name, "suite")
    if key not in cache:
        folder = Path(collector.path).parent
        concrete = _from_config(declared, folder) if declared.config is not None else declared
        base = concrete.base or folder
        world = _load_world(concrete, base)
        retrievers = {n: _load_retriever(value, base) for n, value in concrete.retrievers.items()}
        cache[key] = (attrs.evolve(concrete, retrievers=retrievers, base=base), world)
    return cache[key][0]


def _engine_report(item: RelationItem) -> dict[str, Any]:
    """The report dict of one engine run per (module, suite, retriever, strategy), computed once per process."""
    cache = item.config.stash[_CACHE_KEY]
    module = item.parent
    key = (module.nodeid, item.suite_name, item.retriever, item.family)
    if key in cache:
        return cache[key]
    declared, (corpus, cases) = cache[(module.nodeid, item.suite_name, "suite")]
    from .runner import check

    effective = _settings(item.config, declared)
    replay_dir = (
        item.config.getoption("--ragmorph-replay-dir") or declared.replays or (item.config.rootpath / ".ragmorph" / "replays")
    )
    report = check(
        {item.retriever: declared.retrievers[item.retriever]},
        corpus,
        cases,
        strategies=[item.family],
        ks=effective["ks"],
        max_examples=effective["max_examples"],
        budget=effective["budget"],
        seed=effective["seed"],
        derandomize=effective["derandomize"],
        replay_dir=replay_dir,
        timeout=item.config.getoption("--ragmorph-timeout") or declared.timeout,
        traits={item.retriever: declared.traits.get(item.retriever, ())},
    )
    cache[key] = report.to_dict()
    report_dir = item.config.getoption("--ragmorph-report-dir")
    if report_dir:
        from .reporting import WRITERS, write_reports

        stem = "-".join(_file_part(p) for p in (Path(module.path).stem, item.suite_name, item.retriever, item.family))
        folder = Path(report_dir)
        write_reports(cache[key], {w.name: folder / f"{stem}{Path(w.filename).suffix}" for w in WRITERS.values()})
    return cache[key]


def _file_part(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._" else "_" for ch in text)[:60]
