"""docs/new-study.md, followed to the letter in a copy of the tree, adds a study that runs.

The guide's shell blocks are run as they are; its `[tool.foldsweep.studies]` block is merged
into that table of pyproject.toml and its contract block appended, as a user would. Nothing
else is edited: no file under pipeline/ or jobs/, no conf/config.yaml. The new study then
sweeps on the simulated panel, is analysed, shows its own unit page in the export, and its
import contract holds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "new-study.md"
COPIED = ("pipeline", "jobs", "examples", "conf", "data", "pyproject.toml")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
TABLE = "[tool.foldsweep.studies]"
CONTRACT = "[[tool.importlinter.contracts]]"


def blocks(kind: str) -> list[str]:
    return [
        body for found, body in BLOCK.findall(GUIDE.read_text(encoding="utf-8")) if found == kind
    ]


def quick_start() -> tuple[list[str], str, str]:
    """The guide's quick start: its shell commands, its registration, its contract."""
    section = GUIDE.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    shells = [b for k, b in BLOCK.findall(section) if k == "sh"]
    tomls = [b for k, b in BLOCK.findall(section) if k == "toml"]
    registration = next(b for b in tomls if b.startswith(TABLE))
    contract = next(b for b in tomls if b.startswith(CONTRACT))
    return shells, registration, contract


def apply_pyproject(tree: Path, registration: str, contract: str) -> None:
    path = tree / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    assert text.count(TABLE) == 1, "pyproject.toml has one [tool.foldsweep.studies] table"
    entries = registration.removeprefix(TABLE).strip("\n")
    text = text.replace(TABLE, f"{TABLE}\n{entries}", 1)
    path.write_text(text.rstrip("\n") + "\n\n" + contract, encoding="utf-8")


def run(tree: Path, *command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FOLDSWEEP_CONF")}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return subprocess.run(
        command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_the_guide_has_a_quick_start_a_test_can_follow() -> None:
    shells, registration, contract = quick_start()
    assert shells and "cp -r examples/echo examples/tally" in shells[0]
    assert 'tally = "examples.tally:DEFINITION"' in registration
    assert 'source_modules = ["examples.tally.study"]' in contract


def test_every_module_the_guide_names_exists() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for name in re.findall(r"`((?:examples|pipeline|jobs|tests)/[\w/]+\.py)`", text):
        assert (ROOT / name).is_file(), name


@pytest.mark.slow
@pytest.mark.ray
def test_a_study_added_by_the_guide_alone_sweeps_reports_and_shows_its_page(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tree / name)
    shells, registration, contract = quick_start()
    for script in shells[:1]:  # the copy and naming; the later block runs the study
        done = subprocess.run(
            ["bash", "-ec", script], cwd=tree, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    apply_pyproject(tree, registration, contract)
    before = {p.relative_to(tree) for p in (tree / "pipeline").rglob("*.py")}

    out = tmp_path / "runs"
    swept = run(
        tree,
        sys.executable,
        "-m",
        "pipeline",
        "sweep",
        "study=tally",
        "+panel=sim",
        "sim.configs=2",
        "repeats=1",
        f"out_dir={out}",
        "progress=false",
    )
    assert swept.returncode == 0, swept.stderr[-2000:]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["study"] == "tally" and manifest["counts"]["valid"] == 2 * 2
    report = (run_dir / "analysis" / "report.md").read_text(encoding="utf-8")
    assert "every endpoint echoed: 4 units" in report

    page = tmp_path / "tally.html"
    viewed = run(
        tree, sys.executable, "-m", "pipeline", "view", "--export", str(page), str(run_dir)
    )
    assert viewed.returncode == 0, viewed.stderr[-2000:]
    # the export prefixes a unit page's ids with its section (u0-echoes): unique in the file
    assert re.search(r'id="(?:u\d+-)?echoes"', page.read_text(encoding="utf-8"))

    linted = run(tree, str(Path(sys.executable).with_name("lint-imports")))
    assert linted.returncode == 0, linted.stdout[-2000:]
    assert "the tally study's protocol does no I/O KEPT" in linted.stdout
    assert {p.relative_to(tree) for p in (tree / "pipeline").rglob("*.py")} == before
