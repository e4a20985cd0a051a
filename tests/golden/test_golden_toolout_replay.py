"""Golden equality of the tool-output replay on the whole shipped corpus (issue 20).

Recorded from the replay as it was before the incremental accounting: every arm (11 policy
files and the oracle) under every configuration of the offline panel (5 cache models), the
`turns`, `sessions` and `decisions` tables as JSON lines sorted by their keys, pinned by a
SHA-256 per table and per unit in tests/golden/toolout_data/toolout_replay.json. Driven without Ray
(the replay is pure: tests/golden/toolout_replay.py runs the study's own runner).

Regenerate (only when a change of results is intended, and say why in the commit):

    FOLDSWEEP_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -m slow -s \
        tests/golden/test_golden_toolout_replay.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.golden.toolout_replay import TABLES, digests, replay_tables

GOLDEN = Path(__file__).parent / "toolout_data" / "toolout_replay.json"  # data/ is the sim golden's

pytestmark = pytest.mark.slow  # about a minute: the oracle's search dominates


def test_toolout_replay_tables_equal_the_golden_byte_for_byte() -> None:
    got = digests(replay_tables())
    if os.environ.get("FOLDSWEEP_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {GOLDEN}")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for table in TABLES:
        differing = [
            unit
            for unit in sorted(set(want[table]["units"]) | set(got[table]["units"]))
            if want[table]["units"].get(unit) != got[table]["units"].get(unit)
        ]
        assert not differing, f"{table}: {len(differing)} units differ, e.g. {differing[:5]}"
        assert got[table]["records"] == want[table]["records"], table
        assert got[table]["sha256"] == want[table]["sha256"], table
