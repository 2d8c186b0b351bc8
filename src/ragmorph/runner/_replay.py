"""Replay files ("ragmorph.replay/1"): a minimal violating world that `replay()` re-runs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..adapters import Configured, load_retriever, locate_retriever
from ..adapters.guard import exit_guard
from ..errors import ExitCode, InputError, RagmorphError, UsageError, describe
from ..io import atomic_write_text, loads_strict
from ..model import Case, Chunk, Corpus, Filters, Params, World, check_evidence
from ..relations import Relation
from ..secrets import MASK, redact_data, register_option_secrets
from ..strategies import perturbation_from_dict, relation
from ..strategies.contract import VALID_RESPONSE
from ._executor import CallCache, Executor, Probe, Step, run_after
from ._spec import RetrieverSpec

__all__ = ["REPLAY_SCHEMA", "Replayable", "ReplayOutcome", "read_replayable", "replay", "replay_path", "run_replayable", "write_replay"]

REPLAY_SCHEMA = "ragmorph.replay/1"


def _world_dict(world: World) -> dict[str, Any]:
    return {
        "corpus": [c.to_dict() for c in world.corpus],
        "case": world.case.to_dict(),
        "params": {"k": world.params.k, "filters": world.params.filters.to_dict()},
    }


def _world_from(data: dict[str, Any], path: Path) -> World:
    """The world of a replay file; any missing or wrong part is an InputError naming its field."""

    def fail(field: str, message: str) -> InputError:
        return InputError(message, file=str(path), field=field)

    corpus_rows, case, params = data.get("corpus"), data.get("case"), data.get("params")
    if not isinstance(corpus_rows, list):
        raise fail("world.corpus", f"expected a list of chunk objects, got {describe(corpus_rows)}")
    chunks = []
    for number, row in enumerate(corpus_rows):
        if not isinstance(row, dict):
            raise fail(f"world.corpus[{number}]", f"expected a chunk object, got {describe(row)}")
        chunks.append(_built(lambda: Chunk(**row), f"world.corpus[{number}]", path))
    corpus = _built(lambda: Corpus(chunks), "world.corpus", path)
    if not isinstance(case, dict):
        raise fail("world.case", f"expected a case object, got {describe(case)}")
    built_case = _built(lambda: Case(**case), "world.case", path)
    if not isinstance(params, dict) or not isinstance(params.get("filters"), dict):
        raise fail("world.params", f"expected {{\"k\": int, \"filters\": {{...}}}}, got {describe(params)}")
    built_params = _built(lambda: Params(params.get("k"), Filters(**params["filters"])), "world.params", path)
    # A span edited past its chunk's text would be judged on a clipped span: refuse it as the case reader does.
    check_evidence(built_case, corpus, file=str(path), field="world.case.", all_cited=False)
    return World(corpus, built_case, built_params)


def _built(make: Any, field: str, path: Path) -> Any:
    """`make()`, with any error of the stored values reported as an InputError at `field` of the replay file."""
    try:
        return make()
    except InputError as error:
        inner = f".{error.field}" if error.field and error.field != field.rpartition(".")[2] else ""
        raise InputError(error.message, file=str(path), field=f"{field}{inner}", value=error.value) from None
    except (RagmorphError, KeyError, TypeError, ValueError) as error:
        raise InputError(f"expected valid stored values, got {type(error).__name__}: {error}", file=str(path), field=field) from None


def _fingerprint(world: World, perturbation: Any, relation_name: str, history: Any) -> str:
    """SHA-256 of everything a replay's verdict depends on, in canonical JSON: an edited file no longer matches."""
    identity = {
        "world": _world_dict(world),
        "perturbation": perturbation.to_dict(),
        "relation": relation_name,
        "history": history or None,
    }
    text = json.dumps(identity, sort_keys=True, ensure_ascii=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:60]


