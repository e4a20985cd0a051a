"""The local default's report says on its first lines that tiny models recall almost nothing
(issue 32, "The README, checked line by line"): the floor warning comes right under the title,
before provenance and requests, names the models and their size; and the sweep status
explains `catch_up` where a reader first meets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.carrier.report_sections import CATCH_UP_MEANS, model_size
from tests.jobs.jobs_testdata import analyze_and_report, row, settings, write_run

LOCAL_MODELS = {"A": "SmolLM2-135M-Instruct", "B": "gemma-3-270m (base)"}


def floor_rows(models: dict[str, str]) -> list[dict[str, object]]:
    return [
        row(cfg, arm, rep, 0, model=model)
        for cfg, model in models.items()
        for rep in (0, 1)
        for arm in ("j", "q")
    ]


def report_of(tmp_path: Path, rows: list[dict[str, object]], **manifest: object) -> list[str]:
    analyze_and_report(write_run(tmp_path, rows, manifest=manifest), settings(["q_vs_j"]))
    return (tmp_path / "analysis" / "report.md").read_text(encoding="utf-8").splitlines()


def test_floor_warning_comes_before_provenance_and_requests(tmp_path: Path) -> None:
    lines = report_of(tmp_path, floor_rows(LOCAL_MODELS))
    warning = next(i for i, line in enumerate(lines) if "Recall is near zero" in line)
    provenance = lines.index("| provenance | |")
    assert lines[0] == "# foldsweep analysis"
    assert warning == 2 < provenance
    requests = [i for i, line in enumerate(lines) if line.startswith("## Requests")]
    assert all(warning < i for i in requests)


def test_floor_warning_names_the_models_and_their_size(tmp_path: Path) -> None:
    warning = next(
        line for line in report_of(tmp_path, floor_rows(LOCAL_MODELS)) if "near zero" in line
    )
    assert "These are tiny models" in warning
    assert "SmolLM2-135M-Instruct (135M parameters)" in warning
    assert "gemma-3-270m (base) (270M parameters)" in warning
    assert "recall almost none of the planted facts" in warning


def test_floor_warning_calls_no_model_tiny_when_a_size_is_unknown(tmp_path: Path) -> None:
    warning = next(
        line
        for line in report_of(tmp_path, floor_rows({"A": "gpt-5", "B": "Qwen3-8B"}))
        if "near zero" in line
    )
    assert "tiny" not in warning
    assert "The models (Qwen3-8B (8B parameters), gpt-5) recalled almost none" in warning


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("SmolLM2-135M-Instruct", "135M"),
        ("gemma-3-270m (base)", "270M"),
        ("Qwen3-8B", "8B"),
        ("qwen3.6-1.5b-instruct", "1.5B"),
        ("gpt-5", None),
        ("SmolLM2", None),
        ("deepseek-v4-pro", None),
    ],
)
def test_model_size_is_read_from_the_name(name: str, size: str | None) -> None:
    assert model_size(name) == size


def test_catch_up_is_explained_in_the_sweep_status(tmp_path: Path) -> None:
    rows = [
        row("A", "j", 0, 7),
        row("A", "q", 0, None, valid=False, invalid_reason="catch_up"),
        row("A", "j", 1, 7),
        row("A", "q", 1, 14),
    ]
    counts = {"planned": 4, "valid": 3, "invalid": {"catch_up": 1}, "not_run": {}, "pending": 0}
    status = next(
        line for line in report_of(tmp_path, rows, counts=counts) if "Sweep status" in line
    )
    assert "invalid by reason: catch_up 1" in status
    assert status.endswith(CATCH_UP_MEANS)
    assert "took the pending chunks together" in CATCH_UP_MEANS
