"""The registry of studies: the CLI resolves `study=NAME` (or a run's manifest) here, once.

This is the entry point's, not the engine's: the CLI looks a study up and hands the definition
(and the configured study) down to `pipeline.sweep` and to the jobs, which never look one up
(import-linter forbids `pipeline.studies` to both). A study's name is written once, as its
definition's `name`. Every study, built in or not, is registered the same way: one line of
pyproject.toml's `[tool.foldsweep.studies]`, `NAME = "module:ATTRIBUTE"` (`_entries`), with
its config file at conf/study/NAME.yaml; adding a study edits no code here
(docs/new-study.md). Loading checks that what the module holds is a StudyDefinition and that
it answers to the name it was registered by.

`register` adds a definition at run time (tests), refusing a name already taken by another
definition (lm-evaluation-harness's rule).

The registry also owns, once for every study, when a run's analysis and report run: a run
without rows gets the shared nothing-ran report (jobs.nothing_ran; the sweep then exits 3 with
`nothing_ran_cause`); any other run is analysed by its study's `analyze` (the jobs, recorded
by pipeline.store.analysis_inputs) and drawn by its `render` (the report, from those outputs
alone). `analyze_and_report` is the `analyze` command and a sweep's end (the entry point hands
it to the engine bound to the study); `report` renders while the recorded analysis matches the
run's tables, analyses first when there is no record and refuses in one line when it is stale.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from pipeline.config.schema import AnalysisConfig
from pipeline.store.analysis_inputs import analyzed, reported
from pipeline.store.layout import Layout, layout_for
from pipeline.store.manifest import Manifest, load_manifest
from pipeline.store.reader import RunDirError, has_rows
from pipeline.studies._entries import TABLE, StudyRegistrationError, entries
from pipeline.study import StudyDefinition
from pipeline.usererror import UserError

_REGISTERED: dict[str, StudyDefinition] = {}
_LOADED: dict[str, StudyDefinition] = {}


class UnknownStudy(UserError):
    """`study=NAME` or a manifest names a study this foldsweep does not have."""


def _built_in() -> list[str]:
    """The studies pyproject.toml registers."""
    return sorted(entries())


def _checked(found: object, name: str, where: str) -> StudyDefinition:
    """`found` if it is a StudyDefinition named `name`; a one-line error otherwise."""
    if not isinstance(found, StudyDefinition):
        raise StudyRegistrationError(
            f"{where} is a {type(found).__name__}, not a StudyDefinition (name, row_columns, "
            "tables, default_panel, configure, analyze, render)"
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
    module_name, attribute = entries()[name]
    where = f"{module_name}:{attribute}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StudyRegistrationError(
            f"study {name!r} ({TABLE} in pyproject.toml) names {where}, which cannot be "
            f"imported ({exc}); fix the module path"
        ) from None
    _LOADED[name] = _checked(getattr(module, attribute, None), name, where)
    return _LOADED[name]


def layout(study: StudyDefinition) -> Layout:
    """The run-directory layout of a study's runs."""
    return layout_for(study.row_columns, study.tables)


def nothing_ran_cause(run_dir: Path) -> str:
    """Why a run has no attempt at all, in one line (the sweep's exit-3 error)."""
    from jobs.nothing_ran import run_cause

    return run_cause(run_dir)


def _nothing_ran_report(run_dir: Path) -> Path:
    from jobs.nothing_ran import write_nothing_ran_report

    return write_nothing_ran_report(run_dir)


def _analyze_then_render(
    study: StudyDefinition, run_dir: Path, analysis: AnalysisConfig, found: Layout
) -> Path:
    """The study's jobs, then its report from their outputs: once each. Both run inside
    `analyzed`, so a full disk or a damaged part is named in one line either way."""
    study.analyze(run_dir, analysis, found)
    return study.render(run_dir, found)


def analyze_and_report(study: StudyDefinition, run_dir: Path, analysis: AnalysisConfig) -> Path:
    """The run's analysis with these settings and its report, once each (the nothing-ran
    report for a run without rows); the report's path. What `analyze` and a sweep's end do."""
    found = layout(study)
    if not has_rows(run_dir, found):
        return _nothing_ran_report(run_dir)
    return analyzed(run_dir, found, lambda: _analyze_then_render(study, run_dir, analysis, found))


def report(study: StudyDefinition, run_dir: Path) -> Path:
    """The run's report from its current analysis (the nothing-ran report for a run without
    rows); the report's path. What `report` does: a run never analyzed is analysed first, with
    the manifest's settings; outputs older than the tables are refused in one line."""
    from jobs.io import manifest_analysis

    found = layout(study)
    if not has_rows(run_dir, found):
        return _nothing_ran_report(run_dir)
    return reported(
        run_dir,
        found,
        report=lambda: study.render(run_dir, found),
        analyze=lambda: _analyze_then_render(study, run_dir, manifest_analysis(run_dir), found),
    )


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
    a run whose rows are another study's is refused."""
    found = definition(study_of(load_manifest(run_dir)))
    check_tables_belong(run_dir, found)
    return found


__all__ = [
    "StudyRegistrationError",
    "UnknownStudy",
    "analyze_and_report",
    "check_tables_belong",
    "definition",
    "layout",
    "names",
    "nothing_ran_cause",
    "of_run",
    "register",
    "report",
    "study_of",
]
