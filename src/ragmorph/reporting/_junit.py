"""JUnit XML: one testcase per retriever x strategy x relation, aggregated over cases, for CI dashboards."""

from __future__ import annotations

import io
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..io import atomic_write_bytes
from ..secrets import redact_data
from ._common import (
    STATUSES,
    cells,
    format_value,
    ordered_results,
    relation_rows,
    retriever_names,
    slice_label,
    slice_metrics,
    worst_slices,
)
from ._common import xml_text as _xml
from ._terminal import render_violation

__all__ = ["junit_tree", "write_junit"]


def _classname(retriever: str, strategy: str) -> str:
    # Dashboards split classnames on dots into packages, so a dotted import string would nest oddly.
    return f"ragmorph.{retriever.replace('.', '_')}.{strategy}"


def junit_tree(report: Mapping[str, Any]) -> ET.ElementTree:
    """The JUnit document of `report` (see `write_junit`)."""
    manifest = report.get("manifest", {})
    table = cells(report)
    by_cell: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for result in ordered_results(report):
        by_cell.setdefault((result["retriever"], result["strategy"], result["relation"]), []).append(result)
    described = {r["name"]: r for r in manifest.get("retrievers", ())}
    root = ET.Element("testsuites", name="ragmorph")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for retriever in retriever_names(report):
        suite = ET.SubElement(root, "testsuite", name=_xml(f"ragmorph[{retriever}]"))
        properties = ET.SubElement(suite, "properties")
        info = described.get(retriever, {})
        spent = report.get("summary", {}).get("calls_by_retriever", {}).get(retriever)
        for name, value in (
            ("retriever", retriever),
            ("retriever_description", info.get("description", "")),
            ("retriever_kind", info.get("kind", "")),
            ("ragmorph_version", manifest.get("ragmorph_version", "")),
            ("seed", manifest.get("seed", "")),
            ("corpus_fingerprint", manifest.get("corpus", {}).get("fingerprint", "")),
            ("cases_fingerprint", manifest.get("cases", {}).get("fingerprint", "")),
            *(
                (("retriever_calls", spent["retriever_calls"]), ("calls_per_case", f"{spent['calls_per_case']:g}"))
                if spent else ()
            ),
        ):
            ET.SubElement(properties, "property", name=name, value=_xml(value))
        for row in worst_slices(report, retriever):
            ET.SubElement(properties, "property", name=_xml(f"slice {slice_label(row)}"), value=_xml(_slice_value(report, row)))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for strategy, relation, severity in relation_rows(report):
            cell = table.get((retriever, strategy, relation))
            if cell is None:
                continue
            results = by_cell[(retriever, strategy, relation)]
            case = ET.SubElement(
                suite, "testcase", classname=_xml(_classname(retriever, strategy)), name=_xml(relation), time="0"
            )
            counts["tests"] += 1
            per_case = [f"{r['case']}: {r['status']}" + (f" ({r['reason']})" if r.get("reason") else "") for r in results]
            if cell.status == "fail":
                counts["failures"] += 1
                failing = [r for r in results if r["status"] == "fail"]
                message = f"{len(failing)} of {len(results)} cases violate {relation} ({severity}): " + ", ".join(
                    r["case"] for r in failing
                )
                body = "\n\n".join(
                    render_violation(r["violation"], retriever=retriever) if r.get("violation") else
                    f"case {r['case']}: {r.get('reason') or 'violated (no violation record)'}"
                    for r in failing
                )
                element = ET.SubElement(case, "failure", message=_xml(message), type=severity)
                element.text = _xml(body)
            elif cell.status == "error":
                counts["errors"] += 1
                erred = [r for r in results if r["status"] == "error"]
                message = f"{len(erred)} of {len(results)} cases could not be judged: " + "; ".join(cell.reasons)
                element = ET.SubElement(case, "error", message=_xml(message), type="RetrieverError")
                element.text = _xml("\n".join(per_case))
            elif cell.status == "not_applicable":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_xml("; ".join(cell.reasons) or "not applicable"))
            if cell.soft and cell.tested:
                per_case.insert(0, f"soft relation held in {cell.held}/{cell.tested} perturbations ({cell.rate:.0%})")
            if cell.status != "not_applicable":
                ET.SubElement(case, "system-out").text = _xml("\n".join(per_case))
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", "0")
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", "0")
    tree = ET.ElementTree(root)
    ET.indent(tree, space="  ")
    return tree


def _slice_value(report: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """`cases=8 hard_failures=0 pass=54 fail=0 error=0 not_applicable=10 soft=36/36 GroupR@10=1.000(6) ...`."""
    status, soft = row.get("status", {}), row.get("soft", {})
    parts = [f"cases={row.get('cases', 0)}", f"cases_with_hard_failures={len(row.get('failing_cases') or ())}"]
    parts += [f"{s}={status.get(s, 0)}" for s in STATUSES]
    parts.append(f"soft={soft.get('held', 0)}/{soft.get('tested', 0)}")
    for name in slice_metrics(report):
        value = row.get("metrics", {}).get(name) or {}
        parts.append(f"{name}={format_value(value.get('macro'))}({value.get('queries', 0)})")
    return " ".join(parts)


def write_junit(report: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write JUnit XML: per retriever a testsuite; per strategy x relation a testcase aggregated over cases.

    A hard violation in any case is a <failure> holding each minimal case; retriever errors are <error>;
    a relation not applicable to any case is <skipped message=reason>; soft rates go to <system-out>. Slices (per
    tag and tenant, worst first) are testsuite properties named `slice tag hr`, so they add no test counts.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    junit_tree(redact_data(report)).write(buffer, encoding="utf-8", xml_declaration=True)
    atomic_write_bytes(target, buffer.getvalue())
    return target