def replay_path(folder: Path, unit: Any, relation: Relation) -> Path:
    """Where the replay file of a violation of `relation` found in `unit` goes inside `folder`.

    The readable parts are cut to 60 characters each, so a hash of the full identity ends the name: two long
    ids that share their first 60 characters never share a file.
    """
    parts = (unit.retriever.name, unit.case.id, relation.name)
    if relation.family != unit.strategy:
        parts = (*parts, unit.strategy)  # a contract breach found by another family's unit
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode("ascii")).hexdigest()[:12]
    return folder / ("-".join(_safe_name(p) for p in parts) + f"-{digest}.json")


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
    reproducible: bool = True,
) -> Path:
    """Write the replay file of a violation found in `unit` (minimal `world`) and return its path.

    `steps` are the calls a stateful violation needs before it (numbered), `sources` the steps whose results
    are its observations; `replay()` makes them again on a fresh instance. `reproducible=False` records that
    the run could not bring the violation back on a fresh index: its replay never reports "fixed".
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
        "expected": {"verdict": "broken", "detail": detail, "reproducible": reproducible},
    }
    if steps:
        data["history"] = {"steps": [{"number": n, **step.to_dict()} for n, step in steps], "sources": list(sources)}
    # Options are written into the file: credentials in them (at any depth, or inside a URL) are hidden like any
    # registered secret, in this process and in every report that names them.
    register_option_secrets(data["retriever"].get("options"))
    verbatim = json.loads(json.dumps(data, default=str))
    # Secrets are hidden here too (a replay of a retriever configured with one then needs it passed again).
    written = redact_data(verbatim)
    if written["retriever"].get("options") != verbatim["retriever"].get("options"):
        written["retriever"]["options_masked"] = True  # replay() asks for --retriever instead of passing ***
    # A secret's value may also be text of the world (a request-template literal that is a word of a query): the
    # masked world is then not the one judged, and replaying it would judge another query. The file says where,
    # and replay() refuses it; the fingerprint covers the world as judged, so a masked file never matches it.
    masked = [name for name in _JUDGED if name in verbatim and written[name] != verbatim[name]]
    if masked:
        written["expected"]["masked"] = masked
    written["fingerprint"] = _fingerprint(
        _world_from(verbatim["world"], path),
        perturbation_from_dict(verbatim["perturbation"]),
        relation.name,
        verbatim.get("history"),
    )
    # Atomic: a replay file is either the old one or the whole new one.
    atomic_write_text(path, json.dumps(written, indent=2, ensure_ascii=False) + "\n")
    return path


# The parts of a replay file a verdict is judged on (the world, its before/after forms, the edit, prior calls).
_JUDGED = ("world", "world_before", "world_after", "perturbation", "history")


def _read_replay(path: Path) -> dict[str, Any]:
    """The replay file's JSON, checked field by field: a missing or wrong field is an InputError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"expected a readable UTF-8 replay file, got {type(error).__name__}: {error}", file=str(path)) from None
    data = loads_strict(text, file=str(path))
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {describe(data)}", file=str(path))
    if data.get("schema") != REPLAY_SCHEMA:
        raise InputError(f"expected schema {REPLAY_SCHEMA!r}, got {describe(data.get('schema'))}", file=str(path), field="schema")
    kinds: dict[str, tuple[type, ...]] = {
        "relation": (str,), "perturbation": (dict,), "world": (dict,), "fingerprint": (str,), "settings": (dict,),
        "expected": (dict,),
    }
    for name, kind in kinds.items():
        if not isinstance(data.get(name), kind):
            raise InputError(
                f"expected {name} to be a JSON {'string' if kind == (str,) else 'object'}, got {describe(data.get(name))}"
                + ("; files written before replay files carried a fingerprint must be written again by `ragmorph run`"
                   if name == "fingerprint" and name not in data else ""),
                file=str(path), field=name,
            )
    optional: dict[str, tuple[type, ...]] = {"retriever": (dict,), "history": (dict,)}
    for name, kind in optional.items():
        if data.get(name) is not None and not isinstance(data[name], kind):
            raise InputError(f"expected {name} to be a JSON object or absent, got {describe(data[name])}", file=str(path), field=name)
    timeout = data["settings"].get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise InputError(f"expected a positive number or null, got {describe(timeout)}", file=str(path), field="settings.timeout")
    if not isinstance(data["expected"].get("reproducible", True), bool):
        raise InputError("expected true or false", file=str(path), field="expected.reproducible")
    masked = data["expected"].get("masked", [])
    if not isinstance(masked, list) or not all(isinstance(m, str) for m in masked):
        raise InputError(f"expected a list of field names, got {describe(masked)}", file=str(path), field="expected.masked")
    if masked:
        raise InputError(
            f"expected a world that replay can re-run, got one in which the run masked secret values ({MASK}) in "
            f"{', '.join(masked)}: a value of the retriever's configuration (a header, a request-template literal, "
            "an option) also occurs in the world's text, so the masked world is not the one judged and replaying "
            "it would judge another query; re-run `ragmorph run` to check the violation, and declare the value "
            "public (HTTPRetriever(public=[...])) if it is not a secret",
            file=str(path),
            field="expected.masked",
        )
    stored = data.get("retriever") or {}
    for name in ("name", "spec", "file"):
        if stored.get(name) is not None and not isinstance(stored[name], str):
            raise InputError(f"expected a string, got {describe(stored[name])}", file=str(path), field=f"retriever.{name}")
    traits = stored.get("traits", [])
    if not isinstance(traits, list) or not all(isinstance(t, str) for t in traits):
        raise InputError(f"expected a list of strings, got {describe(traits)}", file=str(path), field="retriever.traits")
    return data


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
    # The observations the verdict was judged on (None when no probe was formed), and the retriever calls made.
    probe: Probe | None = attrs.field(default=None, eq=False, repr=False)
    calls: int = attrs.field(default=0, eq=False)

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
    if stored.get("options_masked"):
        raise InputError(
            f"expected retriever options that replay can pass again, got options whose secret values the run masked "
            f"({MASK}); pass the retriever yourself: ragmorph replay FILE --retriever MOD:ATTR (a factory that reads "
            "the secret, e.g. from an environment variable), or replay(path, retriever=...)",
            file=str(path),
            field="retriever.options",
        )
    return Configured(candidate, options) if options else candidate


