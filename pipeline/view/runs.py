"""The run directories a viewer shows, read only through `pipeline.store`.

A `Run` is one run directory: its manifest, its study (named by the manifest) and that study's
layout. Tables are read with `pipeline.store.scan` (committed parts only, every footer checked),
the plan with `read_plan`, and the final attempt of each unit with `final_rows`, so the viewer
sees exactly what `query` and the jobs see. Nothing here writes.

Run inputs that are files, not tables (a study's inputs the sweep wrote beside the tables, the
report and its figures) are opened through `pipeline.view.guard.inside`, which refuses any path
outside the run directory. A page reads such an input with `json_input`: a refused one (a
fixture replaced by a symlink out of the run, say) comes back as its one-line refusal, which
the page shows as "refused" in place of that input while the rest of the page, read from the
tables, still shows. A study's own pages (`pages`) and what each of its arms is
(`arm_descriptions`, for the legend and the tooltips) come from its definition.

A run may still be written while it is shown. The served viewer reads a run through `current`:
when the run's fingerprint (`pipeline.view.live`) changed since it was read, the manifest is
read again and every cached table, the plan and the final rows are dropped, so the page shows
the run as of now. `current` holds the run's lock while a page is rendered, so a page never
sees a run half dropped; pages of one run are rendered one at a time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from pipeline.study import ArmDescriptions, StudyPages
from pipeline.view import live
from pipeline.view.guard import PathRefused, inside

# what a change of the run on disk makes stale (besides the manifest and the cached tables)
CACHED_READS = ("plan", "final", "simulated")


@dataclass(frozen=True)
class ByRow:
    """A table sorted by row_id, and where each row_id's rows start and how many there are.

    A unit's rows are a zero-copy slice. Splitting the table into one frame per unit
    (`partition_by`) cost 320 MB of per-frame overhead on a 5,000-unit run whose four tables
    hold 66 MB; this costs one sorted copy."""

    frame: pl.DataFrame
    spans: dict[Any, tuple[int, int]]

    @classmethod
    def of(cls, frame: pl.DataFrame) -> ByRow:
        ordered = frame.sort("row_id", maintain_order=True)
        counts = ordered.group_by("row_id", maintain_order=True).len()
        spans, start = {}, 0
        for row_id, length in counts.iter_rows():
            spans[row_id] = (start, length)
            start += length
        return cls(ordered, spans)

    def rows(self, row_id: str) -> pl.DataFrame:
        start, length = self.spans.get(row_id, (0, 0))
        return self.frame.slice(start, length)


class JsonInput(NamedTuple):
    """A run input that is JSON: its value (None when absent or refused) and, when the guard
    refused it, the refusal's one line."""

    value: Any
    refused: str | None


