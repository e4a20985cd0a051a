"""Issue 32 §18: the progress line of a study that prices requests it does not send shows them.

The toolout replay prices every replayed request offline (2,843 requests at $13.44 on the
shipped corpus) while it sends none, and its progress line said "requests 0 … cost $0.0000".
The study names the row columns holding that work (`ProgressLabels.priced_requests`,
`priced_cost_usd`); the engine's display stays study-blind and sums them.
"""

from __future__ import annotations

from pipeline.study import ProgressLabels, UnitOutcome
from pipeline.sweep.bill import Bill
from pipeline.sweep.progress import ProgressView
from pipeline.toolout.records import ROW_COLUMNS
from pipeline.toolout.study import ToolOutStudy

PRICED = ProgressLabels(
    unit="units", step="replays", priced_requests="replayed", priced_cost_usd="priced_usd"
)


def test_the_line_shows_the_requests_priced_offline_and_their_cost() -> None:
    progress = ProgressView(3, every_s=1e9, labels=PRICED)
    progress.record("a", UnitOutcome(valid=True), Bill(), row={"replayed": 2000, "priced_usd": 9.4})
    progress.record("b", UnitOutcome(valid=True), Bill(), row={"replayed": 843, "priced_usd": 4.04})
    line = progress.summary_line()
    assert "priced offline: 2843 requests, $13.4400" in line
    assert "requests 0 sent" in line  # what was sent stays apart, and says so


def test_a_study_that_prices_nothing_offline_keeps_its_line() -> None:
    progress = ProgressView(1, every_s=1e9, labels=ProgressLabels())
    progress.record("a", UnitOutcome(valid=True), Bill(requests=4), row={"replayed": 9})
    progress.requests = 4  # the coordinator's total (refresh)
    line = progress.summary_line()
    assert "priced offline" not in line
    assert "requests 4 (0 open)" in line


def test_the_toolout_study_names_row_columns_it_writes() -> None:
    labels = ToolOutStudy.progress_labels.fget(None)  # type: ignore[attr-defined]
    columns = {c.name for c in ROW_COLUMNS}
    assert labels.priced_requests in columns
    assert labels.priced_cost_usd in columns
