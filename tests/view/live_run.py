"""A carrier run written step by step through the store, as a sweep writes it, for the tests
of a viewer that follows a run still being written (tests/view/test_view_live*.py).

`LiveRun.start` plans UNITS units and commits the first one's rows with a `running` manifest;
`commit(i)` writes unit i's part with the store's batch writer; `finish()` writes the closed
manifest with the plan's statuses and the counts, as `Session.finish` does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline import studies
from pipeline.store import (
    Manifest,
    outcome_counts,
    read_table,
    write_batch,
    write_manifest,
    write_plan,
)
from pipeline.store.schemas import PLAN
from tests.view.rundirs import study_row

RUN_ID = "run-live"
UNITS = 3
LAYOUT = studies.layout(studies.definition("carrier"))


def _plan(status: str) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "run_id": RUN_ID,
                "config_id": "cfg-a",
                "model": "m",
                "family": "f",
                "arm": "j",
                "execution_group": 0,
                "repeat": repeat,
                "schedule_position": repeat,
                "status": status,
                "not_run_reason": None,
            }
            for repeat in range(UNITS)
        ],
        schema=PLAN,
    )


def tree_digest(run_dir: Path) -> str:
    """The SHA-256 of every file's relative path and bytes under `run_dir`."""
    digest = hashlib.sha256()
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(run_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass
class LiveRun:
    path: Path
    manifest: Manifest

    @classmethod
    def start(cls, path: Path) -> LiveRun:
        manifest = Manifest(
            run_id=RUN_ID,
            config={"repeats": UNITS},
            config_fingerprint="0" * 64,
            started_at="2026-12-05T00:00:00Z",
            study="carrier",
        )
        path.mkdir(parents=True)
        write_plan(path, _plan("pending"))
        write_manifest(path, manifest)
        run = cls(path, manifest)
        run.commit(0)
        return run

    def commit(self, repeat: int, *, valid: bool = True) -> None:
        row = study_row(
            "carrier",
            run_id=RUN_ID,
            config_id="cfg-a",
            model="m",
            arm="j",
            repeat=repeat,
            schedule_position=repeat,
            valid=valid,
            invalid_reason=None if valid else "catch_up",
            recall=1.0 if valid else 0.0,
        )
        write_batch(self.path, part_name=f"{repeat:08d}-p", rows=[row], children={}, layout=LAYOUT)

    def finish(self) -> None:
        plan = _plan("done")
        write_plan(self.path, plan)
        counts = outcome_counts(plan, read_table(self.path, "rows", LAYOUT))
        write_manifest(self.path, self.manifest.finish("completed", counts))
