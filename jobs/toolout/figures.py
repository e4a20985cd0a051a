"""The tool-output report's figures: break-even curves and the paired savings per policy.

Figures are matplotlib `Figure` objects (Agg, no pyplot global state, constrained layout) that
`jobs.figures_common.save_figure` saves, marking a simulated run's SIMULATED. Each states its
denominators: the savings bars carry their pairs (transcripts) and the title the
configurations and policies; each break-even point carries its new transformations.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from jobs.small_sample import SMALL_SAMPLE_MARK, small_cell, small_spread


def breakeven_curves(rates: pl.DataFrame, points: pl.DataFrame) -> Figure:
    """N* = (W−C)/C · R/D against D/R per configuration, with each policy's median point."""
    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    axes = figure.subplots()
    x = np.logspace(-4, 1, 200)
    curves = 0
    for config_id, ratio in rates.select("config_id", "premium_ratio").iter_rows():
        if ratio is None:
            continue
        curves += 1
        axes.plot(x, np.maximum(ratio / x, 1e-3), label=f"{config_id} ((W−C)/C = {ratio:.3g})")
    shown = 0
    columns = ["policy", "median_d_over_r", "median_n_star", "transformations"]
    for policy, d_over_r, n_star, n in points.select(columns).iter_rows():
        if d_over_r and n_star:
            shown += 1
            label = f"{policy} (n={n}){SMALL_SAMPLE_MARK if small_cell(n) else ''}"
            axes.scatter([d_over_r], [max(n_star, 1e-3)], s=14)
            axes.annotate(label, (d_over_r, max(n_star, 1e-3)), fontsize=6)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("D / R: tokens removed per later request / tokens the rewrite invalidates")
    axes.set_ylabel("N*: later requests needed to repay")
    axes.set_title(
        "Break-even of a rewrite under each provider's cache prices "
        f"(n = {curves} configurations; {shown} policy points, n per point = transformations)",
        fontsize=8,
    )
    if curves:
        axes.legend(fontsize=6, loc="upper right")
    return figure


def savings_plot(table: pl.DataFrame) -> Figure:
    """Paired saving per configuration and policy, as % of control's total (the mean's)."""
    policies = sorted(set(table["policy"].to_list()))
    configs = sorted(set(table["config_id"].to_list()))
    height = 0.35 * len(policies) * len(configs) + 1.5
    figure = Figure(figsize=(8, height), layout="constrained")
    axes = figure.subplots()
    labels, values = [], []
    for config_id in configs:
        for policy in policies:
            row = table.filter((pl.col("config_id") == config_id) & (pl.col("policy") == policy))
            if row.height:
                pairs = int(row["pairs"][0])
                mark = SMALL_SAMPLE_MARK if small_spread(pairs) else ""
                labels.append(f"{config_id} / {policy} (n={pairs}){mark}")
                values.append(row["saving_pct_of_control"][0] or 0.0)
    positions = np.arange(len(labels))
    axes.barh(positions, values, color=["tab:green" if v >= 0 else "tab:red" for v in values])
    axes.set_yticks(positions, labels, fontsize=6)
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.set_xlabel("saving against control, % of control's cost (positive: cheaper)")
    axes.set_title(
        "Replay cost of each policy against no compaction "
        f"(n = {len(configs)} configurations × {len(policies)} policies; n per bar = pairs)",
        fontsize=8,
    )
    return figure


def live_hits_plot(sent: pl.DataFrame) -> Figure:
    """Per sent request: the predicted hit share against the reported one, per configuration."""
    figure = Figure(figsize=(6.2, 5.2), layout="constrained")
    axes = figure.subplots()
    for (config_id,), group in sent.group_by("config_id", maintain_order=True):
        predicted = (group["cached_tokens"] / group["input_tokens"]).to_numpy()
        reported = (group["reported_cached_tokens"] / group["reported_prompt_tokens"]).to_numpy()
        axes.scatter(predicted, reported, s=12, alpha=0.7, label=f"{config_id} (n={group.height})")
    axes.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
    axes.set_xlim(-0.02, 1.02)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("predicted cache-hit share (cache model, estimated tokens)")
    axes.set_ylabel("reported cache-hit share (endpoint's usage)")
    axes.set_title(f"Live replay: predicted against reported hits (n = {sent.height} requests)",
                   fontsize=9)  # fmt: skip
    if sent.height:
        axes.legend(fontsize=7, loc="lower right")
    return figure
