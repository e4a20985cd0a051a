"""Summariser arms as data: the shipped files load, bad files are one-line ConfigErrors, the
request is greedy with thinking off, and the hybrid ledger lists exactly the dropped facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.config.strict import ConfigError
from pipeline.traces.compression.arms import (
    SUMMARY_SEED,
    Arm,
    build_request,
    finish,
    load_arm,
    load_arms,
    select,
)
from pipeline.traces.compression.facts import Fact, extract
from pipeline.traces.compression.generator import generate
from pipeline.traces.compression.matching import split
from pipeline.traces.compression.metrics import score

ARMS_DIR = Path(__file__).resolve().parents[2] / "conf" / "traces" / "arms"
TRACE = "Wait, actually the crash is ERR_HTTP_HEADERS_SENT at gateway.mjs:1005, after 30 ms."


def _specs() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text("utf-8")) for p in sorted(ARMS_DIR.glob("*.yaml"))]


def _arms() -> dict[str, Arm]:
    return load_arms(_specs())


def test_every_shipped_arm_file_loads_and_is_named_after_its_file() -> None:
    names = {p.stem for p in ARMS_DIR.glob("*.yaml")}
    assert names == {"naive", "fact_preserving", "churn", "state_block", "extractive", "hybrid"}
    arms = _arms()
    assert set(arms) == names
    assert {n for n, a in arms.items() if a.spec.in_seed} == {
        "naive",
        "fact_preserving",
        "churn",
        "state_block",
    }
    assert arms["hybrid"].wrapped is arms["churn"].spec


def test_prompts_say_what_the_seed_describes() -> None:
    arms = _arms()
    assert "at most 6 bullets" in arms["naive"].spec.user_template
    for heading in ("GOAL", "FACTS", "DECISIONS", "PLAN"):
        assert f"{heading}:" in arms["fact_preserving"].spec.user_template
    assert "Delete the churn" in arms["churn"].spec.user_template
    assert "STATE:" in arms["state_block"].spec.user_template


def test_the_request_is_the_trace_alone_under_greedy_sampling_with_thinking_off() -> None:
    messages, sampling = build_request(_arms()["churn"], TRACE)
    assert [m.role for m in messages] == ["system", "user"]
    assert TRACE in messages[1].content and TRACE not in messages[0].content
    assert sampling.temperature == 0.0 and sampling.top_p == 1.0
    assert sampling.seed == SUMMARY_SEED and sampling.enable_thinking is False
    assert sampling.max_tokens == 4096


def test_the_shipped_prompt_arms_agree_up_to_the_end_of_the_trace() -> None:
    """The layout the prompt cache needs: one system prompt and the trace before each arm's
    instruction, so a server prefills a trace once for all arms (docs/traces.md)."""
    prompt_arms = [a for a in _arms().values() if a.spec.kind == "prompt"]
    requests = [build_request(arm, TRACE).messages for arm in prompt_arms]
    assert len({m[0].content for m in requests}) == 1
    shared = f"<trace>\n{TRACE}\n</trace>\n"
    assert all(m[1].content.startswith(shared) for m in requests)
    instructions = {m[1].content.removeprefix(shared) for m in requests}
    assert len(instructions) == len(prompt_arms)  # what differs is the instruction after it


def test_a_trace_with_braces_is_inserted_verbatim() -> None:
    trace = "if (x) { return {trace}; }"
    messages, _ = build_request(_arms()["naive"], trace)
    assert trace in messages[1].content


def test_the_hybrid_sends_the_prompt_of_the_arm_it_wraps() -> None:
    arms = _arms()
    assert build_request(arms["hybrid"], TRACE) == build_request(arms["churn"], TRACE)
    spec = dict(_specs()[[s["name"] for s in _specs()].index("hybrid")], wraps="naive")
    rewrapped = load_arm(spec, arms)
    assert build_request(rewrapped, TRACE) == build_request(arms["naive"], TRACE)


def test_the_extractive_arm_needs_no_model_and_lists_the_facts_by_kind() -> None:
    arm = _arms()["extractive"]
    assert not arm.needs_model
    with pytest.raises(ValueError, match="code-only"):
        build_request(arm, TRACE)
    summary = finish(arm, TRACE, None)
    assert summary == (
        "paths: gateway.mjs\n"
        "line refs: gateway.mjs:1005\n"
        "identifiers: ERR_HTTP_HEADERS_SENT\n"
        "numbers: 30 ms"
    )
    assert (
        score(generate(1, 3000).item, finish(arm, generate(1, 3000).item, None))["retention"] == 1.0
    )


def test_the_hybrid_ledger_lists_exactly_the_facts_the_summary_dropped() -> None:
    trace = generate(9, 6000).item
    model_text = "GOAL: fix the crash.\nThe guard goes in " + trace.text.split()[5] + "."
    summary = finish(_arms()["hybrid"], trace, model_text)
    body, _, ledger = summary.partition("\n\n## Ledger\n")
    assert body == model_text
    dropped = split(extract(trace.text), model_text).absent
    labels = {"path": "path", "line_ref": "line", "identifier": "identifier", "number": "number"}
    assert ledger.split("\n") == [f"- {labels[f.kind]}: {f.value}" for f in dropped]
    assert dropped  # the example must drop something for the test to mean anything
    record = score(trace, summary)
    assert record["retention"] == 1.0
    assert record["invented"] == 0  # the ledger's labels are not facts


def test_the_hybrid_writes_no_ledger_when_nothing_was_dropped() -> None:
    kept_all = finish(_arms()["extractive"], TRACE, None)
    assert finish(_arms()["hybrid"], TRACE, kept_all) == kept_all


def test_an_empty_think_prefix_is_removed_from_the_model_text() -> None:
    assert finish(_arms()["naive"], TRACE, "<think>\n\n</think>\n\n- crash at 30 ms\n") == (
        "- crash at 30 ms"
    )


def _spec(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "mine",
        "kind": "prompt",
        "description": "d",
        "in_seed": False,
        "system_prompt": "s",
        "user_template": "summarise {trace}",
    }
    spec.update(changes)
    return {k: v for k, v in spec.items() if v is not None}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_spec(temperature=0), "unknown config key arms.mine.temperature"),
        (_spec(user_template="no slot"), "must contain {trace} exactly once"),
        (_spec(system_prompt=" "), "system_prompt is empty"),
        (_spec(kind="model"), "is not one of extractive, hybrid, prompt"),
        (_spec(max_tokens=0), "max_tokens must be at least 1"),
        (_spec(kind="hybrid", system_prompt=None, user_template=None), "wraps must name"),
        (
            _spec(kind="hybrid", system_prompt=None, user_template=None, wraps="nope"),
            "wraps 'nope' is not a prompt arm",
        ),
        (_spec(kind="extractive"), "has no prompts of its own"),
        (_spec(description=None), "missing required config key arms.mine.description"),
    ],
)
def test_a_bad_arm_file_is_a_one_line_config_error(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_arm(spec, _arms())
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_an_arm_file_that_is_not_a_mapping_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_arm(["naive"])  # type: ignore[arg-type]


def test_an_unknown_arm_name_is_a_config_error_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="unknown trace arm 'bullets'; valid arms are: churn"):
        select(_arms(), ["naive", "bullets"])
    assert [a.name for a in select(_arms(), ["churn", "naive"])] == ["churn", "naive"]


def test_a_duplicate_arm_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="defined twice"):
        load_arms([_spec(), _spec()])


def test_split_keeps_the_order_and_kind_of_the_absent_facts() -> None:
    dropped = split([Fact("path", "a.py"), Fact("number", "30 ms")], "kept a.py").absent
    assert dropped == (Fact("number", "30 ms"),)
