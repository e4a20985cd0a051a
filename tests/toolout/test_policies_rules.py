"""Rule policies from data: first-match globs, the forced-exact layer first, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.toolout.policies import (
    ClearToolUses,
    ControlPolicy,
    LastNObservations,
    ObservationMasking,
    OutputView,
    PolicyConfigError,
    Rule,
    RulePolicy,
    TruncateOnArrival,
    build_policy,
    load_policies,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"
SEED_RULES = (
    Rule("read*", "exact"),
    Rule("view*", "exact"),
    Rule("web_search", "deterministic", True, "Repeat the search to recover every result."),
)
LOG = "\n".join(f"step {i}: compiled module_{i} in 0.{i:03d}s, cache warm" for i in range(100))


def view(tool: str, content: str = LOG, exposures: int = 1) -> OutputView:
    return OutputView(
        tool_name=tool,
        arguments="{}",
        content=content,
        output_index=0,
        first_request=0,
        request_index=exposures,
        exposures=exposures,
        later_outputs=exposures,
        intent="compiled module cache",
        previous=None if exposures == 0 else content,
    )


def shipped() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(CONF.glob("*.yaml"))]


def test_every_shipped_policy_file_builds_and_is_named_after_its_file() -> None:
    for path in sorted(CONF.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        assert build_policy(spec).name == path.stem
        assert path.read_text().startswith(f"# @package study.policies.{path.stem}\n")


def test_load_policies_builds_the_shipped_arms() -> None:
    policies = load_policies(shipped())
    assert set(policies) == {
        "control",
        "exact",
        "deterministic",
        "deterministic_first_pass",
        "keyword",
        "model",
        "anthropic_clear_tool_uses",
        "swe_agent_last_5",
        "swe_agent_last_5_polling",
        "openhands_masking",
        "mini_swe_agent_truncate",
    }
    assert isinstance(policies["control"], ControlPolicy)
    assert isinstance(policies["anthropic_clear_tool_uses"], ClearToolUses)
    assert isinstance(policies["openhands_masking"], ObservationMasking)
    assert isinstance(policies["mini_swe_agent_truncate"], TruncateOnArrival)
    last5 = policies["swe_agent_last_5_polling"]
    assert isinstance(last5, LastNObservations)
    assert (last5.n, last5.polling) == (5, 5)
    assert all(p.stable for p in policies.values())


def test_the_deterministic_and_model_arms_carry_the_seeds_rules() -> None:
    policies = load_policies(shipped())
    deterministic, model = policies["deterministic"], policies["model"]
    assert isinstance(deterministic, RulePolicy)
    assert isinstance(model, RulePolicy)
    assert deterministic.rules == (*SEED_RULES, Rule("grep*", "keyword"))
    assert model.rules == (*SEED_RULES, Rule("grep*", "model"))
    assert model.gate_params == {"expected_applications": 6}


def test_first_match_wins_and_a_later_broader_rule_does_not_override() -> None:
    broad = Rule("grep*", "deterministic", first_pass=True)
    p = RulePolicy("t", (Rule("grep_exact*", "exact"), broad))
    assert p.render(view("grep_exact_lines")).reason == "rule_exact"
    assert p.render(view("grep_files")).mode == "deterministic"


def test_globs_match_case_insensitively() -> None:
    p = RulePolicy("t", (Rule("Grep*", "exact"), Rule("*", "deterministic", first_pass=True)))
    assert p.render(view("GREP_search")).reason == "rule_exact"
    assert p.render(view("grep")).reason == "rule_exact"
    assert p.render(view("BUILD")).mode == "deterministic"


def test_an_unmatched_tool_stays_exact() -> None:
    p = RulePolicy("t", (Rule("grep*", "keyword"),))
    rendering = p.render(view("bash"))
    assert (rendering.mode, rendering.reason, rendering.changed) == ("exact", "unmatched", False)


def test_the_forced_exact_layer_runs_before_any_rule() -> None:
    p = RulePolicy("t", (Rule("*", "deterministic", first_pass=True),))
    assert p.render(view("apply_patch")).reason == "forced_exact:tool_name"
    failing = view("bash", LOG + "\nProcess exited with code 137")
    assert p.render(failing).reason == "forced_exact:nonzero_exit"
    assert p.render(view("bash", "short")).reason == "below_min_bytes"
    assert p.render(view("")).reason == "no_tool_name"
    assert p.render(view("bash")).mode == "deterministic"


def test_the_exact_policy_never_changes_an_output() -> None:
    p = load_policies(shipped())["exact"]
    assert not p.render(view("grep")).changed


def base(**extra: Any) -> dict[str, Any]:
    return {"name": "arm", "rules": [{"match": "grep*", "mode": "keyword"}], **extra}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (base(rulez=[]), r"policy 'arm': unknown key\(s\) rulez"),
        (base(rules=[]), r"policy 'arm': rules must be a non-empty list"),
        (
            base(rules=[{"match": "a", "mode": "exact"}, {"match": "b", "mode": "keywrod"}]),
            r"policy 'arm': rules\[1\]: unknown mode 'keywrod'; expected one of exact",
        ),
        (base(rules=[{"mode": "exact"}]), r"rules\[0\]: match and mode are required"),
        (base(rules=[{"match": " ", "mode": "exact"}]), r"rules\[0\]: match must be a non-empty"),
        (
            base(rules=[{"match": "a", "mode": "deterministic", "first_pass": "yes"}]),
            r"rules\[0\]: first_pass must be true or false",
        ),
        (
            base(rules=[{"match": "a", "mode": "keyword", "first_pass": True}]),
            r"rules\[0\]: first_pass and rerun apply to deterministic rules only",
        ),
        (
            base(rules=[{"match": "a", "mode": "exact", "colour": 1}]),
            r"rules\[0\]: unknown key\(s\) colour",
        ),
        (base(gate={"expected_applications": 6}), r"gate is set but no rule has mode model"),
        (base(kind="magic"), r"policy 'arm': unknown kind 'magic'; expected one of rules"),
        ({"rules": []}, r"policy: name must be a non-empty string"),
        (
            {"name": "a", "kind": "swe_agent_last_n", "n": 0},
            r"policy 'a': n must be an integer >= 1",
        ),
        (
            {"name": "a", "kind": "anthropic_clear_tool_uses", "keep": True},
            r"policy 'a': keep must be an integer >= 0",
        ),
        (
            {"name": "a", "kind": "openhands_masking", "window": 3},
            r"policy 'a': unknown key\(s\) window",
        ),
        (
            {"name": "a", "kind": "mini_swe_agent_truncate", "head_chars": 9000},
            r"head_chars \+ tail_chars must not exceed limit_chars",
        ),
    ],
)
def test_bad_policy_files_are_one_line_errors_naming_the_place(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(PolicyConfigError, match=message) as err:
        build_policy(spec)
    assert "\n" not in str(err.value)


def test_a_policy_defined_twice_is_an_error() -> None:
    with pytest.raises(PolicyConfigError, match="'arm': defined twice"):
        load_policies([base(), base()])


def test_policy_config_error_is_a_value_error() -> None:
    assert issubclass(PolicyConfigError, ValueError)
