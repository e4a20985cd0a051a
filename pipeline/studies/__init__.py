"""The registry of studies: the CLI resolves `study=NAME` (or a run's manifest) here, once.

This is the entry point's, not the engine's: the CLI looks a study up and hands the definition
(and the configured study) down to `pipeline.sweep` and to the jobs, which never look one up
(import-linter forbids `pipeline.studies` to both). A study's name is written once, as its
definition's `name`; the built-in ones are found by that name's module, `pipeline.studies.NAME`
(attribute `DEFINITION`), whose config file is conf/study/NAME.yaml; a helper module of this
package is private (`_name.py`), so it is never taken for a study. Loading checks that what
the module holds is a StudyDefinition and that it answers to the name it was found by.

A study outside this repository (the toy study of the tests) registers itself with `register`,
which refuses a name already taken by another definition (lm-evaluation-harness's rule).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from pipeline.store.layout import Layout, layout_for
from pipeline.store.manifest import Manifest, load_manifest
from pipeline.store.reader import RunDirError
from pipeline.study import StudyDefinition
from pipeline.usererror import UserError

_PACKAGE = __name__
_ATTRIBUTE = "DEFINITION"
_REGISTERED: dict[str, StudyDefinition] = {}
_LOADED: dict[str, StudyDefinition] = {}


class UnknownStudy(UserError):
    """`study=NAME` or a manifest names a study this foldsweep does not have."""


class StudyRegistrationError(UserError):
    """A definition that cannot be registered: a taken name, or not a StudyDefinition."""


def _built_in() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def _checked(found: object, name: str, where: str) -> StudyDefinition:
    """`found` if it is a StudyDefinition named `name`; a one-line error otherwise."""
    if not isinstance(found, StudyDefinition):
        raise StudyRegistrationError(
            f"{where} is a {type(found).__name__}, not a StudyDefinition (name, row_columns, "
            "tables, default_panel, configure, analyze, report)"
        )
    if found.name != name:
        raise StudyRegistrationError(f"{where} is named {found.name!r}, not {name!r}")
    return found


def register(definition: StudyDefinition) -> None:
    """Make `definition` available as `study=NAME` (tests and plug-in studies).

    Registering the same definition again is a no-op; another definition under a taken name
    (a built-in's or a registered one's) is refused."""
    name = getattr(definition, "name", None)
    if not isinstance(name, str) or not name:
        raise StudyRegistrationError(f"{definition!r} has no name; a study needs one")
    checked = _checked(definition, name, f"study {name!r}")
    taken = _REGISTERED.get(name)
    if taken is not None and taken != checked:
        raise StudyRegistrationError(f"study {name!r} is already registered; choose another name")
    if taken is None and name in _built_in():
        raise StudyRegistrationError(f"study {name!r} is a built-in study; choose another name")
    _REGISTERED[name] = checked


def names() -> list[str]:
    return sorted({*_built_in(), *_REGISTERED})


def definition(name: str) -> StudyDefinition:
    """The study `name`; UnknownStudy lists the ones there are."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in _LOADED:
        return _LOADED[name]
    if name not in _built_in():
        raise UnknownStudy(f"unknown study {name!r}; available: {', '.join(names())}")
    module = importlib.import_module(f"{_PACKAGE}.{name}")
    where = f"{module.__name__}.{_ATTRIBUTE}"
    _LOADED[name] = _checked(getattr(module, _ATTRIBUTE, None), name, where)
    return _LOADED[name]


def layout(study: StudyDefinition) -> Layout:
    """The run-directory layout of a study's runs."""
    return layout_for(study.row_columns, study.tables)


def study_of(manifest: Manifest) -> str:
    """The study a manifest's run belongs to, after checking its config agrees.

    A manifest relabelled to another study (its `study` edited, its recorded config left) would
    read the run's good parts under the wrong tables; it is refused in one line instead."""
    node = manifest.config.get("study")
    recorded = node.get("name") if isinstance(node, dict) else None
    if recorded is not None and recorded != manifest.study:
        raise RunDirError(
            f"manifest.json names study {manifest.study!r} but its recorded config is study "
            f"{recorded!r}: the manifest was edited; restore its `study` to {recorded!r} "
            "(the parts are untouched)"
        )
    return manifest.study


def check_tables_belong(run_dir: Path, study: StudyDefinition) -> None:
    """Refuse, in one line, a run whose rows are another study's (a relabelled manifest).

    Only the first rows part's footer is read: a run whose rows carry another study's columns
    was not damaged, it was relabelled, and deleting its parts would lose good data."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.store.reader import part_paths

    found = layout(study)
    parts = part_paths(run_dir, "rows", found)
    if not parts:
        return
    try:
        names = pq.read_metadata(parts[0]).schema.to_arrow_schema().names
    except (pa.ArrowException, OSError):
        return  # a damaged footer is the store's to name (validate_run_dir)
    if names != found.schema("rows").names:
        raise RunDirError(
            f"{run_dir}'s rows are not study {study.name!r}'s (the manifest names it): the "
            "manifest's study was edited; restore it (the parts are untouched)"
        )


def of_run(run_dir: Path) -> StudyDefinition:
    """The study a run directory belongs to, from its manifest (RunDirError if it has none);
    a run whose rows are another study's is refused. The CLI puts it in the shared outcome
    frame (jobs.outcome_frame.framed); the registry imports no job, so readers such as the
    viewer can use it."""
    found = definition(study_of(load_manifest(run_dir)))
    check_tables_belong(run_dir, found)
    return found


__all__ = [
    "StudyRegistrationError",
    "UnknownStudy",
    "check_tables_belong",
    "definition",
    "layout",
    "names",
    "of_run",
    "register",
    "study_of",
]
