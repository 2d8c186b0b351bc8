"""The `ragmorph` command: a thin `main(argv) -> int` over the library.

Exit codes (the same for every command):
  0  every hard relation holds (or the command simply succeeded)
  1  violations found (for `replay`: the bug still reproduces)
  2  usage or input error (bad option, unreadable or invalid file)
  3  retriever errors prevented a verdict

Errors are printed as one line on stderr (`ragmorph: error: corpus.jsonl:3: field 'text': ...`) with no
traceback unless `--debug` is given. The engine is imported inside each command so `ragmorph --help` stays fast.
A user's input files are never written: an output path that names an input file is a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import textwrap
from collections.abc import Callable, Mapping, Sequence, Sized
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .errors import AdapterError, ExitCode, InputError, RagmorphError, UsageError

__all__ = ["EXIT_ERRORS", "EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATIONS", "build_parser", "format_error", "main", "print_outcome", "run_config", "scaffold_files"]

EXIT_OK, EXIT_VIOLATIONS, EXIT_USAGE, EXIT_ERRORS = (int(code) for code in ExitCode)

DEFAULT_KS = (1, 3, 5, 10)
DEFAULT_METRICS = ("P", "R", "nDCG", "AP", "RR", "Hit")
# Only native files carry evidence groups, tenants and versions, so only they enable these measures.
NATIVE_ONLY_METRICS = ("GroupR", "Unauthorized", "Stale", "Superseded", "Dup")

_EXIT_CODES_HELP = "exit codes:\n" + "".join(f"  {int(code)}  {code.meaning}\n" for code in ExitCode)


# --------------------------------------------------------------------------------------------------- errors


def format_error(error: BaseException) -> str:
    """One line for stderr: `file:line: field 'x': message` for input errors, the message otherwise (secrets hidden)."""
    from .secrets import redact

    if isinstance(error, InputError):
        where = [str(error.file)] if error.file is not None else []
        if error.file is not None and error.line is not None:
            where[0] += f":{error.line}"
        if error.field is not None:
            where.append(f"field {error.field!r}")
        return redact(": ".join([*where, error.message]))
    return redact(str(error).replace("\n", " "))


def _exit_code_for(error: RagmorphError) -> int:
    return EXIT_ERRORS if isinstance(error, AdapterError) else EXIT_USAGE


# ------------------------------------------------------------------------------------------- small parsers


def _int_list(text: str) -> tuple[int, ...]:
    """Parse `1,3,5,10` into positive ints (argparse type)."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {part!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected positive integers, got {value}")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one integer, got {text!r}")
    return tuple(sorted(set(values)))


def _name_list(text: str) -> tuple[str, ...]:
    """Parse `a,b` into a tuple of non-empty names (argparse type)."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return names


def _positive(convert: Callable[[str], float], noun: str) -> Callable[[str], Any]:
    """An argparse type accepting values > 0 of `convert` (int or float), naming `noun` in its errors."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {value}")
        return value

    return parse


_positive_int = _positive(int, "a positive integer")


def _timeout_seconds(text: str) -> float:
    """A per-call time limit (argparse type): positive, finite and within what threads can wait for."""
    value = _positive(float, "a positive number of seconds")(text)
    if not math.isfinite(value) or value > threading.TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(
            f"expected a finite number of seconds up to {threading.TIMEOUT_MAX:.0f}, got {text!r}; "
            "leave --timeout out for no limit"
        )
    return value


# ----------------------------------------------------------------------------------------- loading retrievers


# -------------------------------------------------------------------------------------------- file guards


def _existing_file(path: str | None, option: str) -> Path | None:
    if path is None:
        return None
    candidate = Path(path)
    if candidate.is_dir():
        raise UsageError(f"expected a file for {option}, got {path!r}, which is a folder")
    if not candidate.is_file():
        raise UsageError(f"expected an existing file for {option}, got {path!r} (no such file)")
    return candidate


