"""ProgressView: live counters move the display before any trajectory completes (no Ray)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pipeline.carrier.study import CarrierStudy
from pipeline.config import BudgetConfig
from pipeline.study import UnitOutcome, UnitSpec
from pipeline.sweep import progress as progress_mod
from pipeline.sweep.bill import Bill
from pipeline.sweep.coordinator import Completion, Coordinator
from pipeline.sweep.progress import EndpointLive, LiveCounts, ProgressView
from pipeline.sweep.sink import Sink
from tests.store.layouts import CARRIER_LAYOUT
from tests.sweep.rowfactory import records_for

FOLDS = 5  # folds per trajectory: 6 requests with the recall
# the display's words (trajectories, folds) are the carrier study's, not the engine's
CARRIER_LABELS = CarrierStudy.progress_labels


def view(**attempts: LiveCounts) -> EndpointLive:
    return EndpointLive(FOLDS, dict(attempts), FOLDS + 1)


def field(line: str, name: str) -> str:
    found = re.search(rf"\b{name} (\S+)", line)
    assert found, f"no {name!r} in {line!r}"
    return found.group(1)


def quiet_view(planned: int) -> ProgressView:
    # enabled, not a tty under pytest; every_s keeps refresh from printing
    return ProgressView(planned, every_s=1e9, labels=CARRIER_LABELS)


def test_live_counters_move_requests_and_folds_before_any_trajectory_completes() -> None:
    progress = quiet_view(planned=4)
    progress.refresh(cost_usd=0.0, requests=0)
    line = progress.summary_line()
    assert field(line, "requests") == "0" and field(line, "eta") == "?"
    live = {
        "a": view(x=LiveCounts(sent=3, completed=2, steps=2, tokens=300, cost_usd=0.02)),
        "b": view(y=LiveCounts(sent=2, completed=1, steps=1, tokens=100)),
    }
    progress.refresh(cost_usd=0.0, requests=0, live=live)
    line = progress.summary_line()
    assert field(line, "trajectories") == "0/4"  # nothing has completed
    assert field(line, "requests") == "5" and "(2 open)" in line
    assert field(line, "folds") == f"3/{4 * FOLDS}"
    assert field(line, "tokens") == "400" and field(line, "cost") == "$0.0200"
    assert field(line, "in flight") == "2" and "(a 1, b 1)" in line
    # 3 requests answered: an ETA from requests, long before the first trajectory ends
    eta = progress.eta_s()
    assert eta is not None and eta > 0
    assert field(line, "eta") != "?" and "(by requests)" in line


def test_eta_waits_for_a_few_answered_requests() -> None:
    progress = quiet_view(planned=4)
    live = {"a": view(x=LiveCounts(sent=2, completed=progress_mod.ETA_MIN_REQUESTS - 1))}
    progress.refresh(cost_usd=0.0, requests=0, live=live)
    assert progress.eta_s() is None and field(progress.summary_line(), "eta") == "?"


def test_a_collected_row_replaces_its_live_counts_without_double_counting() -> None:
    progress = quiet_view(planned=2)
    spec = UnitSpec("run", "a", "m", "f", "q", 0, 0, 0)
    counts = LiveCounts(sent=6, completed=6, steps=FOLDS, tokens=600, finished=True)
    live = {"a": view(**{spec.row_id: counts})}
    progress.refresh(cost_usd=0.0, requests=0, live=live)
    before = progress.summary_line()
    # the dispatcher drops the attempt from the live view when it collects its row ...
    del live["a"].attempts[spec.row_id]
    bill = Bill(requests=6, prompt_tokens=500, completion_tokens=100, steps=FOLDS)
    progress.record("a", UnitOutcome(valid=True), bill)
    progress.refresh(cost_usd=0.0, requests=6, live=live)  # ... and the coordinator counts it
    after = progress.summary_line()
    for name in ("requests", "folds", "tokens"):
        assert field(after, name) == field(before, name), name
    assert field(after, "trajectories") == "1/2" and field(after, "in flight") == "0"


def test_without_live_counters_the_eta_comes_from_trajectories() -> None:
    progress = quiet_view(planned=4)
    progress.record("a", UnitOutcome(valid=True), Bill())
    progress.refresh(cost_usd=0.0, requests=4)
    line = progress.summary_line()
    assert "(by trajectories)" in line and field(line, "folds") == "0"


def test_the_plain_line_carries_the_live_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    progress = ProgressView(3, every_s=0.0, labels=CARRIER_LABELS)
    live = {"a": view(x=LiveCounts(sent=4, completed=3, steps=3, tokens=30))}
    progress.refresh(cost_usd=0.0, requests=0, live=live)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert field(line, "requests") == "4" and field(line, "folds") == f"3/{3 * FOLDS}"
    assert field(line, "in flight") == "1" and "(a 1)" in line
    assert "(by requests)" in line


def test_the_plain_line_names_at_most_ten_endpoints_in_flight() -> None:
    progress = quiet_view(planned=30)
    live = {f"e{i:02d}": view(x=LiveCounts(sent=1)) for i in range(12)}
    progress.refresh(cost_usd=0.0, requests=0, live=live)
    line = progress.summary_line()
    assert field(line, "in flight") == "12" and "+2 more" in line


def test_the_tty_table_has_live_columns() -> None:
    progress = quiet_view(planned=3)
    live = {"a": view(x=LiveCounts(sent=4, completed=3, steps=3))}
    progress.refresh(cost_usd=0.0, requests=0, live=live)
    table = progress._table()
    headers = [column.header for column in table.columns]
    assert headers[:4] == ["endpoint", "in flight", "requests", "folds"]
    assert [list(column.cells) for column in table.columns[:4]] == [["a"], ["1"], ["4"], ["3"]]


class LiveDispatcher:
    """Completes nothing until told; offers live counters like the RayDispatcher."""

    def __init__(self) -> None:
        self.pending: list[UnitSpec] = []
        self.live_calls = 0
        self.polls = 0

    def submit(self, spec: UnitSpec) -> None:
        self.pending.append(spec)

    def in_flight(self, config_id: str) -> int:
        return len(self.pending)

    def busy(self) -> bool:
        return bool(self.pending)

    def poll(self, timeout_s: float) -> list[Completion]:
        self.polls += 1
        if self.polls < 3:
            return []
        done, self.pending = self.pending, []
        return [Completion(s, records_for(s, valid=True)) for s in done]

    def live(self) -> dict[str, EndpointLive]:
        self.live_calls += 1
        return {"c1": view(x=LiveCounts(sent=self.polls, completed=self.polls))}


def coordinate(tmp_path: Path, progress: ProgressView, dispatcher: Any) -> None:
    Coordinator(
        dispatcher=dispatcher,
        sink=Sink(tmp_path, "run", CARRIER_LAYOUT),
        attempt_limit=1,
        budget=BudgetConfig(),
        caps={"c1": 2},
        lost_records=lambda spec, detail: records_for(spec, valid=False),
        progress=progress,
        poll_s=0.0,
    ).run([UnitSpec("run", "c1", "m", "f", "q", 0, r, 0) for r in range(2)])


def test_the_coordinator_hands_live_counters_to_the_progress_view(tmp_path: Path) -> None:
    dispatcher = LiveDispatcher()
    progress = quiet_view(planned=2)
    coordinate(tmp_path, progress, dispatcher)
    assert dispatcher.live_calls == 3  # once per loop pass
    assert progress.live["c1"].attempts["x"].sent == 3


def test_live_counters_are_not_fetched_for_a_disabled_view(tmp_path: Path) -> None:
    dispatcher = LiveDispatcher()
    coordinate(tmp_path, ProgressView(2, enabled=False, labels=CARRIER_LABELS), dispatcher)
    assert dispatcher.live_calls == 0
