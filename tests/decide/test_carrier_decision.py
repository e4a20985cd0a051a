"""The carrier's decision on runs whose answer is known by construction (tests/decide/
carrier_runs.py), analysed by the real jobs: q beats j everywhere, the floor with its retention
fallback, and an effect the panel cannot tell from 0."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from jobs.carrier.decision import FALLBACK_QUESTION, PANEL, QUESTION, RECALL, RETENTION
from jobs.decision.cited import disagreements
from pipeline import studies
from pipeline.decision import Answer, DecisionOptions, StudyDecision
from tests.decide import carrier_runs

CARRIER = studies.definition("carrier")


def _decide(run_dir: Path) -> StudyDecision:
    decide = CARRIER.decide  # type: ignore[attr-defined]
    decision: StudyDecision = decide(run_dir, studies.layout(CARRIER), DecisionOptions())
    assert disagreements(decision) == []  # every cited number is what its table gives back
    return decision


def _one(decision: StudyDecision, question: str, subject: str) -> Answer:
    (found,) = [a for a in decision.answers if a.question == question and a.subject == subject]
    return found


def _value(answer: Answer, label_start: str) -> str:
    (found,) = [e for e in answer.evidence if e.label.startswith(label_start)]
    return found.value


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("carrier-decide")
    return {
        "q_beats_j": carrier_runs.carrier_run(root / "qj", carrier_runs.q_beats_j()),
        "floor": carrier_runs.carrier_run(root / "floor", carrier_runs.floor()),
        "no_difference": carrier_runs.carrier_run(root / "nd", carrier_runs.no_difference()),
    }


def test_q_beats_j_in_every_configuration_recommends_q(runs: dict[str, Path]) -> None:
    decision = _decide(runs["q_beats_j"])
    assert not decision.simulated and decision.inputs == carrier_runs.FIXTURE_A
    # q leads by (6 + i % 3)/14 in configuration i: 6, 7, 8, 6, 7, 8 fourteenths
    effects = [(6 + i % 3) / 14 for i in range(6)]
    panel = _one(decision, QUESTION, PANEL)
    assert panel.recommendation is not None and "`q`" in panel.recommendation
    assert f"{statistics.mean(effects):+.3f}" in panel.recommendation
    paired = [e for e in panel.evidence if e.label.startswith("paired effect q − j")]
    assert paired and paired[0].source == "analysis/paired_q_vs_j.parquet"
    interval = paired[0].value.split("[")[1].split("]")[0].split(", ")
    assert float(interval[0]) > 0  # the interval excludes 0
    assert _value(panel, "configurations where `q` wins") == "6 of 6 (100%)"
    mde = 2.80 * statistics.stdev(effects) / math.sqrt(6)
    assert _value(panel, "minimum detectable effect").startswith(f"{mde:.3f}")
    for family in ("alpha", "beta"):  # each family: three configurations, q wins each
        answer = _one(decision, QUESTION, family)
        assert answer.recommendation is not None and "`q`" in answer.recommendation
        assert all(
            ("family", family) in e.where or e.where[0][0] == "config_id" for e in answer.evidence
        )
    assert not [a for a in decision.answers if a.question == FALLBACK_QUESTION]


def test_the_floor_gives_no_decision_and_falls_back_on_retention(runs: dict[str, Path]) -> None:
    decision = _decide(runs["floor"])
    recall = _one(decision, QUESTION, PANEL)
    assert recall.recommendation is None
    assert "at the floor" in recall.reason and "falling back on the carrier retention" in (
        recall.reason
    )
    assert recall.would_decide is not None and "0.05" in recall.would_decide
    assert {e.source for e in recall.evidence} == {RECALL}
    # x holds (8 + i)/14 of the values in configuration i, m 2/14: x leads in all five
    fallback = _one(decision, FALLBACK_QUESTION, PANEL)
    assert fallback.recommendation is not None and "`x`" in fallback.recommendation
    lead = statistics.mean((6 + i) / 14 for i in range(5))
    assert f"{lead:+.3f}" in fallback.recommendation
    assert {e.source for e in fallback.evidence} == {RETENTION}
    assert _value(fallback, "configurations where `x` wins") == "5 of 5 (100%)"


def test_an_effect_the_interval_cannot_tell_from_0_names_the_panel_that_would(
    runs: dict[str, Path],
) -> None:
    recall = _one(_decide(runs["no_difference"]), QUESTION, PANEL)
    assert recall.recommendation is None and "no difference detected" in recall.reason
    effects = [e / 14 for e in carrier_runs.QJ_EFFECTS]
    needed = math.ceil((2.80 * statistics.stdev(effects) / statistics.mean(effects)) ** 2)
    assert recall.would_decide is not None
    assert recall.would_decide.startswith(f"{needed} configurations at this spread")
