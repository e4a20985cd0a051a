"""Arrow schemas of every table of a run directory (docs/tables.md documents each column).

These are the contract between the sweep (the only writer) and the jobs (readers). Add a
column here and in docs/tables.md together; never rename one silently.
"""

from __future__ import annotations

import pyarrow as pa

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

ROWS = pa.schema(
    [
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
        ("scenario", pa.string()),
        ("fixture_sha256", pa.string()),
        ("system_prompt_sha256", pa.string()),
        ("seed", pa.int64()),
        ("simulated", pa.bool_()),
        ("schema_adapted", pa.bool_()),
        ("valid", pa.bool_()),
        ("invalid_reason", pa.string()),
        ("retryable", pa.bool_()),
        ("recall", pa.float64()),
        ("checks_passed", pa.int32()),
        ("checks_total", pa.int32()),
        ("carrier_chars", pa.int64()),
        ("declared_capacity_chars", pa.int64()),
        ("fill", pa.float64()),
        ("headings_carried", pa.int32()),
        ("parse_failures", pa.int32()),
        ("folds", pa.int32()),
        ("folds_clipped", pa.int32()),
        ("folds_length_stop", pa.int32()),
        ("prompt_tokens_est", pa.int64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cached_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("requests", pa.int32()),
        ("answer_text", pa.string()),
        ("final_carrier", pa.string()),
        ("abstains", pa.bool_()),
        ("error_detail", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("finished_at", pa.timestamp("us", tz="UTC")),
    ]
)

CHECKS = pa.schema(
    [
        ("run_id", pa.string()),
        ("row_id", pa.string()),
        ("label", pa.string()),
        ("kind", pa.string()),
        ("expected", pa.string()),
        ("answered", pa.string()),
        ("passed", pa.bool_()),
        ("present_in_carrier", pa.bool_()),
        ("outcome", pa.string()),  # passed | abstention | fabrication | missing
        ("stock_signature", pa.bool_()),
    ]
)

FOLDS = pa.schema(
    [
        ("run_id", pa.string()),
        ("row_id", pa.string()),
        ("fold_index", pa.int32()),
        ("chunks", pa.string()),  # comma-separated chunk indices folded in this request
        ("finish_reason", pa.string()),
        ("prompt_tokens_est", pa.int64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cached_tokens", pa.int64()),
        ("reply_chars", pa.int64()),
        ("carried_chars", pa.int64()),
        ("headings_carried", pa.int32()),
        ("parse_failed", pa.bool_()),
        ("clipped", pa.bool_()),
        ("usable", pa.bool_()),
        ("carried_text", pa.string()),
    ]
)

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

TABLES: dict[str, pa.Schema] = {
    "rows": ROWS,
    "checks": CHECKS,
    "folds": FOLDS,
    "events": EVENTS,
}
