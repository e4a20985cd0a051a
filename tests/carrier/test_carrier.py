from __future__ import annotations

import json
import sys

import pytest

from pipeline.carrier import carrier as carrier_module
from pipeline.carrier.arms import build_arms
from pipeline.carrier.carrier import (
    UNICODE_WHITESPACE,
    apply_carry_cap,
    carrier_from_reply,
    count_headings,
    strip_reply,
)
from pipeline.carrier.config import carrier_config
from pipeline.carrier.tokens import estimate_tokens
from pipeline.chat.messages import ChatResponse
from pipeline.config import load

from .scripted import text


@pytest.fixture(scope="module")
def arms() -> dict:
    return build_arms(carrier_config(load(["arms=[f,n,j,q,k,m,g,t]"]).study).arms)


def test_think_blocks_and_code_fences_are_stripped() -> None:
    reply = '<think>plan the summary</think>\n```json\n{"summary": "kept"}\n```'
    assert strip_reply(reply) == '{"summary": "kept"}'


def test_unclosed_think_block_leaves_nothing() -> None:
    assert strip_reply("<think>still thinking about port 41873") == ""


def test_j_carries_the_parsed_summary_field(arms: dict) -> None:
    out = carrier_from_reply(arms["j"], text(json.dumps({"summary": "port 41873"})))
    assert (out.carrier, out.usable, out.parse_failed) == ("port 41873", True, False)


def test_q_fields_are_rendered_under_five_headings(arms: dict) -> None:
    fields = {f.name: f"value {i}" for i, f in enumerate(arms["q"].fields)}
    out = carrier_from_reply(arms["q"], text(json.dumps(fields)))
    assert out.carrier.startswith("## Goal\nvalue 0\n\n## Progress\nvalue 1")
    assert count_headings(out.carrier, arms["q"].headings) == 5


def test_f_and_n_carry_the_raw_reply(arms: dict) -> None:
    raw = json.dumps({"title": "t", "summary": "port 41873"})
    assert carrier_from_reply(arms["f"], text(raw)).carrier == raw
    assert carrier_from_reply(arms["n"], text(raw)).carrier == raw


def test_g_parses_the_deployed_schema_and_carries_the_summary(arms: dict) -> None:
    raw = json.dumps({"title": "t", "summary": "port 41873"})
    assert carrier_from_reply(arms["g"], text(raw)).carrier == "port 41873"


def test_parse_failure_fails_safe_to_raw_text_and_is_counted(arms: dict) -> None:
    out = carrier_from_reply(arms["j"], text('{"summary": "cut off at port 418'))
    assert out.usable and out.parse_failed
    assert out.carrier == '{"summary": "cut off at port 418'


def test_raw_newline_inside_a_json_string_is_a_parse_failure(arms: dict) -> None:
    out = carrier_from_reply(arms["j"], text('{"summary": "line one\nline two"}'))
    assert out.parse_failed


def test_missing_required_field_is_a_parse_failure(arms: dict) -> None:
    out = carrier_from_reply(arms["q"], text(json.dumps({"goal": "x"})))
    assert out.parse_failed


def test_empty_reply_is_not_usable(arms: dict) -> None:
    out = carrier_from_reply(arms["m"], text("   "))
    assert not out.usable and not out.parse_failed


def test_refusal_is_not_usable(arms: dict) -> None:
    response = ChatResponse(text="", finish_reason="stop", refusal="I can't help with that")
    out = carrier_from_reply(arms["m"], response)
    assert not out.usable and out.refused


def test_adapted_schema_fields_are_clipped_to_their_ceiling(arms: dict) -> None:
    long = "x" * 6000
    response = ChatResponse(
        text=json.dumps({"summary": long}), finish_reason="stop", schema_adapted=True
    )
    assert len(carrier_from_reply(arms["t"], response).carrier) == 4800


def test_carry_cap_clips_to_the_cap_and_says_so() -> None:
    carrier = "word " * 4000
    clipped, was_clipped = apply_carry_cap(carrier, 500)
    assert was_clipped and estimate_tokens(clipped) <= 500
    assert estimate_tokens(clipped + carrier[len(clipped) : len(clipped) + 8]) > 500


def test_carry_cap_leaves_short_carriers_alone() -> None:
    assert apply_carry_cap("short", 2400) == ("short", False)


def test_heading_count_accepts_markdown_variants() -> None:
    carrier = "## Goal\nx\n**Progress**\ny\nKey facts:\nz\n# open questions\n"
    headings = ("Goal", "Progress", "Key facts", "Open questions", "Next steps")
    assert count_headings(carrier, headings) == 4


def test_the_whitespace_set_is_every_character_str_strip_removes() -> None:
    every = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert set(UNICODE_WHITESPACE) == set(every)


@pytest.mark.parametrize(
    "line",
    [" ## **Open questions:** ", "\u3000#\u00a0_Goal_\t:", "#  # x #", "__", "", "*\u2028*a"],
)
def test_one_strip_with_markup_equals_alternating_the_two_strips(line: str) -> None:
    def alternating(text: str) -> str:
        while True:
            bare = text.strip().strip("#*_:")
            if bare == text:
                return bare
            text = bare

    assert carrier_module._bare(line) == alternating(line)
