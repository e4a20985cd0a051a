"""The report of a run in which no unit was attempted, and the one line naming why.

Shared by every study (the registry, pipeline.studies, applies it): it reads only what the
engine writes (the manifest and the plan), never a study's tables. A sweep whose every planned
unit is not run (every configuration failed its probes, a server that could not serve or
start, a stop before the first dispatch) has no rows to analyze. Its report.md still exists
and opens with why nothing ran: per configuration, the not-run reason and the probe verdicts
behind it (shape, verdict, detail such as the URL). `cause_line` is the same reason in one
line, e.g. "2 of 2 configurations unreachable: connection refused at
http://127.0.0.1:9/v1"; the sweep prints it as its error.

Inputs are the manifest (as JSON) and the plan's records, so the functions are pure; only
`write_nothing_ran_report` touches the disk (through jobs.io).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs import io
from jobs.provenance_header import arms_in_order, provenance, provenance_table

REPORT_FILE = "report.md"
PROBE_PREFIX = "probe:"
MAX_HEADLINES = 2  # distinct details quoted per verdict in the one-line cause


def detail_headline(detail: str) -> str:
    """The readable head of a probe verdict's detail: everything before its first " (" (the
    rest is the raw error; pipeline.endpoints.probe writes details so), at most 160 characters.
    It reads the manifest's text only, so this module needs nothing of the endpoints."""
    head = detail.split(" (", 1)[0].strip() or detail.strip()
    return head if len(head) <= 160 else head[:157] + "..."


@dataclass(frozen=True)
class ConfigCause:
    """Why one configuration ran nothing: its not-run reasons and the verdicts behind them."""

    config_id: str
    not_run: int  # planned units of this configuration that are not run
    reasons: tuple[str, ...]  # distinct not-run reasons, most frequent first
    verdicts: tuple[Mapping[str, Any], ...]  # its probe verdicts that are not ok

    @property
    def verdict(self) -> str:
        """The primary cause: the verdict of the most frequent reason (or the reason)."""
        reason = self.reasons[0] if self.reasons else "unspecified"
        return reason.removeprefix(PROBE_PREFIX)

    @property
    def headline(self) -> str:
        """The readable detail of the primary verdict's first real probe (not "not attempted")."""
        matching = [v for v in self.verdicts if v.get("verdict") == self.verdict]
        first = next(
            (v for v in matching if not str(v.get("detail", "")).startswith("not attempted")),
            matching[0] if matching else None,
        )
        return detail_headline(str(first.get("detail", ""))) if first else ""


def config_causes(
    manifest: Mapping[str, Any] | None, plan: Sequence[Mapping[str, Any]]
) -> list[ConfigCause]:
    """One ConfigCause per planned configuration, in plan order."""
    probes = [p for p in (manifest or {}).get("probes", []) if isinstance(p, Mapping)]
    order: list[str] = []
    reasons: dict[str, Counter[str]] = {}
    for record in plan:
        config_id = str(record.get("config_id"))
        if config_id not in reasons:
            order.append(config_id)
            reasons[config_id] = Counter()
        if record.get("status") == "not_run":
            reasons[config_id][str(record.get("not_run_reason") or "unspecified")] += 1
    return [
        ConfigCause(
            config_id=config_id,
            not_run=sum(reasons[config_id].values()),
            reasons=tuple(r for r, _ in reasons[config_id].most_common()),
            verdicts=tuple(
                p for p in probes if p.get("config_id") == config_id and p.get("verdict") != "ok"
            ),
        )
        for config_id in order
    ]


