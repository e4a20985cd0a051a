"""The Parquet store of a run directory: schemas, atomic part writer, reader, manifest.

The sweep's coordinator is the only writer; jobs read through ``read_table`` / ``scan``.
"""

from pipeline.store.manifest import (
    FinalAttempt,
    Manifest,
    OutcomeCounts,
    RunStatus,
    TrajectoryKey,
    final_attempts,
    load_manifest,
    outcome_counts,
    redact,
    write_manifest,
)
from pipeline.store.parts import (
    SchemaMismatch,
    clean_temporaries,
    clean_uncommitted,
    next_part_seq,
    part_name,
    write_batch,
    write_json_atomic,
    write_part,
    write_plan,
)
from pipeline.store.provenance import (
    git_revision,
    package_versions,
    provenance_lock,
    sha256_file,
)
from pipeline.store.reader import (
    RunDirError,
    read_plan,
    read_table,
    scan,
    validate_run_dir,
)
from pipeline.store.schemas import CHECKS, EVENTS, FOLDS, PLAN, ROWS, TABLES

__all__ = [
    "CHECKS",
    "EVENTS",
    "FOLDS",
    "PLAN",
    "ROWS",
    "TABLES",
    "FinalAttempt",
    "Manifest",
    "OutcomeCounts",
    "RunDirError",
    "RunStatus",
    "SchemaMismatch",
    "TrajectoryKey",
    "clean_temporaries",
    "clean_uncommitted",
    "final_attempts",
    "git_revision",
    "load_manifest",
    "next_part_seq",
    "outcome_counts",
    "package_versions",
    "part_name",
    "provenance_lock",
    "read_plan",
    "read_table",
    "redact",
    "scan",
    "sha256_file",
    "validate_run_dir",
    "write_batch",
    "write_json_atomic",
    "write_manifest",
    "write_part",
    "write_plan",
]
