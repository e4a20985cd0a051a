"""Issue 13 (memory): a session keeps only the rows columns it answers from, not whole rows
(answer texts and all), for earlier sessions' rows and for the ones it commits."""

from __future__ import annotations

from pathlib import Path

from pipeline.sweep.session import SESSION_COLUMNS
from tests.sweep.rowfactory import row_for
from tests.sweep.test_session import make_run_dir, open_session, spec


def test_a_session_keeps_only_its_columns_and_still_answers(tmp_path: Path) -> None:
    session = open_session(make_run_dir(tmp_path))
    new = row_for(spec("q", 1), valid=True, cost=2.0)
    new["answer_text"] = "x" * 10_000
    session.add_rows([new])
    rows = session.rows()
    assert tuple(rows.column_names) == SESSION_COLUMNS
    assert rows.num_rows == 4
    assert session.spent() == {"cost_usd": 5.0, "requests": 16.0, "attempts": 4}
    assert session.any_simulated()
    owed = {(s.arm, s.repeat, s.attempt) for s in session.owed_specs()}
    assert ("j", 1, 1) in owed and ("q", 1, 0) not in owed and ("j", 0, 0) not in owed
