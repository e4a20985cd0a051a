"""Part 1 offline and live: every template's visibility matrix, its class, and where the two
renderers disagree.

Decisions (docs/tables.md "Reasoning-trace study tables"):
- The run's templates (shipped and the user's `study.templates`) are rendered here, offline,
  from the run's `chat_templates.json` (`visibility.matrix`: every shape under every switch
  setting a template tests), so the matrix is a function of the run's recorded inputs, not of
  today's data/ folder. Every render goes through a `RenderSandbox` (bounded in time, memory
  and output; docs/traces.md "Reasoning traces: bounded renders"), after the file passed the
  provenance lock (`tables.read_template_entries`).
- `source` is `shipped` or `user` for the offline rows and `endpoint` for a configuration's
  own template; `template_source` says where the text came from (`shipped`, `user`, `gguf`,
  or `server` for the live server's own render).
- `template_switch_classes` classes every template row once per switch setting rendered
  (the class per switch value); the endpoint's live renders have the default setting only.
- An endpoint's own template is classed once per (configuration, renderer) from
  `template_probes`: the `jinja2-hf` rows (the offline renderer over the template text the
  server reads) and the `llama-server` rows (the server's own render) are classed separately,
  so a class that depends on the renderer shows as two rows.
- Disagreements pair the two renderers per configuration (`agreement.disagreements`, on
  template, shape, switches and secret); `prompt_agreement` counts byte-identical prompts.
- A heatmap cell is the share of secrets that reached the rendered prompt, over the default
  render's records (no switch passed) that rendered, in the dialects the template reads (all
  dialects for a template that reads none, so its cells are 0); a crashed render is not
  evidence. With no rendered record a cell is null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from pipeline.traces.records import PROBE_COLUMNS
from pipeline.traces.visibility import as_rows, classify, disagreements, matrix, prompt_agreement
from pipeline.traces.visibility.classify import setting_rows
from pipeline.traces.visibility.sandbox import RenderSandbox
from pipeline.traces.visibility.shapes import STRUCTURES
from pipeline.traces.visibility.visibility import RENDERER

Record = Mapping[str, Any]
SHIPPED = "shipped"
USER = "user"
ENDPOINT = "endpoint"
_DTYPES = {"string": pl.String, "int64": pl.Int64, "int32": pl.Int32, "bool": pl.Boolean}
PROBE_SCHEMA = {c.name: _DTYPES[c.type] for c in PROBE_COLUMNS}

CLASS_SCHEMA = {
    "source": pl.String,
    "template_source": pl.String,
    "config_id": pl.String,
    "renderer": pl.String,
    "template": pl.String,
    "visibility": pl.String,
    "unrenderable_reason": pl.String,
    "dialects_read": pl.String,
    "tool_calls_dropped": pl.Boolean,
    "switches_read": pl.String,
    "switch_effects": pl.String,
    "shapes_rendered": pl.Int64,
    "shapes_crashed": pl.Int64,
    "crash_errors": pl.String,
}
SWITCH_CLASS_SCHEMA = {
    "source": pl.String,
    "template_source": pl.String,
    "config_id": pl.String,
    "renderer": pl.String,
    "template": pl.String,
    "switches": pl.String,
    "visibility": pl.String,
    "unrenderable_reason": pl.String,
}
DISAGREEMENT_SCHEMA = {
    "config_id": pl.String,
    "template": pl.String,
    "shape": pl.String,
    "switches": pl.String,
    "secret": pl.String,
    "baseline": pl.String,
    "renderer": pl.String,
    "baseline_rendered": pl.Boolean,
    "rendered": pl.Boolean,
    "baseline_in_rendered": pl.Boolean,
    "in_rendered": pl.Boolean,
    "baseline_error": pl.String,
    "error": pl.String,
}
AGREEMENT_SCHEMA = {
    "config_id": pl.String,
    "renderer": pl.String,
    "template": pl.String,
    "renders": pl.Int64,
    "identical": pl.Int64,
}
CELL_SCHEMA = {
    "source": pl.String,
    "config_id": pl.String,
    "renderer": pl.String,
    "template": pl.String,
    "structure": pl.String,
    "secrets": pl.Int64,
    "in_rendered": pl.Int64,
    "share": pl.Float64,
}


def shipped_matrix(entries: Mapping[str, Mapping[str, str] | str] | None) -> pl.DataFrame:
    """The offline matrix of the run's templates (name -> {text, source}, or name -> text for
    shipped ones), sandboxed."""
    if not entries:
        return pl.DataFrame([], schema=PROBE_SCHEMA)
    templates = {n: e if isinstance(e, str) else e["text"] for n, e in entries.items()}
    sources = {
        n: SHIPPED if isinstance(e, str) else e.get("source", SHIPPED) for n, e in entries.items()
    }
    with RenderSandbox() as sandbox:
        records = matrix(templates, renderer=sandbox, sources=sources)
    return pl.DataFrame(records, schema=PROBE_SCHEMA)


def _offline_source(records: Sequence[Record]) -> str:
    return str(records[0]["template_source"]) if records else SHIPPED


def _by_template(records: Sequence[Record]) -> dict[str, list[Record]]:
    found: dict[str, list[Record]] = {}
    for record in records:
        found.setdefault(str(record["template"]), []).append(record)
    return found


def _groups(probes: pl.DataFrame) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(config_id, renderer, records) of the endpoint probes, in that order."""
    found = []
    for (config_id, renderer), group in sorted(
        probes.group_by(["config_id", "renderer"]),
        key=lambda item: (str(item[0][0]), str(item[0][1])),
    ):
        found.append((str(config_id), str(renderer), group.to_dicts()))
    return found


