"""What a tool-output run says a user should do under a provider's prompt cache (issue 34).

Read from the analysis outputs (savings, cache, breakeven, gate, corpus) plus the run's rows
(each configuration's cache model and the corpus digest) and, for the risk, its `decisions`
(jobs/toolout/risk.py). One answer per configuration whose provider, cache model or
configuration id is `options.provider` (every configuration when None). The rules
(docs/toolout.md "Decide"):
- the recommendation is the policy (never control, never the oracle: it knows the future) with
  the largest mean saving per session whose 95% bootstrap interval lies above 0 over at least 5
  sessions (jobs/small_sample.py), in USD per session and in % of control;
- beside it: its regret against the oracle (oracle's mean saving minus its own), the gate's
  verdict, the break-even R/D = N / ((W−C)/C) at which a rewrite stops paying at the median
  later requests N, the risk, and the price change that makes its mean saving 0: rewrites cost
  it `miss_rewrite_usd`, so multiplying a rewritten token's price by k = 1 + saving / that
  cost flips it (none does when it rewrites nothing that was cached);
- no interval above 0: no recommendation, "no difference detected", and the sessions that
  would detect the best mean saving m at this spread: n = pairs · (MDE / m)², from MDE =
  2.80 · sd / √pairs;
- a near no-op corpus (fewer than 5% of tool outputs at 2,000 bytes or more) is named in the
  reason: no policy can change much there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from jobs import io
from jobs.decided_run import study_decision
from jobs.small_sample import MIN_SPREAD_N
from jobs.toolout.risk import SCHEMA as RISK_SCHEMA
from jobs.toolout.risk import risk_table
from jobs.toolout.savings import CONTROL
from jobs.toolout.tables import final_units, load, scan_lazy
from pipeline.decision import (
    Answer,
    DecisionOptions,
    Effect,
    Evidence,
    Number,
    StudyDecision,
    Where,
)
from pipeline.store import Layout

QUESTION = "tool output: compact it under this provider's prompt cache, and how?"
ORACLE = "oracle"
READ = ("savings", "cache", "breakeven", "gate", "corpus")
NO_DIFFERENCE = "no difference detected"
TIE_USD = 1e-12  # a smaller mean saving is a tie (savings.py counts cheaper and dearer so)


def _source(name: str) -> str:
    return f"analysis/{name}.parquet"


def _row(config_id: str, policy: str | None = None) -> Where:
    return (("config_id", config_id),) + ((("policy", policy),) if policy else ())


def _named(where: Where) -> str:
    return ", ".join(f"{column}={value}" for column, value in where)


def _usd(value: float) -> str:
    return f"-${-value:.6f}" if value < 0 else f"${value:.6f}"


def _interval(row: dict[str, Any]) -> str:
    return f"95% CI [{_usd(row['mean_ci_lo'])}, {_usd(row['mean_ci_hi'])}]"


@dataclass(frozen=True)
class Outputs:
    """The tables a decision reads, whole (each is one row per configuration and policy)."""

    savings: pl.DataFrame
    cache: pl.DataFrame
    breakeven: pl.DataFrame
    gate: pl.DataFrame
    corpus: pl.DataFrame
    risk: pl.DataFrame

    def one(self, table: str, config_id: str, policy: str) -> dict[str, Any] | None:
        frame: pl.DataFrame = getattr(self, table)
        found = frame.filter((pl.col("config_id") == config_id) & (pl.col("policy") == policy))
        return found.row(0, named=True) if found.height else None


def _chosen(configs: pl.DataFrame, provider: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The configurations asked about, and what is missing when the provider is not in the run."""
    every = configs.to_dicts()
    if provider is None:
        return every, []
    wanted = provider.lower()

    def names(c: dict[str, Any]) -> set[str]:
        config_id = str(c["config_id"])
        return {
            str(c["provider"]).lower(),
            str(c["cache_model"]).lower(),
            config_id.lower(),
            config_id.split(":", 1)[0].lower(),
        }

    found = [c for c in every if wanted in names(c)]
    if found:
        return found, []
    have = ", ".join(sorted({str(c["cache_model"]) for c in every}))
    return [], [f"tool output: provider {provider!r} is not in this run (its cache models: {have})"]


