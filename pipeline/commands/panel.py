"""`python -m pipeline panel [hydra overrides] [--json]`: which configurations are in, and why.

Applies only the static rules (catalog membership, recency); it sends no request, so it never
needs an API key. Without `--json` it prints a table; with it, one JSON object:
`{"panel", "kind", "study_date", "cutoff", "catalog", "catalog_sha256",
  "included": [{"config_id", "model", "publication_date", "date_source", "provider",
                "quantization", "family", "context_length", "catalog_id", "prices"}...],
  "excluded": [{"config_id", "model", "code", "reason"}...]}`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pipeline.config import load
from pipeline.endpoints.panels import (
    PanelResolution,
    load_panel_catalog,
    materialize,
    resolve,
)

_USAGE = "usage: python -m pipeline panel [+panel=NAME] [hydra overrides ...] [--json]"


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(_USAGE)
        return 0
    as_json = "--json" in argv
    overrides = [a for a in argv if a != "--json"]
    panel = materialize(load(overrides))
    resolution = resolve(panel, load_panel_catalog(panel))
    if as_json:
        print(json.dumps(to_json(resolution), indent=2))
    else:
        print(render_table(resolution))
    return 0


def to_json(resolution: PanelResolution) -> dict[str, Any]:
    """The resolution as plain JSON-ready data (the `--json` contract above)."""
    return {
        "panel": resolution.panel,
        "kind": resolution.kind,
        "study_date": resolution.study_date,
        "cutoff": resolution.cutoff.isoformat() if resolution.cutoff else None,
        "catalog": resolution.catalog,
        "catalog_sha256": resolution.catalog_sha256,
        "included": [
            {
                "config_id": c.config_id,
                "model": c.model,
                "publication_date": c.publication_date,
                "date_source": c.date_source,
                "provider": c.provider,
                "quantization": c.quantization,
                "family": c.family,
                "context_length": c.context_length,
                "catalog_id": c.catalog_id,
                "prices": dataclasses.asdict(c.prices),
            }
            for c in resolution.included
        ],
        "excluded": [
            {"config_id": c.config_id, "model": c.model, "code": c.code, "reason": c.reason}
            for c in resolution.excluded
        ],
    }


def render_table(resolution: PanelResolution) -> str:
    """A plain-text report: a header line, the included table, the excluded list."""
    families = len({c.family for c in resolution.included})
    head = (
        f"panel {resolution.panel} ({resolution.kind}): {len(resolution.included)} included "
        f"({families} families), {len(resolution.excluded)} excluded"
    )
    if resolution.cutoff is not None:
        head += f"; cutoff {resolution.cutoff} (study date {resolution.study_date})"
    if resolution.catalog:
        head += f"; catalog {resolution.catalog}"
    columns = ("config_id", "model", "published", "provider", "quant", "family", "context")
    rows: list[tuple[str, ...]] = [
        (
            c.config_id,
            c.model,
            c.publication_date or "-",
            c.provider or "-",
            c.quantization or "-",
            c.family,
            str(c.context_length) if c.context_length is not None else "-",
        )
        for c in resolution.included
    ]
    lines = [head, "", *_aligned(columns, rows)]
    if resolution.excluded:
        lines += ["", "excluded:"]
        lines += [f"  {c.config_id} ({c.model}): {c.reason}" for c in resolution.excluded]
    return "\n".join(lines)


def _aligned(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [columns, *rows]
    ]