def _panel_excluded(manifest: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    extra = (manifest or {}).get("extra")
    excluded = extra.get("panel_excluded") if isinstance(extra, Mapping) else None
    return [e for e in excluded if isinstance(e, Mapping)] if isinstance(excluded, list) else []


def _error(manifest: Mapping[str, Any] | None) -> str | None:
    extra = (manifest or {}).get("extra")
    error = extra.get("error") if isinstance(extra, Mapping) else None
    return str(error) if error else None


def cause_line(manifest: Mapping[str, Any] | None, plan: Sequence[Mapping[str, Any]]) -> str:
    """Why nothing ran, in one line (no "error: " prefix)."""
    status = (manifest or {}).get("status")
    error = _error(manifest)
    if status == "failed" and error:
        return error
    if status == "stopped":
        return "the sweep was stopped before any unit ran"
    every = config_causes(manifest, plan)
    causes = [c for c in every if c.not_run > 0]
    excluded = _panel_excluded(manifest)
    total = len(every) + len(excluded)
    if not plan:
        return "no unit was planned"
    if not causes:
        return "no unit ran, yet none is marked not run (see the plan)"
    groups: dict[str, list[ConfigCause]] = {}
    for cause in causes:
        groups.setdefault(cause.verdict, []).append(cause)
    parts = []
    for verdict, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        heads = list(dict.fromkeys(m.headline for m in members if m.headline))
        shown = "; ".join(heads[:MAX_HEADLINES])
        if len(heads) > MAX_HEADLINES:
            shown += f"; and {len(heads) - MAX_HEADLINES} more (see the report)"
        noun = "configuration" if total == 1 else "configurations"
        parts.append(
            f"{len(members)} of {total} {noun} {verdict}" + (f": {shown}" if shown else "")
        )
    if excluded:
        parts.append(f"{len(excluded)} excluded by the panel's rules")
    return "; ".join(parts)


def _cell(value: object) -> str:
    text = " ".join(str(value if value is not None else "—").split())
    return text.replace("|", "\\|") or "—"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _run_status(manifest: Mapping[str, Any] | None) -> list[str]:
    """The sweep's own accounting: planned = valid + invalid + not run (manifest counts)."""
    counts = (manifest or {}).get("counts")
    if not isinstance(counts, Mapping):
        return []

    def by_reason(mapping: object) -> str:
        items = mapping.items() if isinstance(mapping, Mapping) else []
        return ", ".join(f"{k} {v}" for k, v in sorted(items)) or "none"

    return [
        f"Sweep status: {(manifest or {}).get('status', '?')}. Planned units "
        f"{counts.get('planned')}: valid {counts.get('valid')}; invalid by reason: "
        f"{by_reason(counts.get('invalid'))}; not run by reason: "
        f"{by_reason(counts.get('not_run'))}; pending {counts.get('pending')}.",
        "",
    ]


def _cause_table(causes: Sequence[ConfigCause]) -> list[str]:
    rows = []
    for cause in causes:
        reasons = ", ".join(cause.reasons) or "—"
        if not cause.verdicts:
            rows.append([cause.config_id, str(cause.not_run), reasons, "—", "—", "—"])
        for i, v in enumerate(cause.verdicts):
            head = [cause.config_id, str(cause.not_run), reasons] if i == 0 else ["", "", ""]
            rows.append(
                [*head, _cell(v.get("shape")), _cell(v.get("verdict")), _cell(v.get("detail"))]
            )
    header = ["config", "not run", "not-run reason", "shape", "verdict", "detail"]
    return _table(header, rows)


def _overrides(manifest: Mapping[str, Any] | None) -> str:
    extra = (manifest or {}).get("extra")
    items = extra.get("overrides") if isinstance(extra, Mapping) else None
    if not isinstance(items, list):
        return ""
    local = ("out_dir=", "progress=", "resume=")  # where and how to run, not what to probe
    return " ".join(str(o) for o in items if not str(o).startswith(local))


def _next_steps(
    manifest: Mapping[str, Any] | None, planned: bool, run_dir: Path | None
) -> list[str]:
    status = (manifest or {}).get("status")
    resume = f"`python -m pipeline sweep resume={run_dir or 'RUN_DIR'}`"
    if status == "failed" and planned:
        return [f"- Fix the cause above (the error says how), then continue this run: {resume}"]
    if status == "failed":
        return [
            "- Fix the cause above (the error says how), then start a new sweep: this run has "
            "no plan to resume."
        ]
    if status == "stopped":
        return [f"- Continue this run: {resume}"]
    overrides = _overrides(manifest)
    probe_command = "python -m pipeline probe" + (f" {overrides}" if overrides else "")
    return [
        f"- Probe the configurations again without sweeping: `{probe_command}`",
        "- A resume does not probe again: once the cause is fixed, start a new sweep with the "
        "same overrides.",
    ]


def render(
    manifest: Mapping[str, Any] | None,
    plan: Sequence[Mapping[str, Any]],
    run_dir: Path | None = None,
) -> str:
    """report.md of a run without a single attempt: why, then the shared provenance table."""
    facts = provenance(
        manifest,
        arms_in_order(plan),
        run_id=run_dir.name if run_dir else "?",
        rows_simulated=False,
    )
    lines = []
    if facts.simulated:
        lines.append("SIMULATED — this run was planned against simulated endpoints.")
    cause = cause_line(manifest, plan)
    if plan:
        scope = (
            "No planned unit of this run was attempted, so there are no rows to analyze: "
            "this report has no result tables or figures. Below, per configuration: how many "
            "planned units are not run, why, and the probe verdicts behind it (per "
            "request shape; a verdict describes the endpoint and the request sent, not the "
            "model)."
        )
    else:
        scope = (
            "The run ended before its plan was written: nothing was planned or attempted, so "
            "this report has no tables or figures."
        )
    lines += [
        f"Nothing ran: {cause.rstrip('.')}.",
        "",
        "# foldsweep report: no unit was attempted",
        "",
        *provenance_table(facts),
        scope,
        "",
    ]
    error = _error(manifest)
    if error:
        lines += [f"Error recorded in the manifest: {error}", ""]
    causes = config_causes(manifest, plan)
    if causes:
        lines += ["## Why, per configuration", "", *_cause_table(causes), ""]
    lines += _run_status(manifest)
    excluded = _panel_excluded(manifest)
    if excluded:
        rows = [
            [_cell(e.get("config_id")), _cell(e.get("model")), _cell(e.get("reason"))]
            for e in excluded
        ]
        lines += [
            "## Excluded by the panel's rules (never planned)",
            "",
            *_table(["config", "model", "reason"], rows),
            "",
        ]
    lines += ["## What next", "", *_next_steps(manifest, bool(plan), run_dir), ""]
    return "\n".join(lines)


def read_inputs(run_dir: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The manifest (JSON) and the plan's records of a run directory."""
    plan = io.plan_table(run_dir)
    return io.read_manifest(run_dir), plan.to_dicts() if plan is not None else []


def run_cause(run_dir: Path) -> str:
    """`cause_line` of a run directory."""
    manifest, plan = read_inputs(run_dir)
    return cause_line(manifest, plan)


def write_nothing_ran_report(run_dir: Path) -> Path:
    """Writes RUN_DIR/analysis/report.md for a run without rows; returns its path."""
    run_dir = io.require_run_dir(Path(run_dir))
    manifest, plan = read_inputs(run_dir)
    return io.write_text(render(manifest, plan, run_dir), io.analysis_dir(run_dir) / REPORT_FILE)
