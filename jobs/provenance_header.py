"""The provenance header every study's report opens with: what run this is, in one table.

A reader of a forwarded report.md must be able to tell, without the run directory, which
run, study, panel, inputs (scenario or corpus, with its SHA-256), arms, repeats, code (git sha,
package versions) and probe verdicts produced it, and whether it is simulated. Everything is
read from the run's manifest (pipeline/store/manifest.py) and its plan, both written by the
engine identically for every study, so a new study gets the header with one call:
`provenance_header(run_dir, title=..., rows_simulated=...)`.

Decisions:
- Simulated is true when any row is simulated (the caller says so from its rows) or the run
  was planned on simulated endpoints (`extra.simulated`, or a panel of kind `sim`). A simulated
  report's FIRST line says SIMULATED (DESIGN §1), before the title.
- Arms are the plan's distinct arms, sorted (every study plans its arms or policies there; plan
  order is the schedule's, which reads as noise); with no plan, the study config's `arms` keys
  or `policies`.
- The inputs line names the study config's `scenario.name` and/or `corpora` (or, when set,
  `transcripts_dir`, which replaces the corpora: the corpora actually read), then the scalar
  fields the study recorded in `extra.inputs` (e.g. `transcripts`), and the input digest (the
  manifest's `fixture_sha256`: a fixture's or a corpus's SHA-256).
- Probe verdicts are grouped per configuration (`shape verdict, ...`); configurations with the
  same verdicts share a line so a 20-configuration panel stays short. An offline panel probes
  nothing and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs import io
from jobs.partial_run import partial_lines
from jobs.requests_summary import request_lines

SIMULATED_BANNER = (
    "SIMULATED — rows of this run come from simulated endpoints; no figure below describes "
    "a real model."
)
UNKNOWN = "—"


@dataclass(frozen=True)
class Provenance:
    """The header's facts, each already a display string (UNKNOWN when not recorded)."""

    run_id: str
    study: str
    status: str
    panel: str
    inputs: str
    input_sha256: str
    arms: str
    repeats: str
    git: str
    versions: str
    probes: tuple[str, ...]
    simulated: bool


def run_is_simulated(manifest: Mapping[str, Any] | None, *, rows_simulated: bool) -> bool:
    """Any row simulated, or the run planned on simulated endpoints (manifest)."""
    extra = (manifest or {}).get("extra")
    planned = isinstance(extra, Mapping) and bool(extra.get("simulated"))
    panel = _mapping(_mapping((manifest or {}).get("config")).get("panel"))
    return rows_simulated or planned or panel.get("kind") == "sim"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return UNKNOWN if value is None or value == "" else str(value)


def _inputs(study_node: Mapping[str, Any], recorded: Mapping[str, Any]) -> str:
    parts = []
    scenario = _mapping(study_node.get("scenario")).get("name") or study_node.get("scenario")
    if isinstance(scenario, str):
        parts.append(f"scenario `{scenario}`")
    corpora = study_node.get("corpora")
    own = study_node.get("transcripts_dir")
    if isinstance(own, str) and own:  # it replaces the corpora: name what was read
        parts.append(f"transcripts_dir `{own}`")
    elif isinstance(corpora, Sequence) and not isinstance(corpora, str) and corpora:
        parts.append("corpora " + ", ".join(f"`{c}`" for c in corpora))
    scalars = [
        f"{key} {value}"
        for key, value in sorted(recorded.items())
        if isinstance(value, int | float | str) and not key.endswith("sha256")
    ]
    return "; ".join(parts + scalars) or UNKNOWN


def _arms(plan_arms: Sequence[str], study_node: Mapping[str, Any]) -> str:
    arms = list(plan_arms)
    if not arms:
        configured = study_node.get("arms") or study_node.get("policies") or []
        arms = [str(a) for a in configured]
    return ", ".join(f"`{a}`" for a in arms) or UNKNOWN


