"""Arrow schemas of the engine's tables: plan, events, and the shared columns of rows.

These are the contract between the sweep (the only writer) and the jobs (readers). A study adds
its own columns of rows and its own tables (pipeline.study); `pipeline.store.layout` joins them.
Add a column here and in docs/tables.md together; never rename one silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from pipeline.study import Column, TableSpec

PLAN = pa.schema(
    [
        ("run_id", pa.string()),
        ("config_id", pa.string()),
        ("model", pa.string()),
        ("family", pa.string()),
        ("arm", pa.string()),
        ("execution_group", pa.int32()),
        ("repeat", pa.int32()),
        ("schedule_position", pa.int32()),
        ("status", pa.string()),  # pending | done | not_run
        ("not_run_reason", pa.string()),
    ]
)

ROW_KEY = [
    ("run_id", pa.string()),
    ("row_id", pa.string()),
    ("config_id", pa.string()),
    ("model", pa.string()),
    ("provider", pa.string()),
    ("quantization", pa.string()),
    ("family", pa.string()),
    ("publication_date", pa.string()),
    ("context_length", pa.int64()),
    ("price_input_per_mtok", pa.float64()),
    ("price_output_per_mtok", pa.float64()),
    ("arm", pa.string()),
    ("execution_group", pa.int32()),
    ("repeat", pa.int32()),
    ("attempt", pa.int32()),
    ("schedule_position", pa.int32()),
]
"""The rows table's shared head: the unit's key and where it ran (every study)."""

ROW_OUTCOME = [
    ("seed", pa.int64()),
    ("simulated", pa.bool_()),
    ("valid", pa.bool_()),
    ("invalid_reason", pa.string()),
    ("retryable", pa.bool_()),
    ("requests", pa.int32()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cached_tokens", pa.int64()),
    ("cache_write_tokens", pa.int64()),
    ("reasoning_tokens", pa.int64()),
    ("usage_unreported", pa.int32()),
    ("cost_usd", pa.float64()),
    ("billed_usd", pa.float64()),
    ("spent_usd", pa.float64()),
    ("cache_hits", pa.int32()),
    ("error_detail", pa.string()),
    ("started_at", pa.timestamp("us", tz="UTC")),
    ("finished_at", pa.timestamp("us", tz="UTC")),
]
"""The rows table's shared outcome columns (the UnitOutcome and the request boundary's bill);
the study's own columns follow."""

ADDED_LATER: dict[str, frozenset[str]] = {
    "rows": frozenset(
        {
            "spent_usd",
            "cache_hits",
            "cache_write_tokens",
            "reasoning_tokens",
            "usage_unreported",
            "billed_usd",
        }
    ),
    "requests": frozenset(
        {
            "attempt_in_request",
            "error_detail",
            "server_wait_s",
            "cache_write_tokens",
            "reasoning_tokens",
            "usage_reported",
            "cache_overlap",
            "billed_usd",
            "reply_text",
        }
    ),
}
"""Columns an earlier foldsweep did not write (issues 18, 31 and 35): a part without them is read
with nulls there, so a run directory from before still reads, analyzes and resumes."""

ADDED_LATER_KEY = "foldsweep.added_later"
"""The schema metadata key naming a study table's `TableSpec.added_later` columns."""

ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def rows_schema(study_columns: Sequence[Column]) -> pa.Schema:
    """The rows table: shared key, shared outcome, then the study's own columns."""
    return pa.schema([*ROW_KEY, *ROW_OUTCOME, *_fields(study_columns)])


def study_table_schema(table: TableSpec) -> pa.Schema:
    """A study table: run_id and row_id (the attempt it belongs to), then its own columns.

    The columns the study added later ride in the schema's metadata (`added_later`), so the
    reader that checks a part against this schema knows them without knowing the study."""
    schema = pa.schema([("run_id", pa.string()), ("row_id", pa.string()), *_fields(table.columns)])
    if table.added_later:
        schema = schema.with_metadata({ADDED_LATER_KEY: ",".join(sorted(table.added_later))})
    return schema


def added_later(table: str, schema: pa.Schema) -> frozenset[str]:
    """The columns of `table` an older part may lack: the engine's (ADDED_LATER) and, for a
    study table, the ones its schema's metadata names."""
    declared = (schema.metadata or {}).get(ADDED_LATER_KEY.encode(), b"").decode()
    return ADDED_LATER.get(table, frozenset()) | frozenset(filter(None, declared.split(",")))


def _fields(columns: Sequence[Column]) -> list[tuple[str, pa.DataType]]:
    return [(c.name, ARROW_TYPES[c.type]) for c in columns]


EVENTS = pa.schema(
    [
        ("run_id", pa.string()),
        ("seq", pa.int64()),
        ("at", pa.timestamp("us", tz="UTC")),
        ("kind", pa.string()),
        ("config_id", pa.string()),
        ("row_id", pa.string()),
        ("detail", pa.string()),
    ]
)

REQUESTS = pa.schema(
    [
        ("run_id", pa.string()),
        ("row_id", pa.string()),
        ("session", pa.int32()),
        ("position", pa.int32()),
        ("attempt_in_request", pa.int32()),  # 0, then 1, 2 ... for each HTTP retry
        ("kind", pa.string()),  # chat | template | tokenize
        ("purpose", pa.string()),
        ("config_id", pa.string()),
        ("status", pa.int32()),
        ("error", pa.string()),
        ("error_detail", pa.string()),
        ("server_wait_s", pa.float64()),
        ("latency_s", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cached_tokens", pa.int64()),
        ("cache_write_tokens", pa.int64()),
        ("reasoning_tokens", pa.int64()),
        ("usage_reported", pa.bool_()),
        ("cache_overlap", pa.bool_()),  # cached + written > prompt: priced as the same tokens
        ("cost_usd", pa.float64()),
        ("billed_usd", pa.float64()),
        ("spent_usd", pa.float64()),
        ("cache_hit", pa.bool_()),
        ("key_hash", pa.string()),
        ("reply_text", pa.string()),  # only with cache.scope=off: else key_hash finds it
    ]
)
"""The engine's record of every request of every study (pipeline/sweep/boundary.py)."""
