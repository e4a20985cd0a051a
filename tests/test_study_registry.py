"""The study registry (pipeline.studies): the entry point's, refusing what it cannot trust.

Issue 18: `register()` silently overwrote a study, nothing checked what a "module:attribute"
string loaded, and a study's name was written in five places nothing compared.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from examples.echo import EchoDefinition
from pipeline import studies
from pipeline.config import available


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(studies, "_REGISTERED", {})


PLUG_IN = dataclasses.replace(EchoDefinition(), name="echo_plug_in")


def test_registering_another_study_under_a_taken_name_is_refused() -> None:
    studies.register(PLUG_IN)
    studies.register(PLUG_IN)  # the same definition again: a no-op
    other = dataclasses.replace(PLUG_IN, tables=())
    with pytest.raises(
        studies.StudyRegistrationError, match="'echo_plug_in' is already registered"
    ):
        studies.register(other)
    assert studies.definition("echo_plug_in") == PLUG_IN


def test_every_study_is_registered_in_pyproject_and_loads_from_there() -> None:
    """docs/new-study.md: a study is one line of [tool.foldsweep.studies], built in or not."""
    registered = studies._entries.entries()
    assert sorted(registered) == studies.names() and {"carrier", "echo"} <= set(registered)
    assert registered["echo"] == ("examples.echo", "DEFINITION")
    assert studies.definition("echo") == EchoDefinition()


def test_a_malformed_registration_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "pyproject.toml"
    bad.write_text('[tool.foldsweep.studies]\ntally = "examples.tally"\n', encoding="utf-8")
    with pytest.raises(studies.StudyRegistrationError, match="is not 'module:ATTRIBUTE'"):
        studies._entries.entries(bad)


def test_a_registration_whose_module_is_missing_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {**studies._entries.entries(), "tally": ("examples.tally", "DEFINITION")}
    monkeypatch.setattr(studies, "entries", lambda: found)
    with pytest.raises(studies.StudyRegistrationError, match=r"names examples\.tally:DEFINITION"):
        studies.definition("tally")


def test_a_plug_in_cannot_shadow_a_built_in_study() -> None:
    with pytest.raises(studies.StudyRegistrationError, match="'carrier' is a built-in study"):
        studies.register(dataclasses.replace(EchoDefinition(), name="carrier"))


class NamedOnly:
    name = "mystery"


def test_what_is_not_a_study_definition_is_refused() -> None:
    with pytest.raises(studies.StudyRegistrationError, match="NamedOnly, not a StudyDefinition"):
        studies.register(NamedOnly())  # type: ignore[arg-type]
    with pytest.raises(studies.StudyRegistrationError, match="has no name"):
        studies.register(object())  # type: ignore[arg-type]


def test_a_loaded_definition_must_answer_to_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.studies.toolout as module

    monkeypatch.setattr(studies, "_LOADED", {})
    monkeypatch.setattr(module, "DEFINITION", dataclasses.replace(module.DEFINITION, name="x"))
    with pytest.raises(studies.StudyRegistrationError, match="is named 'x', not 'toolout'"):
        studies.definition("toolout")


def test_every_study_config_file_has_a_definition_of_that_name_and_back() -> None:
    assert available("study") == studies.names()
    for name in studies.names():
        assert studies.definition(name).name == name


def test_no_study_writes_its_name_anywhere_but_its_definition() -> None:
    """The registry, the engine, the jobs and the conf files carry no study name literal."""
    root = Path(__file__).resolve().parents[1]
    found = []
    for name in studies.names():
        for path in [root / "pipeline" / "studies" / "__init__.py", *root.glob("conf/study/*")]:
            if f"name: {name}" in path.read_text() or f'"{name}"' in path.read_text():
                found.append(f"{path.relative_to(root)} names {name}")
        for package in ("jobs", "pipeline/sweep", "pipeline/store", "pipeline/endpoints"):
            for path in (root / package).rglob("*.py"):
                if f'definition("{name}")' in path.read_text(encoding="utf-8"):
                    found.append(f"{path.relative_to(root)} looks up {name}")
    assert found == []
