"""The study-free joiner on hand-made decisions: answers joined by subject across studies, what
is missing, what would change it, and the page's order (what to do first)."""

from __future__ import annotations

from pathlib import Path

from jobs.decision import write_decision
from jobs.decision.join import join, subject_key
from pipeline.decision import Answer, DecisionOptions, Evidence, StudyDecision

SAVING = Evidence(
    "mean saving", "$0.010000", "analysis/savings.parquet", (("config_id", "a"), ("policy", "p"))
)
RECALL = Evidence(
    "mean recall of `q`", "0.786", "analysis/recall_by_config_arm.parquet", (("arm", "q"),)
)


def _decision(
    study: str, answers: tuple[Answer, ...], missing: tuple[str, ...] = ()
) -> StudyDecision:
    return StudyDecision(study, f"/runs/{study}", f"{study}-run", "d" * 64, False, answers, missing)


CARRIER = _decision(
    "carrier",
    (
        Answer("which carrier?", "panel", "write `q`", "interval excludes 0", (RECALL,)),
        Answer(
            "which carrier?",
            "anthropic",
            "write `q`",
            "interval excludes 0",
            (RECALL,),
            would_change=("a lead 0.3 smaller",),
        ),
        Answer("which carrier?", "qwen", None, "at the floor", (RECALL,), would_decide="bigger"),
    ),
    missing=("3 configurations (a small sample)",),
)
TOOLOUT = _decision(
    "toolout",
    (Answer("compact?", "anthropic (anthropic:c)", "compact with `p`", "CI above 0", (SAVING,)),),
)


def test_subjects_join_on_their_name_before_a_parenthesis_or_comma() -> None:
    assert subject_key("Anthropic (anthropic:c)") == "anthropic"
    assert subject_key("cfg-a, band long") == "cfg-a"
    assert subject_key("qwen") == "qwen"


def test_one_paragraph_per_subject_joins_every_study_that_answers_it() -> None:
    page = join([CARRIER, TOOLOUT], expected=["carrier", "toolout", "traces"])
    assert [p.subject for p in page.paragraphs] == ["panel", "anthropic", "qwen"]
    anthropic = page.paragraphs[1]
    assert anthropic.recommendations == (
        "carrier (carrier-run): write `q`",
        "toolout (toolout-run): compact with `p`",
    )
    assert "[analysis/savings.parquet, config_id=a, policy=p]" in anthropic.text
    assert "[analysis/recall_by_config_arm.parquet, arm=q]" in anthropic.text
    assert page.missing == (
        "traces: no run of this study is on this page; its question is unanswered",
        "qwen: answered by carrier, not by toolout",
        "carrier (carrier-run): 3 configurations (a small sample)",
    )
    assert page.would_change == (
        "carrier (carrier-run, anthropic): a lead 0.3 smaller",
        "carrier (carrier-run, qwen): would decide: bigger",
    )
    assert page.side_by_side == () and page.simulated == ()


def test_the_page_leads_with_what_to_do(tmp_path: Path) -> None:
    md, *_ = write_decision([CARRIER, TOOLOUT], DecisionOptions(), tmp_path, ["carrier", "toolout"])
    page = md.read_text(encoding="utf-8")
    order = ["## What to do", "## What is missing", "## What would change this", "## Detail"]
    assert [page.index(h) for h in order] == sorted(page.index(h) for h in order)
    assert "SIMULATED" not in page
