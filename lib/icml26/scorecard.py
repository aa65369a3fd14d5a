"""The scorecard: every chapter and claim, the paper's value vs ours, from one scale's results files.

It is generated from `results/<scale>/*.json` by the same `repro book` run that produced them, so it
can never be stale or hand-written.
"""
from __future__ import annotations

import json
from pathlib import Path

from .ledger import FAILED, NOT_REACHED, NOT_REPRODUCED, REPRODUCED, tally
from .registry import CHAPTERS


def load_results(results_root: Path, scale: str) -> dict[str, dict]:
    folder = Path(results_root) / scale
    records = {}
    for path in sorted(folder.glob("*.json")):
        try:
            records[path.stem] = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            records[path.stem] = {"slug": path.stem, "status": "unreadable", "claims": [], "error": str(exc)}
    return records


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def chapter_status(slug: str, records: dict[str, dict], written: set[str], run_status: dict[str, str]) -> str:
    if slug not in written:
        return "not yet written"
    if run_status.get(slug) == "failed":
        return "run failed"
    if slug not in records:
        return "no results"
    return "ok" if records[slug].get("status") == "ok" else "claims failed"


def summary_rows(records: dict[str, dict], written: set[str], run_status: dict[str, str] | None = None) -> list[dict]:
    """One row per registered chapter (and any extra results), with its claims counts."""
    run_status = run_status or {}
    slugs = [c.slug for c in CHAPTERS] + sorted(set(records) - {c.slug for c in CHAPTERS})
    rows = []
    for slug in slugs:
        counts = tally(records.get(slug, {}).get("claims", []))
        rows.append({
            "slug": slug,
            "status": chapter_status(slug, records, written, run_status),
            "reproduced": counts[REPRODUCED],
            "not reproduced": counts[NOT_REPRODUCED] + counts[NOT_REACHED],
            "failed": counts[FAILED],
            "claims": counts["total"],
            "seconds": records.get(slug, {}).get("timings", {}).get("total"),
        })
    return rows


def render_markdown(records: dict[str, dict], scale: str, written: set[str], run_status: dict[str, str] | None = None) -> str:
    """The scorecard as MyST Markdown: a summary table, then every claim of every chapter."""
    rows = summary_rows(records, written, run_status)
    n_claims = sum(r["claims"] for r in rows)
    n_repro = sum(r["reproduced"] for r in rows)
    lines = [
        f"All numbers below come from the `{scale}`-scale results of this build "
        f"(`results/{scale}/*.json`): {n_repro} of {n_claims} claims reproduced over "
        f"{sum(r['status'] != 'not yet written' for r in rows)} chapters written of {len(CHAPTERS)}.",
        "",
        "## Chapters",
        "",
        "| chapter | status | claims | reproduced | not reproduced / not reached | failed | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        link = f"[{r['slug']}](../notebooks/{r['slug']}.ipynb)" if r["slug"] in written else r["slug"]
        seconds = f"{r['seconds']:.0f}" if isinstance(r["seconds"], (int, float)) else ""
        lines.append(f"| {link} | {r['status']} | {r['claims']} | {r['reproduced']} | {r['not reproduced']} | {r['failed']} | {seconds} |")
    lines += ["", "## Every claim", ""]
    any_claims = False
    for slug, record in records.items():
        if not record.get("claims"):
            continue
        any_claims = True
        commit = (record.get("git") or {}).get("commit") or "unknown"
        lines += [
            f"### {_cell(record.get('title', slug))}",
            "",
            f"Chapter `{slug}`, scale `{record.get('scale', scale)}`, seed {record.get('seed')}, "
            f"commit `{commit[:10]}`, finished {record.get('finished', '?')}.",
            "",
            "| id | claim | paper | source | measured | test | declared at | status |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in record["claims"]:
            declared = ", ".join(c.get("holds_at", [])) or "none"
            lines.append(
                f"| {_cell(c['id'])} | {_cell(c['statement'])} | {_cell(c['paper_value'])} | {_cell(c['paper_source'])} "
                f"| {_cell(c['measured_text'])} | {_cell(c['comparison'])} | {declared} | **{_cell(c['status'])}** |"
            )
        lines.append("")
    if not any_claims:
        lines += ["No chapter has results at this scale yet: run `make book` (or `repro book`).", ""]
    return "\n".join(lines)


def render_text(records: dict[str, dict], scale: str, written: set[str]) -> str:
    """A plain-text scorecard for the terminal (`repro report`)."""
    rows = summary_rows(records, written)
    out = [f"scorecard, scale {scale}", f"{'chapter':<26} {'status':<16} {'claims':>6} {'repro':>6} {'not':>5} {'failed':>6}"]
    for r in rows:
        out.append(f"{r['slug']:<26} {r['status']:<16} {r['claims']:>6} {r['reproduced']:>6} {r['not reproduced']:>5} {r['failed']:>6}")
    for slug, record in records.items():
        for c in record.get("claims", []):
            out.append(f"  {slug}/{c['id']}: {c['status']:<15} measured {c['measured_text']} (test {c['comparison']}; paper {c['paper_value']}, {c['paper_source']})")
    return "\n".join(out)
