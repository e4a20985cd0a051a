"""docs/tables.md documents every column of the tool-output study's tables.

The section is parsed, not grepped: a column counts as documented only when it is a name in
the first cell of a table row under its own table's `###` heading, so a name mentioned in
another table's prose does not hide a missing row.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME
from pipeline.toolout.records import DECISIONS, ROW_COLUMNS, SESSIONS, TURNS

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
SECTION = "## Tool-output study tables (study=toolout)"
STUDY_TABLE_HEAD = ("run_id", "row_id")  # every study table starts with these (documented once)


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/tables.md has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1]
    following = re.search(r"^## ", body, flags=re.MULTILINE)
    return body[: following.start()] if following else body


def _documented(table: str) -> set[str]:
    """Column names in the first cells of the table rows under `### <table> ...`."""
    parts = re.split(r"^### ", _section(), flags=re.MULTILINE)
    found = [p for p in parts if p.split(" ", 1)[0].strip("`") == table]
    assert len(found) == 1, f"expected one '### {table} ...' subsection, found {len(found)}"
    names: set[str] = set()
    for line in found[0].splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        first = line.strip("|").split("|", 1)[0]
        names.update(n.strip().strip("`") for n in first.split(","))
    names.discard("column")
    return names


def test_every_toolout_column_is_documented() -> None:
    wanted = {
        "rows": [c.name for c in ROW_COLUMNS],
        "turns": [c.name for c in TURNS.columns],
        "sessions": [c.name for c in SESSIONS.columns],
        "decisions": [c.name for c in DECISIONS.columns],
    }
    missing = {
        table: [name for name in names if name not in _documented(table)]
        for table, names in wanted.items()
    }
    assert not any(missing.values()), f"undocumented in docs/tables.md: {missing}"


def test_no_documented_toolout_column_is_stale() -> None:
    shared = {name for name, _ in (*ROW_KEY, *ROW_OUTCOME)}
    schemas = {
        "rows": shared | {c.name for c in ROW_COLUMNS},
        "turns": {c.name for c in TURNS.columns},
        "sessions": {c.name for c in SESSIONS.columns},
        "decisions": {c.name for c in DECISIONS.columns},
    }
    stale = {
        table: sorted(_documented(table) - columns - set(STUDY_TABLE_HEAD))
        for table, columns in schemas.items()
    }
    assert not any(stale.values()), f"documented but not in the schema: {stale}"


def test_every_shared_rows_column_says_what_it_means_for_a_replay_unit() -> None:
    shared = [name for name, _ in (*ROW_KEY, *ROW_OUTCOME)]
    documented = _documented("rows")
    assert [name for name in shared if name not in documented] == []
