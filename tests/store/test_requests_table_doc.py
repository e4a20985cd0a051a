"""docs/tables.md documents every column of the engine's `requests` table, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.store.schemas import REQUESTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.md"


def documented() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    body = text.split("### requests (", 1)[1]
    body = re.split(r"^##", body, maxsplit=1, flags=re.MULTILINE)[0]
    names: set[str] = set()
    for line in body.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            first = line.strip("|").split("|", 1)[0]
            names.update(n.strip().strip("`") for n in first.split(","))
    names.discard("column")
    return names


def test_every_requests_column_is_documented_and_none_is_stale() -> None:
    assert documented() == set(REQUESTS.names)
