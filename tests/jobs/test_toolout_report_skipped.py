"""Issue 32 §22: the report of a user corpus (`study.transcripts_dir`) lists the files that
were skipped, each with its reason.

Before, it named the directory only; the skips were in the manifest and on the sweep's stderr,
which a reader of a forwarded report.md does not have.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jobs.toolout.report import render_report
from pipeline.store.manifest import load_manifest, write_manifest
from tests.jobs.test_provenance_header import TOOLOUT, toolout_run

SKIPPED = [
    {"source": "loop", "reason": "a symlink loop; skipped"},
    {"source": "notes.jsonl", "reason": "line 3: not a chat message (no role)"},
]


def user_corpus(run_dir: Path, skipped: list[dict[str, str]]) -> Path:
    manifest = load_manifest(run_dir)
    config = dict(manifest.config)
    config["study"] = {**config["study"], "transcripts_dir": "/home/me/my-transcripts"}
    extra = {**manifest.extra, "inputs": {**manifest.extra["inputs"], "skipped": skipped}}
    write_manifest(run_dir, dataclasses.replace(manifest, config=config, extra=extra))
    return run_dir


def section(text: str) -> list[str]:
    start = text.index("## Skipped transcript files")
    return text[start:].split("\n\n## ", 1)[0].splitlines()


def test_the_report_of_a_user_corpus_lists_each_skipped_file_with_its_reason(
    tmp_path: Path,
) -> None:
    run_dir = user_corpus(toolout_run(tmp_path, simulated=False), SKIPPED)
    lines = section(render_report(run_dir, TOOLOUT).read_text("utf-8"))
    assert "2 files or records of `/home/me/my-transcripts` were skipped" in " ".join(lines)
    assert "| `loop` | a symlink loop; skipped |" in lines
    assert "| `notes.jsonl` | line 3: not a chat message (no role) |" in lines


def test_a_user_corpus_with_nothing_skipped_says_so(tmp_path: Path) -> None:
    run_dir = user_corpus(toolout_run(tmp_path, simulated=False), [])
    lines = section(render_report(run_dir, TOOLOUT).read_text("utf-8"))
    assert any("No file of `/home/me/my-transcripts` was skipped" in line for line in lines)


def test_the_shipped_corpus_report_has_no_skipped_section(tmp_path: Path) -> None:
    text = render_report(toolout_run(tmp_path, simulated=False), TOOLOUT).read_text("utf-8")
    assert "## Skipped transcript files" not in text
