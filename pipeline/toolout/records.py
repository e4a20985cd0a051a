"""The tool-output study's tables: its row columns, `turns`, `sessions` and `decisions`.

One unit is (priced configuration, policy) over the whole corpus: its row holds the corpus
totals; `turns` has one row per replayed request, `sessions` one per transcript and
`decisions` one per compaction decision (every request on which an output's shown text
changed, its first exposure included, with the policy's reason). docs/tables.md documents each
column.
"""

from __future__ import annotations

from pipeline.study import Column, TableSpec

CAUSES = ("cold_start", "rewrite", "ttl_expiry", "below_minimum", "granularity")

ROW_COLUMNS: tuple[Column, ...] = (
    Column("cache_model", "string"),
    Column("corpus_sha256", "string"),
    Column("transcripts", "int32"),
    Column("transcripts_skipped", "int32"),
    Column("replayed_requests", "int64"),
    Column("input_tokens", "int64"),
    Column("replay_cached_tokens", "int64"),
    Column("replay_cost_usd", "float64"),
    Column("bytes_removed", "int64"),
    Column("applications_new", "int64"),
    Column("applications_reused", "int64"),
    Column("live", "bool"),  # the requests were sent to the endpoint (a panel with servers)
    Column("reported_prompt_tokens", "int64"),  # live: summed as the endpoint reported them
    Column("reported_cached_tokens", "int64"),
    Column("summaries_requested", "int32"),  # live model mode: summariser calls made
)

TURNS = TableSpec(
    "turns",
    (
        Column("transcript_id", "string"),
        Column("corpus", "string"),
        Column("request_index", "int32"),
        Column("time_s", "float64"),
        Column("time_assumed", "bool"),
        Column("input_bytes", "int64"),
        Column("input_tokens", "int64"),
        Column("cached_tokens", "int64"),
        Column("written_tokens", "int64"),
        Column("uncached_tokens", "int64"),
        Column("output_tokens", "int64"),
        Column("cost_usd", "float64"),
        *(Column(f"miss_{cause}_tokens", "int64") for cause in CAUSES),
        *(Column(f"miss_{cause}_usd", "float64") for cause in CAUSES),
        Column("outputs_visible", "int32"),
        Column("outputs_changed", "int32"),
        Column("outputs_new", "int32"),
        Column("outputs_reused", "int32"),
        Column("live_sent", "bool"),
        Column("reported_prompt_tokens", "int64"),
        Column("reported_cached_tokens", "int64"),
        Column("reported_cache_write_tokens", "int64"),
        Column("reported_cache_discount_usd", "float64"),
        Column("latency_s", "float64"),
    ),
    sort_keys=("row_id", "transcript_id", "request_index"),
)

SESSIONS = TableSpec(
    "sessions",
    (
        Column("transcript_id", "string"),
        Column("corpus", "string"),
        Column("source", "string"),
        Column("requests", "int32"),
        Column("tool_outputs", "int32"),
        Column("tool_output_bytes", "int64"),
        Column("large_outputs", "int32"),  # tool outputs of 2,000 bytes or more
        Column("message_bytes", "int64"),  # every message's text and tool-call arguments
        Column("input_tokens", "int64"),
        Column("cached_tokens", "int64"),
        Column("output_tokens", "int64"),
        Column("cost_usd", "float64"),
        Column("bytes_removed", "int64"),
        Column("applications_new", "int32"),
        Column("applications_reused", "int32"),
        Column("outputs_compacted", "int32"),
        Column("cache_hit_share", "float64"),
    ),
    sort_keys=("row_id", "transcript_id"),
)

DECISIONS = TableSpec(
    "decisions",
    (
        Column("transcript_id", "string"),
        Column("output_index", "int32"),
        Column("request_index", "int32"),
        Column("tool_name", "string"),
        Column("mode", "string"),
        Column("reason", "string"),
        Column("detail", "string"),
        Column("original_bytes", "int64"),
        Column("shown_bytes", "int64"),
        Column("original_tokens", "int64"),
        Column("shown_tokens", "int64"),
        Column("rewritten_tokens", "int64"),  # the request's tokens from this output on
        Column("new", "bool"),
        Column("later_requests", "int32"),
        Column("gate_approved", "bool"),
        Column("gate_reason", "string"),
        Column("gate_assumed_requests", "float64"),
        Column("gate_net_usd", "float64"),
        Column("gate_would_flip", "bool"),
        Column("gate_regret_usd", "float64"),
        Column("gate_batch_outputs", "int64"),
    ),
    sort_keys=("row_id", "transcript_id", "output_index", "request_index"),
)

TABLES = (TURNS, SESSIONS, DECISIONS)