@attrs.frozen
class Replayable:
    """What a violation needs to be judged again: its minimal world, perturbation, relation and prior calls."""

    world: World
    perturbation: Any
    relation: Relation
    steps: tuple[tuple[int, Step], ...] = ()
    sources: tuple[int | None, int | None] = (None, None)
    timeout: float | None = None
    # False when the run could not bring the violation back on a fresh index: holding then proves nothing.
    reproducible: bool = True


def read_replayable(path: str | Path) -> tuple[Replayable, dict[str, Any]]:
    """The replay file at `path`, checked (schema, fields, fingerprint), and its stored retriever block."""
    path = Path(path)
    data = _read_replay(path)
    return _replayable(data, path), data.get("retriever") or {}


def _replayable(data: dict[str, Any], path: Path) -> Replayable:
    judged = _built(lambda: relation(data["relation"]), "relation", path)
    perturbation = _built(lambda: perturbation_from_dict(data["perturbation"]), "perturbation", path)
    world = _world_from(data["world"], path)
    history = data.get("history")
    if _fingerprint(world, perturbation, judged.name, history) != data["fingerprint"]:
        raise InputError(
            "expected the world, perturbation, relation and history the run wrote, got a file whose content no "
            "longer matches its fingerprint (edited after the run?); re-run `ragmorph run` for a fresh replay file",
            file=str(path),
            field="fingerprint",
        )
    steps: tuple[tuple[int, Step], ...] = ()
    sources: tuple[int | None, int | None] = (None, None)
    if history:
        try:
            steps = tuple((int(s["number"]), Step.from_dict(s)) for s in history["steps"])
            sources = (history["sources"][0], history["sources"][1])
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise InputError(
                f"expected a history with numbered steps and two sources, got {error!r}", file=str(path), field="history"
            ) from error
    return Replayable(
        world, perturbation, judged, steps, sources,
        timeout=data["settings"].get("timeout"), reproducible=data["expected"].get("reproducible", True),
    )


