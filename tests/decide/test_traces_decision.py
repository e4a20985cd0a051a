"""The reasoning-trace study's decision (issue 34): answers known by construction.

The frontier tests build per-trace compression records and hand them to the real jobs
(`compression.by_band`, `paired.pairs`, `paired.paired_table`), so the tables have the jobs'
columns; the visibility tests write template rows with the jobs' schemas (`matrix`); the last
tests decide on the jobs' hand-written traces run (tests/jobs/traces_rundir.py), analysed by
the real jobs, to prove the column names match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from jobs.traces import compression, paired
from jobs.traces.decision import (
    NOTHING_SAVED,
    TemplateFileError,
    frontier_answers,
    nothing_saved,
    visibility_answer,
)
from jobs.traces.matrix import CLASS_SCHEMA, SWITCH_CLASS_SCHEMA
from pipeline import studies
from pipeline.decision import Answer, DecisionOptions
from pipeline.traces.compression.facts import KINDS
from tests.traces.templates import KIMI, shipped
from tests.view.rundirs import traces_run

# --- visibility: one template of each class ------------------------------------------------


def _class_row(template: str, visibility: str, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(CLASS_SCHEMA)
    row.update(
        source="shipped",
        template_source="shipped",
        renderer="jinja2-hf",
        template=template,
        visibility=visibility,
        unrenderable_reason="",
        dialects_read="" if visibility in {"never", "unrenderable"} else "reasoning_content",
        tool_calls_dropped=False,
        switches_read="",
        switch_effects="",
        shapes_rendered=100,
        shapes_crashed=0,
        crash_errors="",
    )
    row.update(extra)
    return row


NO_SWITCHES = pl.DataFrame(schema=SWITCH_CLASS_SCHEMA)


@pytest.mark.parametrize(
    ("visibility", "starts"),
    [
        ("always", "every stored reasoning reaches the model: compress it"),
        ("after_last_user", "only reasoning after the last user turn reaches the model"),
        ("until_plain_reply", "a tool-call turn's reasoning reaches the model until a plain"),
        ("never", f"no stored reasoning reaches the model: do not replay it: {NOTHING_SAVED}"),
    ],
)
def test_each_visibility_class_says_which_stored_reasoning_the_model_sees(
    visibility: str, starts: str
) -> None:
    found = visibility_answer(_class_row("t", visibility), NO_SWITCHES, ())
    assert found.recommendation is not None
    assert found.recommendation.startswith(starts)
    assert f"`{visibility}`" in found.reason
    field = "store it there" in found.recommendation
    assert field == (visibility != "never")  # a template that reads a field names it


@pytest.mark.parametrize("visibility", ["irregular", "unrenderable"])
def test_an_irregular_or_unrenderable_template_gives_no_recommendation(visibility: str) -> None:
    found = visibility_answer(
        _class_row("t", visibility, unrenderable_reason="time"), NO_SWITCHES, ()
    )
    assert found.recommendation is None
    assert found.reason.startswith("no default render" if visibility == "unrenderable" else "no ")


def test_a_switch_that_changes_the_class_is_what_would_change_it() -> None:
    row = _class_row("t", "never", switches_read="thinking", switch_effects="thinking")
    settings = pl.DataFrame(
        [
            {**{k: row[k] for k in SWITCH_CLASS_SCHEMA if k in row}, "switches": s, "visibility": v}
            for s, v in (("", "never"), ("thinking=false", "never"), ("thinking=true", "always"))
        ],
        schema=SWITCH_CLASS_SCHEMA,
    )
    found = visibility_answer(row, settings, ())
    assert found.would_change == ("the switch setting `thinking=true`: always",)


def test_a_template_that_drops_reasoning_gets_no_frontier() -> None:
    never = pl.DataFrame([_class_row("ds", "never")], schema=CLASS_SCHEMA)
    (found,) = nothing_saved(never, Path("ds.jinja"))
    assert found.recommendation is None
    assert found.reason.startswith(f"{NOTHING_SAVED}: the template drops every stored reasoning")
    shows = pl.DataFrame([_class_row("q", "after_last_user")], schema=CLASS_SCHEMA)
    assert nothing_saved(shows, Path("q.jinja")) == []
    assert nothing_saved(never, None) == []  # every template: the frontier stays


# --- the frontier: per-trace records through the real jobs ---------------------------------


def _record(arm: str, item: int, retention: float, ratio: float, band: str) -> dict[str, Any]:
    chars = 600 if band == "<1k" else 2000
    return {
        "config_id": "c",
        "arm": arm,
        "item_id": f"i{band}{item}",
        "band": band,
        "synthetic": False,
        "empty_summary": False,
        "trace_chars": chars,
        "summary_chars": int(chars / ratio),
        "compression_chars": ratio,
        "compression_tokens": None,
        "retention": retention,
        **{f"retention_{k}": retention for k in KINDS},
        "facts_total": 10,
        "retained_total": int(10 * retention),
        "precision": 1.0,
        "invented": 0,
        "greedy": True,
        "thinking_state": "off",
        "repeat_identical": None,
    }


def _tables(arms: dict[str, tuple[float, float]], *, items: int = 8) -> dict[str, pl.DataFrame]:
    """Every arm keeps the same share of every trace's facts at the same compression."""
    records = [
        _record(arm, i, retention, ratio, band)
        for band in ("<1k", "1k-4k")
        for arm, (retention, ratio) in arms.items()
        for i in range(items if band == "<1k" else 2)  # the second band: a small sample
    ]
    compressions = pl.DataFrame(records)
    pairs = paired.pairs(compressions)
    return {
        "compression_by_band": compression.by_band(compressions),
        "compression_pairs": pairs,
        "compression_paired": paired.paired_table(pairs, seed=166, resamples=200),
    }


