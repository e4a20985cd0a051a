"""The tool-output report's figures: break-even curves and the paired savings per policy."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl


def breakeven_curves(rates: pl.DataFrame, points: pl.DataFrame) -> Any:
    """N* = (W−C)/C · R/D against D/R per configuration, with each policy's median point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 4.8))
    x = np.logspace(-4, 1, 200)
    for config_id, ratio in rates.select("config_id", "premium_ratio").iter_rows():
        if ratio is None:
            continue
        axes.plot(x, np.maximum(ratio / x, 1e-3), label=f"{config_id} ((W−C)/C = {ratio:.3g})")
    for policy, d_over_r, n_star in points.select(
        "policy", "median_d_over_r", "median_n_star"
    ).iter_rows():
        if d_over_r and n_star:
            axes.scatter([d_over_r], [max(n_star, 1e-3)], s=14)
            axes.annotate(policy, (d_over_r, max(n_star, 1e-3)), fontsize=6)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("D / R: tokens removed per later request / tokens the rewrite invalidates")
    axes.set_ylabel("N*: later requests needed to repay")
    axes.set_title("Break-even of a rewrite under each provider's cache prices")
    axes.legend(fontsize=6, loc="upper right")
    figure.tight_layout()
    return figure


def savings_plot(table: pl.DataFrame) -> Any:
    """Median paired saving (% of control) per configuration and policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = sorted(set(table["policy"].to_list()))
    configs = sorted(set(table["config_id"].to_list()))
    figure, axes = plt.subplots(figsize=(8, 0.35 * len(policies) * len(configs) + 1.5))
    labels, values = [], []
    for config_id in configs:
        for policy in policies:
            row = table.filter((pl.col("config_id") == config_id) & (pl.col("policy") == policy))
            if row.height:
                labels.append(f"{config_id} / {policy} (n={row['pairs'][0]})")
                values.append(row["saving_pct_of_control"][0] or 0.0)
    positions = np.arange(len(labels))
    axes.barh(positions, values, color=["tab:green" if v >= 0 else "tab:red" for v in values])
    axes.set_yticks(positions, labels, fontsize=6)
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.set_xlabel("saving against control, % of control's cost (positive: cheaper)")
    axes.set_title("Replay cost of each policy against no compaction")
    figure.tight_layout()
    return figure
