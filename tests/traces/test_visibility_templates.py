"""The shipped templates' visibility, derived by rendering the matrix, pinned (issue 12)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import pytest

from pipeline.traces.visibility.classify import TemplateClass, classify
from pipeline.traces.visibility.render import render
from pipeline.traces.visibility.shapes import TOOLS, build_shape
from pipeline.traces.visibility.visibility import Record, matrix, probe
from pipeline.traces.visibility.wire import request_body
from tests.traces.templates import (
    GEMMA,
    KIMI,
    QWEN3,
    R1_DISTILL,
    R2E_PRESERVE,
    R2E_VARIANT,
    TEMPLATES_DIR,
    V31,
    shipped,
)


@pytest.fixture(scope="module")
def records() -> list[Record]:
    return matrix(shipped())


@pytest.fixture(scope="module")
def classes(records: list[Record]) -> dict[str, TemplateClass]:
    return classify(records)


def kept(template: str, structure: str, content: str = "empty", args: str = "string") -> list[bool]:
    """Per planted secret, in order: does it reach the prompt (reasoning_content dialect)?"""
    shape = build_shape(structure, "reasoning_content", content, args)
    rows = probe(template, shipped()[template], shape)
    assert all(r["rendered"] for r in rows), rows[0]["error_message"]
    return [bool(r["in_rendered"]) for r in rows]


def test_shipped_templates_match_their_recorded_sha256() -> None:
    entries = json.loads((TEMPLATES_DIR / "SOURCES.json").read_text(encoding="utf-8"))
    assert {e["path"] for e in entries} == {f"{name}.jinja" for name in shipped()}
    for entry in entries:
        data = (TEMPLATES_DIR / entry["path"]).read_bytes()
        assert len(data) == entry["size_bytes"], entry["path"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["path"]
        if entry["license_file"]:
            assert (TEMPLATES_DIR / entry["license_file"]).is_file()


def test_qwen3_keeps_tool_call_reasoning_while_the_loop_is_open() -> None:
    assert kept(QWEN3, "tool1_open") == [True]
    assert kept(QWEN3, "tool2_open") == [True, True]


def test_qwen3_drops_tool_call_reasoning_once_a_new_user_question_arrives() -> None:
    assert kept(QWEN3, "tool1_user") == [False]
    assert kept(QWEN3, "tool2_user") == [False, False]


def test_qwen3_drops_reasoning_of_a_plain_turn_followed_by_a_user_turn() -> None:
    assert kept(QWEN3, "plain_user", "n/a", "n/a") == [False]


def test_qwen3_keeps_a_plain_reply_inside_an_open_loop() -> None:
    assert kept(QWEN3, "tool_plain_tool_open") == [True, True, True]


def test_qwen3_reads_only_reasoning_content() -> None:
    shape = build_shape("tool1_open", "reasoning", "empty", "string")
    rows = probe(QWEN3, shipped()[QWEN3], shape)
    assert rows[0]["rendered"] and rows[0]["in_wire"] and not rows[0]["in_rendered"]


def test_qwen3_crash_on_null_content_is_a_recorded_outcome() -> None:
    shape = build_shape("tool1_open", "reasoning_content", "null", "string")
    (row,) = probe(QWEN3, shipped()[QWEN3], shape)
    assert not row["rendered"] and not row["in_rendered"]
    assert (row["error_type"], row["error_message"]) == (
        "UndefinedError",
        "'None' has no attribute 'lstrip'",
    )
    assert (row["prompt_sha256"], row["prompt_chars"]) == ("", 0)
    assert row["in_stored"] and row["in_wire"]


def test_kimi_keeps_tool_call_reasoning_across_the_new_user_turn() -> None:
    assert kept(KIMI, "tool1_user") == [True]
    assert kept(KIMI, "tool2_user") == [True, True]
    assert kept(KIMI, "tool2_open") == [True, True]


def test_kimi_drops_reasoning_up_to_and_including_a_plain_reply() -> None:
    assert kept(KIMI, "tool_plain_user") == [False, False]
    assert kept(KIMI, "tool_plain_tool_open") == [False, False, True]
    assert kept(KIMI, "plain_user", "n/a", "n/a") == [False]


def test_kimi_needs_loopcontrols() -> None:
    shape = build_shape("tool1_user", "reasoning_content", "null", "object")
    body = request_body(shape.messages, TOOLS)
    args = (shipped()[KIMI], body["messages"])
    with_ext = render(*args, tools=body["tools"])
    assert with_ext.ok and "ZQX-8842" in str(with_ext.prompt)
    without = render(*args, tools=body["tools"], loopcontrols=False)
    assert not without.ok
    assert without.error_type == "TemplateSyntaxError"
    assert "break" in without.error_message


def test_r2e_preserve_thinking_drops_tool_calls_altogether(records: list[Record]) -> None:
    def calls_shown(template: str) -> set[bool]:
        return {
            bool(r["tool_calls_rendered"])
            for r in records
            if r["template"] == template and r["has_tool_calls"] and r["rendered"]
        }

    assert calls_shown(R2E_PRESERVE) == {False}
    assert calls_shown(R2E_VARIANT) == {True}
    assert calls_shown(QWEN3) == {True}


# The class of each shipped template, derived by rendering the whole matrix.
EXPECTED: dict[str, tuple[str, tuple[str, ...], bool, set[str]]] = {
    # name: (visibility, dialects read, tool calls dropped, crash error types)
    QWEN3: ("after_last_user", ("reasoning_content",), False, {"TypeError", "UndefinedError"}),
    KIMI: ("until_plain_reply", ("reasoning_content",), False, set()),
    R2E_PRESERVE: ("always", ("reasoning_content",), True, set()),
    R2E_VARIANT: ("always", ("reasoning_content",), False, set()),
    R1_DISTILL: ("never", (), False, {"TypeError"}),
    V31: ("never", (), False, {"TypeError"}),
    GEMMA: ("never", (), True, set()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_shipped_template_has_its_class(name: str, classes: dict[str, TemplateClass]) -> None:
    visibility, read, dropped, crash_types = EXPECTED[name]
    got = classes[name]
    assert (got.visibility, got.dialects_read, got.tool_calls_dropped) == (
        visibility,
        read,
        dropped,
    )
    assert {c.error_type for c in got.crashes} == crash_types
    assert got.switch_effects == ()
    assert got.shapes_rendered + got.shapes_crashed == 100


def test_every_shipped_template_is_classed(classes: dict[str, TemplateClass]) -> None:
    assert set(classes) == set(shipped()) == set(EXPECTED)


def _crashed(records: Sequence[Record], template: str) -> set[tuple[str, str]]:
    return {
        (str(r["content_form"]), str(r["args_form"]))
        for r in records
        if r["template"] == template and not r["rendered"]
    }


def test_where_each_template_crashes(records: list[Record]) -> None:
    # Qwen3 concatenates content, so null content fails on every tool-call turn; with the
    # reasoning under another field it also tests `'</think>' in content`.
    assert _crashed(records, QWEN3) == {("null", "string"), ("null", "object")}
    # The DeepSeek templates concatenate arguments: an object fails, a string renders.
    assert _crashed(records, R1_DISTILL) == {("null", "object"), ("empty", "object")}
    assert _crashed(records, V31) == {("null", "object"), ("empty", "object")}


def test_the_whole_matrix_renders_quickly_and_completely(records: list[Record]) -> None:
    # 100 shapes, switch settings per template, one record per secret: nothing skipped.
    per_template = {name: sum(r["template"] == name for r in records) for name in shipped()}
    assert per_template[KIMI] == 180
    assert per_template[QWEN3] == 3 * 180  # enable_thinking: unset, true, false
