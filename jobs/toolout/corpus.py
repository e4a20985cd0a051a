"""What the corpus is: transcripts, requests, tool outputs and their share of the bytes.

Read from one configuration's control sessions (every configuration replays the same corpus).
A corpus where fewer than 5% of tool outputs reach the 2,000-byte compaction floor is a near
no-op corpus: no policy can do much there, and the report says so.
"""

from __future__ import annotations

import polars as pl

NEAR_NO_OP_SHARE = 0.05


def corpus_table(sessions: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    first = rows.sort("config_id").select("config_id").row(0)[0] if rows.height else None
    control = sessions.join(
        rows.filter((pl.col("arm") == "control") & (pl.col("config_id") == first)).select("row_id"),
        on="row_id",
    )
    return (
        control.group_by("corpus")
        .agg(
            pl.len().alias("transcripts"),
            pl.col("requests").sum(),
            pl.col("tool_outputs").sum(),
            pl.col("large_outputs").sum(),
            pl.col("tool_output_bytes").sum(),
            pl.col("message_bytes").sum(),
        )
        .with_columns(
            (pl.col("tool_output_bytes") / pl.col("message_bytes")).alias("tool_output_share"),
            (pl.col("large_outputs") / pl.col("tool_outputs")).alias("large_output_share"),
        )
        .with_columns((pl.col("large_output_share") < NEAR_NO_OP_SHARE).alias("near_no_op"))
        .sort("corpus")
    )
