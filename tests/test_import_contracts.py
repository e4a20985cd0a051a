"""The import-linter contracts (pyproject.toml) hold, and a wrong import breaks them.

`make test` runs `lint-imports` on the tree; these tests prove the contracts can fail: each
plants one forbidden import in a copy of the packages and expects `lint-imports` to name it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _contracts() -> list[dict[str, object]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = data["tool"]["importlinter"]["contracts"]
    return contracts


def _copy_tree(dest: Path) -> Path:
    for package in ("pipeline", "jobs", "examples"):
        shutil.copytree(
            ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-cache"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(where), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_chat_leaf_contract_lists_every_other_top_level_module() -> None:
    """A new top-level module must be added to the leaf contract, or chat could import it."""
    leaf = next(c for c in _contracts() if c["name"] == "the chat package is a leaf")
    listed = set(leaf["forbidden_modules"])  # type: ignore[call-overload]
    siblings = {
        f"pipeline.{p.stem}"
        for p in (ROOT / "pipeline").iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").exists())
        and p.stem not in ("__init__", "__main__", "chat")
    }
    assert siblings - listed == set()


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")
@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("pipeline/sweep/plan.py", "import pipeline.carrier.arms", "no registry, no CLI"),
        ("pipeline/store/layout.py", "import jobs.carrier.recall", "no registry, no CLI"),
        # issue 18: the study is handed down, never looked up by the engine or the jobs
        ("pipeline/sweep/run.py", "import pipeline.studies", "no registry, no CLI"),
        ("pipeline/endpoints/local_serve.py", "import pipeline.commands.args", "no CLI"),
        ("jobs/toolout/tables.py", "import pipeline.studies", "never look a study up"),
        ("pipeline/study_validity.py", "import pipeline.store.parts", "do no I/O"),
        ("pipeline/carrier/grade.py", "import aiohttp", "do no I/O"),
        ("pipeline/carrier/records.py", "import pipeline.store.parts", "do no I/O"),
        ("pipeline/chat/messages.py", "import pipeline.config.schema", "is a leaf"),
        # the viewer asks a run's definition for its pages; the engine never loads them
        ("pipeline/view/pages.py", "import pipeline.study_pages.carrier", "brings its pages"),
        ("pipeline/view/units.py", "import pipeline.traces.records", "brings its pages"),
        ("pipeline/sweep/run.py", "import pipeline.study_pages", "no registry, no CLI"),
        # the config raises RunDirError from its leaf, never from the store
        ("pipeline/config/load.py", "import pipeline.store.reader", "it runs nothing"),
        # issue 34: the decision joiner names no study; a definition brings its `decide`
        ("jobs/decision/join.py", "import jobs.carrier.contest", "brings its decide"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    tree = _copy_tree(tmp_path)
    assert _lint(tree).returncode == 0, "the contracts must hold on the unmodified tree"
    target = tree / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # planted\n")
    result = _lint(tree)
    assert result.returncode != 0
    assert f"{contract} BROKEN" in result.stdout
