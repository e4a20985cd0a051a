"""`python -m pipeline grade` end to end, in a subprocess, on a hand-written fixture file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GRADED = [
    ("ingress port", "41827", "port"),
    ("shard count", "37 shards", "count"),
    ("department name", "Служба облачных хранилищ", "department"),
]


def _fact(label: str, value: str, kind: str) -> dict[str, Any]:
    return {"label": label, "value": value, "kind": kind, "graded": True, "chunk": 0}


def _write_fixture(path: Path) -> Path:
    facts = [_fact(*spec) for spec in GRADED]
    text = " ".join(f"The {label} is {value}." for label, value, _ in GRADED)
    fixture = {
        "scenario": "hand",
        "seed": 7,
        "version": "v2",
        "chunks": [{"index": 0, "messages": [{"role": "user", "content": text}]}],
        "planted": facts,
        "graded": facts,
    }
    path.write_text(json.dumps(fixture, ensure_ascii=False), encoding="utf-8")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "grade", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=ROOT,
        check=False,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    answer = tmp_path / "answer.txt"
    answer.write_text(
        "1. **Ingress port**: 41827\n2. Shard count: 37\n3. Department name: unknown\n",
        encoding="utf-8",
    )
    carrier = tmp_path / "carrier.txt"
    carrier.write_text("ports: 41827; shards: 37 shards", encoding="utf-8")
    return {
        "fixture": _write_fixture(tmp_path / "fixture.json"),
        "answer": answer,
        "carrier": carrier,
    }


def test_grade_prints_one_json_object_with_recall_and_checks(files: dict[str, Path]) -> None:
    done = _run("--fixture", str(files["fixture"]), "--answer", str(files["answer"]),
                "--carrier", str(files["carrier"]))  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["recall"] == pytest.approx(1 / 3)
    rows = {c["label"]: c for c in result["checks"]}
    assert [c["label"] for c in result["checks"]] == [label for label, _, _ in GRADED]
    assert rows["ingress port"]["passed"] is True
    assert rows["shard count"]["answered"] == "37"
    assert (rows["shard count"]["passed"], rows["shard count"]["outcome"]) == (False, "fabrication")
    assert rows["shard count"]["present_in_carrier"] is True
    assert rows["department name"]["outcome"] == "abstention"
    assert rows["department name"]["present_in_carrier"] is False
    assert rows["department name"]["expected"] == "Служба облачных хранилищ"
    assert result["abstains"] is True


def test_without_carrier_present_in_carrier_is_null(files: dict[str, Path]) -> None:
    done = _run("--fixture", str(files["fixture"]), "--answer", str(files["answer"]))
    assert done.returncode == 0, done.stderr
    assert all(c["present_in_carrier"] is None for c in json.loads(done.stdout)["checks"])


def test_missing_answer_file_is_a_one_line_user_error(files: dict[str, Path]) -> None:
    done = _run("--fixture", str(files["fixture"]), "--answer", "/nonexistent/answer.txt")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: answer file not found: /nonexistent/answer.txt"
    ]


def test_missing_fixture_file_is_a_one_line_user_error(files: dict[str, Path]) -> None:
    done = _run("--fixture", "/nonexistent/fixture.json", "--answer", str(files["answer"]))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: fixture file not found: /nonexistent/fixture.json"
    ]


def test_malformed_fixture_is_a_one_line_user_error(files: dict[str, Path]) -> None:
    files["fixture"].write_text("{not json", encoding="utf-8")
    done = _run("--fixture", str(files["fixture"]), "--answer", str(files["answer"]))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert str(files["fixture"]) in done.stderr


def test_missing_required_option_is_a_one_line_user_error() -> None:
    done = _run("--answer", "x.txt")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "--fixture" in done.stderr