@dataclass
class Run:
    """One run directory, opened read-only; tables are scanned lazily and cached until the run
    changes on disk (`current`)."""

    index: int
    path: Path
    manifest: dict[str, Any]
    study: str
    _frames: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _by_row: dict[str, ByRow] = field(default_factory=dict, repr=False)
    _version: str = field(default="", repr=False)  # live.fingerprint when last read
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def version(self) -> str:
        """The fingerprint of the run as the viewer last read it."""
        return self._version

    @property
    def finished(self) -> bool:
        return live.finished(self.manifest)

    def refresh(self) -> bool:
        """Read the manifest again and drop every cached read when the run changed on disk
        since it was read; True when it had. The fingerprint is taken before the reads, so a
        write landing during them shows as a change at the next call."""
        from pipeline.store import load_manifest

        now = live.fingerprint(self.path, self.layout.tables)
        if now == self._version:
            return False
        self.manifest = load_manifest(self.path).to_json()
        self._frames, self._by_row = {}, {}
        for name in CACHED_READS:
            self.__dict__.pop(name, None)
        self._version = now
        return True

    @contextmanager
    def current(self) -> Iterator[Run]:
        """This run as of now, held for one page (module doc)."""
        with self._lock:
            self.refresh()
            yield self

    @cached_property
    def layout(self) -> Any:
        from pipeline import studies

        return studies.layout(studies.definition(self.study))

    @cached_property
    def pages(self) -> StudyPages | None:
        """The study's own pages (its definition's optional `pages`); None: the viewer shows
        its units through the generic unit page."""
        from pipeline import studies

        found: StudyPages | None = getattr(studies.definition(self.study), "pages", None)
        return found

    @cached_property
    def arm_descriptions(self) -> ArmDescriptions | None:
        """What each arm (or policy) is: the definition's optional `describe()`; None for a
        study without it, whose arms the pages show by name alone."""
        from pipeline import studies

        describe = getattr(studies.definition(self.study), "describe", None)
        found: ArmDescriptions | None = None if describe is None else describe()
        return found

    @property
    def arm_kind(self) -> str:
        """What the study calls its arms (`arms`, `policies`), for a legend's title."""
        return "arms" if self.arm_descriptions is None else self.arm_descriptions.kind

    def arm_title(self, arm: object) -> str:
        """An arm's description, for a tooltip ('' when the study does not describe it)."""
        found = self.arm_descriptions
        return "" if found is None or arm is None else found.by_name.get(str(arm), "")

    def scan(self, table: str) -> pl.LazyFrame:
        """A lazy scan of one of the run's tables (RunDirError on an unknown or torn table)."""
        from pipeline.store import scan

        return scan(self.path, table, self.layout)

    def table(self, table: str) -> pl.DataFrame:
        """A whole table, collected once (the units and overview pages read the rows often)."""
        if table not in self._frames:
            self._frames[table] = self.scan(table).collect()
        return self._frames[table]

    def rows_for(self, table: str, row_id: str) -> pl.DataFrame:
        """One unit's rows of a table: pushed down to the Parquet scan, or from `preload`."""
        if table in self._by_row:
            return self._by_row[table].rows(row_id)
        return self.scan(table).filter(pl.col("row_id") == row_id).collect()

    def preload(self, tables: Sequence[str]) -> None:
        """Hold `tables` in memory sorted by row_id (the export reads every unit once)."""
        for table in tables:
            if table in self.layout.tables and table not in self._by_row:
                frame = self.table(table)
                del self._frames[table]  # held once, sorted, in _by_row
                self._by_row[table] = ByRow.of(frame)

    @cached_property
    def plan(self) -> pl.DataFrame:
        from pipeline.store import read_plan

        stored = read_plan(self.path)
        frame = pl.from_arrow(
            self.layout.schema("plan").empty_table() if stored is None else stored
        )
        assert isinstance(frame, pl.DataFrame)
        return frame

    @cached_property
    def final(self) -> pl.DataFrame:
        """The final attempt of every unit that has a row (the store's one rule)."""
        from pipeline.store import final_rows

        return final_rows(self.scan("rows"))

    @cached_property
    def simulated(self) -> bool:
        from jobs.provenance_header import run_is_simulated

        rows = self.final
        any_row = bool(rows.height and rows["simulated"].fill_null(False).any())
        return run_is_simulated(self.manifest, rows_simulated=any_row)

    def file(self, relative: str) -> Path:
        """A file of the run directory (an input or an analysis output), guarded."""
        return inside(self.path, relative)

    def json_file(self, relative: str) -> Any:
        """A run input that is JSON, or None when the run has none."""
        path = self.file(relative)
        if not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def json_input(self, relative: str) -> JsonInput:
        """`json_file`, with a refusal returned for the page to show instead of raised."""
        try:
            return JsonInput(self.json_file(relative), None)
        except PathRefused as exc:
            return JsonInput(None, str(exc))  # "refused path 'NAME': it leads outside ..."


def open_runs(paths: Sequence[Path]) -> list[Run]:
    """Validate and open each run directory (a one-line RunDirError names a bad one)."""
    from pipeline import studies
    from pipeline.store import load_manifest, validate_run_dir
    from pipeline.store.reader import RunDirError

    runs = []
    for index, path in enumerate(paths):
        if not path.is_dir():
            raise RunDirError(f"run directory not found: {path}")
        root = path.resolve()
        manifest = load_manifest(root)
        layout = studies.layout(studies.definition(manifest.study))
        version = live.fingerprint(root, layout.tables)  # before the reads it vouches for
        manifest = load_manifest(root)
        validate_run_dir(root, layout)
        runs.append(Run(index, root, manifest.to_json(), manifest.study, _version=version))
    return runs
