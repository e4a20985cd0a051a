"""Run directories shared by the viewer tests (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.view.rundirs import traces_run


@pytest.fixture(scope="session")
def traces_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return traces_run(tmp_path_factory.mktemp("view-traces") / "run")