def template_classes(shipped: pl.DataFrame, probes: pl.DataFrame) -> pl.DataFrame:
    """One row per shipped template, then one per (configuration, renderer) of the probes."""
    offline = _by_template(shipped.to_dicts())
    rows = []
    for row in as_rows(classify(shipped.to_dicts())):
        source = _offline_source(offline[str(row["template"])])
        rows.append(
            {
                "source": source,
                "template_source": source,
                "config_id": None,
                "renderer": RENDERER,
                **row,
            }
        )
    for config_id, renderer, records in _groups(probes):
        mine = _by_template(records)
        rows += [
            {
                "source": ENDPOINT,
                "template_source": _offline_source(mine[str(row["template"])]),
                "config_id": config_id,
                "renderer": renderer,
                **row,
            }
            for row in as_rows(classify(records))
        ]
    return pl.DataFrame(rows, schema=CLASS_SCHEMA)


def switch_classes(shipped: pl.DataFrame, probes: pl.DataFrame) -> pl.DataFrame:
    """The class of every template row per switch setting (`classify.setting_rows`)."""
    rows: list[dict[str, Any]] = []
    for _name, offline in sorted(_by_template(shipped.to_dicts()).items()):
        source = _offline_source(offline)
        rows += [
            {
                "source": source,
                "template_source": source,
                "config_id": None,
                "renderer": RENDERER,
                **row,
            }
            for row in setting_rows(offline)
        ]
    for config_id, renderer, records in _groups(probes):
        for _name, mine in sorted(_by_template(records).items()):
            rows += [
                {
                    "source": ENDPOINT,
                    "template_source": _offline_source(mine),
                    "config_id": config_id,
                    "renderer": renderer,
                    **row,
                }
                for row in setting_rows(mine)
            ]
    return pl.DataFrame(rows, schema=SWITCH_CLASS_SCHEMA)


def render_disagreements(probes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per configuration: the pairs whose outcome differs, and the byte-agreement counts."""
    differ: list[dict[str, Any]] = []
    agree: list[dict[str, Any]] = []
    for (config_id,), group in sorted(probes.group_by(["config_id"]), key=lambda g: str(g[0][0])):
        records = group.to_dicts()
        differ += [{"config_id": config_id, **r} for r in disagreements(records)]
        agree += [{"config_id": config_id, **r} for r in prompt_agreement(records)]
    return (
        pl.DataFrame(differ, schema=DISAGREEMENT_SCHEMA),
        pl.DataFrame(agree, schema=AGREEMENT_SCHEMA),
    )


def _cells(
    records: Sequence[Record], key: Mapping[str, object], read: Sequence[str]
) -> list[dict[str, Any]]:
    evidence = [
        r
        for r in records
        if r["default_switches"] and r["rendered"] and (not read or r["dialect"] in read)
    ]
    cells = []
    for structure in STRUCTURES:
        chosen = [r for r in evidence if r["structure"] == structure]
        kept = sum(bool(r["in_rendered"]) for r in chosen)
        cells.append(
            {
                **key,
                "structure": structure,
                "secrets": len(chosen),
                "in_rendered": kept,
                "share": kept / len(chosen) if chosen else None,
            }
        )
    return cells


def visibility_cells(
    shipped: pl.DataFrame, probes: pl.DataFrame, classes: pl.DataFrame
) -> pl.DataFrame:
    """The heatmap's cells: per template row of `classes` and structure (module docstring)."""
    read_by: dict[tuple[object, ...], list[str]] = {
        (row["source"], row["config_id"], row["renderer"], row["template"]): [
            d for d in str(row["dialects_read"]).split(",") if d
        ]
        for row in classes.iter_rows(named=True)
    }
    cells: list[dict[str, Any]] = []
    by_template: dict[str, list[dict[str, Any]]] = {}
    for record in shipped.to_dicts():
        by_template.setdefault(str(record["template"]), []).append(record)
    for name, records in sorted(by_template.items()):
        key: dict[str, object] = {
            "source": _offline_source(records),
            "config_id": None,
            "renderer": RENDERER,
            "template": name,
        }
        cells += _cells(records, key, read_by.get(tuple(key.values()), []))
    for config_id, renderer, records in _groups(probes):
        for name in sorted({str(r["template"]) for r in records}):
            mine = [r for r in records if r["template"] == name]
            key = {
                "source": ENDPOINT,
                "config_id": config_id,
                "renderer": renderer,
                "template": name,
            }
            cells += _cells(mine, key, read_by.get(tuple(key.values()), []))
    return pl.DataFrame(cells, schema=CELL_SCHEMA)