def near_no_op(corpus: pl.DataFrame) -> str | None:
    """The reason's note on near no-op corpora, or None when there is none."""
    quiet = corpus.filter(pl.col("near_no_op"))
    if quiet.height == 0:
        return None
    names = ", ".join(quiet["corpus"].to_list())
    return (
        f"{quiet['transcripts'].sum()} of {corpus['transcripts'].sum()} transcripts are from "
        f"near no-op corpora ({names}): fewer than 5% of their tool outputs reach the "
        "2,000-byte floor, so no policy can change much there"
    )


def _with_note(reason: str, note: str | None) -> str:
    return f"{reason}; {note}" if note else reason


def _saving(row: dict[str, Any]) -> Evidence:
    pct = row["saving_pct_of_control"]
    share = "" if pct is None else f" ({pct:+.2f}% of control)"
    mean, lo, hi = (_usd(row[c]) for c in ("mean_saving_usd", "mean_ci_lo", "mean_ci_hi"))
    numbers = [Number(mean, "mean_saving_usd")]
    numbers += [] if pct is None else [Number(f"{pct:+.2f}%", "saving_pct_of_control")]
    numbers += [Number(lo, "mean_ci_lo"), Number(hi, "mean_ci_hi")]
    return Evidence(
        f"mean saving per session of `{row['policy']}`",
        f"{mean}{share}, {_interval(row)}, n = {row['pairs']}",
        _source("savings"),
        _row(row["config_id"], row["policy"]),
        (*numbers, Number(f"{row['pairs']}", "pairs")),
    )


def _regret(o: Outputs, best: dict[str, Any]) -> list[Evidence]:
    oracle = o.one("savings", best["config_id"], ORACLE)
    if oracle is None:
        return []
    regret = oracle["mean_saving_usd"] - best["mean_saving_usd"]
    config_id = best["config_id"]
    return [
        Evidence(
            "regret against the oracle (its mean saving minus the policy's)",
            f"{_usd(regret)} per session (oracle saves {_usd(oracle['mean_saving_usd'])})",
            _source("savings"),
            _row(config_id),
            (
                Number(
                    _usd(regret),
                    "mean_saving_usd",
                    "mean",
                    where=(("policy", ORACLE),),
                    versus=(("policy", best["policy"]),),
                ),
                Number(
                    _usd(oracle["mean_saving_usd"]),
                    "mean_saving_usd",
                    where=_row(config_id, ORACLE),
                ),
            ),
        )
    ]


def _premium(o: Outputs, config_id: str) -> float | None:
    rows = o.breakeven.filter(pl.col("config_id") == config_id)["premium_ratio"].drop_nulls()
    return float(rows[0]) if rows.len() else None


def _gate(o: Outputs, config_id: str) -> list[Evidence]:
    asked = o.gate.filter(pl.col("config_id") == config_id)
    if asked.height == 0:
        return [
            Evidence(
                "the gate's verdict",
                "never asked: no output its model rules match reached the 2,000-byte floor "
                "after an exact exposure",
                _source("gate"),
                _row(config_id),
            )
        ]
    found = []
    for g in asked.iter_rows(named=True):
        n = g["assumed_requests"]
        flips = f"; it assumed N = {n:g} later requests" if n is not None else ""
        found.append(
            Evidence(
                f"the gate's verdict (`{g['policy']}`)",
                f"approved {g['approved']} of {g['asked']} (usual reason {g['usual_reason']}); "
                f"{g['would_flip']} would flip at the transcripts' real N, regret "
                f"{_usd(g['regret_usd'])}{flips}",
                _source("gate"),
                _row(config_id, g["policy"]),
                (
                    Number(f"{g['approved']}", "approved"),
                    Number(f"{g['asked']}", "asked"),
                    Number(f"{g['would_flip']}", "would_flip"),
                    Number(_usd(g["regret_usd"]), "regret_usd"),
                    *([Number(f"{n:g}", "assumed_requests")] if flips else []),
                ),
            )
        )
    return found