def probe_lines(probes: Sequence[Mapping[str, Any]], panel_kind: object) -> tuple[str, ...]:
    """`shape verdict, ...: config, config` per distinct verdict set, in config order."""
    by_config: dict[str, list[str]] = {}
    for probe in probes:
        config = str(probe.get("config_id", UNKNOWN))
        by_config.setdefault(config, []).append(f"{probe.get('shape')} {probe.get('verdict')}")
    if not by_config:
        if panel_kind == "offline":
            return ("none: an offline panel has no endpoint to probe",)
        return ("none recorded",)
    grouped: dict[str, list[str]] = {}
    for config in sorted(by_config):
        grouped.setdefault(", ".join(by_config[config]), []).append(config)
    return tuple(f"{verdicts}: {', '.join(configs)}" for verdicts, configs in grouped.items())


def provenance(
    manifest: Mapping[str, Any] | None,
    plan_arms: Sequence[str],
    *,
    run_id: str,
    rows_simulated: bool,
) -> Provenance:
    """The header's facts from a manifest (as JSON) and the plan's arms; pure."""
    m = _mapping(manifest)
    config, extra = _mapping(m.get("config")), _mapping(m.get("extra"))
    study_node = _mapping(config.get("study"))
    panel = _mapping(config.get("panel"))
    panel_name = extra.get("panel") or panel.get("name")
    kind = panel.get("kind")
    sha = m.get("git_sha")
    git = (
        UNKNOWN if not sha else str(sha) + (" (uncommitted changes)" if m.get("git_dirty") else "")
    )
    versions = _mapping(m.get("versions"))
    return Provenance(
        run_id=str(m.get("run_id") or run_id),
        study=_text(m.get("study")),
        status=_text(m.get("status")),
        panel=_text(panel_name) + (f" (kind {kind})" if kind and kind != panel_name else ""),
        inputs=_inputs(study_node, _mapping(extra.get("inputs"))),
        input_sha256=_text(m.get("fixture_sha256")),
        arms=_arms(plan_arms, study_node),
        repeats=_text(config.get("repeats")),
        git=git,
        versions=", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or UNKNOWN,
        probes=probe_lines(m.get("probes") or [], kind) if manifest else (),
        simulated=run_is_simulated(manifest, rows_simulated=rows_simulated),
    )


def provenance_table(p: Provenance) -> list[str]:
    """The provenance as a two-column markdown table (for reports with their own opening)."""
    rows = [
        ("run", f"`{p.run_id}`"),
        ("study", p.study),
        ("status", p.status),
        ("simulated", "**yes**" if p.simulated else "no"),
        ("panel", p.panel),
        ("inputs", p.inputs),
        ("input SHA-256 (fixture or corpus)", f"`{p.input_sha256}`"),
        ("arms", p.arms),
        ("repeats", p.repeats),
        ("git sha", p.git),
        ("versions", p.versions),
        ("probe verdicts (per configuration)", "<br>".join(p.probes) or UNKNOWN),
    ]
    lines = ["| provenance | |", "|---|---|"]
    lines += [f"| {name} | {value.replace('|', '/')} |" for name, value in rows]
    return [*lines, ""]


def header_lines(p: Provenance, *, title: str, lead: Sequence[str] = ()) -> list[str]:
    """Markdown: the SIMULATED banner (first line) when simulated, the title, the study's
    `lead` lines (what a reader must know before any figure), the table."""
    lines = [SIMULATED_BANNER, ""] if p.simulated else []
    return [*lines, f"# {title}", "", *lead, *provenance_table(p)]


def arms_in_order(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Distinct arms of plan records, sorted."""
    return sorted({str(r["arm"]) for r in records if r.get("arm") is not None})


def plan_arms(run_dir: Path) -> list[str]:
    """The plan's distinct arms, sorted (empty without a plan)."""
    plan = io.plan_table(run_dir)
    if plan is None or "arm" not in plan.columns:
        return []
    return arms_in_order(plan.select("arm").to_dicts())


def provenance_header(
    run_dir: Path, *, title: str, rows_simulated: bool, lead: Sequence[str] = ()
) -> list[str]:
    """The top of a report: banner if simulated, title, `lead` (e.g. the carrier's warning
    that its models recalled nothing: it comes before provenance and requests, issue 32),
    provenance table, requests (reads the run dir)."""
    manifest = io.read_manifest(run_dir)
    facts = provenance(
        manifest, plan_arms(run_dir), run_id=run_dir.name, rows_simulated=rows_simulated
    )
    lead = [*partial_lines(run_dir), *lead]  # a run still being written: say so first
    return [*header_lines(facts, title=title, lead=lead), *request_lines(run_dir)]
