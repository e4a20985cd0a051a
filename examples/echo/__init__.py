"""The echo study: the smallest complete study, and the template docs/new-study.md copies.

Each unit sends one request and records the echo. It runs through `python -m pipeline sweep
study=echo` like the built-in studies, with its own row column and its own table (`echoes`),
its own analysis and report, and its own unit page in the viewer; nothing under
`pipeline/` names it. It is registered in pyproject.toml (`[tool.foldsweep.studies]`) and
configured by conf/study/echo.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examples.echo.study import ECHOES, ROW_COLUMNS, EchoStudy
from pipeline.config.strict import ConfigError
from pipeline.study import Column, DefinitionDefaults, StudyPages, TableSpec

KEYS = ("arms", "name")


@dataclass(frozen=True)
class EchoDefinition(DefinitionDefaults):
    """The echo study as registered: its tables, its analysis and its pages, without config.

    `DefinitionDefaults`: the embedded local panel by default (`+panel=sim` for a dry run) and
    no paired arm contrasts."""

    name: str = "echo"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = (ECHOES,)

    def configure(self, node: Mapping[str, Any]) -> EchoStudy:
        unknown = sorted(set(node) - set(KEYS))
        if unknown:
            raise ConfigError(f"unknown config key study.{unknown[0]}; valid: {', '.join(KEYS)}")
        arms = node.get("arms", ("a", "b"))
        if not arms or not all(isinstance(arm, str) and arm for arm in arms):
            raise ConfigError("study.arms must be a non-empty list of arm names")
        return EchoStudy(tuple(arms))

    def analyze(self, run_dir: Path, analysis: Any, layout: Any) -> None:
        from examples.echo.analysis import analyze

        analyze(run_dir, layout)

    def render(self, run_dir: Path, layout: Any) -> Path:
        from examples.echo.analysis import render

        return render(run_dir)

    @property
    def pages(self) -> StudyPages:  # type: ignore[override]
        from examples.echo.pages import PAGES

        return PAGES


DEFINITION = EchoDefinition()
