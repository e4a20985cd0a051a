"""`python -m pipeline decide`, in-process: the shared rules (a simulated run never recommends;
runs on other inputs are listed side by side) and every refusal as one line, exit 2, before
any work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jobs.decision.join import SIMULATED_BANNER
from pipeline import studies
from pipeline.cli import main
from pipeline.store import write_batch
from tests.decide import carrier_runs
from tests.view.rundirs import finish_run, study_row


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("decide")
    cells = carrier_runs.q_beats_j()
    return {
        "real": carrier_runs.carrier_run(root / "real", cells),
        "other_fixture": carrier_runs.carrier_run(
            root / "other", cells, fixture=carrier_runs.FIXTURE_B
        ),
        "simulated": carrier_runs.carrier_run(root / "sim", cells, simulated=True),
    }


def _decide(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["decide", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_simulated_run_never_recommends(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _decide([str(runs["simulated"]), "--out", str(tmp_path)], capsys)
    assert code == 0 and out.split() == [
        str(tmp_path / "decision.md"),
        str(tmp_path / "decision.json"),
        str(tmp_path / "decision-simulated.png"),  # never decision.png: no real answer
    ]
    from PIL import Image

    with Image.open(tmp_path / "decision-simulated.png") as figure:
        assert figure.info.get("Description", "").startswith("SIMULATED")
    page = (tmp_path / "decision.md").read_text(encoding="utf-8")
    lead = page.split("## What to do")[1].split("## What is missing")[0]
    assert "nothing is recommended" in lead and "`q`" not in lead
    simulated = page.split(f"## {SIMULATED_BANNER}")[1]
    assert "would recommend: write the `q` carrier" in simulated
    data = json.loads((tmp_path / "decision.json").read_text(encoding="utf-8"))
    assert data["recommendations"] == []
    assert data["simulated_runs"]["banner"] == SIMULATED_BANNER
    assert all(p["simulated"] for p in data["simulated_runs"]["paragraphs"])
    (decision,) = data["decisions"]
    assert decision["simulated"] is True
    assert all("recommendation" not in a and a["simulated"] for a in decision["answers"])
    assert "`q`" in decision["answers"][0]["would_recommend"]


def test_runs_on_other_inputs_are_listed_side_by_side(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _decide([str(runs["real"]), str(runs["other_fixture"])], capsys)
    assert code == 0
    written = Path(out.split()[0])
    assert written.parent.parent == runs["real"].parent  # beside the first run
    assert written.parent.name.startswith("decision-")
    data = json.loads(written.with_name("decision.json").read_text(encoding="utf-8"))
    (note,) = data["side_by_side"]
    assert "real (inputs aaaaaaaaaaaa)" in note and "other (inputs bbbbbbbbbbbb)" in note
    assert "never pooled" in note
    (panel, *_) = data["recommendations"]
    assert panel["subject"] == "panel"
    assert panel["recommendations"] == [
        f"carrier ({name}): write the `q` carrier: its recall leads `j` by +0.500"
        for name in ("real", "other")
    ]
    page = written.read_text(encoding="utf-8")
    assert "**Not pooled.**" in page and "**carrier** (other, panel)" in page
    assert "toolout: no run of this study is on this page" in page
    # the real answers' figure: one interval per answer with an estimate, unmarked
    assert "![Each answer's estimate with its 95% interval](decision.png)" in page
    assert "decision-simulated.png" not in page
    from PIL import Image

    with Image.open(written.with_name("decision.png")) as figure:
        assert "Description" not in figure.info and figure.size[1] > 200


def test_a_number_its_table_does_not_give_back_stops_the_page(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jobs.decision import recompute

    monkeypatch.setitem(recompute.RULES, "mean", lambda values: -1.0)
    code, out, err = _decide([str(runs["real"]), "--out", str(tmp_path / "d")], capsys)
    assert code == 1 and out == "" and not (tmp_path / "d").exists()
    first = err.splitlines()[0]
    assert first.startswith("decide: real: panel: mean recall of `q` (leader) shows ")
    assert first.endswith("gives mean(mean_recall) = -1.0")
    assert err.strip().splitlines()[-1].startswith("decide: ")
    assert "numbers disagree with their tables; no page written" in err


def _echo_run(run_dir: Path) -> Path:
    definition = studies.definition("echo")
    row = study_row("echo", run_id="run-e", config_id="c", arm="echo")
    run_dir.mkdir(parents=True)
    write_batch(run_dir, part_name="p0", rows=[row], children={}, layout=studies.layout(definition))
    finish_run(run_dir, "run-e", "echo")
    return run_dir


def _corrupt(source: Path, run_dir: Path) -> Path:
    shutil.copytree(source, run_dir)
    (part,) = (run_dir / "rows").glob("*.parquet")
    part.write_bytes(b"not parquet")
    return run_dir


BAD = {
    "no run dir": ([], "give at least one RUN_DIR"),
    "missing path": (["TMP/nowhere"], "run directory not found"),
    "not a run dir": (["TMP/plain"], "is not a run directory"),
    "corrupt run": (["TMP/corrupt"], "is corrupt"),
    "study without decide": (["TMP/echo"], "study echo has no decision yet"),
    "retention 0": (["REAL", "--retention", "0"], "--retention must be in (0, 1]"),
    "retention above 1": (["REAL", "--retention", "1.5"], "--retention must be in (0, 1]"),
    "template missing": (["REAL", "--template", "TMP/none.jinja"], "is not a readable file"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2_before_any_work(
    case: str, runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain").mkdir()
    _corrupt(runs["real"], tmp_path / "corrupt")
    _echo_run(tmp_path / "echo")
    args, expected = BAD[case]
    argv = [a.replace("TMP", str(tmp_path)).replace("REAL", str(runs["real"])) for a in args]
    out_dir = tmp_path / "out"
    # a good run first: the bad input is refused before the good run is touched
    good_first = [str(runs["real"])] if argv and not argv[0].startswith(str(runs["real"])) else []
    code, out, err = _decide([*good_first, *argv, "--out", str(out_dir)], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert expected in err
    assert not out_dir.exists()


def test_stale_analysis_is_refused_in_one_line(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "stale"
    shutil.copytree(runs["real"], run_dir)
    (part,) = (run_dir / "rows").glob("*.parquet")
    shutil.copy(part, part.with_name("p1.parquet"))  # a part added after the analysis
    code, out, err = _decide([str(run_dir), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "analyze" in err
