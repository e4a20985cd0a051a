"""pyproject declares its licence the PEP 639 way (issue 19 item 14).

A `license = { text = ... }` table makes setuptools warn at every install ("By 2027-Feb-18,
you need to update your project"); the SPDX string with `license-files` does not (seen with
`pip wheel --no-deps .` under setuptools 84: `License-Expression: MIT`, no warning).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_licence_is_an_spdx_string_with_licence_files_that_exist() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    files = project["project"]["license-files"]
    assert files and all(list(ROOT.glob(pattern)) for pattern in files)
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    # setuptools reads PEP 639 fields from 77 on
    assert any(r.startswith("setuptools>=77") for r in project["build-system"]["requires"])