def _by_subject(answers: list[Answer]) -> dict[str, Answer]:
    return {a.subject: a for a in answers}


DOMINANT = {"naive": (0.5, 5.0), "churn": (0.8, 3.0), "hybrid": (1.0, 8.0)}


def test_an_arm_that_dominates_is_recommended_with_its_interval(tmp_path: Path) -> None:
    found = _by_subject(frontier_answers(tmp_path, _tables(DOMINANT), 0.9))["c, band <1k"]
    assert found.recommendation == (
        "summarise with `hybrid`: it keeps 100.0% of the facts at 8× compression"
    )
    assert found.reason == "its 95% retention interval reaches 90%; it dominates every other arm"
    kept = {e.label: e for e in found.evidence}["facts kept by `hybrid`"]
    assert kept.value == "100.0% (95% CI [100.0%, 100.0%], n = 8)"
    assert kept.source == "analysis/compression_pairs.parquet"
    contrast = {e.label: e.value for e in found.evidence}[
        "`hybrid` against `naive` on the same traces"
    ]
    assert contrast.startswith("retention +50.0% (95% CI [+50.0%, +50.0%]); compression 1.6×")
    assert found.would_change == ()


def test_a_shorter_arm_under_the_goal_is_what_would_change_it(tmp_path: Path) -> None:
    arms = {**DOMINANT, "churn": (0.95, 12.0)}  # shorter than hybrid, keeps 95%
    at_90 = _by_subject(frontier_answers(tmp_path, _tables(arms), 0.9))["c, band <1k"]
    assert at_90.recommendation is not None and "`churn`" in at_90.recommendation
    at_97 = _by_subject(frontier_answers(tmp_path, _tables(arms), 0.97))["c, band <1k"]
    assert at_97.recommendation is not None and "`hybrid`" in at_97.recommendation
    assert at_97.reason.endswith("the most compressive arm that does")
    assert at_97.would_change[0].startswith("`churn` compresses 12× but keeps 95.0%")
    assert at_97.would_change[0].endswith("it qualifies at --retention 0.95 or below")


def test_no_arm_at_the_goal_gives_no_recommendation_and_what_would(tmp_path: Path) -> None:
    arms = {"naive": (0.5, 5.0), "churn": (0.8, 3.0)}
    found = _by_subject(frontier_answers(tmp_path, _tables(arms), 0.9))["c, band <1k"]
    assert found.recommendation is None
    assert found.reason == "no arm's 95% retention interval reaches 90% here"
    assert found.would_decide is not None
    assert found.would_decide.startswith("no arm keeps 90% of the facts on average (best `churn`")


def test_a_band_with_too_few_traces_decides_nothing(tmp_path: Path) -> None:
    answers = _by_subject(frontier_answers(tmp_path, _tables(DOMINANT), 0.9))
    small = answers["c, band 1k-4k"]
    assert small.recommendation is None
    assert small.reason.startswith("small sample: 2 traces with facts here (fewer than 5")
    assert answers["c, all bands"].recommendation is not None  # 10 traces pooled


# --- the jobs' traces run, analysed by the real jobs --------------------------------------


@pytest.fixture(scope="module")
def traces_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return traces_run(tmp_path_factory.mktemp("decide-traces") / "run", simulated=False)


def _decide(run_dir: Path, options: DecisionOptions) -> Any:
    from jobs.decision.cited import disagreements
    from pipeline.studies.traces import DEFINITION

    found = DEFINITION.decide(run_dir, studies.layout(DEFINITION), options)
    assert disagreements(found) == []  # every cited number is what its table gives back
    return found


def test_the_analysed_run_gives_each_templates_class_and_the_frontier(traces_dir: Path) -> None:
    found = _decide(traces_dir, DecisionOptions())
    assert found.study == "traces" and not found.simulated and found.missing == ()
    classes = {
        a.subject: a.evidence[0].value
        for a in found.answers
        if a.question.startswith("reasoning: which stored")
    }
    assert classes["Qwen-Qwen3-0.6B"] == "after_last_user"
    assert classes["moonshotai-Kimi-K2-Thinking"] == "until_plain_reply"
    assert classes["moonshotai-Kimi-K2-Thinking (local-b, llama-server)"] == "always"
    frontier = {a.subject: a for a in found.answers if a.question.startswith("reasoning: which s")}
    assert frontier["local-a, all bands"].reason.startswith("small sample: 2 traces")


def test_a_template_file_is_matched_by_its_digest(traces_dir: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "my-template.jinja"
    renamed.write_text(shipped()[KIMI], encoding="utf-8")
    found = _decide(traces_dir, DecisionOptions(template=renamed))
    subjects = {a.subject for a in found.answers if a.question.startswith("reasoning: which st")}
    assert subjects == {
        "moonshotai-Kimi-K2-Thinking",
        "moonshotai-Kimi-K2-Thinking (local-b, jinja2-hf)",
        "moonshotai-Kimi-K2-Thinking (local-b, llama-server)",
    }


def test_a_template_the_run_lacks_is_missing_and_no_file_is_one_line(
    traces_dir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.jinja"
    other.write_text("{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    found = _decide(traces_dir, DecisionOptions(template=other))
    assert len(found.missing) == 1
    assert found.missing[0].startswith("reasoning: template other.jinja is not in this run")
    with pytest.raises(TemplateFileError, match=r"^--template .*absent\.jinja is not a file"):
        _decide(traces_dir, DecisionOptions(template=tmp_path / "absent.jinja"))
