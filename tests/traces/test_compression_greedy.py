"""The decoding checks: greedy and thinking-off read from the body as sent, and the repeat
comparison by hash."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.traces.compression.greedy import compare_runs, inspect_body

MESSAGES = [{"role": "user", "content": "summarise"}]


def _body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": MESSAGES, **fields}


def test_greedy_with_the_template_switch_off_holds() -> None:
    check = inspect_body(
        _body(temperature=0, top_p=1, seed=7, chat_template_kwargs={"enable_thinking": False})
    )
    assert check.held and check.problem is None
    assert check.as_columns() == {
        "sent_temperature": 0.0,
        "sent_top_p": 1.0,
        "sent_top_k": None,
        "sent_seed": 7,
        "sent_enable_thinking": False,
        "sent_template_thinking": None,
        "sent_reasoning_enabled": None,
        "sent_reasoning_effort": None,
        "sent_thinking": None,
        "sent_greedy": True,
        "sent_thinking_state": "off",
        "decoding_held": True,
        "decoding_problem": None,
    }


def test_a_default_that_overwrote_temperature_zero_fails() -> None:
    # the seed's harness: model defaults merged after the request's fields
    sent = {**_body(temperature=0, reasoning={"enabled": False}), **{"temperature": 1.0}}
    check = inspect_body(sent)
    assert not check.greedy and not check.held
    assert check.problem == "temperature 1 sent, not 0 (and top_k is not 1)"
    assert check.as_columns()["sent_temperature"] == 1.0


def test_a_temperature_not_sent_fails_since_the_server_default_applies() -> None:
    check = inspect_body(_body(chat_template_kwargs={"enable_thinking": False}))
    assert not check.held
    assert check.problem == "temperature not sent: the server's default applies"


def test_top_k_one_is_greedy_at_any_temperature() -> None:
    check = inspect_body(_body(temperature=0.8, top_k=1, reasoning_effort="none"))
    assert check.greedy and check.held


def test_a_string_temperature_is_not_greedy() -> None:
    check = inspect_body(_body(temperature="0", thinking={"type": "disabled"}))
    assert not check.greedy and check.thinking_state == "off"


@pytest.mark.parametrize(
    ("fields", "state"),
    [
        ({"chat_template_kwargs": {"enable_thinking": False}}, "off"),
        ({"chat_template_kwargs": {"thinking": False}}, "off"),
        ({"chat_template_kwargs": {"thinking": True}}, "on"),
        ({"enable_thinking": False}, "off"),
        ({"think": False}, "off"),
        ({"reasoning": {"enabled": False}}, "off"),
        ({"reasoning": {"effort": "high"}}, "on"),
        ({"reasoning_effort": "none"}, "off"),
        ({"reasoning_effort": "minimal"}, "on"),
        ({"thinking": {"type": "disabled"}}, "off"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "on"),
        ({"thinking": False}, "off"),
        ({}, "unspecified"),
        (
            {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "high"},
            "conflicting",
        ),
    ],
)
def test_thinking_switches(fields: dict[str, Any], state: str) -> None:
    check = inspect_body(_body(temperature=0, **fields))
    assert check.thinking_state == state
    assert check.held is (state == "off")


def test_both_problems_are_named_when_both_checks_fail() -> None:
    check = inspect_body(_body(temperature=0.7))
    assert check.problem == (
        "temperature 0.7 sent, not 0 (and top_k is not 1); "
        "no thinking switch sent: the template's default applies"
    )


def test_identical_summaries_are_deterministic_and_a_changed_byte_is_not() -> None:
    same = compare_runs("- crash at 30 ms", "- crash at 30 ms")
    assert same.deterministic
    assert same.first_sha256 == same.second_sha256
    differ = compare_runs("- crash at 30 ms", "- crash at 30 ms ")
    assert not differ.deterministic
    assert differ.as_columns()["deterministic"] is False