def _same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: the same resolved path, or (hard links, bind mounts) the same inode."""
    if first.resolve() == second.resolve():
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False  # one of them does not exist yet, so they cannot be one file


def _check_writable(option: str, path: Path, *, folder: bool) -> None:
    """Refuse an output path that cannot be written, before any retriever call: a run must not be lost at the end."""
    kind = "a folder" if folder else "a file"
    from .io import special_file, stream_target

    if not folder and stream_target(path):  # a FIFO, /dev/stdout, /dev/null: written into, never replaced
        if not os.access(path, os.W_OK):
            raise UsageError(f"expected {option} to name a stream you can write to, got {str(path)!r}")
        return
    if special_file(path) is not None:
        raise UsageError(f"expected {option} to name {kind}, got {str(path)!r}, which is {special_file(path)}")
    if path.exists() and path.is_dir() != folder:
        raise UsageError(f"expected {option} to name {kind}, got {str(path)!r}, which is {'a file' if folder else 'a folder'}")
    ancestor = path if folder and path.exists() else path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"expected {option} inside a folder, got {str(path)!r}, but {str(ancestor)!r} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"expected {option} in a folder you can write to, got {str(path)!r} ({str(ancestor)!r} is not writable)")


def _check_outputs(
    inputs: Mapping[str, Path | None],
    outputs: Mapping[str, str | None],
    folders: Mapping[str, str | None] | None = None,
) -> None:
    """Check every output path before any work starts: a user's files are never modified.

    An output that is the same file as an input (also through a hard link or a symlink) or as another output
    is refused, naming both options; so is a path that cannot be written (a folder given as a file, a file given
    as a folder, a parent that is a file or read-only).
    """
    given_inputs = [(option, path) for option, path in inputs.items() if path is not None]
    given_outputs = [(option, Path(path)) for option, path in outputs.items() if path is not None]
    for option, path in given_outputs:
        _check_writable(option, path, folder=False)
        for input_option, input_path in given_inputs:
            if _same_file(path, input_path):
                raise UsageError(
                    f"expected {option} to name a new file, got {str(path)!r}, which is the {input_option} input "
                    f"{str(input_path)!r}: ragmorph never overwrites its inputs"
                )
    for number, (option, path) in enumerate(given_outputs):
        for other_option, other in given_outputs[:number]:
            if _same_file(path, other):
                raise UsageError(
                    f"expected {other_option} and {option} to name different files, got {str(path)!r} for both: "
                    "one report would replace the other"
                )
    for option, folder in (folders or {}).items():
        if folder is not None:
            _check_writable(option, Path(folder), folder=True)


# --------------------------------------------------------------------------------------------- rendering


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain left/right aligned text table (numbers right-aligned)."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]

    numeric = [bool(rows) and all(_looks_numeric(str(r[i])) for r in rows) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            text = str(cell)
            out.append(text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _looks_numeric(text: str) -> bool:
    return text == "-" or text.replace(".", "", 1).isdigit()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


# ------------------------------------------------------------------------------------------------ metrics


def _metric_names(measures: Sequence[str], ks: Sequence[int]) -> list[str]:
    from .metrics import parse_metric

    names: list[str] = []
    for measure in measures:
        if "@" in measure:
            names.append(str(parse_metric(measure)))
            continue
        for k in ks:
            names.append(str(parse_metric(f"{measure}@{k}")))
    return list(dict.fromkeys(names))


def command_metrics(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Score a TREC run against qrels or native cases; print a table per k and optionally write JSON."""
    run_path = _existing_file(args.run, "--run")
    qrels_path = _existing_file(args.qrels, "--qrels")
    corpus_path = _existing_file(args.corpus, "--corpus")
    cases_path = _existing_file(args.cases, "--cases")
    _check_outputs(
        {"--run": run_path, "--qrels": qrels_path, "--corpus": corpus_path, "--cases": cases_path}, {"--json": args.json}
    )
    if qrels_path is None and cases_path is None:
        raise UsageError("expected --qrels QRELS (TREC) or --cases cases.jsonl to say what is relevant, got neither")
    if qrels_path is not None and cases_path is not None:
        raise UsageError("expected either --qrels or --cases, got both: pick one source of relevance")
    if corpus_path is not None and cases_path is None:
        raise UsageError("expected --cases with --corpus: governance counts need the native cases")
    from . import io
    from .metrics import MEASURES, aggregate, evaluate, evaluate_batch

    runs = io.read_trec_run(run_path)
    if cases_path is None:
        measures = args.metrics or DEFAULT_METRICS
        unsupported = [m for m in measures if m.partition("@")[0] in MEASURES and not MEASURES[m.partition("@")[0]].batch]
        if unsupported:
            raise UsageError(
                f"expected measures that TREC qrels support, got {', '.join(unsupported)}: "
                "use --corpus corpus.jsonl --cases cases.jsonl for evidence groups and governance counts"
            )
        names = _metric_names(measures, args.k)
        qrels = io.read_trec_qrels(qrels_path)
        _require_some(qrels, qrels_path, "judged query")
        _warn_unjudged(runs, qrels, err)
        # Listed ids keep the run file's order (read_trec_run already applies trec_eval's tie order);
        # graded qrels levels stay nDCG gains. Judged queries missing from the run score as empty rankings.
        listed = {qid: list(ranking.ids) for qid, ranking in runs.items() if qid in qrels}
        summary = aggregate(evaluate_batch(listed, qrels, names))
    else:
        corpus = io.read_corpus(corpus_path) if corpus_path is not None else None
        measures = args.metrics or (DEFAULT_METRICS + (NATIVE_ONLY_METRICS if corpus is not None else ("GroupR",)))
        names = _metric_names(measures, args.k)
        cases = io.read_cases(cases_path, corpus=corpus)
        _require_some(cases, cases_path, "case")
        _warn_unjudged(runs, {case.id: {} for case in cases}, err)
        from .model import Ranking

        summary = aggregate(
            {case.id: evaluate(runs.get(case.id, Ranking()), case, names, corpus=corpus) for case in cases}
        )
    data = summary.to_dict()
    out.write(render_metrics_summary(data, names) + "\n")
    if args.json:
        _write_text(Path(args.json), json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")
        out.write(f"wrote {args.json}\n")
    return EXIT_OK


def _warn_unjudged(runs: Mapping[str, Any], judged: Mapping[str, Any], err: TextIO) -> None:
    unknown = sorted(set(runs) - set(judged))
    if unknown:
        err.write(f"ragmorph: warning: {len(unknown)} run queries have no judgements and are ignored: {unknown[:5]}\n")


def render_metrics_summary(data: Mapping[str, Any], names: Sequence[str]) -> str:
    """A table per k (macro, micro, queries, errored) from a `ragmorph.metrics/1` dict, then the counts."""
    from .metrics import parse_metric

    metrics = data.get("metrics", {})
    blocks = []
    by_k: dict[int | None, list[str]] = {}
    for name in names:
        by_k.setdefault(parse_metric(name).k, []).append(name)
    for k, group in sorted(by_k.items(), key=lambda item: (item[0] is None, item[0] or 0)):
        rows = []
        for name in group:
            value = metrics.get(name, {})
            rows.append([name, _fmt(value.get("macro")), _fmt(value.get("micro")), str(value.get("queries", 0)),
                         str(value.get("errored", 0))])
        title = f"k={k}" if k is not None else "no cutoff"
        blocks.append(f"{title}\n" + _table(["metric", "macro", "micro", "queries", "errored"], rows))
    counts = data.get("counts", {})
    if counts:
        blocks.append("counts: " + "  ".join(f"{key}={value}" for key, value in counts.items()))
    return "\n\n".join(blocks)


def _write_text(path: Path, text: str) -> None:
    from .io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def _require_some(items: Sized, path: Path | None, what: str) -> None:
    """No case to judge is an input error: a run over nothing would report a pass it never checked."""
    if not len(items):
        raise InputError(f"expected at least one {what}, got none (the file is empty or only blank lines)", file=str(path))


# ---------------------------------------------------------------------------------------------------- run


def print_outcome(
    report: Mapping[str, Any], out: TextIO, *, limit: int = 3
) -> None:
    """The summary table, the triaged violation groups and the first `limit` groups' minimal cases (with replay)."""
    from .reporting import render_report
    from .secrets import redact_data

    out.write(render_report(redact_data(report), max_violations=limit) + "\n")


def _write_reports(
    report: Mapping[str, Any], out: TextIO, *, json_path: str | None, junit: str | None, html: str | None
) -> None:
    from .reporting import write_reports

    paths = {"json": json_path, "junit": junit, "html": html}
    write_reports(report, paths)
    for path in paths.values():
        if path is not None:
            out.write(f"wrote {path}\n")


def _traits_option(text: str) -> tuple[str, tuple[str, ...]]:
    """Parse `NAME=a,b` (argparse type of --traits)."""
    name, equals, traits = text.partition("=")
    names = tuple(t.strip() for t in traits.split(",") if t.strip())
    if not equals or not name.strip() or not names:
        raise argparse.ArgumentTypeError(f"expected NAME=trait[,trait], got {text!r}")
    return name.strip(), names


_OUTPUT_KEYS = ("json", "html", "junit", "replays")


def run_config(args: argparse.Namespace, cwd: Path | None = None, notes: list[str] | None = None) -> Any:
    """The run's Config: the config file (`--config`, else the nearest one) with every given flag on top.

    An output given on the command line (a report or --replay-dir) replaces the file's `[outputs]` as a whole:
    a side run with `--json X` must not overwrite the main HTML report with another run's. What the file named
    and this run will not write is appended to `notes`, for the caller to say.
    """
    import attrs

    from .config import Config, find_config, load_config, retriever_entries

    path = Path(args.config) if args.config else find_config(cwd or Path.cwd())
    config = load_config(path) if path is not None else Config()
    world = {
        "corpus": _existing_file(args.corpus, "--corpus"),
        "cases": _existing_file(args.cases, "--cases"),
        "beir": Path(args.beir) if args.beir else None,
    }
    flags: dict[str, Any] = {
        "format": args.format,
        "split": args.split,
        "ks": args.k,
        "strategies": args.strategies,
        "profile": args.profile,
        "max_examples": args.max_examples,
        "budget": args.budget,
        "seed": args.seed,
        "timeout": args.timeout,
        "fail_fast": True if args.fail_fast else None,
        "json": Path(args.json) if args.json else None,
        "html": Path(args.html) if args.html else None,
        "junit": Path(args.junit) if args.junit else None,
        "replays": Path(args.replay_dir) if args.replay_dir else None,
        "retrievers": retriever_entries(args.retriever) if args.retriever else None,
    }
    from .runner import budget_problem, strategies_problem, trait_problem

    if args.budget is not None:
        problem = budget_problem(args.budget)
        if problem is not None:
            raise UsageError(f"--budget: {problem}")
    if args.strategies is not None:
        problem = strategies_problem(list(args.strategies))
        if problem is not None:
            raise UsageError(f"--strategies: {problem}")
    for name, traits in args.traits or ():
        problem = trait_problem(traits)
        if problem is not None:
            raise UsageError(f"--traits {name}=...: {problem}")
    overrides = {key: value for key, value in flags.items() if value is not None}
    if args.profile:
        # A profile asked for on the command line sets the budget (and its families, when it names some), over
        # the file's own keys.
        from .config import PROFILES

        named = {"strategies": None} if PROFILES[args.profile].strategies is not None else {}
        overrides = {"ks": None, "max_examples": None, "fail_fast": None, **named, **overrides}
    if world["beir"] is not None:
        # A BEIR folder is a whole world: it replaces the file's corpus and cases.
        overrides.update(world)
    elif world["corpus"] is not None or world["cases"] is not None:
        # --corpus or --cases overrides that key only (the file's other one stays); a BEIR folder can't join them.
        overrides.update({key: world[key] for key in ("corpus", "cases") if world[key] is not None}, beir=None)
    if any(flags[key] is not None for key in _OUTPUT_KEYS):
        dropped = [key for key in _OUTPUT_KEYS if flags[key] is None and getattr(config, key) is not None]
        if dropped and notes is not None:
            notes.append(
                "outputs given on the command line replace the config's [outputs]: not writing "
                + ", ".join(f"{key} = {str(getattr(config, key))!r}" for key in dropped)
            )
        overrides.update({key: flags[key] for key in _OUTPUT_KEYS})
    config = attrs.evolve(config, **overrides)
    if args.traits:
        known = {entry.name: entry for entry in config.retrievers}
        for name, traits in args.traits:
            if name not in known:
                raise UsageError(f"expected --traits NAME to name a retriever among {sorted(known)}, got {name!r}")
            known[name] = attrs.evolve(known[name], traits=tuple(dict.fromkeys((*known[name].traits, *traits))))
        config = attrs.evolve(config, retrievers=tuple(known.values()))
    if not config.retrievers:
        raise UsageError(
            "expected --retriever MOD:ATTR or a config file (ragmorph.toml, or [tool.ragmorph] in pyproject.toml) "
            "naming retrievers, got neither; `ragmorph init` writes one"
        )
    if config.beir is not None and not config.beir.is_dir():
        raise UsageError(f"expected an existing BEIR folder for --beir, got {str(config.beir)!r} (no such folder)")
    return config


# Seconds between progress lines when stderr is not a terminal (a CI log, a pipe): a run is never silent for long.
PROGRESS_EVERY = 5.0


def _speed_hint(config: Any, args: argparse.Namespace) -> str | None:
    """What would make a run of slow calls shorter, leaving out what this run already uses (None: nothing left)."""
    ways = []
    if config.profile != "smoke" and args.profile != "smoke":
        ways.append("--profile smoke runs a budget of minutes")
    if not args.concurrency:
        ways.append("--concurrency N overlaps calls that wait on a service")
    if not args.jobs:
        ways.append("--jobs N runs units in N processes")
    return "; ".join(ways) if ways else None


def command_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the metamorphic suite over the user's retrievers, print the outcome, write the report files."""
    notes: list[str] = []
    config = run_config(args, notes=notes)
    for note in notes:
        err.write(f"ragmorph: note: {note}\n")
    source = f" (config {config.path})" if config.path is not None else ""
    from .adapters import Configured, is_file_spec, load_retriever
    from .reporting import WRITERS

    for entry in config.retrievers:
        # A typo, or options the factory does not take, is a usage error now, before any work starts.
        if entry.options:
            Configured(entry.spec, dict(entry.options)).factory()
        else:
            load_retriever(entry.spec)
    retriever_files = {
        f"--retriever {entry.spec}": Path(entry.spec.rpartition(":")[0])
        for entry in config.retrievers
        if is_file_spec(entry.spec)
    }
    baseline_file = _existing_file(args.baseline, "--baseline")
    _check_outputs(
        {"--corpus": config.corpus, "--cases": config.cases, "--beir": config.beir, "--config": config.path,
         "--baseline": baseline_file, **retriever_files},
        {w.flag: getattr(config, w.name) and str(getattr(config, w.name)) for w in WRITERS.values()},
        {"--replay-dir": config.replay_dir and str(config.replay_dir)},
    )
    from .config import load_world
    from .reporting import ProgressBar, load_report
    from .runner import check

    baseline = load_report(baseline_file) if baseline_file is not None else None  # read before any report is written
    corpus, cases = load_world(
        corpus=config.corpus, cases=config.cases, format=config.format, beir=config.beir, split=config.split,
        source=source,
    )
    _require_some(cases, config.cases or config.beir, "case")
    bar = ProgressBar(0, err, log_every=PROGRESS_EVERY, hint=_speed_hint(config, args))
    try:
        report = check(
            config.targets(),
            corpus,
            cases,
            strategies=config.effective_strategies,
            ks=config.effective_ks,
            max_examples=config.effective_max_examples,
            budget=config.budget or "adaptive",
            seed=config.seed or 0,
            derandomize=args.derandomize,
            replay_dir=config.replay_dir,
            timeout=config.timeout,
            progress=bar,
            traits=config.traits(),
            fail_fast=config.effective_fail_fast,
            jobs=args.jobs,
            executor=args.executor,
            address=args.address,
            concurrency=args.concurrency,
        )
    finally:
        bar.close()
    data = report.to_dict()
    print_outcome(data, out)
    if config.effective_fail_fast and report.exit_code == EXIT_VIOLATIONS:
        out.write(f"\nstopped at the first hard violation (fail fast): {bar.done} of {bar.total} units run\n")
    _write_reports(
        data, out, json_path=config.json and str(config.json), junit=config.junit and str(config.junit),
        html=config.html and str(config.html),
    )
    if baseline is None:
        return int(report.exit_code)
    from .reporting import render_comparison

    comparison = _comparison_of(
        baseline, data, cases, corpus, args,
        {"baseline": f"report {args.baseline}", "candidate": "this run"},
    )
    out.write("\n" + render_comparison(comparison) + "\n")
    # Violations of this run come first (exit 1 or 3); otherwise the comparison decides.
    return int(report.exit_code) or int(comparison["summary"]["exit_code"])


def command_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Re-render a saved report.json: the terminal summary, and the files asked for; exit as the run did."""
    from .reporting import WRITERS, load_report

    source = _existing_file(args.file, "FILE")
    outputs = {writer.flag: getattr(args, writer.name) for writer in WRITERS.values()}
    _check_outputs({"FILE": source}, outputs)
    data = load_report(source)
    print_outcome(data, out)
    _write_reports(data, out, json_path=args.json, junit=args.junit, html=args.html)
    return int(data["summary"].get("exit_code", EXIT_OK))


# ------------------------------------------------------------------------------------------------- replay


def _critical_tags(values: Sequence[str] | None) -> tuple[str, ...] | None:
    # None: the default tag, which no case need carry; a tag the user names must be carried by some case.
    return tuple(dict.fromkeys(values)) if values else None


def _comparison_of(
    baseline: Mapping[str, Any], candidate: Mapping[str, Any], cases: Sequence[Any], corpus: Any,
    args: argparse.Namespace, sources: Mapping[str, str],
) -> dict[str, Any]:
    from .compare import compare_reports

    try:
        return compare_reports(
            baseline, candidate, cases, corpus_fingerprint=corpus.fingerprint, critical_tags=_critical_tags(args.critical),
            alpha=args.alpha, permutations=args.permutations, seed=args.seed or 0,
            gate=list(args.gate) if args.gate else None, sources=sources,
        )
    except InputError as error:
        # A value of the saved baseline report: name the file it came from.
        if error.file is None and (error.field or "").startswith("baseline.") and args.baseline.endswith(".json"):
            raise error.at(file=args.baseline) from None
        raise


def _compare_config(args: argparse.Namespace) -> Any:
    """The config `compare` reads as `run` does (`--config`, else the nearest file): world, budget, profile."""
    import attrs

    from .config import PROFILES, Config, find_config, load_config

    path = Path(args.config) if args.config else find_config(Path.cwd())
    config = load_config(path) if path is not None else Config()
    if args.profile:
        # As in `run`: a profile on the command line beats the file's budget keys (and its families, if it names some).
        named = {"strategies": None} if PROFILES[args.profile].strategies is not None else {}
        config = attrs.evolve(config, profile=args.profile, ks=None, max_examples=None, **named)
    return config


def command_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Pair a candidate retriever with a baseline (a retriever or a saved report) on the same corpus and cases."""
    from .adapters import load_retriever
    from .config import load_world, retriever_entries
    from .reporting import load_report, render_comparison, write_comparison
    from .runner import check

    config = _compare_config(args)
    corpus_path = _existing_file(args.corpus, "--corpus") or config.corpus
    cases_path = _existing_file(args.cases, "--cases") or config.cases
    if corpus_path is None or cases_path is None or config.format != "native" or config.beir is not None:
        raise UsageError(
            "expected --corpus corpus.jsonl and --cases cases.jsonl, or a config file naming native corpus and cases, "
            f"got {'a config without them' if config.path is not None else 'neither'}"
        )
    baseline_file = Path(args.baseline) if args.baseline.endswith(".json") else None
    if baseline_file is not None:
        _existing_file(args.baseline, "--baseline")
    outputs = {"--json": args.json, "--html": args.html, "--junit": args.junit}
    _check_outputs({"--corpus": corpus_path, "--cases": cases_path, "--baseline": baseline_file}, outputs)
    specs = {"candidate": args.candidate} if baseline_file is not None else {"baseline": args.baseline, "candidate": args.candidate}
    entries = {side: retriever_entries([spec])[0] for side, spec in specs.items()}
    if len({entry.name for entry in entries.values()}) < len(entries):
        entries = {side: type(entry)(f"{entry.name}-{side}", entry.spec) for side, entry in entries.items()}
    for entry in entries.values():
        load_retriever(entry.spec)  # a typo is a usage error now, before any work starts
    corpus, cases = load_world(corpus=corpus_path, cases=cases_path)
    _require_some(cases, cases_path, "case")

    def run(side: str) -> dict[str, Any]:
        entry = entries[side]
        report = check(
            {entry.name: entry.spec}, corpus, cases, strategies=args.strategies or config.effective_strategies,
            ks=args.k or config.effective_ks, max_examples=args.max_examples or config.effective_max_examples,
            seed=args.seed if args.seed is not None else (config.seed or 0), derandomize=args.derandomize,
            budget=config.budget or "adaptive", timeout=config.timeout,
        )
        return report.to_dict()

    baseline = load_report(baseline_file) if baseline_file is not None else run("baseline")
    candidate = run("candidate")
    sources = {
        "baseline": f"report {baseline_file}" if baseline_file is not None else f"retriever {args.baseline}",
        "candidate": f"retriever {args.candidate}",
    }
    data = _comparison_of(baseline, candidate, cases, corpus, args, sources)
    out.write(render_comparison(data) + "\n")
    for path in write_comparison(data, json_path=args.json, html=args.html, junit=args.junit):
        out.write(f"wrote {path}\n")
    return int(data["summary"]["exit_code"])


def _replay_stages(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    """`replay --stages`: replay on each prefix of a declared Pipeline and name the first stage that breaks."""
    from .adapters import Pipeline, load_retriever
    from .runner import attribute_stages

    spec = args.retriever
    if spec is None:
        try:
            stored = json.loads(path.read_text(encoding="utf-8")).get("retriever") or {}
        except (OSError, ValueError, AttributeError):
            stored = {}
        spec = stored.get("spec") or stored.get("file")
    target = load_retriever(spec) if spec else None
    if not isinstance(target, Pipeline):
        raise UsageError(
            f"expected --stages with a retriever declared as ragmorph.adapters.Pipeline([...]), got "
            f"{spec or 'no retriever spec in the file'}; pass --retriever MOD:ATTR naming the Pipeline"
        )
    found = attribute_stages(path, target)
    for name, outcome in zip(found.stages, found.outcomes):
        out.write(f"  {name:<24} {'breaks' if outcome.reproduced else 'holds'}\n")
    out.write(found.detail + "\n")
    return int(EXIT_VIOLATIONS if found.broken_at is not None else EXIT_OK)


def command_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Re-run a saved violation: exit 1 while it reproduces, 0 once fixed."""
    path = _existing_file(args.file, "FILE")
    from .runner import replay
    from .secrets import redact

    if args.stages:
        return _replay_stages(path, args, out)
    if args.retriever:
        from .adapters import load_retriever

        load_retriever(args.retriever)  # a typo is a usage error here, not a retriever error while replaying
    try:
        outcome = replay(path, retriever=args.retriever)
    except InputError as error:
        if error.field != "retriever.spec":
            raise
        raise UsageError(
            f"expected --retriever MOD:ATTR or path/to/file.py:ATTR: {args.file} does not say how to load the "
            "retriever (the run used an in-process retriever); e.g. ragmorph replay "
            f"{args.file} --retriever path/to/adapter.py:factory"
        ) from None
    if outcome.error is not None:
        out.write(redact(f"error: no verdict replaying {args.file}: {outcome.error}\n"))
    elif outcome.reproduced:
        out.write(redact(f"reproduced: {outcome.relation} still breaks on the world in {args.file}: {outcome.detail}\n"))
    elif not outcome.applicable:
        out.write(redact(f"fixed: {outcome.relation} no longer applies to the world in {args.file} ({outcome.detail})\n"))
    else:
        out.write(redact(f"fixed: {outcome.relation} holds on the world in {args.file}\n"))
    if outcome.base_ids or outcome.follow_ids:
        out.write(redact(f"  base      {' '.join(outcome.base_ids) or '(empty)'}\n  follow-up {' '.join(outcome.follow_ids) or '(empty)'}\n"))
    return int(outcome.exit_code)


# --------------------------------------------------------------------------------------------- strategies


def catalog_rows() -> list[dict[str, Any]]:
    """Every relation of the catalog as plain data, with whether it is in the default suite."""
    from .strategies import CATALOG, DEFAULT_SUITE

    default = set(DEFAULT_SUITE)
    rows = []
    for relation in CATALOG:
        row = relation.describe()
        row["default"] = relation.family in default or relation.name in default
        rows.append(row)
    return rows


def command_strategies(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """List the relation catalog (family, relation, direction, severity, assumptions)."""
    rows = catalog_rows()
    if args.json:
        out.write(json.dumps({"schema": "ragmorph.catalog/1", "relations": rows}, indent=2) + "\n")
        return EXIT_OK
    table = [
        [row["family"], row["name"], row["direction"], row["severity"], "yes" if row["default"] else "no"]
        for row in rows
    ]
    out.write(_table(["family", "relation", "direction", "severity", "default"], table) + "\n\n")
    for row in rows:
        out.write(f"{row['name']}: {row['summary']}\n")
        for assumption in row.get("assumptions") or ():
            out.write(textwrap.fill(assumption, width=100, initial_indent="  assumes: ", subsequent_indent="    ") + "\n")
    return EXIT_OK


# --------------------------------------------------------------------------------------------------- demo


def command_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the default suite on the demo world against BM25, dense and a retriever with a planted bug."""
    from .demo import run_demo

    return run_demo(out_dir=Path(args.out), seed=args.seed, max_examples=args.max_examples, out=out, err=err)


# --------------------------------------------------------------------------------------------------- init


def command_init(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Scaffold ragmorph.toml, an adapter, a pytest file and (when missing) sample data; never overwrite."""
    folder = Path(args.dir)
    corpus = Path(args.corpus) if args.corpus else folder / "data" / "corpus.jsonl"
    cases = Path(args.cases) if args.cases else folder / "data" / "cases.jsonl"
    files = scaffold_files(folder=folder, corpus=corpus, cases=cases)
    # lexists: a dangling symlink is an existing name too; writing through or over it is never init's to decide.
    # A file the user already has (often their own adapter) is kept and the rest is written, so a rerun after
    # editing one file completes the scaffold instead of refusing it.
    broken = [name for name in files if os.path.lexists(folder / name) and not (folder / name).exists()]
    if broken:
        raise UsageError(
            f"expected no existing {', '.join(broken)} in {str(folder)!r} that is a symlink to nothing: keeping it "
            "would leave a scaffold that cannot run; fix or remove the link"
        )
    kept = [folder / name for name in files if os.path.lexists(folder / name)]
    files = {name: text for name, text in files.items() if folder / name not in kept}
    dangling = [str(path) for path in (corpus, cases) if os.path.lexists(path) and not path.exists()]
    if dangling:
        raise UsageError(
            f"expected {' and '.join(map(repr, dangling))} to be a readable file or absent, got a symlink to nothing: "
            "fix or remove the link, or pass --corpus/--cases"
        )
    if corpus.exists() != cases.exists():
        raise UsageError(
            f"expected both {str(corpus)!r} and {str(cases)!r} or neither (then sample data is written), got only "
            f"{str(corpus if corpus.exists() else cases)!r}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        for name, text in files.items():
            # "x" mode: a file that appeared since the check above is still never overwritten.
            with open(folder / name, "x", encoding="utf-8") as handle:
                written.append(folder / name)
                handle.write(text)
        if not corpus.exists():
            _write_sample_world(corpus, cases, written)
    except BaseException:
        # All or nothing: a half-written scaffold would be kept by the rerun as if it were the user's.
        for path in written:
            path.unlink(missing_ok=True)
        raise
    for path in written:
        out.write(f"created {path}\n")
    for path in kept:
        out.write(f"kept {path} (exists; ragmorph init never overwrites)\n")
    where = "" if folder.resolve() == Path.cwd().resolve() else f"cd {folder} && "
    out.write(
        "next: run the suite on the sample data, then edit ragmorph_adapter.py to call your retriever and point "
        "ragmorph.toml at your corpus and cases\n"
        f"  {where}ragmorph run --profile smoke\n"
        f"  {where}ragmorph run\n"
        f"  {where}pytest test_ragmorph.py\n"
    )
    return EXIT_OK


def _write_sample_world(corpus: Path, cases: Path, written: list[Path]) -> None:
    """A small two-tenant world with superseded versions (the generator's seed 0), as native files; each path is
    added to `written` as soon as it exists, so a failure can take back exactly what was written."""
    from .io import write_cases, write_corpus
    from .worlds import generate

    world = generate(0, chunks=24, cases=4)
    for path in (corpus, cases):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_corpus(world.corpus, corpus)
    written.append(corpus)
    write_cases(world.cases, cases)
    written.append(cases)


_ADAPTER_TEMPLATE = '''\
"""ragmorph adapter: a factory that builds your retriever over exactly the corpus ragmorph hands it.

ragmorph.toml names it; try it with `ragmorph run` in {folder}.
"""

from __future__ import annotations

from ragmorph import Corpus, Filters, Hit
from ragmorph.adapters import BM25Retriever


class MyRetriever:
    """Your search stack behind ragmorph's one-method protocol (replace the two TODOs)."""

    def __init__(self, corpus: Corpus) -> None:
        # TODO: index every chunk here: chunk.id, chunk.text, chunk.tenant (None = shared with every tenant),
        # chunk.superseded_by (set on outdated versions) and chunk.metadata. The built-in BM25 stands in for now.
        self._index = BM25Retriever(corpus)

    def retrieve(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """At most k hits, best first; (id, score) pairs or bare ids work too."""
        # TODO: call your retriever. Honour filters.tenant (the tenant's own chunks plus shared ones),
        # filters.current_only (no chunk with superseded_by set) and filters.metadata, before the cut to k.
        return list(self._index.retrieve(query, k=k, filters=filters))


def factory(corpus: Corpus) -> MyRetriever:
    """Build a fresh retriever over exactly `corpus` (called for the base and for every perturbed corpus)."""
    return MyRetriever(corpus)
'''

_TEST_TEMPLATE = '''\
"""Metamorphic tests of the retrievers in ragmorph.toml: one pytest item per retriever x strategy x relation.

Run:  pytest {test_file}     (options: pytest --help, section "ragmorph")
"""

from ragmorph.pytest_plugin import suite

# Reads the nearest ragmorph.toml (or [tool.ragmorph] in pyproject.toml): the same retrievers, data and budget
# as `ragmorph run`.
ragmorph_suite = suite()
'''

_CONFIG_TEMPLATE = '''\
# ragmorph config: `ragmorph run` runs it, `pytest test_ragmorph.py` reads it. Paths are relative to this file.
# Command-line options override these keys. Reference: ragmorph docs, docs/reference/configuration.md.

corpus = "{corpus}"
cases = "{cases}"
ks = [1, 3, 5, 10]
# strategies = ["tenancy", "cutoff", "removal"]   # default: the default suite (`ragmorph strategies`)
profile = "default"                             # "smoke": a budget of seconds for a pre-commit loop
seed = 0

[retrievers]
mine = {{ spec = "ragmorph_adapter.py:factory", traits = [] }}
# bm25 = "ragmorph.adapters:BM25Retriever"      # a baseline to compare with

[outputs]
json = "ragmorph-report/report.json"
html = "ragmorph-report/report.html"
replays = "ragmorph-report/replays"
'''


def scaffold_files(*, folder: Path, corpus: Path, cases: Path) -> dict[str, str]:
    """The files `ragmorph init` writes into `folder`: name -> text (paths in the config are relative to it)."""

    def relative(path: Path) -> str:
        return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()

    return {
        "ragmorph.toml": _CONFIG_TEMPLATE.format(corpus=relative(corpus), cases=relative(cases)),
        "ragmorph_adapter.py": _ADAPTER_TEMPLATE.format(folder=folder.as_posix()),
        "test_ragmorph.py": _TEST_TEMPLATE.format(test_file=(folder / "test_ragmorph.py").as_posix()),
    }


# ------------------------------------------------------------------------------------------------- parser


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-wrapped examples in descriptions and epilogs."""


def _command(
    commands: Any, name: str, handler: Callable[..., int], summary: str, examples: str, *, exit_codes: bool = True
) -> argparse.ArgumentParser:
    epilog = "example:\n" + textwrap.indent(textwrap.dedent(examples).strip(), "  ") + "\n"
    if exit_codes:
        epilog += "\n" + _EXIT_CODES_HELP
    parser = commands.add_parser(name, help=summary.split(". ")[0], description=summary, epilog=epilog, formatter_class=_Formatter)
    parser.set_defaults(handler=handler)
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    return parser


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a significance level in (0, 1) such as 0.05, got {text!r}")
    return value


def _comparison_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--critical", action="append", metavar="TAG",
                        help="cases with this tag are critical (repeatable; default: the tag 'critical'); a tag no case "
                        "carries is a usage error")
    parser.add_argument("--gate", type=_name_list, metavar="METRICS",
                        help="metrics whose significant regression fails the comparison (default GroupR, nDCG, ClaimR, "
                        "Unauthorized at the largest k)")
    parser.add_argument("--alpha", type=_alpha, default=0.05, help="significance level after Holm adjustment (default 0.05)")
    parser.add_argument("--permutations", type=_positive_int, default=10_000,
                        help="random sign flips per metric when there are more than 14 queries (default 10000)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every `ragmorph` command."""
    parser = argparse.ArgumentParser(
        prog="ragmorph",
        description="Metamorphic tests for RAG retrievers: perturb a retrieval world, assert the direction of "
        "change, shrink failures.",
        epilog="example:\n  ragmorph demo\n  ragmorph run --retriever ragmorph.adapters:BM25Retriever "
        "--corpus corpus.jsonl --cases cases.jsonl\n\n" + _EXIT_CODES_HELP,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"ragmorph {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    metrics = _command(
        commands,
        "metrics",
        command_metrics,
        "Score a TREC run against qrels, or against native cases (which adds GroupR and governance counts). "
        "A judged query missing from the run counts as an empty ranking.",
        """
        ragmorph metrics --run run.trec --qrels qrels.trec --k 5,10 --json metrics.json
        ragmorph metrics --run run.trec --corpus corpus.jsonl --cases cases.jsonl --metrics P,R,GroupR,Unauthorized
        """,
        exit_codes=False,
    )
    metrics.add_argument("--run", required=True, help="TREC run file (qid Q0 docid rank score tag)")
    metrics.add_argument("--qrels", help="TREC qrels file (qid 0 docid rel)")
    metrics.add_argument("--corpus", help="native corpus.jsonl (enables Unauthorized, Stale, Superseded, Dup)")
    metrics.add_argument("--cases", help="native cases.jsonl (evidence groups; enables GroupR)")
    metrics.add_argument("--k", type=_int_list, default=DEFAULT_KS, help="cutoffs, comma separated (default 1,3,5,10)")
    metrics.add_argument(
        "--metrics",
        type=_name_list,
        help=f"measures, comma separated, with or without @k (default {','.join(DEFAULT_METRICS)}"
        f" and, with --cases, {','.join(NATIVE_ONLY_METRICS)})",
    )
    metrics.add_argument("--json", metavar="FILE", help="write the ragmorph.metrics/1 summary here")

    run = _command(
        commands,
        "run",
        command_run,
        "Run the metamorphic suite over your retrievers. Without options it runs the config file (ragmorph.toml, "
        "or [tool.ragmorph] in pyproject.toml, found in this folder or above); options override its keys. A "
        "retriever is 'package.module:attr' or 'path/to/file.py:attr' naming a factory (called with the corpus) or "
        "a retriever object; prefix 'name=' to name it in reports. Replay files are saved next to the report "
        "(default ragmorph-report/replays).",
        """
        ragmorph run
        ragmorph run --profile smoke
        ragmorph run --retriever bm25=ragmorph.adapters:BM25Retriever --corpus corpus.jsonl --cases cases.jsonl \\
            --strategies tenancy,cutoff --k 3,10 --max-examples 20 --json report.json --junit junit.xml
        ragmorph run --retriever mine=adapter.py:factory --cases ragas.jsonl --format ragas
        ragmorph run --retriever mine=adapter.py:factory --beir datasets/scifact --traits mine=lexical
        """,
    )
    from .config import PROFILES, describe_profiles

    run.add_argument("--config", metavar="FILE", help="config file (default: the nearest ragmorph.toml or pyproject.toml)")
    run.add_argument("--retriever", action="append", metavar="[NAME=]MOD:ATTR", help="repeatable; replaces the config's retrievers")
    run.add_argument("--traits", action="append", type=_traits_option, metavar="NAME=a,b",
                     help="declare traits of a retriever (repeatable), e.g. bm25=lexical")
    run.add_argument("--corpus", help="native corpus.jsonl")
    run.add_argument("--cases", help="native cases.jsonl, or Ragas rows with --format ragas")
    run.add_argument("--format", choices=("native", "ragas"), help="format of --cases (default native)")
    run.add_argument("--beir", metavar="DIR", help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) instead of --corpus/--cases")
    run.add_argument("--split", help="BEIR qrels split (default test)")
    run.add_argument("--strategies", type=_name_list, help="strategy families, comma separated (default: the default suite)")
    run.add_argument("--profile", choices=tuple(PROFILES), help=f"budget ({describe_profiles()})")
    run.add_argument("--k", type=_int_list, help="cutoffs, comma separated (default 1,3,5,10)")
    run.add_argument("--max-examples", type=_positive_int, help="perturbations per unit (default 25)")
    run.add_argument(
        "--budget", metavar="NAME",
        help="how units spend --max-examples: adaptive (default; each family draws what its perturbations need and "
        "nothing twice) or full (every family draws --max-examples)",
    )
    run.add_argument("--seed", type=int, help="run seed; the same seed gives the same report (default 0)")
    run.add_argument("--derandomize", action="store_true", help="Hypothesis derandomize mode (for CI)")
    run.add_argument("--fail-fast", action="store_true", help="stop after the first unit with a hard violation")
    run.add_argument(
        "--timeout", type=_timeout_seconds,
        help="time limit in seconds of each call into the retriever (factory, add/remove/update/index, close, retrieve)",
    )
    run.add_argument(
        "--jobs", type=_positive_int, metavar="N",
        help="run units in N local processes (with --executor ray: N Ray workers); the report is the serial run's",
    )
    run.add_argument(
        "--executor", metavar="NAME",
        help="where units run: serial, processes or ray (default: serial, or processes with --jobs N > 1)",
    )
    run.add_argument("--address", metavar="HOST:PORT", help="with --executor ray: an existing Ray cluster (default: start a local one)")
    run.add_argument(
        "--concurrency", type=_positive_int, metavar="N",
        help="retriever calls in flight at once per process, in threads (batches, and the independent calls of a plan): for retrievers that wait on a service (default 1)",
    )
    run.add_argument("--replay-dir", metavar="DIR", help="replay files go here (default: replays/ next to the report)")
    from .reporting import WRITERS

    for writer in WRITERS.values():
        run.add_argument(writer.flag, metavar="FILE", help=writer.help)

    run.add_argument("--baseline", metavar="REPORT.json", help="compare this run with a saved report (see `compare`)")
    _comparison_options(run)

    compare = _command(
        commands,
        "compare",
        command_compare,
        "Compare a candidate retriever with a baseline (a retriever, or a report.json written by `run`) on the same "
        "corpus and cases: per query and k the metric deltas, evidence groups lost and gained, new and fixed "
        "violations, and a paired randomisation test per metric. Exits 1 when a critical case (tag 'critical', or "
        "--critical TAG) lost evidence or a gated metric got significantly worse; else 3 when retriever errors leave "
        "a case without a verdict (the candidate errored on a case, or either side on a critical case).",
        """
        ragmorph compare --baseline ragmorph.adapters:BM25Retriever --candidate mypkg.search:factory \\
            --corpus corpus.jsonl --cases cases.jsonl --html compare.html
        ragmorph compare --baseline main-report.json --candidate adapter.py:factory --corpus corpus.jsonl \\
            --cases cases.jsonl --critical billing --json compare.json --junit compare.xml
        """,
    )
    compare.add_argument("--baseline", required=True, metavar="SPEC|REPORT.json", help="baseline retriever or saved report")
    compare.add_argument("--candidate", required=True, metavar="[NAME=]MOD:ATTR", help="candidate retriever")
    compare.add_argument("--config", metavar="FILE", help="config file (default: the nearest ragmorph.toml or pyproject.toml), read as `run` reads it")
    compare.add_argument("--corpus", help="native corpus.jsonl (the same snapshot the baseline saw; default: the config's)")
    compare.add_argument("--cases", help="native cases.jsonl (default: the config's)")
    compare.add_argument("--profile", choices=tuple(PROFILES), help=f"budget, as for run ({describe_profiles()})")
    compare.add_argument("--strategies", type=_name_list, help="strategy families, comma separated (default: the default suite)")
    compare.add_argument("--k", type=_int_list, help="cutoffs, comma separated (default 1,3,5,10)")
    compare.add_argument("--max-examples", type=_positive_int, help="perturbations per unit (default 25)")
    compare.add_argument("--seed", type=int, help="run and test seed (default 0)")
    compare.add_argument("--derandomize", action="store_true", help="Hypothesis derandomize mode (for CI)")
    _comparison_options(compare)
    compare.add_argument("--json", metavar="FILE", help="write the ragmorph.compare/1 JSON")
    compare.add_argument("--html", metavar="FILE", help="write a self-contained HTML comparison with a per-query delta plot")
    compare.add_argument("--junit", metavar="FILE", help="write JUnit XML (a testcase per metric and per critical case)")

    report = _command(
        commands,
        "report",
        command_report,
        "Re-render a report.json written by `run`: print its summary and minimal cases, and write the formats asked "
        "for from that one run (the report file is validated first and never modified). Exits with the code of the "
        "run that wrote it.",
        """
        ragmorph report ragmorph-report/report.json --html report.html
        ragmorph report report.json --junit junit.xml
        """,
    )
    report.add_argument("file", metavar="FILE", help="a ragmorph.report/1 JSON file written by `run`")
    for writer in WRITERS.values():
        report.add_argument(writer.flag, metavar="FILE", help=writer.help)

    replay = _command(
        commands,
        "replay",
        command_replay,
        "Re-run a saved violation. Exits 1 while the bug reproduces and 0 once it is fixed, so it works as a "
        "regression check.",
        """
        ragmorph replay ragmorph-report/replays/bm25-q7-tenancy.json
        ragmorph replay failure.json --retriever mypkg.search:factory
        """,
    )
    replay.add_argument("file", metavar="FILE", help="a ragmorph.replay/1 file written by `run` or `demo`")
    replay.add_argument("--retriever", metavar="MOD:ATTR", help="replay against this retriever instead of the saved one")
    replay.add_argument("--stages", action="store_true",
                        help="for a Pipeline([...]) retriever: replay on each prefix and name the first stage that breaks")

    strategies = _command(
        commands,
        "strategies",
        command_strategies,
        "List the relation catalog: family, relation, expected direction, severity and assumptions.",
        """
        ragmorph strategies
        ragmorph strategies --json > catalog.json
        """,
        exit_codes=False,
    )
    strategies.add_argument("--json", action="store_true", help="print the catalog as JSON")

    demo = _command(
        commands,
        "demo",
        command_demo,
        "Run the default suite on a built-in world against BM25, a dense retriever and a pipeline with a "
        "planted bug (tenant filter applied after truncation), show the shrunk minimal failing case and write "
        "HTML and JSON reports. Exits 0 when the demo behaves as expected (the planted bug is caught and the "
        "correct retrievers pass), 1 otherwise.",
        """
        ragmorph demo --out ragmorph-report --seed 0
        """,
        exit_codes=False,
    )
    demo.add_argument("--out", default="ragmorph-report", metavar="DIR", help="report folder (default ./ragmorph-report)")
    demo.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    demo.add_argument("--max-examples", type=_positive_int, default=None, help=argparse.SUPPRESS)

    init = _command(
        commands,
        "init",
        command_init,
        "Scaffold ragmorph.toml (the config `ragmorph run` and the pytest plugin read), ragmorph_adapter.py (a "
        "factory template around your retriever), test_ragmorph.py (a pytest file using the plugin) and, unless "
        "the corpus and cases exist, a small sample corpus and cases to try them on. Never overwrites a file: one that "
        "exists is kept (and named) and the missing ones are written.",
        """
        ragmorph init tests/retrieval --corpus data/corpus.jsonl --cases data/cases.jsonl
        """,
        exit_codes=False,
    )
    init.add_argument("dir", nargs="?", default=".", metavar="DIR", help="folder to write into (default .)")
    init.add_argument("--corpus", help="your corpus.jsonl (default DIR/data/corpus.jsonl, sample data if missing)")
    init.add_argument("--cases", help="your cases.jsonl (default DIR/data/cases.jsonl, sample data if missing)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ragmorph` console script; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        # argparse exits 2 on usage errors and 0 on --help/--version; main returns instead of exiting.
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    try:
        return int(args.handler(args, sys.stdout, sys.stderr))
    except RagmorphError as error:
        if debug:
            raise
        sys.stderr.write(f"ragmorph: error: {format_error(error)}\n")
        return _exit_code_for(error)
    except BrokenPipeError:
        # Before OSError, its base class. `ragmorph strategies | head`: the reader left; say nothing more and do
        # not fail on the final flush either.
        _silence_stdout()
        return EXIT_OK
    except OSError as error:
        if debug:
            raise
        where = f": {error.filename}" if error.filename else ""
        sys.stderr.write(f"ragmorph: error: {error.strerror or error}{where}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("ragmorph: interrupted\n")
        return 130


def _silence_stdout() -> None:
    try:
        descriptor = os.open(os.devnull, os.O_WRONLY)
        os.dup2(descriptor, sys.stdout.fileno())
        os.close(descriptor)
    except (OSError, ValueError):
        pass  # stdout is not a real file (a test's StringIO): nothing to flush later


if __name__ == "__main__":
    sys.exit(main())
