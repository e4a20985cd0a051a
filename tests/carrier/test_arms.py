from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.carrier.arms import ArmError, build_arm, build_arms
from pipeline.carrier.config import ArmConfig, carrier_config
from pipeline.config import ConfigError, build, load

ALL_ARMS = ["f", "n", "j", "p", "q", "k", "o", "m", "t", "u", "l", "g", "x"]


@pytest.fixture(scope="module")
def arms() -> dict:
    cfg = load([f"arms=[{','.join(ALL_ARMS)}]"])
    return build_arms(carrier_config(cfg.study).arms)


def test_all_thirteen_arms_load_from_data_files(arms: dict) -> None:
    assert sorted(arms) == sorted(ALL_ARMS)


def test_fixed_headings_prompt_is_byte_identical_across_central_arms(arms: dict) -> None:
    digests = {arms[a].system_prompt_sha256 for a in "jqmptu"}
    assert len(digests) == 1
    assert arms["o"].system_prompt_sha256 not in digests
    assert arms["f"].system_prompt_sha256 not in digests


@pytest.mark.parametrize(
    ("arm", "ceilings"),
    [
        ("f", [120, 1024]),
        ("g", [120, 1024]),
        ("n", [120, 9600]),
        ("j", [9600]),
        ("p", [9600]),
        ("t", [4800]),
        ("q", [1920] * 5),
    ],
)
def test_declared_field_ceilings_match_the_paper(arms: dict, arm: str, ceilings: list) -> None:
    assert [f.max_chars for f in arms[arm].fields] == ceilings


def test_q_and_j_match_declared_total_capacity(arms: dict) -> None:
    assert arms["q"].declared_capacity_chars == arms["j"].declared_capacity_chars == 9600
    assert arms["f"].declared_capacity_chars == 1024
    assert arms["m"].declared_capacity_chars is None


@pytest.mark.parametrize("arm", ALL_ARMS)
def test_output_budget_and_carry_cap(arms: dict, arm: str) -> None:
    expected_budget = 900 if arm in "flg" else 2400
    expected_cap = 1400 if arm == "u" else 2400
    assert arms[arm].output_tokens == expected_budget
    assert arms[arm].carry_cap_tokens == expected_cap


@pytest.mark.parametrize(
    ("arm", "rule"),
    [("f", "raw"), ("n", "raw"), ("g", "parsed"), ("q", "rendered"), ("m", "text")],
)
def test_carrier_rule(arms: dict, arm: str, rule: str) -> None:
    assert arms[arm].carrier_from_reply == rule


def test_p_field_description_is_about_1835_characters(arms: dict) -> None:
    assert abs(len(arms["p"].fields[0].description) - 1835) <= 10


def test_schema_arms_send_strict_schemas_and_plain_arms_send_none(arms: dict) -> None:
    for name in "fnjpqktg":
        schema = arms[name].schema.schema
        assert schema["additionalProperties"] is False
        assert schema["required"] == [f.name for f in arms[name].fields]
    for name in "omulx":
        assert arms[name].schema is None


def test_x_declares_a_ledger_budget_and_m_does_not(arms: dict) -> None:
    assert arms["x"].ledger_budget_chars == 2400
    assert arms["m"].ledger_budget_chars is None


def test_adding_an_arm_file_needs_no_code_change(tmp_path: Path, monkeypatch) -> None:
    import shutil

    from pipeline.config.load import conf_dir

    conf = tmp_path / "conf"
    shutil.copytree(conf_dir(), conf)
    (conf / "arms" / "z.yaml").write_text(
        "# @package study.arms.z\nname: z\ndescription: three fields\n"
        "system_prompt: fixed_headings\n"
        "representation: semantic_fields\noutput_tokens: 1200\ncarry_cap_tokens: 2000\n"
        "carrier_from_reply: rendered\nfields:\n  - {name: a, max_chars: 100}\n"
        "  - {name: b}\n  - {name: c}\nin_paper: false\n"
    )
    monkeypatch.setenv("FOLDSWEEP_CONF", str(conf))
    arms = build_arms(carrier_config(load(["arms=[z,m]"]).study).arms)
    assert [f.name for f in arms["z"].fields] == ["a", "b", "c"]
    assert arms["z"].schema is not None


def test_unknown_representation_is_rejected_with_the_file_named() -> None:
    # Built directly: the config conversion rejects it too (tests/test_config_schema.py); the
    # arm builder must not rely on that.
    config = ArmConfig(
        name="w",
        description="",
        system_prompt="fixed_headings",
        representation="xml",  # type: ignore[arg-type]
        output_tokens=10,
        carry_cap_tokens=10,
        carrier_from_reply="text",
    )
    with pytest.raises(ArmError, match=r"conf/arms/w.yaml: unknown representation 'xml'"):
        build_arm(config)


def test_unknown_arm_key_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown config key output_token"):
        build(ArmConfig, {"name": "w", "output_token": 3})
