"""The carrier's config lives under `study`; the old command-line selections still reach it."""

from __future__ import annotations

import pytest

from pipeline import studies
from pipeline.carrier.config import carrier_config
from pipeline.carrier.study import CarrierStudy
from pipeline.config import ConfigError, load


def configure(overrides: list[str]) -> CarrierStudy:
    """What `pipeline sweep` does with the composed `study` node."""
    cfg = load(overrides)
    study = studies.definition(cfg.study_name).configure(cfg.study)
    assert isinstance(study, CarrierStudy)
    return study


def test_scenario_and_arms_overrides_select_the_carriers_scenario_and_arms() -> None:
    cfg = load(["scenario=single_chunk", "arms=[j,q]"])
    assert cfg.study_name == "carrier"
    config = carrier_config(cfg.study)
    assert config.scenario.name == "single_chunk"
    assert config.scenario.placement == "single_chunk"
    assert sorted(config.arms) == ["j", "q"]
    assert configure(["scenario=single_chunk", "arms=[j,q]"]).arms() == ["j", "q"]


def test_fixture_seed_is_a_study_key() -> None:
    default, other = configure(["arms=[j]"]), configure(["arms=[j]", "study.fixture_seed=2"])
    assert (default.config.fixture_seed, other.config.fixture_seed) == (1, 2)
    assert default.fixture_sha256 != other.fixture_sha256


def test_fixture_seed_at_the_top_level_is_an_unknown_key() -> None:
    with pytest.raises(ConfigError, match="unknown config key 'fixture_seed'"):
        load(["fixture_seed=2"])


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("+study.foo=1", "study.foo"),  # a new key: the carrier's conversion rejects it
        ("study.foo=1", "study.foo"),  # not in the composed node: Hydra refuses it
        ("+study.arms.j.output_token=3", "study.arms.j.output_token"),
    ],
)
def test_unknown_key_under_study_is_one_line_naming_it(override: str, named: str) -> None:
    with pytest.raises(ConfigError) as err:
        configure(["arms=[j]", override])
    message = str(err.value)
    assert "\n" not in message
    assert f"unknown config key {named}" in message.replace("'", "")


def test_no_arms_is_one_line_saying_how_to_pick_some() -> None:
    with pytest.raises(ConfigError, match=r"^no arms selected; pass for example arms=\[j,q\]$"):
        configure(["arms=[]"])
