"""The live default's policies: which arms a toolout run plans, by panel kind and study.policies."""

from __future__ import annotations

import pytest

from pipeline.chat.messages import ChatMessage
from pipeline.config.load import compose_dict
from pipeline.config.strict import ConfigError
from pipeline.studies.toolout import DEFINITION
from pipeline.toolout.config import LIVE_POLICIES, ToolOutConfig, toolout_config
from pipeline.toolout.live import wire_messages, within_budget
from pipeline.toolout.oracle import NAME as ORACLE
from pipeline.toolout.runner import ToolOutRunner


def _config(*overrides: str) -> ToolOutConfig:
    return toolout_config(compose_dict(["study=toolout", *overrides])["study"])


def test_the_panel_kind_comes_from_the_panel() -> None:
    assert _config("+panel=offline").panel_kind == "offline"
    assert _config("+panel=local").panel_kind == "local"
    assert _config().panel_kind == "offline"  # no panel composed: the offline default


def test_offline_runs_every_policy_and_the_oracle() -> None:
    cfg = _config("+panel=offline")
    assert cfg.chosen_policies == () and cfg.with_oracle


def test_a_live_panel_runs_the_live_policies_without_the_oracle() -> None:
    cfg = _config("+panel=local")
    assert cfg.chosen_policies == LIVE_POLICIES == ("control", "deterministic_first_pass")
    assert not cfg.with_oracle


def test_live_policies_empty_gives_every_policy_and_the_oracle_live_too() -> None:
    cfg = _config("+panel=local", "study.live.policies=[]")
    assert cfg.chosen_policies == () and cfg.with_oracle


def test_the_default_study_policies_is_the_one_an_older_run_recorded() -> None:
    """A run made before the live default recorded `study.policies: []`; a resume composes
    its overrides again, so the default must still be [] for that run to resume."""
    assert compose_dict(["study=toolout"])["study"]["policies"] == []


def test_named_study_policies_win_over_the_live_default() -> None:
    cfg = _config("+panel=local", "study.policies=[keyword]", "study.oracle=false")
    assert cfg.chosen_policies == ("keyword",) and not cfg.with_oracle


def test_the_live_default_plans_its_policies_as_arms() -> None:
    study = DEFINITION.configure(compose_dict(["study=toolout", "+panel=local"])["study"])
    assert list(study.arms()) == sorted(LIVE_POLICIES)
    offline = DEFINITION.configure(compose_dict(["study=toolout", "+panel=offline"])["study"])
    assert ORACLE in offline.arms() and len(offline.arms()) > len(LIVE_POLICIES) + 1


def test_an_unknown_live_policy_is_one_line_naming_its_key() -> None:
    node = compose_dict(["study=toolout", "+panel=local", "study.live.policies=[nope]"])["study"]
    with pytest.raises(ConfigError, match=r"^study\.live\.policies: unknown policy 'nope'"):
        DEFINITION.configure(node)


def test_on_the_default_live_transcript_only_the_live_policies_differ_from_control() -> None:
    """The reason for the default (docs/toolout.md): every other policy, and the oracle under
    the local cache model, sends control's wire messages on the live transcript."""
    study = DEFINITION.configure(compose_dict(["study=toolout", "+panel=offline"])["study"])
    runner = ToolOutRunner(
        study.transcripts,
        study.policies,
        study.cache_models["llama-server"],
        "SmolLM2-135M-Instruct",
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
        live=study.live_budget,
    )
    [chosen] = runner.live_transcripts()
    assert chosen.id == "swe-agent/trajectories/demonstrations/ctf/rev/rock"

    def wire(arm: str) -> tuple[tuple[ChatMessage, ...], ...]:
        sent = within_budget(runner._replay(arm, chosen, None)[0], study.live_budget)
        return tuple(wire_messages(r) for r in sent)

    control = wire("control")
    differ = {arm for arm in [*study.policies, ORACLE] if wire(arm) != control}
    assert differ == set(LIVE_POLICIES) - {"control"}
