"""The tables an analysis read, fingerprinted, so nothing is rendered from stale outputs.

`analyzed` runs a study's analysis and then writes `analysis/inputs.json`: for the plan and
every committed part of every table, its size, mtime and SHA-256, taken *before* the analysis
read them (a part that changes meanwhile makes the record stale, never falsely current).
`reported` renders a report only while that record matches the run's current parts; otherwise
it refuses in one line that says to run `analyze`. A run analyzed without a record (by an
older foldsweep or a script calling the jobs directly) is analyzed again first: re-analysis
from the current tables is always safe.

Comparison: a part whose name, size and mtime match its record is unchanged without reading it
(cheap on a big run); any other part counts as unchanged only if its SHA-256 matches, so a
copied run directory (new mtimes, same bytes) is still current.

Every part's footer is checked on the way (pipeline.store.reader.check_part), so a truncated
part is named with its fix before any job runs. A part damaged behind an intact footer only
fails when a job reads its pages, inside Polars or Arrow, whose errors name no file: `analyzed`
then reads every part in full to name the damaged one (`find_damaged_part`).
"""

from __future__ import annotations

import errno
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.store.layout import Layout
from pipeline.store.parts import PLAN_FILE, write_json_atomic
from pipeline.store.reader import RunDirError, check_part, corrupt_part_error, part_paths
from pipeline.store.schemas import PLAN

ANALYSIS_DIR = "analysis"
INPUTS_FILE = "inputs.json"  # in ANALYSIS_DIR
FORMAT = 1
_CHUNK = 1 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class PartPrint:
    """What identifies one part's bytes."""

    size: int
    mtime_ns: int
    sha256: str


def table_parts(run_dir: Path, layout: Layout) -> dict[str, tuple[Path, pa.Schema]]:
    """The plan and every committed part, by path relative to the run dir, with its schema."""
    parts: dict[str, tuple[Path, pa.Schema]] = {}
    if (run_dir / PLAN_FILE).is_file():
        parts[PLAN_FILE] = (run_dir / PLAN_FILE, PLAN)
    for table, schema in layout.schemas.items():
        for path in part_paths(run_dir, table, layout):
            parts[f"{table}/{path.name}"] = (path, schema)
    return parts


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint(run_dir: Path, layout: Layout) -> dict[str, PartPrint]:
    """Every part's print, after checking its footer (a torn part is a RunDirError)."""
    prints = {}
    for name, (path, schema) in table_parts(run_dir, layout).items():
        check_part(path, schema)
        stat = path.stat()
        prints[name] = PartPrint(stat.st_size, stat.st_mtime_ns, _sha256(path))
    return prints


def recorded_inputs(run_dir: Path) -> dict[str, PartPrint] | None:
    """The prints the last analysis recorded; None if it recorded none (or it is unreadable)."""
    path = run_dir / ANALYSIS_DIR / INPUTS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: PartPrint(**item) for name, item in data["parts"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def changed_parts(run_dir: Path, layout: Layout, recorded: Mapping[str, PartPrint]) -> list[str]:
    """Parts added, removed or changed since `recorded` (footers checked on the way)."""
    current = table_parts(run_dir, layout)
    changed = sorted(set(recorded) ^ set(current))
    for name in sorted(set(recorded) & set(current)):
        path, schema = current[name]
        check_part(path, schema)
        before, stat = recorded[name], path.stat()
        if (stat.st_size, stat.st_mtime_ns) == (before.size, before.mtime_ns):
            continue
        if stat.st_size != before.size or _sha256(path) != before.sha256:
            changed.append(name)
    return changed


def find_damaged_part(run_dir: Path, layout: Layout) -> RunDirError | None:
    """The error naming the first part whose data pages cannot be read; None if all can."""
    for path, schema in table_parts(run_dir, layout).values():
        try:
            pq.read_table(path, schema=schema)
        except (pa.ArrowException, OSError) as exc:
            return corrupt_part_error(path, f"unreadable data ({exc})")
    return None


# A write that failed for want of room (or a filesystem that turned read-only): not a bug
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


class OutputNotWritten(RunDirError):
    """An analysis output could not be written (a full disk); the rows are untouched."""


def not_written(run_dir: Path, exc: OSError) -> OutputNotWritten:
    return OutputNotWritten(
        f"could not write {exc.filename!r} ({exc.strerror}); the rows are safe in "
        f"{str(run_dir)!r}: free some space, then `python -m pipeline analyze {run_dir}` "
        "finishes the job"
    )


def analyzed(run_dir: Path, layout: Layout, analyze: Callable[[], T]) -> T:
    """Run `analyze` over the run's tables and record what it read (see the module docstring).

    A full disk while an output is written is one line naming the file (`OutputNotWritten`).
    """
    before = fingerprint(run_dir, layout)
    try:
        result = analyze()
        record = {"format": FORMAT, "parts": {name: asdict(p) for name, p in before.items()}}
        write_json_atomic(run_dir / ANALYSIS_DIR / INPUTS_FILE, record)
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno in _NO_ROOM:
            raise not_written(run_dir, exc) from None
        damaged = find_damaged_part(run_dir, layout)
        if damaged is not None:
            raise damaged from None
        raise  # not the data: a bug, crash loudly
    return result


def stale_analysis(run_dir: Path, layout: Layout, recorded: Mapping[str, PartPrint]) -> str | None:
    """The line saying the outputs are older than the tables, or None when they are current."""
    changed = changed_parts(run_dir, layout, recorded)
    if not changed:
        return None
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    return (
        f"{run_dir / ANALYSIS_DIR} is older than the tables it came from ({changed[0]}"
        f"{more} changed since); run `python -m pipeline analyze {run_dir}` first"
    )


def analysis_not_current(run_dir: Path, layout: Layout) -> str | None:
    """Why the run's analysis outputs cannot be read as they are (never analysed, or stale),
    in one line; None when they come from the current tables. Reads only (the viewer)."""
    recorded = recorded_inputs(run_dir)
    if recorded is None:
        return f"{run_dir} is not analysed yet; run `python -m pipeline analyze {run_dir}`"
    return stale_analysis(run_dir, layout, recorded)


def reported(run_dir: Path, layout: Layout, report: Callable[[], T], analyze: Callable[[], T]) -> T:
    """`report()` if the analysis outputs come from the current tables; `analyze()` (recorded)
    if the run has no record; a one-line RunDirError if the record is stale."""
    recorded = recorded_inputs(run_dir)
    if recorded is None:
        return analyzed(run_dir, layout, analyze)
    stale = stale_analysis(run_dir, layout, recorded)
    if stale is not None:
        raise RunDirError(stale)
    try:
        return report()
    except OSError as exc:
        if exc.errno in _NO_ROOM:
            raise not_written(run_dir, exc) from None
        raise
