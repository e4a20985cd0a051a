"""The reasoning-trace study's unit page (seed 002): visibility (three layers per shape) or
compression.

Visibility units: the run's `template_probes` say, per shape, renderer and planted secret,
whether the secret is in the stored conversation, the wire body and the rendered prompt. The
page shows that matrix for every shape, and for one shape (`?shape=`, default the first with a
renderer disagreement, else the first) the three layers themselves: the stored conversation
and the wire body rebuilt from `pipeline.traces.visibility.shapes` (deterministic: the same
code the sweep sent them with), and the offline render of the unit's template text, taken
from the run's `chat_templates.json` (the tables keep prompt hashes, not prompts; a template
the run did not record cannot be re-rendered, and the page says so). Every planted secret is
marked in each layer. Where the two renderers disagree about a secret, the disagreement is
shown as a diff of their per-secret verdicts (`-` offline, `+` the server's own render).

Compression units: each trace of `trace_items.json` beside its summary (`compressions`), with
facts (`pipeline.traces.compression.facts`, the rule the scores use) marked kept or lost in the
trace, and kept or invented in the summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import polars as pl
from markupsafe import Markup

from pipeline.study import UnitPage
from pipeline.study_pages import BuiltInPages
from pipeline.view.highlight import line_diff, mark
from pipeline.view.runs import Run

OFFLINE, LIVE = "jinja2-hf", "llama-server"


def _shapes() -> dict[str, Any]:
    from pipeline.traces.visibility.shapes import all_shapes

    return {shape.name: shape for shape in all_shapes()}


def _verdicts(probes: list[dict[str, Any]], renderer: str) -> list[str]:
    return [
        f"{p['secret']} ({p['secret_field']}): "
        f"{'in rendered prompt' if p['in_rendered'] else 'NOT in rendered prompt'}"
        for p in probes
        if p["renderer"] == renderer and p["default_switches"]
    ]


def visibility(run: Run, row: Mapping[str, Any], wanted: str | None) -> dict[str, Any]:
    from pipeline.traces.visibility.render import render
    from pipeline.traces.visibility.visibility import shape_body

    probes = run.rows_for("template_probes", row["row_id"]).sort("shape", "renderer", "secret")
    default = probes.filter(pl.col("default_switches"))
    matrix: dict[str, dict[str, Any]] = {}
    for p in default.to_dicts():
        cell = matrix.setdefault(p["shape"], {"secrets": {}, "disagree": False, "error": ""})
        per = cell["secrets"].setdefault(p["secret"], {})
        per[p["renderer"]] = (p["in_stored"], p["in_wire"], p["in_rendered"])
        if p["error_type"]:
            cell["error"] = f"{p['renderer']}: {p['error_type']} {p['error_message']}"
    for cell in matrix.values():
        cell["disagree"] = any(
            len({v[2] for v in per.values()}) > 1 for per in cell["secrets"].values()
        )
    names = list(matrix)
    chosen = (
        wanted
        if wanted in matrix
        else next((n for n in names if matrix[n]["disagree"]), names[0] if names else None)
    )
    layers: dict[str, Any] = {}
    refused = None
    if chosen is not None:
        shape = _shapes().get(chosen)
        rows = probes.filter(pl.col("shape") == chosen).to_dicts()
        templates, refused = run.json_input("chat_templates.json")
        templates = templates or {}
        offline = next((r for r in rows if r["renderer"] == OFFLINE), None)
        name = (offline or {}).get("template") or row.get("template_name")
        text = (templates.get(name) or {}).get("text") if name else None
        if shape is not None:
            secrets = {s.token: "secret" for s in shape.secrets}
            body = shape_body(shape)
            prompt: Markup | str = (
                f"{refused}: cannot re-render"
                if refused
                else "template text not recorded in this run: cannot re-render"
            )
            if text:
                outcome = render(text, body["messages"], tools=body.get("tools"))
                prompt = (
                    mark(outcome.prompt, secrets)
                    if outcome.prompt is not None
                    else f"render failed: {outcome.error_type} {outcome.error_message}"
                )
            layers = {
                "stored": mark(
                    json.dumps(list(shape.messages), indent=2, ensure_ascii=False), secrets
                ),
                "wire": mark(json.dumps(body, indent=2, ensure_ascii=False), secrets),
                "rendered": prompt,
                "template": name,
                "diff": line_diff(
                    "\n".join(_verdicts(rows, OFFLINE)),
                    "\n".join(_verdicts(rows, LIVE)),
                    labels=(OFFLINE, LIVE),
                ),
                "has_live": any(r["renderer"] == LIVE for r in rows),
            }
    return {
        "matrix": matrix,
        "shape": chosen,
        "layers": layers,
        "recitals": run.rows_for("recitals", row["row_id"]).sort("shape", "secret").to_dicts(),
        "refused": refused,
    }


def compression(run: Run, row: Mapping[str, Any]) -> dict[str, Any]:
    from pipeline.traces.compression.facts import extract
    from pipeline.traces.compression.matching import split

    stored, refused = run.json_input("trace_items.json")
    items = {i["id"]: i for i in (stored or {}).get("items") or []}
    out = []
    for c in run.rows_for("compressions", row["row_id"]).sort("item_id").to_dicts():
        trace = (items.get(c["item_id"]) or {}).get("text")
        summary = c.get("summary") or ""
        entry: dict[str, Any] = {"row": c, "trace": None, "summary": mark(summary, {})}
        if trace is not None:
            trace_facts = extract(trace)
            kept = split(trace_facts, summary)
            invented = split(extract(summary), trace).absent
            in_trace = {f.value: "kept" for f in kept.present} | {
                f.value: "lost" for f in kept.absent
            }
            in_summary = {f.value: "kept" for f in kept.present} | {
                f.value: "invented" for f in invented
            }
            entry.update(
                trace=mark(trace, in_trace),
                summary=mark(summary, in_summary),
                kept=[f.value for f in kept.present],
                lost=[f.value for f in kept.absent],
                invented=[f.value for f in invented],
            )
        out.append(entry)
    return {"compressions": out, "items_missing": not items and not refused, "refused": refused}


def traces_unit(run: Run, row: Mapping[str, Any], shape: str | None) -> dict[str, Any]:
    if row.get("part") == "visibility" or row.get("arm") == "visibility":
        return {"part": "visibility", **visibility(run, row, shape)}
    return {"part": "compression", **compression(run, row)}


class TracesPages(BuiltInPages):
    """The unit page (`pipeline.study.StudyPages`), one shape at a time."""

    preload: tuple[str, ...] = ("template_probes", "recitals", "compressions")

    def unit(self, run: Run, row: Mapping[str, Any], params: Mapping[str, str]) -> UnitPage:
        return UnitPage("unit_traces.html", traces_unit(run, row, params.get("shape")))


PAGES = TracesPages()
