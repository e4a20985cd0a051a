"""Turn a run directory into a stable, reviewable golden form: one JSON line per record.

`normalise(run_dir)` returns `{golden file name: text}`; equal texts mean equal content.

- rows, checks, folds, plan: every part read through `pyarrow.parquet` (temporary
  `.tmp-*.parquet` files skipped), sorted by their keys, one JSON object per line with sorted
  keys. Dropped: `run_id` (a fresh id per run) and the wall-clock columns `started_at`,
  `finished_at` (rows). Row ids (`sim-00/j/g0/r0/a0`) embed no run id and are kept.
- sim_counters: the manifest's per-endpoint simulator counters (requests, injected faults by
  kind, model faults by kind, tokens). They are the evidence that faults happened and were
  retried; see the test module for why they are deterministic in the golden sweep.
- analysis: every `analysis/*.parquet` (records sorted) and `analysis/*.json` (re-serialised
  with sorted keys; not `inputs.json`, the fingerprint of the parts the analysis read), and
  `report.md` with lines that name a path, a run id, a timestamp, the git sha or the package
  versions removed, and the Requests section's latency cells. PNGs are not
  compared (renderer- and font-dependent bytes).

Floats are written by `json` (shortest round-trip repr): exact equality, no tolerance.
Not read: events/ (ordering and timestamps of concurrent work), logs/, fixture.json (its
content is covered by fixture_sha256 in rows), the rest of manifest.json (paths, times, host).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.store.analysis_inputs import INPUTS_FILE

DROPPED_COLUMNS: Mapping[str, frozenset[str]] = {
    "rows": frozenset({"run_id", "started_at", "finished_at"}),
    "checks": frozenset({"run_id"}),
    "folds": frozenset({"run_id"}),
    "plan": frozenset({"run_id"}),
}
SORT_KEYS: Mapping[str, tuple[str, ...]] = {
    "rows": ("config_id", "arm", "execution_group", "repeat", "attempt"),
    "checks": ("row_id", "label", "kind"),
    "folds": ("row_id", "fold_index"),
    "plan": ("config_id", "arm", "execution_group", "repeat"),
}
# Lines naming a machine path (temp dir or checkout), a run stamp, a time or a run id.
_REPO = re.escape(str(Path(__file__).resolve().parents[2]))
VOLATILE_REPORT_LINE = re.compile(
    rf"/tmp/|{_REPO}|\d{{8}}T\d{{6}}|\d{{4}}-\d{{2}}-\d{{2}}[T ]\d{{2}}:\d{{2}}|run[ _]id"
    # the provenance header's code identity: a new commit or environment, not a new result
    r"|^\| (git sha|versions) \|",
    re.IGNORECASE,
)


def _plain(value: Any) -> Any:
    """JSON-ready values; a timestamp left in any table would show up, not crash."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(_plain(record), sort_keys=True, ensure_ascii=False, allow_nan=True)


def _lines(records: Iterable[Mapping[str, Any]]) -> str:
    return "".join(_line(r) + "\n" for r in records)


def _sort_key(keys: Sequence[str]) -> Any:
    def key(record: Mapping[str, Any]) -> tuple[Any, ...]:
        # None sorts first; the full line breaks any remaining tie stably.
        return (*((record[k] is not None, record[k]) for k in keys), _line(record))

    return key


def read_parts(folder: Path) -> list[dict[str, Any]]:
    """Every record of a table folder's committed parts (never a `.tmp-*` file)."""
    records: list[dict[str, Any]] = []
    for part in sorted(folder.glob("*.parquet")):
        if not part.name.startswith(".tmp-"):
            records += pq.read_table(part).to_pylist()
    return records


def table_lines(name: str, records: Iterable[Mapping[str, Any]]) -> str:
    dropped = DROPPED_COLUMNS[name]
    kept = [{k: v for k, v in r.items() if k not in dropped} for r in records]
    return _lines(sorted(kept, key=_sort_key(SORT_KEYS[name])))


def _parquet_lines(path: Path) -> str:
    table: pa.Table = pq.read_table(path)
    return _lines(sorted(table.to_pylist(), key=_line))


def _json_text(path: Path) -> str:
    return json.dumps(json.loads(path.read_text(encoding="utf-8")), sort_keys=True, indent=1) + "\n"


def report_lines(text: str) -> str:
    kept = [line for line in text.splitlines() if not VOLATILE_REPORT_LINE.search(line)]
    return "\n".join(_without_latency(kept)) + "\n"


def _without_latency(lines: list[str]) -> list[str]:
    """The Requests section's rows lose their two latency cells (wall-clock seconds)."""
    out, inside = [], False
    for line in lines:
        if line.startswith("## "):
            inside = line == "## Requests"
        latency_cells = inside and line.startswith("| ") and not line.startswith("| config")
        out.append("|".join(line.split("|")[:-3]) + "|" if latency_cells else line)
    return out


def sim_counters(run_dir: Path) -> str:
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    counters = manifest["extra"]["sim_counters"]
    return json.dumps(counters, sort_keys=True, indent=1) + "\n"


def normalise(run_dir: Path) -> dict[str, str]:
    """The golden files of one run directory: `{relative file name: text}`."""
    out: dict[str, str] = {}
    for name in ("rows", "checks", "folds"):
        out[f"{name}.jsonl"] = table_lines(name, read_parts(run_dir / name))
    out["plan.jsonl"] = table_lines("plan", pq.read_table(run_dir / "plan.parquet").to_pylist())
    out["sim_counters.json"] = sim_counters(run_dir)
    analysis = run_dir / "analysis"
    for path in sorted(analysis.glob("*.parquet")):
        out[f"analysis/{path.stem}.jsonl"] = _parquet_lines(path)
    for path in sorted(analysis.glob("*.json")):
        if path.name != INPUTS_FILE:  # the parts' sizes, mtimes and hashes: not results
            out[f"analysis/{path.name}"] = _json_text(path)
    out["analysis/report.md"] = report_lines((analysis / "report.md").read_text(encoding="utf-8"))
    return out
