"""The shape matrix: named deterministically, secrets unique, positions computed right."""

from __future__ import annotations

import json

from pipeline.traces.visibility.shapes import (
    DIALECTS,
    QUESTION,
    SECRET_TOKENS,
    all_shapes,
    build_shape,
    switch_settings,
)


def test_every_shape_has_a_unique_stable_name_and_the_product_size() -> None:
    shapes = all_shapes()
    names = [s.name for s in shapes]
    assert len(set(names)) == len(names)
    assert names == [s.name for s in all_shapes()]
    # one plain structure x 4 dialects, six tool structures x 4 dialects x 2 contents x 2 args
    assert len(shapes) == 4 + 6 * 4 * 2 * 2
    assert "tool1_open/reasoning_content/content=null/args=string" in names
    assert "plain_user/reasoning" in names


def test_shapes_are_byte_identical_across_builds() -> None:
    first = json.dumps([s.messages for s in all_shapes()], sort_keys=True)
    assert first == json.dumps([s.messages for s in all_shapes()], sort_keys=True)


def test_each_secret_is_a_unique_token_stored_once_under_the_dialect() -> None:
    for shape in all_shapes():
        tokens = [s.token for s in shape.secrets]
        assert len(set(tokens)) == len(tokens) >= 1
        assert set(tokens) <= set(SECRET_TOKENS)
        text = json.dumps(shape.messages)
        for secret in shape.secrets:
            assert text.count(secret.token) == 1
            assert secret.token in shape.messages[secret.message_index][shape.dialect]
            assert secret.field == shape.dialect
        others = set(DIALECTS) - {shape.dialect}
        assert not any(key in m for m in shape.messages for key in others)


def test_the_question_is_in_the_tool_result_when_the_loop_is_open() -> None:
    open_loop = build_shape("tool2_open", "reasoning", "null", "string")
    assert open_loop.question_in == "tool_result"
    assert open_loop.messages[-1]["role"] == "tool"
    assert QUESTION in open_loop.messages[-1]["content"]
    after = build_shape("tool2_user", "reasoning", "null", "string")
    assert after.question_in == "user_turn"
    assert after.messages[-1] == {"role": "user", "content": QUESTION}


def test_secret_positions_follow_from_the_messages() -> None:
    shape = build_shape("tool_plain_tool_open", "reasoning_content", "empty", "object")
    positions = [(s.on_tool_call_turn, s.user_after, s.plain_reply_after) for s in shape.secrets]
    assert positions == [(True, False, True), (False, False, False), (True, False, False)]
    plain = build_shape("plain_user", "reasoning", "n/a", "n/a").secrets
    assert [(s.on_tool_call_turn, s.user_after) for s in plain] == [(False, True)]


def test_content_and_argument_forms_are_what_the_name_says() -> None:
    null_string = build_shape("tool1_open", "reasoning", "null", "string")
    call_turn = null_string.messages[1]
    assert call_turn["content"] is None
    assert isinstance(call_turn["tool_calls"][0]["function"]["arguments"], str)
    empty_object = build_shape("tool1_open", "reasoning", "empty", "object")
    assert empty_object.messages[1]["content"] == ""
    assert empty_object.messages[1]["tool_calls"][0]["function"]["arguments"] == {
        "text": "note ECHO-1001"
    }
    assert empty_object.tool_arg_tokens == ("ECHO-1001",)


def test_switch_settings_cover_only_the_switches_a_template_mentions() -> None:
    assert switch_settings("{{ messages }}") == ({},)
    settings = switch_settings("{% if enable_thinking is defined %}{% endif %}")
    assert settings == ({}, {"enable_thinking": True}, {"enable_thinking": False})
    both = switch_settings("{{ enable_thinking }}{{ preserve_thinking }}")
    assert len(both) == 9
    assert both[0] == {}
