"""The registry of studies: `study=NAME` and a run directory's manifest name one of these.

This is where the engine meets the studies, so it lives outside the engine: the CLI looks a
study up here and hands it to `pipeline.sweep` (which never imports a study package). A study
outside this repository (the toy study of the tests) registers itself with `register`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from pipeline.store.layout import Layout, layout_for
from pipeline.store.manifest import load_manifest
from pipeline.study import StudyDefinition
from pipeline.usererror import UserError

# name -> "module:attribute" of its StudyDefinition; imported only when asked for
_BUILT_IN = {
    "carrier": "pipeline.studies.carrier:DEFINITION",
    "toolout": "pipeline.studies.toolout:DEFINITION",
    "traces": "pipeline.studies.traces:DEFINITION",
}
_REGISTERED: dict[str, StudyDefinition] = {}


class UnknownStudy(UserError):
    """`study=NAME` or a manifest names a study this foldsweep does not have."""


def register(definition: StudyDefinition) -> None:
    """Make `definition` available as `study=NAME` (tests and plug-in studies)."""
    _REGISTERED[definition.name] = definition


def names() -> list[str]:
    return sorted({*_BUILT_IN, *_REGISTERED})


def definition(name: str) -> StudyDefinition:
    """The registered study `name`; UnknownStudy lists the ones there are."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    target = _BUILT_IN.get(name)
    if target is None:
        raise UnknownStudy(f"unknown study {name!r}; available: {', '.join(names())}")
    module, attribute = target.split(":")
    found: StudyDefinition = getattr(importlib.import_module(module), attribute)
    return found


def layout(study: StudyDefinition) -> Layout:
    """The run-directory layout of a study's runs."""
    return layout_for(study.row_columns, study.tables)


def of_run(run_dir: Path) -> StudyDefinition:
    """The study a run directory belongs to, from its manifest (RunDirError if it has none)."""
    return definition(load_manifest(run_dir).study)


__all__ = ["UnknownStudy", "definition", "layout", "names", "of_run", "register"]
