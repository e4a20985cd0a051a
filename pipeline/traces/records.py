"""The reasoning-trace study's tables: its row columns, `template_probes`, `recitals` and
`compressions`.

A unit is (configuration, arm). The `visibility` arm writes `template_probes` (every shape
rendered by the endpoint's own server and, offline, by the Hugging Face-contract renderer over
the same template text) and `recitals` (the shapes sent live, with whether the reply recited
each planted secret). A compression arm writes `compressions`, one row per summarised trace.
docs/tables.md documents each column.
"""

from __future__ import annotations

from pipeline.study import Column, TableSpec
from pipeline.traces.compression.facts import KINDS

ROW_COLUMNS: tuple[Column, ...] = (
    Column("part", "string"),  # visibility | compression
    Column("items", "int32"),  # shapes recited, or traces summarised
    Column("model_requests", "int32"),
    Column("template_name", "string"),  # visibility: the endpoint's own template
    Column("template_sha256", "string"),
    Column("live_renders", "int32"),  # visibility: shapes the server rendered
    Column("renders_identical", "int32"),  # of those, byte-identical to the offline render
    Column("recited", "int32"),  # visibility: secrets the replies recited
    Column("secrets_sent", "int32"),
    Column("greedy_ok", "bool"),  # compression: every sent body greedy with thinking off
    Column("repeat_identical", "bool"),  # compression: the repeated summaries matched
)

_STR = (
    "renderer", "template", "template_sha256", "template_source", "shape", "structure",
    "dialect", "content_form", "args_form", "question_in", "switches", "enable_thinking",
    "preserve_thinking", "error_type", "error_message", "render_limit", "prompt_sha256",
    "secret", "secret_field", "wire_field",
)  # fmt: skip
_INT = ("template_chars", "prompt_chars", "secret_message_index")
_BOOL = (
    "default_switches", "rendered", "has_tool_calls", "tool_calls_rendered",
    "secret_on_tool_call_turn", "secret_user_after", "secret_plain_reply_after", "in_stored",
    "in_wire", "in_rendered",
)  # fmt: skip
PROBE_COLUMNS = (
    *(Column(c, "string") for c in _STR),
    *(Column(c, "int64") for c in _INT),
    *(Column(c, "bool") for c in _BOOL),
)

TEMPLATE_PROBES = TableSpec(
    "template_probes",
    PROBE_COLUMNS,
    sort_keys=("row_id", "renderer", "shape", "switches", "secret"),
)

RECITALS = TableSpec(
    "recitals",
    (
        Column("shape", "string"),
        Column("structure", "string"),
        Column("dialect", "string"),
        Column("content_form", "string"),
        Column("args_form", "string"),
        Column("question_in", "string"),
        Column("secret", "string"),
        Column("secret_field", "string"),
        Column("secret_on_tool_call_turn", "bool"),
        Column("secret_user_after", "bool"),
        Column("in_rendered_offline", "bool"),
        Column("in_rendered_live", "bool"),  # null where the server does not render
        Column("recited", "bool"),
        Column("reply_chars", "int32"),
        Column("finish_reason", "string"),
        Column("prompt_tokens", "int64"),
        Column("error", "string"),  # a rejected request: the reason; null otherwise
    ),
    sort_keys=("row_id", "shape", "secret"),
)

_PER_KIND = ("facts", "retained", "summary_facts", "supported", "invented")
COMPRESSION_COLUMNS = (
    Column("item_id", "string"),
    Column("band", "string"),
    Column("source", "string"),
    Column("synthetic", "bool"),
    Column("trace_chars", "int64"),
    Column("summary_chars", "int64"),
    Column("empty_summary", "bool"),
    Column("compression_chars", "float64"),
    Column("trace_tokens", "int64"),
    Column("summary_tokens", "int64"),
    Column("compression_tokens", "float64"),
    Column("token_counter", "string"),  # "llama-server /tokenize" when counted, else null
    Column("token_null_reason", "string"),  # why the token columns are null
    Column("summary_sha256", "string"),
    *(
        Column(f"{name}_{kind}", "int64" if name in _PER_KIND else "float64")
        for kind in KINDS
        for name in (*_PER_KIND[:4], "retention", "precision", "invented")
    ),
    Column("facts_total", "int64"),
    Column("retained_total", "int64"),
    Column("retention", "float64"),
    Column("summary_facts_total", "int64"),
    Column("supported_total", "int64"),
    Column("precision", "float64"),
    Column("invented", "int64"),
    # the request as sent and its reply (model arms; null for the extractive arm)
    Column("sent_temperature", "float64"),
    Column("sent_top_p", "float64"),
    Column("sent_seed", "int64"),
    Column("sent_enable_thinking", "bool"),
    Column("greedy", "bool"),
    Column("thinking_state", "string"),
    Column("decoding_problem", "string"),
    Column("finish_reason", "string"),
    Column("prompt_tokens", "int64"),
    Column("completion_tokens", "int64"),
    Column("repeat_identical", "bool"),  # summarised twice: the same bytes (null: not repeated)
    Column("summary", "string"),
)

COMPRESSIONS = TableSpec(
    "compressions", COMPRESSION_COLUMNS, sort_keys=("row_id", "band", "item_id")
)

TABLES = (TEMPLATE_PROBES, RECITALS, COMPRESSIONS)
