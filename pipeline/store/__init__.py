"""The Parquet store of a run directory: layout, atomic part writer, reader, manifest.

The sweep's coordinator is the only writer; jobs read only through this package (``scan``,
``part_paths``, ``read_plan``, ``final_rows``), so there is one final-attempt rule
(``pipeline.store.final``: the sweep's ``final_attempts`` applies it too), one error type and one
source of column types. Every reader and writer takes the run's ``Layout`` (its study's tables).
"""

from pipeline.store.final import final_rows
from pipeline.store.layout import Layout, UnknownTable, layout_for
from pipeline.store.manifest import (
    FinalAttempt,
    Manifest,
    OutcomeCounts,
    RunStatus,
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
    part_paths,
    read_plan,
    read_table,
    scan,
    validate_run_dir,
)
from pipeline.store.schemas import EVENTS, PLAN, rows_schema

__all__ = [
    "EVENTS",
    "PLAN",
    "FinalAttempt",
    "Layout",
    "Manifest",
    "OutcomeCounts",
    "RunDirError",
    "RunStatus",
    "SchemaMismatch",
    "UnknownTable",
    "clean_temporaries",
    "clean_uncommitted",
    "final_attempts",
    "final_rows",
    "git_revision",
    "layout_for",
    "load_manifest",
    "next_part_seq",
    "outcome_counts",
    "package_versions",
    "part_name",
    "part_paths",
    "provenance_lock",
    "read_plan",
    "read_table",
    "redact",
    "rows_schema",
    "scan",
    "sha256_file",
    "validate_run_dir",
    "write_batch",
    "write_json_atomic",
    "write_manifest",
    "write_part",
    "write_plan",
]
