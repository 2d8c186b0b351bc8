"""Replay files ("ragmorph.replay/1"): a minimal violating world that `replay()` re-runs."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..adapters import Configured, load_retriever, locate_retriever
from ..errors import ExitCode, InputError, RagmorphError, UsageError
from ..io import atomic_write_text
from ..model import Case, Chunk, Corpus, Filters, Params, World
from ..relations import Relation
from ..secrets import redact_data
from ..strategies import perturbation_from_dict, relation
from ..strategies.contract import VALID_RESPONSE
from ._executor import CallCache, Executor, Step, run_after
from ._spec import RetrieverSpec

__all__ = ["REPLAY_SCHEMA", "ReplayOutcome", "replay", "replay_path", "write_replay"]

REPLAY_SCHEMA = "ragmorph.replay/1"


def _world_dict(world: World) -> dict[str, Any]:
    return {
        "corpus": [c.to_dict() for c in world.corpus],
        "case": world.case.to_dict(),
        "params": {"k": world.params.k, "filters": world.params.filters.to_dict()},
    }


def _world_from(data: dict[str, Any], path: Path) -> World:
    try:
        corpus = Corpus(Chunk(**c) for c in data["corpus"])
        case = Case(**data["case"])
        params = Params(data["params"]["k"], Filters(**data["params"]["filters"]))
    except (KeyError, TypeError) as error:
        raise InputError(f"expected a world with corpus, case and params, got {error!r}", file=str(path)) from error
    return World(corpus, case, params)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:60]


def replay_path(folder: Path, unit: Any, relation: Relation) -> Path:
    """Where the replay file of a violation of `relation` found in `unit` goes inside `folder`."""
    parts = (unit.retriever.name, unit.case.id, relation.name)
    if relation.family != unit.strategy:
        parts = (*parts, unit.strategy)  # a contract breach found by another family's unit
    return folder / ("-".join(_safe_name(p) for p in parts) + ".json")


def write_replay(
    path: Path,
    *,
    unit: Any,
    world: World,
    perturbation: Any,
    relation: Relation,
    detail: str,
    steps: Sequence[tuple[int, Step]] = (),
    sources: tuple[int | None, int | None] = (None, None),
) -> Path:
    """Write the replay file of a violation found in `unit` (minimal `world`) and return its path.

    `steps` are the calls a stateful violation needs before it (numbered), `sources` the steps whose results
    are its observations; `replay()` makes them again on a fresh instance.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    after = perturbation.apply(world)
    data = {
        "schema": REPLAY_SCHEMA,
        "retriever": {"name": unit.retriever.name, **locate_retriever(unit.retriever.target), "traits": list(unit.retriever.traits)},
        "relation": relation.name,
        "severity": relation.severity.value,
        "strategy": unit.strategy,
        "seed": unit.seed,
        "settings": unit.settings.to_dict(),
        "perturbation": {**perturbation.to_dict(), "repr": repr(perturbation)},
        "world": _world_dict(world),
        "world_before": _world_dict(perturbation.base(world)),
        "world_after": _world_dict(after),
        "expected": {"verdict": "broken", "detail": detail},
    }
    if steps:
        data["history"] = {"steps": [{"number": n, **step.to_dict()} for n, step in steps], "sources": list(sources)}
    # Secrets are hidden here too (a replay of a retriever configured with one then needs it passed again), and
    # the write is atomic: a replay file is either the old one or the whole new one.
    atomic_write_text(path, json.dumps(redact_data(data), indent=2, ensure_ascii=False, default=str) + "\n")
    return path


@attrs.frozen
class ReplayOutcome:
    """What re-running a replay file showed: `reproduced` while the bug is still there."""

    reproduced: bool
    relation: str
    detail: str
    applicable: bool = True
    error: str | None = None
    base_ids: tuple[str, ...] = ()
    follow_ids: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """CLI exit code of `ragmorph replay`: 1 while the violation reproduces, 3 on a retriever error, else 0."""
        if self.error is not None:
            return int(ExitCode.ERRORS)
        return int(ExitCode.VIOLATIONS if self.reproduced else ExitCode.OK)


def _saved_retriever(stored: dict[str, Any], path: Path) -> Any:
    """The retriever a replay file names: its import string, else its absolute `file.py:attr` (any folder works)."""
    candidates = [c for c in (stored.get("spec"), stored.get("file")) if c]
    if not candidates:
        raise InputError(
            "expected a retriever import string in the replay file (the run used an object built at run time); "
            "pass one: ragmorph replay FILE --retriever MOD:ATTR, or replay(path, retriever=...)",
            file=str(path),
            field="retriever.spec",
        )
    for candidate in candidates[:-1]:
        try:
            load_retriever(candidate)
            break
        except UsageError:
            continue  # e.g. a relative file spec replayed from another folder: the absolute file path follows
    else:
        candidate = candidates[-1]
        load_retriever(candidate)
    options = stored.get("options")
    return Configured(candidate, options) if options else candidate


def replay(path: str | Path, retriever: Any = None) -> ReplayOutcome:
    """Re-run the minimal world of a replay file on `retriever` (default: the import string stored in the file)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"expected a readable JSON replay file, got {type(error).__name__}: {error}", file=str(path)) from error
    if not isinstance(data, dict) or data.get("schema") != REPLAY_SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"expected schema {REPLAY_SCHEMA!r}, got {got!r}", file=str(path), field="schema")
    stored = data.get("retriever") or {}
    if retriever is None:
        retriever = _saved_retriever(stored, path)
    spec = RetrieverSpec.of(retriever, stored.get("name"), traits=stored.get("traits", ()))
    judged = relation(data["relation"])
    perturbation = perturbation_from_dict(data["perturbation"])
    world = _world_from(data["world"], path)
    timeout = (data.get("settings") or {}).get("timeout")
    history = data.get("history")
    try:
        if history:
            steps = tuple((int(s["number"]), Step.from_dict(s)) for s in history["steps"])
            sources = (history["sources"][0], history["sources"][1])
            probe = run_after(spec, perturbation.plan(world), steps, sources, timeout=timeout)
        else:
            executor = Executor(spec, world.corpus, cache=CallCache(), timeout=timeout)
            try:
                probe = executor.run(perturbation.plan(world))
            finally:
                executor.close()
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"expected a history with numbered steps and two sources, got {error!r}", file=str(path), field="history") from error
    except RagmorphError as error:
        return ReplayOutcome(False, judged.name, str(error), error=str(error))
    if isinstance(probe, str):
        return ReplayOutcome(False, judged.name, probe, applicable=False)
    broken = probe.invalid
    if broken is not None and judged is not VALID_RESPONSE:
        # The retriever now breaks the contract instead: that prevents a verdict on this relation.
        message = f"the response broke the retriever contract, so {judged.name} cannot be judged: {broken.invalid}"
        return ReplayOutcome(False, judged.name, message, error=message)
    verdict = judged.check(probe.base, probe.follow)
    return ReplayOutcome(
        reproduced=verdict.applicable and not verdict.holds,
        relation=judged.name,
        detail=verdict.detail,
        applicable=verdict.applicable,
        base_ids=probe.base.ranking.ids,
        follow_ids=probe.follow.ranking.ids,
    )
