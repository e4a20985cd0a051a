"""The wire body carries reasoning under its dialect field; three layers on a hand example."""

from __future__ import annotations

from typing import Any

from pipeline.traces.visibility.render import render
from pipeline.traces.visibility.shapes import DIALECTS, build_shape
from pipeline.traces.visibility.visibility import probe
from pipeline.traces.visibility.wire import locate, presence, request_body

# Shows `reasoning_content` and content only: the field a template reads decides the prompt.
READS_REASONING_CONTENT = (
    "{% for m in messages %}[{{ m.role }}]{{ m.reasoning_content or '' }}|{{ m.content }}\n"
    "{% endfor %}"
)


def test_the_wire_body_carries_exactly_the_dialect_field() -> None:
    for dialect in DIALECTS:
        shape = build_shape("tool1_user", dialect, "null", "string")
        body = request_body(shape.messages)
        call_turn = body["messages"][1]
        assert set(call_turn) == {"role", "content", "tool_calls", dialect}
        assert call_turn[dialect] == shape.messages[1][dialect]
        assert locate(body, shape.secrets[0].token) == [f"messages[1].{dialect}"]


def test_store_only_keys_stay_home_and_no_replay_drops_reasoning() -> None:
    stored: list[dict[str, Any]] = [
        {"role": "user", "content": "go", "timestamp": 1},
        {"role": "assistant", "content": "ok", "reasoning": "r", "thinking_signature": "sig"},
    ]
    body = request_body(stored, tools=[{"type": "function"}])
    assert body["messages"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok", "reasoning": "r"},
    ]
    assert body["tools"] == [{"type": "function"}]
    assert "tools" not in request_body(stored)
    bare = request_body(stored, replay_reasoning=False)
    assert bare["messages"][1] == {"role": "assistant", "content": "ok"}


def test_three_layers_on_a_hand_example() -> None:
    stored: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "ok",
            "reasoning_content": "token AAA-1001",
            "harness_note": "token CCC-3003",
        },
        {"role": "assistant", "content": "ok", "reasoning": "token BBB-2002"},
    ]
    body = request_body(stored)
    prompt = render(READS_REASONING_CONTENT, body["messages"]).prompt
    assert prompt is not None
    everywhere = presence(stored, body, prompt, "AAA-1001")
    assert (everywhere.in_stored, everywhere.in_wire, everywhere.in_rendered) == (True,) * 3
    assert everywhere.wire_fields == ("messages[1].reasoning_content",)
    sent_not_shown = presence(stored, body, prompt, "BBB-2002")
    assert (sent_not_shown.in_stored, sent_not_shown.in_wire) == (True, True)
    assert sent_not_shown.wire_fields == ("messages[2].reasoning",)
    assert not sent_not_shown.in_rendered
    stored_only = presence(stored, body, prompt, "CCC-3003")
    assert (stored_only.in_stored, stored_only.in_wire, stored_only.in_rendered) == (
        True,
        False,
        False,
    )
    assert not presence(stored, body, None, "AAA-1001").in_rendered


def test_probe_records_the_layers_per_secret() -> None:
    shape = build_shape("tool2_open", "reasoning", "empty", "string")
    records = probe("hand", READS_REASONING_CONTENT, shape)
    assert [r["secret"] for r in records] == [s.token for s in shape.secrets]
    for record in records:
        assert (record["in_stored"], record["in_wire"], record["in_rendered"]) == (
            True,
            True,
            False,
        )
        assert str(record["wire_field"]).endswith(".reasoning")
    same_in_read_field = build_shape("tool2_open", "reasoning_content", "empty", "string")
    assert all(r["in_rendered"] for r in probe("hand", READS_REASONING_CONTENT, same_in_read_field))
