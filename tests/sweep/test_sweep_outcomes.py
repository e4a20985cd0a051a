"""How a sweep ends, without Ray: the status rule, the stop check, the text and exit codes."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.cli import main as cli_main
from pipeline.store.manifest import OutcomeCounts
from pipeline.sweep import summary
from pipeline.sweep.coordinator import SweepOutcome
from pipeline.sweep.execute import session_status, stop_check
from pipeline.sweep.run import StopFlag

RUN = Path("runs/20261201T000000-sim-small-abc")


def outcome(status: Any = "completed") -> SweepOutcome:
    return SweepOutcome(status=status, not_dispatched=(), cost_usd=0.0, requests=0, attempts=0)


def test_a_completed_session_without_any_attempt_in_the_run_is_nothing_ran() -> None:
    assert session_status(outcome(), None, attempts_in_run=0) == "nothing_ran"
    assert session_status(outcome(), None, attempts_in_run=3) == "completed"
    assert session_status(outcome("stopped"), None, attempts_in_run=0) == "stopped"
    assert session_status(outcome("budget_exhausted"), None, 5) == "budget_exhausted"


def test_a_fatal_server_makes_the_session_failed_whatever_the_coordinator_saw() -> None:
    for status in ("completed", "stopped", "budget_exhausted"):
        assert session_status(outcome(status), "server died", attempts_in_run=4) == "failed"


def test_the_coordinator_stops_on_a_signal_or_when_servers_fatal_is_set() -> None:
    stop = StopFlag()
    servers: Any = SimpleNamespace(fatal=None)
    should_stop = stop_check(stop, servers)
    assert not should_stop()
    servers.fatal = "local server x died from SIGILL"
    assert should_stop()
    servers.fatal = None
    stop.requested = True
    assert should_stop()


def test_exit_codes_follow_the_outcome() -> None:
    assert summary.EXIT_OK == 0
    assert summary.EXIT_NOTHING_RAN == 3
    assert summary.EXIT_FAILED == 4
    assert summary.signal_exit_code(signal.SIGINT) == 130
    assert summary.signal_exit_code(signal.SIGTERM) == 143
    assert summary.signal_exit_code(None) == 130


def test_stopped_line_names_the_signal_and_the_resume_command() -> None:
    counts = OutcomeCounts(10, 3, {"transport": 1}, {"stopped": 6}, 0)
    line = summary.stopped_line(counts, signal.SIGTERM, RUN)
    assert line == (
        "stopped by SIGTERM with 4 of 10 planned units finished; "
        f"resume with: python -m pipeline sweep resume={RUN}"
    )


def paragraph(simulated: bool, status: str = "completed") -> str:
    counts = OutcomeCounts(18, 14, {"catch_up": 1, "transport": 2}, {"probe:unreachable": 1}, 0)
    return summary.summary_paragraph(
        status=status,
        counts=counts,
        cost_usd=0.1234,
        requests=72,
        simulated=simulated,
        report=RUN / "analysis" / "report.md",
        run_dir=RUN,
    )


def test_completed_summary_lists_counts_by_reason_cost_and_the_report_path() -> None:
    text = paragraph(simulated=False)
    flat = " ".join(text.split())
    assert "\n\n" not in text  # one paragraph
    assert "Sweep completed. Planned 18: valid 14" in flat
    assert "invalid by reason: catch_up 1, transport 2" in flat
    assert "not run by reason: probe:unreachable 1" in flat
    assert "Cost USD 0.1234 over 72 requests and the probes" in flat
    assert f"Report: {RUN}/analysis/report.md." in flat
    assert str(RUN / "analysis" / "report.md") in text  # never broken across lines
    assert "SIMULATED" not in text


def test_completed_summary_of_a_simulated_run_says_simulated_first() -> None:
    assert paragraph(simulated=True).startswith("SIMULATED run:")


def test_budget_stop_summary_says_how_to_run_the_rest() -> None:
    flat = " ".join(paragraph(simulated=False, status="budget_exhausted").split())
    assert "Sweep stopped by its budget." in flat
    assert f"python -m pipeline sweep resume={RUN} budget.usd=N" in flat


@pytest.mark.parametrize(
    "base_url", ["localhost:8000/v1", "http://127.0.0.1:9 /v1", "file:///v1", "http:///v1"]
)
def test_malformed_base_url_is_one_line_before_anything_starts(
    base_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ray_loaded = "ray" in sys.modules
    code = cli_main(
        [
            "sweep",
            "+panel=endpoint",
            f"endpoint.base_url={base_url}",
            "endpoint.model=x",
            f"out_dir={tmp_path}",
            "progress=false",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: configuration endpoint-x: endpoint.base_url ")
    assert repr(base_url) in lines[0] and "e.g. http" in lines[0]
    assert list(tmp_path.iterdir()) == []  # no run directory
    if ray_loaded:  # another test imported ray: it must still not be running
        import ray

        assert not ray.is_initialized()
    else:
        assert "ray" not in sys.modules  # the sweep never got as far as importing Ray


def test_a_resumed_manifest_forgets_what_ended_its_last_session() -> None:
    from pipeline.store.manifest import Manifest
    from pipeline.sweep.execute import _reopened

    failed = Manifest(
        run_id="r",
        config={},
        config_fingerprint="f",
        started_at="2026-12-01T00:00:00Z",
        study="carrier",
        status="failed",
        finished_at="2026-12-01T00:01:00Z",
        extra={"error": "local server died", "aborted": True, "overrides": ["+panel=sim"]},
    )
    reopened = _reopened(failed)
    assert (reopened.status, reopened.finished_at) == ("running", None)
    assert reopened.extra == {"overrides": ["+panel=sim"]}


def test_stop_flag_reinstalled_after_ray_init_owns_sigterm_and_restores_the_original() -> None:
    """ray.init replaces SIGTERM's handler with sys.exit(15): the sweep installs its own again
    (seen in CI as exit 15 instead of 143 when SIGTERM came after Ray had started)."""
    import signal

    original = signal.getsignal(signal.SIGTERM)
    flag = StopFlag()
    flag.install()
    try:
        signal.signal(signal.SIGTERM, lambda signum, frame: None)  # what ray.init does
        flag.install()
        assert signal.getsignal(signal.SIGTERM) == flag._handle
    finally:
        flag.restore()
    assert signal.getsignal(signal.SIGTERM) == original
