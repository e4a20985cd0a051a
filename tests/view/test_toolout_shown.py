"""A toolout unit's compacted tool outputs beside their originals, recomputed from the run's
corpus and checked against the sizes the run recorded."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from pipeline.study_pages.toolout_shown import MAX_CHARS, _compare, _source_of, line_diff
from pipeline.view import open_runs, pages
from pipeline.view.links import Links


def test_the_line_diff_marks_removed_and_added_lines_around_unchanged_ones() -> None:
    lines, clipped = line_diff("a\nb\nc\nd", "a\nB\nc\nd")
    assert [(d.kind, d.text) for d in lines] == [
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("same", "a"),
        ("del", "b"),
        ("ins", "B"),
        ("same", "c"),
    ]
    assert not clipped


def test_a_long_diff_is_clipped_and_says_so() -> None:
    lines, clipped = line_diff("x\n" * 30_000, "")
    assert clipped and sum(len(d.text) for d in lines) <= MAX_CHARS


def test_the_transcript_file_is_the_longest_corpus_name_its_id_starts_with() -> None:
    files = {"swe-agent/a.traj": "x", "swe-agent/a/b.traj": "y", "other.jsonl": "z"}
    assert _source_of("swe-agent/a/b", files) == "swe-agent/a/b.traj"
    assert _source_of("nowhere/c", files) is None


def test_a_recomputed_size_unlike_the_recorded_one_shows_nothing() -> None:
    rendering = SimpleNamespace(text="short", mode="elided", changed=True)
    applied = SimpleNamespace(output_index=0, tool_name="bash", rendering=rendering)
    transcript = SimpleNamespace(tool_outputs=(SimpleNamespace(content="a long output"),))
    request = SimpleNamespace(index=3, applied=(applied,))
    recorded = [{"request_index": 3, "output_index": 0, "shown_bytes": 99}]
    found = _compare(transcript, [request], recorded)
    assert found.outputs == () and "request 3 output 0 differs" in (found.why_not or "")
    same = _compare(transcript, [request], [{**recorded[0], "shown_bytes": 5}])
    assert same.why_not is None and [o.shown for o in same.outputs] == ["short"]


@pytest.mark.slow
def test_an_offline_unit_shows_the_policys_text_and_refuses_a_changed_corpus(
    tmp_path: Path,
) -> None:
    from pipeline.commands.start import run_sweep

    overrides = ["study=toolout", "study.policies=[swe_agent_last_5]"]
    run_dir = run_sweep([*overrides, "study.corpora=[mini-swe-agent]", f"out_dir={tmp_path}"])
    (run,) = open_runs([run_dir])
    unit = run.final.filter(pl.col("arm") == "swe_agent_last_5")["row_id"][0]
    params = {"transcript": "mini-swe-agent/github_issue"}
    html = str(pages.unit(run, Links(), unit, params).content)
    assert "Not shown" not in html
    assert "<strong>elided</strong>" in html and "<del>" in html and "<ins>" in html
    # the same run with a corpus file it did not read: nothing shown, one line why
    corpus = run_dir / "corpus.json"
    data = json.loads(corpus.read_text())
    data["files"]["mini-swe-agent/github_issue.traj.json"] = "0" * 64
    corpus.write_text(json.dumps(data))
    (run,) = open_runs([run_dir])
    html = str(pages.unit(run, Links(), unit, params).content)
    assert "changed since the run read it" in html and "<del>" not in html