def _breakeven(o: Outputs, best: dict[str, Any]) -> Evidence:
    config_id, policy = best["config_id"], best["policy"]
    b = o.one("breakeven", config_id, policy)
    where = (_source("breakeven"), _row(config_id, policy))
    label = "break-even R/D (rewritten span per removed token) at which rewriting stops paying"
    if b is None:
        return Evidence(label, "no shrinking new transformation: nothing to repay", *where)
    premium, later = b["premium_ratio"], b["median_later_requests"]
    if premium is None:
        return Evidence(label, "unpriced: no write or read price for this model", *where)
    if premium == 0 or later is None:
        return Evidence(label, "none: (W−C)/C = 0, a rewrite pays at any R", *where)
    share = f"{100 * b['share_repaid']:.0f}%"
    return Evidence(
        label,
        f"R/D = N / ((W−C)/C) = {later:g} / {premium:.3g} = {later / premium:.3g} at the "
        f"median N = {later:g} later requests; median D/R here {b['median_d_over_r']:.3g}, "
        f"median N* {b['median_n_star']:.3g}, {share} of "
        f"{b['transformations']} transformations repaid",
        *where,
        (
            Number(f"{later:g}", "median_later_requests"),
            Number(f"{premium:.3g}", "premium_ratio"),
            Number(f"{later / premium:.3g}", "median_later_requests", over="premium_ratio"),
            Number(f"{later:g}", "median_later_requests"),
            Number(f"{b['median_d_over_r']:.3g}", "median_d_over_r"),
            Number(f"{b['median_n_star']:.3g}", "median_n_star"),
            Number(share, "share_repaid", scale=100.0),
            Number(f"{b['transformations']}", "transformations"),
        ),
    )


def _risk(o: Outputs, best: dict[str, Any]) -> Evidence:
    config_id, policy = best["config_id"], best["policy"]
    r = o.one("risk", config_id, policy)
    label = "risk: outputs the forced-exact rules keep exact, and how many it compacted"
    if r is None:
        value = "not measured: no rule policy (the forced-exact layer) ran under this configuration"
    else:
        kept, anyway = r["forced_exact"], r["compacted_anyway"]
        value = f"{kept} kept exact by the rules; `{policy}` compacted {anyway} of them"
    return Evidence(label, value, "decisions", _row(config_id, policy))  # counted from events


def _price_flip(o: Outputs, best: dict[str, Any]) -> str:
    config_id, policy = best["config_id"], best["policy"]
    cache = o.one("cache", config_id, policy)
    rewrite = float(cache["miss_rewrite_usd"]) if cache else 0.0
    total = best["mean_saving_usd"] * best["pairs"]
    cited = f"{_source('cache')} {_named(_row(config_id, policy))}"
    if rewrite <= 0:
        return (
            f"no single price change flips it: `{policy}` rewrites nothing that was cached "
            f"(miss_rewrite_usd = 0, {cited}), so every "
            "token it removes is a token not billed"
        )
    return (
        f"the price of a rewritten token (the write price under breakpoints, else input) "
        f"×{1 + total / rewrite:.3g} makes `{policy}`'s mean saving 0: it pays "
        f"{_usd(rewrite)} for rewrites against a {_usd(total)} saving over {best['pairs']} "
        f"sessions ({cited})"
    )


def _runner_up(ranked: pl.DataFrame) -> list[str]:
    if ranked.height < 2:
        return []
    first, second = ranked.row(0, named=True), ranked.row(1, named=True)
    gap = first["mean_saving_usd"] - second["mean_saving_usd"]
    return [
        f"the runner-up `{second['policy']}` saves {_usd(second['mean_saving_usd'])} "
        f"({_interval(second)}): {_usd(gap)} per session less"
    ]


def _effect(row: dict[str, Any]) -> Effect | None:
    """A policy's mean saving per session with its bootstrap interval, when it has one."""
    lo, hi = row["mean_ci_lo"], row["mean_ci_hi"]
    if lo is None or hi is None or row["mean_saving_usd"] is None:
        return None
    label = f"`{row['policy']}` saving"
    return Effect(label, row["mean_saving_usd"], lo, hi, "USD per session")