def run_replayable(spec: RetrieverSpec, found: Replayable) -> ReplayOutcome:
    """Judge `found` again on the retriever of `spec`: a fresh instance, the recorded calls first when it has any."""
    judged = found.relation
    made: list[Executor] = []
    with exit_guard():  # os._exit in the retriever is an error of this replay, not the end of the process
        try:
            probe = _probe(spec, found, made)
            for executor in made:
                executor.close()
        except RagmorphError as error:
            for executor in made:
                with contextlib.suppress(RagmorphError):
                    executor.close()
            return ReplayOutcome(False, judged.name, str(error), error=str(error), calls=sum(e.calls for e in made))
    return _judged(found, probe, sum(e.calls for e in made))


def _probe(spec: RetrieverSpec, found: Replayable, made: list[Executor]) -> Probe | str:
    """The observations of `found`'s plan on fresh instances (each executor made is appended to `made`)."""
    if found.steps:
        return run_after(spec, found.perturbation.plan(found.world), found.steps, found.sources, timeout=found.timeout, made=made)
    made.append(Executor(spec, found.world.corpus, cache=CallCache(), timeout=found.timeout))
    return made[0].run(found.perturbation.plan(found.world))


def _judged(found: Replayable, probe: Probe | str, calls: int) -> ReplayOutcome:
    """The outcome of judging `found`'s relation on `probe` (or why it cannot be judged)."""
    judged = found.relation
    unproven = (
        f"the run already found that this violation does not reproduce on a fresh index (it depends on state it "
        f"cannot rebuild), so a replay cannot tell a fix from a miss; re-run `ragmorph run` to check {judged.name}"
    )
    if isinstance(probe, str):
        if not found.reproducible:
            return ReplayOutcome(False, judged.name, unproven, error=unproven, calls=calls)
        return ReplayOutcome(False, judged.name, probe, applicable=False, calls=calls)
    broken = probe.invalid
    if broken is not None and judged is not VALID_RESPONSE:
        # The retriever now breaks the contract instead: that prevents a verdict on this relation.
        message = f"the response broke the retriever contract, so {judged.name} cannot be judged: {broken.invalid}"
        return ReplayOutcome(False, judged.name, message, error=message, probe=probe, calls=calls)
    verdict = judged.check(probe.base, probe.follow)
    if not found.reproducible and not (verdict.applicable and not verdict.holds):
        # The run itself could not bring this violation back on a fresh index: holding now proves nothing.
        return ReplayOutcome(False, judged.name, unproven, error=unproven, probe=probe, calls=calls)
    # What the run's report showed: a base asked thousands deep is shown as the part the relation compared.
    base, follow = judged.shown(probe.base, probe.follow) if judged.shown is not None else (probe.base, probe.follow)
    return ReplayOutcome(
        reproduced=verdict.applicable and not verdict.holds,
        relation=judged.name,
        detail=verdict.detail,
        applicable=verdict.applicable,
        base_ids=base.ranking.ids,
        follow_ids=follow.ranking.ids,
        probe=probe,
        calls=calls,
    )


def replay(path: str | Path, retriever: Any = None) -> ReplayOutcome:
    """Re-run the minimal world of a replay file on `retriever` (default: the import string stored in the file)."""
    path = Path(path)
    data = _read_replay(path)
    stored = data.get("retriever") or {}
    if retriever is None:
        retriever = _saved_retriever(stored, path)
    spec = RetrieverSpec.of(retriever, stored.get("name"), traits=stored.get("traits", ()))
    return run_replayable(spec, _replayable(data, path))
