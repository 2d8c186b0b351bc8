"""Paired comparison of a baseline and a candidate retriever on the same corpus and cases.

Both sides are "ragmorph.report/1" dicts (a saved report or a fresh `check()` run) carrying per-query data. The
comparison pairs them case by case: metric deltas at every k, evidence groups lost and gained, new and fixed
violations, and a paired randomisation test per metric (sign flips of the per-query differences, as ranx's
`compare(stat_test="fisher")` and trec_eval users expect), Holm-adjusted across metrics. The result is the
"ragmorph.compare/1" dict that `ragmorph.reporting` renders; its exit code (errors.ExitCode) gates CI.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import ExitCode, InputError, UsageError, describe
from .metrics import GOVERNANCE_MEASURES, parse_metric
from .model import Case

__all__ = [
    "COMPARE_SCHEMA",
    "CRITICAL_TAG",
    "DEFAULT_GATE",
    "EXIT_NO_REGRESSION",
    "EXIT_REGRESSION",
    "compare_reports",
    "holm",
    "randomization_test",
]

COMPARE_SCHEMA = "ragmorph.compare/1"
CRITICAL_TAG = "critical"
# Aliases of the one definition (errors.ExitCode): a regression is a violation of the comparison's gate.
EXIT_NO_REGRESSION, EXIT_REGRESSION = ExitCode.OK, ExitCode.VIOLATIONS
# Sign vectors enumerated exactly up to this many queries (2**14 = 16,384 mean differences); Monte Carlo above.
_EXACT_QUERIES = 14
_BATCH = 2048
# Two permuted means this close count as equal: sums of the same floats in another order differ in the last bits.
_EPSILON = 1e-12


def randomization_test(
    baseline: Sequence[float], candidate: Sequence[float], *, permutations: int = 10_000, seed: int = 0
) -> float | None:
    """Two-sided paired randomisation test of mean(candidate - baseline) = 0: the share of sign flips of the
    per-query differences whose mean is at least as far from zero as the observed one.

    Exact (every one of the 2**n sign vectors) for n <= 14 queries; otherwise `permutations` random flips from a
    seeded generator, with the observed assignment counted ((hits + 1) / (permutations + 1)), so p is never 0.
    None without pairs. Swapping a query's two values is a sign flip of its difference, so this is Fisher's
    randomisation test as ranx runs it (Smucker et al., CIKM 2007).
    """
    if len(baseline) != len(candidate):
        raise UsageError(f"expected paired values, got {len(baseline)} baseline and {len(candidate)} candidate values")
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations <= 0:
        raise UsageError(f"expected a positive number of permutations, got permutations={describe(permutations)}")
    diffs = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    n = len(diffs)
    if n == 0:
        return None
    observed = abs(diffs.mean())
    if not np.any(diffs):
        return 1.0
    threshold = observed - _EPSILON * max(1.0, observed)
    if n <= _EXACT_QUERIES:
        codes = np.arange(2**n, dtype=np.int64)[:, None]
        signs = 1.0 - 2.0 * ((codes >> np.arange(n)) & 1)
        return float(np.mean(np.abs(signs @ diffs) / n >= threshold))
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < permutations:
        size = min(_BATCH, permutations - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
        hits += int(np.count_nonzero(np.abs(signs @ diffs) / n >= threshold))
        done += size
    return (hits + 1) / (permutations + 1)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (same order; None stays None): controls the family-wise error rate
    when many metrics are tested at once, without assuming they are independent (they are not)."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running, m = 0.0, len(indexed)
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


DEFAULT_GATE = ("GroupR", "nDCG", "ClaimR(judge=tokens)", "Unauthorized")


def _gate(gate: Sequence[str] | None, names: Sequence[str], ks: Sequence[int]) -> list[str]:
    if gate is None:
        wanted = [f"{measure}@{max(ks)}" for measure in DEFAULT_GATE]
        return [name for name in wanted if name in names]
    canonical = [str(parse_metric(name)) for name in gate]
    unknown = [name for name in canonical if name not in names]
    if unknown:
        raise UsageError(f"expected gated metrics that both sides measured ({', '.join(names[:8])}, ...), got {unknown}")
    return list(dict.fromkeys(canonical))


def _lower_is_better(metric: str) -> bool:
    return parse_metric(metric).measure in GOVERNANCE_MEASURES


def _single_retriever(report: Mapping[str, Any], side: str, name: str | None) -> str:
    names = list((report.get("queries") or {}).keys())
    if name is not None:
        if name not in names:
            raise InputError(f"expected a retriever named {name!r} in the {side} report, got {names}", field=side)
        return name
    if len(names) != 1:
        raise InputError(
            f"expected exactly one retriever in the {side} report (or name one), got {names or 'none'}", field=side
        )
    return names[0]


def _check_side(report: Mapping[str, Any], side: str) -> None:
    if not isinstance(report, Mapping) or report.get("schema") != "ragmorph.report/1":
        raise InputError(
            f"expected a ragmorph.report/1 dict as the {side}, got schema={describe(getattr(report, 'get', dict)('schema'))}",
            field=side,
        )
    if "queries" not in report:
        raise InputError(
            f"expected per-query data (a `queries` block) in the {side} report; it was written by an older ragmorph: "
            "write it again with `ragmorph run ... --json FILE`",
            field=side,
        )


def _fingerprints(baseline: Mapping[str, Any], candidate: Mapping[str, Any], corpus_fingerprint: str | None) -> None:
    base = baseline["manifest"]["corpus"]["fingerprint"]
    cand = candidate["manifest"]["corpus"]["fingerprint"]
    if base != cand or (corpus_fingerprint is not None and corpus_fingerprint != base):
        found = f"baseline {base[:12]}, candidate {cand[:12]}"
        if corpus_fingerprint is not None:
            found += f", --corpus {corpus_fingerprint[:12]}"
        raise InputError(
            f"expected the baseline and the candidate to run on the same corpus snapshot, got corpus fingerprints "
            f"{found}: re-run the baseline on this corpus (a comparison across corpora is not paired)",
            field="corpus",
        )
    base_cases = baseline["manifest"]["cases"]["fingerprint"]
    cand_cases = candidate["manifest"]["cases"]["fingerprint"]
    if base_cases != cand_cases:
        raise InputError(
            f"expected the baseline and the candidate to run the same cases, got cases fingerprints "
            f"{base_cases[:12]} (baseline) and {cand_cases[:12]} (candidate): re-run the baseline on these cases "
            "(every field counts, tags included)",
            field="cases",
        )


def _covered(ranking: Sequence[Sequence[Any]], case: Case, k: int) -> set[int]:
    top = {entry[0] for entry in ranking[:k]}
    return {number for number, group in enumerate(case.evidence) if not top.isdisjoint(group)}


def _failures(report: Mapping[str, Any], retriever: str) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {
        (row["case"], row["relation"]): row
        for row in report.get("results", ())
        if row["retriever"] == retriever and row["status"] == "fail"
    }


def _violation_row(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "case": row["case"],
        "relation": row["relation"],
        "strategy": row["strategy"],
        "severity": row.get("severity", "hard"),
        "reason": row.get("reason"),
    }


def _statuses(report: Mapping[str, Any], retriever: str) -> dict[tuple[str, str], str]:
    return {(row["case"], row["relation"]): row["status"] for row in report.get("results", ()) if row["retriever"] == retriever}


def _errors(report: Mapping[str, Any], retriever: str) -> dict[str, str]:
    """Case id -> the first reason the retriever errored on it (its base query or any relation)."""
    found: dict[str, str] = {}
    for row in report.get("results", ()):
        if row["retriever"] == retriever and row["status"] == "error":
            found.setdefault(row["case"], str(row.get("reason") or "the retriever raised"))
    return found


def _critical(critical_tags: Iterable[str] | None, cases: Sequence[Case]) -> set[str]:
    """The critical tags; each one named explicitly must be carried by some case (a misspelt tag gates nothing)."""
    if critical_tags is None:
        return {CRITICAL_TAG}  # the default tag may be absent: then no case is critical, as documented
    tags = (critical_tags,) if isinstance(critical_tags, str) else tuple(critical_tags)
    if not tags or any(not isinstance(tag, str) or not tag for tag in tags):
        raise UsageError(f"expected critical tags as non-empty strings, got critical_tags={describe(tags)}")
    carried = {tag for case in cases for tag in case.tags}
    unknown = sorted(set(tags) - carried)
    if unknown:
        shown = ", ".join(sorted(carried)[:12]) or "none"
        raise UsageError(
            f"expected critical tags that some case carries (tags in the cases: {shown}), got {', '.join(map(repr, unknown))}: "
            "no case would be critical, so a lost case could not fail the comparison; check the spelling"
        )
    return set(tags)


def _values(query: Mapping[str, Any], side: str, retriever: str, case: str) -> dict[str, float | None]:
    """A side's metric values for one case, each name canonical and each value a number within its metric's range."""
    checked: dict[str, float | None] = {}
    for name, value in query["metrics"].items():
        field = f"{side}.queries.{retriever}.{case}.metrics.{name}"
        try:
            metric = parse_metric(name)
        except UsageError as error:
            raise InputError(f"expected a metric name such as 'nDCG@10', got {name!r}: {error}", field=field) from None
        if value is None:
            checked[name] = None
            continue
        low, high = metric.bounds
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise InputError(
                f"expected None or a number in [{low:g}, {high:g}] for {metric}, got {describe(value)}; "
                "was the report edited? write it again with `ragmorph run ... --json FILE`",
                field=field,
            )
        checked[name] = float(value)
    return checked


def compare_reports(
    baseline: Mapping[str, Any],
    candidate: Mapping[str, Any],
    cases: Sequence[Case],
    *,
    corpus_fingerprint: str | None = None,
    baseline_retriever: str | None = None,
    candidate_retriever: str | None = None,
    critical_tags: Iterable[str] | None = None,
    alpha: float = 0.05,
    permutations: int = 10_000,
    seed: int = 0,
    gate: Sequence[str] | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Pair `candidate` with `baseline` case by case and return the "ragmorph.compare/1" dict.

    Refuses (InputError) reports over different corpus or cases fingerprints, or a `corpus_fingerprint` that
    neither matches, and metric values outside their metric's range. A case is *critical* when it carries one of
    `critical_tags` (default: the tag "critical"; a tag named explicitly that no case carries is a UsageError); a
    critical case is *lost* when the candidate no longer covers an evidence group the baseline covered at some k,
    supports fewer claims, or breaks a hard relation the baseline kept.

    A case has *no verdict* when the candidate's retriever errored on its query (no ranking to pair), when the
    baseline has no ranking for a critical case, or when the candidate errored on any relation of a critical case;
    a case only the baseline could not rank, and that is not critical, is listed as unpaired and decides nothing.
    The exit code (errors.ExitCode) is 1 on a lost critical case or on a *gated* metric that got significantly
    worse (Holm-adjusted p < `alpha` over the gated metrics); else 3 when some case has no verdict; else 0.
    `gate` names the gated metrics (default: GroupR, nDCG, ClaimR and Unauthorized at the largest shared k, where
    measured); every other metric is reported with its raw p-value and decides nothing.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise UsageError(f"expected alpha in (0, 1), got alpha={describe(alpha)}")
    _check_side(baseline, "baseline")
    _check_side(candidate, "candidate")
    _fingerprints(baseline, candidate, corpus_fingerprint)
    base_name = _single_retriever(baseline, "baseline", baseline_retriever)
    cand_name = _single_retriever(candidate, "candidate", candidate_retriever)
    critical = _critical(critical_tags, cases)
    base_queries, cand_queries = baseline["queries"][base_name], candidate["queries"][cand_name]
    ks = sorted(set(baseline["manifest"]["settings"]["ks"]) & set(candidate["manifest"]["settings"]["ks"]))
    if not ks:
        raise InputError("expected the baseline and the candidate to share at least one cutoff k, got none", field="k")
    base_fail, cand_fail = _failures(baseline, base_name), _failures(candidate, cand_name)
    cand_status = _statuses(candidate, cand_name)
    new = [_violation_row(row) for key, row in cand_fail.items() if key not in base_fail]
    # Fixed: the baseline failed and the candidate ran the same relation without failing (not an error or absent).
    fixed = [_violation_row(row) for key, row in base_fail.items() if cand_status.get(key) in ("pass", "not_applicable")]
    new_by_case: dict[str, list[dict[str, Any]]] = {}
    for violation in new:
        new_by_case.setdefault(violation["case"], []).append(violation)
    fixed_by_case: dict[str, list[dict[str, Any]]] = {}
    for violation in fixed:
        fixed_by_case.setdefault(violation["case"], []).append(violation)
    base_errors, cand_errors = _errors(baseline, base_name), _errors(candidate, cand_name)
    paired: dict[str, list[tuple[float, float]]] = {}
    rows = []
    # Cases without a pair, and cases on which retriever errors leave the comparison without a verdict (exit 3):
    # an errored case must never read as "no regression".
    unpaired: list[dict[str, Any]] = []
    no_verdict: list[dict[str, Any]] = []
    for case in cases:
        is_critical = not critical.isdisjoint(case.tags)
        base, cand = base_queries.get(case.id), cand_queries.get(case.id)
        if base is None or cand is None:
            side, errors = ("candidate", cand_errors) if cand is None else ("baseline", base_errors)
            reason = errors.get(case.id, "no ranking for this case in the report (the run did not reach it)")
            entry = {"case": case.id, "critical": is_critical, "side": side, "reason": reason}
            unpaired.append(entry)
            if side == "candidate" or is_critical:
                no_verdict.append(entry)
            continue
        if is_critical and case.id in cand_errors:
            # The ranking pairs, but a hard relation the candidate could not run may be the one it now breaks.
            no_verdict.append({"case": case.id, "critical": True, "side": "candidate", "reason": cand_errors[case.id]})
        base_values = _values(base, "baseline", base_name, case.id)
        cand_values = _values(cand, "candidate", cand_name, case.id)
        deltas: dict[str, dict[str, float | None]] = {}
        for name in sorted(set(base_values) & set(cand_values), key=_metric_key):
            metric = parse_metric(name)
            if metric.k is not None and metric.k not in ks:
                continue
            before, after = base_values[name], cand_values[name]
            if before is not None and after is not None:
                paired.setdefault(name, []).append((float(before), float(after)))
            if before != after:
                delta = None if before is None or after is None else float(after) - float(before)
                deltas[name] = {"baseline": before, "candidate": after, "delta": delta}
        evidence = {}
        lost_any = False
        for k in ks:
            had, has = _covered(base["ranking"], case, k), _covered(cand["ranking"], case, k)
            lost, gained = sorted(had - has), sorted(has - had)
            lost_any = lost_any or bool(lost)
            if lost or gained:
                evidence[str(k)] = {
                    "lost": [{"group": n, "members": list(case.evidence[n])} for n in lost],
                    "gained": [{"group": n, "members": list(case.evidence[n])} for n in gained],
                }
        claims_dropped = any(
            name.startswith("ClaimR") and change["delta"] is not None and change["delta"] < 0
            for name, change in deltas.items()
        )
        case_new, case_fixed = new_by_case.get(case.id, []), fixed_by_case.get(case.id, [])
        new_hard = any(v["severity"] == "hard" for v in case_new)
        rows.append(
            {
                "case": case.id,
                "query": case.query,
                "tags": list(case.tags),
                "tenant": case.tenant,
                "critical": is_critical,
                "lost": lost_any or claims_dropped or new_hard,
                "deltas": deltas,
                "evidence": evidence,
                "ranking": {
                    "baseline": [entry[0] for entry in base["ranking"][: max(ks)]],
                    "candidate": [entry[0] for entry in cand["ranking"][: max(ks)]],
                },
                "new_violations": case_new,
                "fixed_violations": case_fixed,
            }
        )
    names = sorted(paired, key=_metric_key)
    gated = _gate(gate, names, ks)
    p_values = [
        randomization_test([b for b, _ in paired[n]], [a for _, a in paired[n]], permutations=permutations, seed=seed)
        for n in names
    ]
    # Holm over the gated metrics only: they decide the exit code; the others are reported with their raw p.
    raw = dict(zip(names, p_values))
    adjusted = dict(zip(gated, holm([raw[n] for n in gated])))
    tests = []
    for name, p in zip(names, p_values):
        pairs = paired[name]
        before = math.fsum(b for b, _ in pairs) / len(pairs)
        after = math.fsum(a for _, a in pairs) / len(pairs)
        delta = after - before
        lower = _lower_is_better(name)
        worse = delta > _EPSILON if lower else delta < -_EPSILON
        better = delta < -_EPSILON if lower else delta > _EPSILON
        decisive = adjusted.get(name) if name in adjusted else p
        significant = decisive is not None and decisive < alpha
        verdict = "regression" if significant and worse else "improvement" if significant and better else "no significant change"
        tests.append(
            {
                "metric": name,
                "gate": name in adjusted,
                "queries": len(pairs),
                "baseline": before,
                "candidate": after,
                "delta": delta,
                "better": "lower" if lower else "higher",
                "p_value": p,
                "p_adjusted": adjusted.get(name),
                "significant": significant,
                "verdict": verdict,
                "worse_queries": sum(1 for b, a in pairs if (a > b if lower else a < b)),
                "better_queries": sum(1 for b, a in pairs if (a < b if lower else a > b)),
            }
        )
    lost_critical = [row["case"] for row in rows if row["critical"] and row["lost"]]
    regressions = [t["metric"] for t in tests if t["verdict"] == "regression" and t["gate"]]
    # As a run's exit code: a violation (here a regression) first, then errors that prevented a verdict.
    exit_code = ExitCode.VIOLATIONS if lost_critical or regressions else ExitCode.ERRORS if no_verdict else ExitCode.OK
    sources = dict(sources or {})
    return {
        "schema": COMPARE_SCHEMA,
        "manifest": {
            "corpus": dict(baseline["manifest"]["corpus"]),
            "cases": dict(baseline["manifest"]["cases"]),
            "baseline": {"retriever": base_name, "source": sources.get("baseline", "report")},
            "candidate": {"retriever": cand_name, "source": sources.get("candidate", "report")},
            "ks": ks,
            "critical_tags": sorted(critical),
            "test": {
                "name": "paired randomisation (sign-flip) test, two-sided; Holm-adjusted across the gated metrics",
                "gate": gated,
                "alpha": alpha,
                "permutations": permutations,
                "exact_up_to_queries": _EXACT_QUERIES,
                "seed": seed,
            },
        },
        "metrics": tests,
        "queries": rows,
        "violations": {"new": new, "fixed": fixed},
        "lost_critical": lost_critical,
        "unpaired": unpaired,
        "no_verdict": no_verdict,
        "summary": {
            "queries": len(rows),
            "unpaired": len(unpaired),
            "no_verdict": len(no_verdict),
            "regressions": len(regressions),
            "regressed_metrics": regressions,
            "improvements": sum(1 for t in tests if t["verdict"] == "improvement" and t["gate"]),
            "lost_queries": sum(1 for row in rows if row["lost"]),
            "lost_critical": len(lost_critical),
            "new_violations": len(new),
            "fixed_violations": len(fixed),
            "exit_code": int(exit_code),
        },
    }


def _metric_key(name: str) -> tuple[str, int, str]:
    metric = parse_metric(name)
    return (metric.measure, metric.k or 0, name)
