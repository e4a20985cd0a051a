"""Issue 19 item 8: resume and analyze under the wrong study get one line that says so.

Before: `resume=CARRIER_RUN study=toolout` failed with "unknown config key study.arms" (the
carrier's recorded overrides composed under the toolout node), `analyze TOOLOUT_RUN
--contrasts q_vs_j` silently ignored the flag, and a manifest relabelled to another study was
told to delete its (good) parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import studies
from pipeline.cli import main
from pipeline.config import compose
from pipeline.store.manifest import Manifest, write_manifest
from pipeline.store.reader import RunDirError
from tests.jobs.jobs_testdata import row, write_run


def _run_manifest(run_dir: Path, study: str, overrides: list[str]) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(
        run_id=run_dir.name,
        config=compose(overrides).data,
        config_fingerprint="0" * 64,
        started_at="2026-01-01T00:00:00Z",
        study=study,
        status="completed",
        extra={"overrides": overrides},
    )
    write_manifest(run_dir, manifest)
    return run_dir


def test_resume_under_another_study_names_both_studies_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run_manifest(tmp_path / "carrier-run", "carrier", ["+panel=sim", "arms=[j,q]"])
    assert main(["sweep", f"resume={run_dir}", "study=toolout"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: resume cannot change study: carrier -> toolout"]


def test_resume_naming_the_run_s_own_study_is_not_refused_for_it(tmp_path: Path) -> None:
    from pipeline.commands.start import resolve_start

    run_dir = _run_manifest(tmp_path / "carrier-run", "carrier", ["+panel=sim", "arms=[j,q]"])
    with pytest.raises(RunDirError) as refused:  # no plan yet: a different, later refusal
        resolve_start([f"resume={run_dir}", "study=carrier"])
    assert "cannot change study" not in str(refused.value)


def test_analyze_refuses_contrasts_for_a_study_without_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run_manifest(tmp_path / "toolout-run", "toolout", ["study=toolout"])
    assert main(["analyze", str(run_dir), "--contrasts", "q_vs_j"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("error: analyze: --contrasts does not apply to study toolout")


def _relabelled_carrier_run(tmp_path: Path, *, config_too: bool) -> Path:
    run_dir = write_run(tmp_path / "run", [row("A", "j", 0, 3)])
    manifest = json.loads(
        _run_manifest(run_dir, "carrier", ["+panel=sim"])
        .joinpath("manifest.json")
        .read_text(encoding="utf-8")
    )
    manifest["study"] = "toolout"
    if config_too:
        manifest["config"]["study"]["name"] = "toolout"
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return run_dir


@pytest.mark.parametrize("config_too", [False, True])
def test_a_relabelled_manifest_is_one_line_that_keeps_the_good_parts(
    tmp_path: Path, config_too: bool
) -> None:
    run_dir = _relabelled_carrier_run(tmp_path, config_too=config_too)
    with pytest.raises(RunDirError) as refused:
        studies.of_run(run_dir)
    message = str(refused.value)
    assert "\n" not in message and "delete" not in message
    assert "manifest" in message and "restore" in message


def test_a_relabelled_manifest_is_refused_on_resume_without_deleting_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _relabelled_carrier_run(tmp_path, config_too=True)
    assert main(["sweep", f"resume={run_dir}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "delete" not in err[0] and "study 'toolout'" in err[0]