def _undecided(subject: str, ranked: pl.DataFrame, note: str | None) -> Answer:
    """No interval above 0: what the best mean saving would need to be detected."""
    if ranked.height == 0:
        return Answer(QUESTION, subject, None, "no policy other than control ran here")
    top = ranked.row(0, named=True)
    mean, mde, pairs = top["mean_saving_usd"], top["mde_mean_usd"], top["pairs"]
    formula = "n = pairs · (MDE / mean)², MDE = 2.80 · sd / √pairs"
    if mde is None:
        would = f"at least 2 sessions per policy (this run has {pairs}): {formula}"
    elif mean > TIE_USD:
        needed = math.ceil(pairs * (mde / mean) ** 2)
        would = (
            f"about {needed:,} sessions at this spread would detect `{top['policy']}`'s mean "
            f"saving of {_usd(mean)} ({formula}; MDE {_usd(mde)} at {pairs})"
        )
    else:
        would = (
            f"no policy saves on average here; at {pairs} sessions a mean saving below "
            f"{_usd(mde)} is not detectable (MDE = 2.80 · sd / √pairs)"
        )
    reason = f"{NO_DIFFERENCE}: no policy's 95% interval of the mean saving lies above 0"
    if top["small_sample"]:
        reason += f" over at least {MIN_SPREAD_N} sessions (small sample: {pairs})"
    return Answer(
        QUESTION,
        subject,
        None,
        _with_note(reason, note),
        evidence=(_saving(top),),
        would_decide=would,
        effect=_effect(top),
    )


def answer(o: Outputs, config: dict[str, Any]) -> Answer:
    """The answer for one configuration (module docstring)."""
    config_id = str(config["config_id"])
    subject = f"{config['cache_model']} ({config_id})"
    policies = o.savings.filter(
        (pl.col("config_id") == config_id) & ~pl.col("policy").is_in([CONTROL, ORACLE])
    ).sort(["mean_saving_usd", "policy"], descending=[True, False], nulls_last=True)
    detected = policies.filter(
        (pl.col("mean_ci_lo").fill_null(0.0) > 0) & ~pl.col("small_sample").fill_null(value=True)
    )
    note = near_no_op(o.corpus)
    if detected.height == 0:
        return _undecided(subject, policies, note)
    best = detected.row(0, named=True)
    pct = best["saving_pct_of_control"]
    share = "" if pct is None else f" ({pct:+.2f}% of control)"
    return Answer(
        QUESTION,
        subject,
        f"compact with `{best['policy']}`: it saves {_usd(best['mean_saving_usd'])} per "
        f"session{share}",
        _with_note("the largest mean saving whose 95% interval lies above 0", note),
        evidence=(
            _saving(best),
            *_regret(o, best),
            *_gate(o, config_id),
            _breakeven(o, best),
            _risk(o, best),
        ),
        would_change=(_price_flip(o, best), *_runner_up(policies)),
        effect=_effect(best),
    )


def decide(run_dir: Path, layout: Layout, options: DecisionOptions) -> StudyDecision:
    """The tool-output run's decision, one answer per configuration asked about."""
    out = io.require_outputs(run_dir, READ)
    rows = final_units(load(run_dir, "rows", layout))
    configs = rows.select("config_id", "provider", "cache_model").unique().sort("config_id")
    chosen, missing = _chosen(configs, options.provider)
    tables = {name: pl.read_parquet(out / f"{name}.parquet") for name in READ}
    risk = (
        risk_table(scan_lazy(run_dir, "decisions", layout), rows)
        if chosen
        else pl.DataFrame(schema=RISK_SCHEMA)
    )
    outputs = Outputs(**tables, risk=risk)
    digests = rows["corpus_sha256"].drop_nulls().unique().to_list()
    return study_decision(
        run_dir,
        "toolout",
        [answer(outputs, c) for c in chosen],
        rows_simulated=bool(rows["simulated"].fill_null(value=False).any()),
        missing=missing,
        inputs=digests[0] if len(digests) == 1 else None,
    )
