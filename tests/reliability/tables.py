"""Read a run directory the way an auditor would: every part on its own, nothing trusted."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline import studies
from pipeline.store.layout import Layout
from pipeline.store.manifest import Manifest, load_manifest
from pipeline.study import UnitKey

KEY_COLUMNS = ("config_id", "arm", "execution_group", "repeat")


@dataclass(frozen=True)
class RunView:
    """A run directory's manifest, plan and rows as plain Python records."""

    manifest: Manifest
    plan: list[dict[str, Any]]
    rows: list[dict[str, Any]]

    def finals(self) -> dict[UnitKey, dict[str, Any]]:
        """The highest attempt of every key that has a row."""
        out: dict[UnitKey, dict[str, Any]] = {}
        for row in self.rows:
            key = key_of(row)
            if key not in out or row["attempt"] > out[key]["attempt"]:
                out[key] = row
        return out

    def attempts(self) -> Counter[tuple[UnitKey, int]]:
        return Counter((key_of(row), row["attempt"]) for row in self.rows)


def key_of(record: dict[str, Any]) -> UnitKey:
    return UnitKey(*(record[c] for c in KEY_COLUMNS))


def layout_of(run_dir: Path) -> Layout:
    """The tables of the study the run directory's manifest names."""
    return studies.layout(studies.of_run(run_dir))


def read_every_part(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every committed part of every table, each read in full (a torn part raises here)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table in layout_of(run_dir).tables:
        records: list[dict[str, Any]] = []
        for path in sorted((run_dir / table).glob("*.parquet")):
            records += pq.read_table(path).to_pylist()
        out[table] = records
    return out


def view(run_dir: Path) -> RunView:
    parts = read_every_part(run_dir)
    plan = pq.read_table(run_dir / "plan.parquet").to_pylist()
    return RunView(load_manifest(run_dir), plan, parts["rows"])


def temporaries(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.rglob(".tmp-*"))


def orphan_parts(run_dir: Path) -> list[Path]:
    """Study-table parts (carrier: checks, folds) whose batch never committed a rows part."""
    committed = {p.name for p in (run_dir / "rows").glob("*.parquet")}
    return [
        p
        for table in layout_of(run_dir).children
        for p in sorted((run_dir / table).glob("*.parquet"))
        if p.name not in committed
    ]


def recount(run: RunView) -> tuple[int, dict[str, int], dict[str, int], int]:
    """(valid, invalid by reason, not run by reason, pending) recomputed from plan and rows."""
    finals = run.finals()
    valid = pending = 0
    invalid: Counter[str] = Counter()
    not_run: Counter[str] = Counter()
    for item in run.plan:
        final = finals.get(key_of(item))
        if item["status"] == "not_run":
            not_run[item["not_run_reason"]] += 1
        elif final is None:
            pending += 1
        elif final["valid"]:
            valid += 1
        else:
            invalid[final["invalid_reason"]] += 1
    return valid, dict(invalid), dict(not_run), pending
