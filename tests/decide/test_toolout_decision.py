"""The tool-output study's decision (issue 34): answers known by construction.

The unit tests build the analysis tables with the real jobs (`savings_table` over paired
sessions whose savings are chosen, `corpus_table`) and hand-written rows with the columns the
jobs write; the last test writes a whole run through the store, analyses it with the real jobs
and decides on it, so the column names are the jobs' own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from jobs.decision.cited import disagreements
from jobs.toolout.decision import NO_DIFFERENCE, Outputs, answer, decide
from jobs.toolout.risk import SCHEMA as RISK_SCHEMA
from jobs.toolout.risk import risk_table
from jobs.toolout.savings import savings_table
from pipeline import studies
from pipeline.config.schema import AnalysisConfig, BootstrapConfig
from pipeline.decision import DecisionOptions
from pipeline.store import write_batch
from tests.view.rundirs import finish_run, full, study_row

ANTHROPIC = {"config_id": "anthropic:c", "provider": "anthropic", "cache_model": "anthropic"}
OPENAI = {"config_id": "openai:g", "provider": "openai", "cache_model": "openai"}
SESSIONS = 10
# Per session: `deterministic` saves exactly $0.01 under anthropic (its interval is [0.01,
# 0.01]); under openai it alternates +$0.01 / -$0.01 (mean 0, the interval spans 0).
SAVES = {"anthropic:c": [0.01] * SESSIONS, "openai:g": [0.01, -0.01] * (SESSIONS // 2)}


def _pairs(saves: dict[str, list[float]], oracle_extra: float = 0.002) -> pl.DataFrame:
    records = []
    for config_id, values in saves.items():
        for i, saving in enumerate(values):
            for policy, s in (
                ("control", 0.0),
                ("deterministic", saving),
                ("oracle", saving + oracle_extra),
            ):
                records.append(
                    {
                        "config_id": config_id,
                        "policy": policy,
                        "transcript_id": f"swe-agent/t{i}",
                        "corpus": "swe-agent",
                        "cost_usd": 0.1 - s,
                        "control_usd": 0.1,
                        "saving_usd": s,
                    }
                )
    return pl.DataFrame(records)


def _corpus(large: int, outputs: int = 100) -> pl.DataFrame:
    share = large / outputs
    return pl.DataFrame(
        {
            "corpus": ["swe-agent"],
            "transcripts": [SESSIONS],
            "requests": [50],
            "tool_outputs": [outputs],
            "large_outputs": [large],
            "tool_output_bytes": [1000],
            "message_bytes": [2000],
            "tool_output_share": [0.5],
            "large_output_share": [share],
            "near_no_op": [share < 0.05],
        }
    )


def _cache(rewrite_usd: float) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {"config_id": c, "policy": "deterministic", "cost_usd": 1.0, "miss_rewrite_usd": r}
            for c, r in (("anthropic:c", rewrite_usd), ("openai:g", 0.0))
        ]
    )


def _breakeven() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "config_id": ["anthropic:c"],
            "policy": ["deterministic"],
            "transformations": [12],
            "premium_ratio": [11.5],
            "median_d_over_r": [0.5],
            "median_n_star": [23.0],
            "median_later_requests": [4.6],
            "share_repaid": [0.25],
            "small_sample": [False],
        }
    )


def _outputs(*, rewrite_usd: float = 0.02, large: int = 40, gate: bool = False) -> Outputs:
    gate_rows = pl.DataFrame(
        {
            "config_id": ["anthropic:c"],
            "policy": ["model"],
            "asked": [8],
            "approved": [0],
            "usual_reason": ["below_break_even"],
            "assumed_requests": [6.0],
            "median_later_requests": [3.0],
            "would_flip": [1],
            "regret_usd": [0.0005],
            "small_sample": [False],
        }
    )
    return Outputs(
        savings=savings_table(_pairs(SAVES), seed=166, resamples=500),
        cache=_cache(rewrite_usd),
        breakeven=_breakeven(),
        gate=gate_rows if gate else gate_rows.clear(),
        corpus=_corpus(large),
        risk=pl.DataFrame(
            {
                "config_id": ["anthropic:c"],
                "policy": ["deterministic"],
                "forced_exact": [7],
                "compacted_anyway": [0],
            },
            schema=RISK_SCHEMA,
        ),
    )


def _evidence(found: Any, label_start: str) -> str:
    values = [e.value for e in found.evidence if e.label.startswith(label_start)]
    assert values, [e.label for e in found.evidence]
    return str(values[0])


def test_a_saving_whose_interval_excludes_0_is_recommended_under_that_cache_model() -> None:
    found = answer(_outputs(), ANTHROPIC)
    assert found.recommendation is not None
    assert found.recommendation.startswith("compact with `deterministic`: it saves $0.010000")
    assert "(+10.00% of control)" in found.recommendation  # 0.01 of 0.1 per session
    assert found.subject == "anthropic (anthropic:c)"
    assert "[$0.010000, $0.010000]" in _evidence(found, "mean saving")
    regret = _evidence(found, "regret against the oracle")
    assert regret.startswith("$0.002000 per session")  # the oracle saves 0.002 more
    # break-even R/D = N / premium = 4.6 / 11.5 = 0.4
    assert "= 0.4 at the median N = 4.6" in _evidence(found, "break-even")
    assert (
        _evidence(found, "risk") == "7 kept exact by the rules; `deterministic` compacted 0 of them"
    )
    # the price flip: rewrites cost 0.02 against a 0.10 saving: ×(1 + 0.1 / 0.02) = ×6
    assert "×6 makes `deterministic`'s mean saving 0" in found.would_change[0]
    assert all(e.source.startswith("analysis/") or e.source == "decisions" for e in found.evidence)


def test_the_same_policy_under_another_cache_model_gives_no_difference_detected() -> None:
    found = answer(_outputs(), OPENAI)
    assert found.recommendation is None
    assert found.reason.startswith(NO_DIFFERENCE)
    assert found.would_decide is not None
    assert found.would_decide.startswith("no policy saves on average here; at 10 sessions")
    assert "is not detectable (MDE = 2.80 · sd / √pairs)" in found.would_decide


def test_the_sessions_that_would_detect_a_small_saving_follow_the_stated_formula() -> None:
    saves = {"openai:g": [0.012, -0.01] * (SESSIONS // 2)}  # mean 0.001, interval spans 0
    savings = savings_table(_pairs(saves), seed=166, resamples=500)
    outputs = Outputs(savings, _cache(0.0), _breakeven(), pl.DataFrame(), _corpus(40), _risk())
    found = answer(outputs, OPENAI)
    row = savings.filter(pl.col("policy") == "deterministic").row(0, named=True)
    needed = -(-SESSIONS * (row["mde_mean_usd"] / row["mean_saving_usd"]) ** 2 // 1)
    assert found.recommendation is None
    assert found.would_decide is not None
    assert found.would_decide.startswith(f"about {int(needed):,} sessions at this spread")


def _risk() -> pl.DataFrame:
    return pl.DataFrame(schema=RISK_SCHEMA)


def test_a_near_no_op_corpus_is_named_in_the_reason() -> None:
    found = answer(_outputs(large=3), OPENAI)
    assert "near no-op corpora (swe-agent)" in found.reason
    quiet = answer(_outputs(large=3), ANTHROPIC)
    assert quiet.recommendation is not None and "near no-op" in quiet.reason


def test_a_policy_that_rewrites_nothing_cached_has_no_price_flip() -> None:
    found = answer(_outputs(rewrite_usd=0.0), ANTHROPIC)
    assert found.would_change[0].startswith("no single price change flips it")


def test_the_gate_verdict_names_the_n_it_assumed() -> None:
    gate = _evidence(answer(_outputs(gate=True), ANTHROPIC), "the gate's verdict")
    assert gate.startswith("approved 0 of 8 (usual reason below_break_even)")
    assert gate.endswith("it assumed N = 6 later requests")  # the break-even R/D is its own row


def test_the_risk_counts_forced_exact_outputs_a_policy_compacted_anyway() -> None:
    rows = pl.DataFrame(
        {
            "row_id": ["c/exact", "c/swe", "d/swe"],
            "config_id": ["c", "c", "d"],
            "arm": ["exact", "swe_agent_last_5", "swe_agent_last_5"],
        }
    )

    def decision(row_id: str, output: int, mode: str, reason: str) -> dict[str, Any]:
        return {
            "row_id": row_id,
            "transcript_id": "t",
            "output_index": output,
            "mode": mode,
            "reason": reason,
        }

    decisions = pl.DataFrame(
        [
            decision("c/exact", 0, "exact", "forced_exact:error_marker"),
            decision("c/exact", 1, "exact", "forced_exact:tool_name"),
            decision("c/exact", 2, "exact", "below_min_bytes"),
            decision("c/swe", 0, "elided", "transformed"),
            decision("c/swe", 0, "elided", "transformed"),  # a later request: counted once
            decision("c/swe", 2, "elided", "transformed"),  # small, not forced: no risk
            decision("d/swe", 0, "elided", "transformed"),  # no rule policy under d
        ]
    )
    table = risk_table(decisions.lazy(), rows)
    assert table.to_dicts() == [
        {"config_id": "c", "policy": "exact", "forced_exact": 2, "compacted_anyway": 0},
        {"config_id": "c", "policy": "swe_agent_last_5", "forced_exact": 2, "compacted_anyway": 1},
    ]


# --- a whole run, written through the store and analysed by the real jobs ---------------

MODELS = {"anthropic:c": ("anthropic", "claude-sonnet-4-5"), "openai:g": ("openai", "gpt-5")}


def _unit(config_id: str, policy: str) -> dict[str, Any]:
    cache_model, model = MODELS[config_id]
    return study_row(
        "toolout",
        run_id="run-d",
        config_id=config_id,
        model=model,
        provider=cache_model,
        arm=policy,
        cache_model=cache_model,
        corpus_sha256="c" * 64,
        live=False,
        transcripts=SESSIONS,
    )


def _children(layout: Any, row: dict[str, Any], saves: list[float]) -> dict[str, Any]:
    head = {"run_id": row["run_id"], "row_id": row["row_id"], "corpus": "swe-agent"}
    sessions, turns, decisions = [], [], []
    for i, saving in enumerate(saves):
        cost = 0.1 - (saving if row["arm"] == "deterministic" else 0.0)
        ids = {**head, "transcript_id": f"swe-agent/t{i}"}
        sessions.append(
            {
                **ids,
                "requests": 5,
                "tool_outputs": 10,
                "large_outputs": 4,
                "tool_output_bytes": 1000,
                "message_bytes": 2000,
                "cost_usd": cost,
                "outputs_compacted": 1,
            }
        )
        turns.append({**ids, "request_index": 0, "input_tokens": 100, "cost_usd": cost})
        forced = row["arm"] == "deterministic" and i == 0
        decisions.append(
            {
                **{k: v for k, v in ids.items() if k != "corpus"},
                "output_index": 0,
                "request_index": 0,
                "mode": "exact" if forced else "deterministic",
                "reason": "forced_exact:error_marker" if forced else "transformed",
            }
        )
    return {
        "sessions": full(layout, "sessions", sessions),
        "turns": full(layout, "turns", turns),
        "decisions": full(layout, "decisions", decisions),
    }


@pytest.fixture
def analysed_run(tmp_path: Path) -> Path:
    from jobs.toolout.run_all import analyze

    layout = studies.layout(studies.definition("toolout"))
    run_dir = tmp_path / "run-d"
    for n, (config_id, policy) in enumerate(
        (c, p) for c in MODELS for p in ("control", "deterministic")
    ):
        row = _unit(config_id, policy)
        children = _children(layout, row, SAVES[config_id])
        write_batch(run_dir, part_name=f"p{n}", rows=[row], children=children, layout=layout)
    finish_run(run_dir, "run-d", "toolout")
    analyze(run_dir, AnalysisConfig(bootstrap=BootstrapConfig(resamples=200)), layout)
    return run_dir


def test_a_run_analysed_by_the_real_jobs_decides_per_cache_model(analysed_run: Path) -> None:
    from pipeline.studies.toolout import DEFINITION

    found = DEFINITION.decide(analysed_run, studies.layout(DEFINITION), DecisionOptions())
    assert found.study == "toolout" and found.run_name == "run-d" and not found.simulated
    assert disagreements(found) == []  # every cited number is what its table gives back
    assert found.inputs == "c" * 64  # the corpus digest on the rows (the manifest has none)
    by_subject = {a.subject: a for a in found.answers}
    assert set(by_subject) == {"anthropic (anthropic:c)", "openai (openai:g)"}
    chosen = by_subject["anthropic (anthropic:c)"]
    assert chosen.recommendation is not None and "`deterministic`" in chosen.recommendation
    assert by_subject["openai (openai:g)"].reason.startswith(NO_DIFFERENCE)
    # the risk from the run's decisions: one output kept exact by an error marker
    assert _evidence(chosen, "risk").startswith("1 kept exact by the rules")


def test_a_provider_the_run_lacks_is_listed_as_missing(analysed_run: Path) -> None:
    layout = studies.layout(studies.definition("toolout"))
    found = decide(analysed_run, layout, DecisionOptions(provider="gemini"))
    assert found.answers == ()
    assert found.missing == (
        "tool output: provider 'gemini' is not in this run (its cache models: anthropic, openai)",
    )
    only = decide(analysed_run, layout, DecisionOptions(provider="OpenAI"))
    assert [a.subject for a in only.answers] == ["openai (openai:g)"]
