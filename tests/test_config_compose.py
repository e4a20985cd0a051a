"""Every config file composes into a typed RunConfig; bad selections are one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline import studies
from pipeline.carrier.config import carrier_config
from pipeline.config import ConfigError, RunConfig, available, load

GROUPS = ("arms", "scenario", "panel", "study")


def _override(group: str, name: str) -> str:
    if group == "arms":
        return f"arms=[{name}]"
    if group == "panel":
        return f"+panel={name}"  # panels are opt-in presets, not in the defaults list
    return f"{group}={name}"


def test_every_config_file_composes_into_a_run_config() -> None:
    composed: list[str] = []
    for group in GROUPS:
        names = available(group)
        assert names, f"conf/{group}/ has no YAML files"
        for name in names:
            cfg = load([_override(group, name)])
            assert isinstance(cfg, RunConfig)
            if group == "arms":
                arms = carrier_config(cfg.study).arms
                assert list(arms) == [name]
                assert arms[name].name == name
            elif group == "panel":
                assert cfg.panel is not None and cfg.panel.name == name
            elif group == "scenario":
                assert carrier_config(cfg.study).scenario.name == name
            else:
                assert cfg.study_name == name  # the file's name: no file writes its own
                assert studies.definition(name).name == name
                studies.definition(name).configure(cfg.study)
            composed.append(f"{group}/{name}")
    assert len(composed) == sum(len(available(g)) for g in GROUPS)


def test_unknown_top_level_key_is_named_in_the_error() -> None:
    with pytest.raises(ConfigError, match="foo"):
        load(["foo=1"])


def test_unknown_arm_lists_the_available_arms() -> None:
    with pytest.raises(ConfigError) as err:
        load(["arms=[zz]"])
    message = str(err.value)
    assert "unknown arm 'zz'" in message
    assert all(name in message for name in available("arms"))


def test_unknown_panel_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"panel\W+nope"):
        load(["+panel=nope"])


def test_unknown_scenario_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"scenario\W+nope"):
        load(["scenario=nope"])


def test_unknown_study_is_one_line_listing_the_studies() -> None:
    with pytest.raises(ConfigError) as err:
        load(["study=nope"])
    message = str(err.value)
    assert "\n" not in message
    assert "unknown study 'nope'" in message
    assert all(name in message for name in available("study"))
    with pytest.raises(studies.UnknownStudy, match=r"unknown study 'nope'; available: .*carrier"):
        studies.definition("nope")  # a manifest naming a study this foldsweep lacks


def test_recent_panel_is_a_preset_the_command_line_can_override() -> None:
    preset = load(["+panel=recent"])
    study = carrier_config(preset.study)
    assert (study.scenario.name, preset.repeats, len(study.arms)) == ("s5", 4, 13)
    narrowed = load(["+panel=recent", "arms=[j,q]", "scenario=small", "repeats=2"])
    study = carrier_config(narrowed.study)
    assert (study.scenario.name, narrowed.repeats, sorted(study.arms)) == (
        "small",
        2,
        ["j", "q"],
    )


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # the carrier on the embedded local panel (read as a file, not composed again)
        ["study=toolout"],  # its default panel (offline) goes into the one composition
        ["study=traces"],  # its default panel (local)
    ],
    ids=["carrier", "toolout", "traces"],
)
def test_a_start_composes_the_config_once(
    overrides: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 18: a start composed the config 2 to 4 times (load, compose_dict, the default
    panel's two more, the embedded panel's one)."""
    import hydra

    from pipeline.commands.start import prepare

    calls: list[list[str]] = []
    real = hydra.compose

    def counted(config_name: str, overrides: list[str], **kw: Any) -> Any:
        calls.append(list(overrides))
        return real(config_name, overrides=overrides, **kw)

    monkeypatch.setattr(hydra, "compose", counted)
    p = prepare([*overrides, f"out_dir={tmp_path}"])
    assert p.definition.name == (overrides[0].split("=")[1] if overrides else "carrier")
    assert len(calls) == 1, calls


def test_a_study_file_that_names_another_study_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(Path(__file__).resolve().parents[1] / "conf", conf)
    (conf / "study" / "carrier.yaml").write_text("name: toolout\nfixture_seed: 1\n")
    monkeypatch.setenv("FOLDSWEEP_CONF", str(conf))
    with pytest.raises(ConfigError, match="a study's name is its file's name"):
        load([])
