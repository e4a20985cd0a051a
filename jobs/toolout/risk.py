"""The risk of a policy: tool outputs the forced-exact rules keep exact that it compacted anyway.

The forced-exact layer (docs/toolout.md "Policies") keeps an output exact because losing its
bytes is dangerous (an edit, an error, a non-zero exit, a FAIL line), not because it is small;
a peer replica has no such layer and may clear or elide exactly those outputs. The rule
policies record why an output stays exact on its first exposure (`decisions.reason`
`forced_exact:*`), so within one configuration the outputs any rule policy kept exact for that
reason are the forced-exact set, and a policy's risk is how many of them it showed in a
non-exact form on some request. Measured only where a rule policy ran (some decision names a
forced-exact layer reason, `below_min_bytes` included): elsewhere the set is unknown, and the
configuration is absent from the table. `decisions` may be a lazy scan: it is filtered and
reduced to distinct outputs before anything is collected.
"""

from __future__ import annotations

import polars as pl

OUTPUT = ("config_id", "transcript_id", "output_index")
FORCED = pl.col("reason").str.starts_with("forced_exact:")
LAYER = FORCED | (pl.col("reason") == "below_min_bytes")
SCHEMA = {
    "config_id": pl.String,
    "policy": pl.String,
    "forced_exact": pl.Int64,
    "compacted_anyway": pl.Int64,
}


def risk_table(decisions: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (configuration where a rule policy ran, policy): the configuration's
    forced-exact outputs and how many of them the policy compacted anyway."""
    keys = rows.lazy().select("row_id", "config_id", pl.col("arm").alias("policy"))
    keyed = decisions.lazy().join(keys, on="row_id")
    measured = keyed.filter(LAYER).select("config_id").unique()
    forced = keyed.filter(FORCED).select(OUTPUT).unique()
    compacted = (
        keyed.filter(pl.col("mode") != "exact")
        .select("policy", *OUTPUT)
        .unique()
        .join(forced, on=list(OUTPUT))
        .group_by("config_id", "policy")
        .agg(pl.len().alias("compacted_anyway"))
    )
    totals = forced.group_by("config_id").agg(pl.len().alias("forced_exact"))
    policies = keys.select("config_id", "policy").unique().join(measured, on="config_id")
    return (
        policies.join(totals, on="config_id", how="left")
        .join(compacted, on=["config_id", "policy"], how="left")
        .with_columns(pl.col("forced_exact", "compacted_anyway").fill_null(0))
        .select(list(SCHEMA))
        .cast(SCHEMA)  # type: ignore[arg-type]
        .sort("config_id", "policy")
        .collect()
    )
