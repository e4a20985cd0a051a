"""The sweep names the repeat count that would close its schedule, and records the closure."""

from __future__ import annotations

from pathlib import Path

from pipeline.commands.start import prepare
from pipeline.sweep.run import new_manifest, prepare_run_dir, schedule_closure


def test_unclosed_default_style_schedule_warns_with_the_closing_repeats(tmp_path: Path) -> None:
    p = prepare(["+panel=sim", "arms=[j,q,m]", "repeats=2", f"out_dir={tmp_path}"])
    warning = schedule_closure(p).warning()
    assert warning is not None
    assert "3 arms" in warning and "2 repeats" in warning and "repeats=6" in warning


def test_closed_schedule_gives_no_warning_and_the_manifest_records_it(tmp_path: Path) -> None:
    p = prepare(["+panel=sim", "arms=[j,q]", "repeats=2", f"out_dir={tmp_path}"])
    assert schedule_closure(p).warning() is None
    prepare_run_dir(p)
    (record,) = new_manifest(p).extra["schedule"]
    assert record["closes"] is True and record["cycle_length"] == 2


def test_the_default_local_panel_does_not_warn_about_its_own_schedule(tmp_path: Path) -> None:
    """`make sweep`: 2 local configurations x 2 repeats over 4 arms is one Williams cycle."""
    p = prepare([f"out_dir={tmp_path}"])
    assert len(p.resolution.included) == 2 and len(p.study.arms()) == 4
    assert schedule_closure(p).warning() is None


def test_a_sim_panel_that_does_not_tile_warns_naming_the_panel(tmp_path: Path) -> None:
    sweep = ["+panel=sim", "sim.configs=3", "arms=[j,q,m,t]", "repeats=2"]
    p = prepare([*sweep, f"out_dir={tmp_path}"])
    warning = schedule_closure(p).warning() or ""
    assert "across the panel: 3 configurations x 2 repeats = 6 rows" in warning
