"""Each study's config file loads the config groups that study needs, and no other study's.

The carrier's scenario and arms are loaded by conf/study/carrier.yaml, so a toolout or traces
composition never holds them, and `analysis.contrasts` (paired arm contrasts) is the carrier's
own setting, not a default every study records.
"""

from __future__ import annotations

import pytest

from pipeline.config import ConfigError, compose_dict
from pipeline.config.load import config_from_manifest
from pipeline.run_dir_error import RunDirError

CARRIER_CONTRASTS = ["q_vs_j", "m_vs_q", "t_vs_j", "u_vs_m", "o_vs_m", "x_vs_m"]


def test_the_carrier_loads_its_scenario_arms_and_contrasts() -> None:
    data = compose_dict([])
    assert data["study"]["name"] == "carrier"
    assert data["study"]["scenario"]["name"] == "small"
    assert list(data["study"]["arms"]) == ["j", "m", "q", "x"]
    assert data["analysis"]["contrasts"] == CARRIER_CONTRASTS


@pytest.mark.parametrize("study", ["toolout", "traces"])
def test_another_study_holds_no_carrier_group_and_no_carrier_contrast(study: str) -> None:
    data = compose_dict([f"study={study}"])
    assert "scenario" not in data["study"]
    assert data["analysis"]["contrasts"] == []
    if study == "toolout":
        assert "arms" not in data["study"]


def test_a_study_without_the_group_refuses_a_choice_of_it_in_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        compose_dict(["study=toolout", "scenario=s5"])
    assert str(err.value) == (
        "study=toolout has no 'scenario' group (conf/scenario/ is another study's): "
        "drop scenario=..."
    )


def test_a_carrier_preset_panel_under_another_study_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        compose_dict(["study=traces", "+panel=recent"])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("conf/panel/recent.yaml chooses a scenario")
    assert "study=traces" in message


def test_an_unknown_key_is_still_an_unknown_key() -> None:
    with pytest.raises(ConfigError, match="unknown config key 'foo'"):
        compose_dict(["foo=1"])


def test_a_recorded_config_this_foldsweep_does_not_know_is_a_run_dir_error() -> None:
    """The config raises the store's error class from a leaf, without loading the store."""
    from pipeline.store import RunDirError as StoreRunDirError

    assert StoreRunDirError is RunDirError
    with pytest.raises(RunDirError, match="manifest config does not match"):
        config_from_manifest({"colour": "red"})
