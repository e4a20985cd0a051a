"""Issue 20 / issue 19 item 13: the corpus travels to the actors by reference, not by value."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from pipeline.studies.toolout import DEFINITION, CorpusChangedError, CorpusFiles
from tests.reliability.harness import SweepHarness

# Ray's own log lines: the C++ core's `[date time,ms E pid tid] file.cc:N: ...`, a Python
# logger's `date time,ms\tLEVEL file.py:N --`, and worker output relayed as `(Name pid=N)`.
RAY_LINE = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [DIWEF] \d+ \d+\]"
    r"|^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s"
    r"|\(\w+ pid=\d+(?:, ip=[\d.]+)?\)"
    r"|core_worker\.cc|raylet|gcs_server",
    re.MULTILINE,
)


def test_the_study_pickles_an_index_of_files_not_the_corpus() -> None:
    study = DEFINITION.configure({"name": "toolout"})
    assert isinstance(study.transcripts, CorpusFiles)
    assert len(study.transcripts) == 233  # the shipped corpus, counted when it was read
    size = len(pickle.dumps(study))
    corpus_bytes = sum(Path(f.path).stat().st_size for f in study.transcripts.files)
    assert corpus_bytes > 6_000_000 and size < 200_000, size  # was > 6.7 MB per actor


def test_a_transcript_file_changed_after_the_start_is_refused(tmp_path: Path) -> None:
    line = '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n'
    (tmp_path / "s1.jsonl").write_text(line, encoding="utf-8")
    study = DEFINITION.configure({"name": "toolout", "transcripts_dir": str(tmp_path)})
    assert [t.id for t in study.transcripts] == ["jsonl/s1"]  # no absolute path in the id
    (tmp_path / "s1.jsonl").write_text(line + line, encoding="utf-8")
    with pytest.raises(CorpusChangedError, match=r"s1\.jsonl changed since the sweep read it"):
        list(study.transcripts)


def test_ray_line_pattern_matches_the_core_worker_warning() -> None:
    seen = (
        "[2026-12-02 04:25:21,156 E 933 933] core_worker.cc:2465: Actor with class name: "
        "'EndpointWorker' and ID: 'e0' has constructor arguments in the object store"
    )
    assert RAY_LINE.search(seen) and not RAY_LINE.search("units 5/5  in flight 0  errors 0")


@pytest.mark.ray
@pytest.mark.slow
def test_a_default_toolout_sweep_prints_no_ray_line(harness: SweepHarness, tmp_path: Path) -> None:
    """The whole shipped corpus (6.7 MB, which by value made Ray warn), one policy."""
    result = harness.run(
        ["study=toolout", "study.policies=[control]", "study.oracle=false", f"out_dir={tmp_path}"],
        timeout_s=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = RAY_LINE.findall(result.stderr)
    assert not found, result.stderr[-3000:]
