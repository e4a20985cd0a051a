"""The corpus description: size bands, tool-output share, and the near-no-op flag."""

from __future__ import annotations

import pytest

from pipeline.toolout.corpus import describe, describe_by_corpus
from pipeline.toolout.transcript import Message, ToolCall, Transcript


def _transcript(*outputs: int, corpus: str = "jsonl", name: str = "t") -> Transcript:
    messages: list[Message] = [Message(role="user", content="u" * 100)]
    for i, size in enumerate(outputs):
        call = ToolCall(id=f"c{i}", name="bash", arguments="x" * 10)
        messages.append(Message(role="assistant", content=None, tool_calls=(call,)))
        messages.append(Message(role="tool", content="o" * size, tool_call_id=call.id, name="bash"))
    return Transcript(
        id=f"{corpus}/{name}", corpus=corpus, source=f"{name}.jsonl", messages=tuple(messages)
    )


def test_outputs_fall_into_half_open_bands_at_the_edges() -> None:
    d = describe([_transcript(1_999, 2_000, 9_999, 10_000, 99_999, 100_000)])
    assert [(b.label, b.outputs) for b in d.bands] == [
        ("<2,000 B", 1),
        ("2,000–10,000 B", 2),
        ("10,000–100,000 B", 2),
        ("≥100,000 B", 1),
    ]
    assert d.bands[0].bytes == 1_999
    assert (d.transcripts, d.requests, d.tool_outputs) == (1, 6, 6)


def test_the_tool_output_share_counts_content_and_call_arguments() -> None:
    d = describe([_transcript(890)])
    assert d.message_bytes == 100 + 10 + 890
    assert d.tool_output_share == pytest.approx(0.89)


def test_near_no_op_means_under_five_percent_of_outputs_reach_2000_bytes() -> None:
    assert describe([_transcript(*([100] * 20), 2_000)]).near_no_op is True  # 1 of 21: 4.8%
    assert describe([_transcript(*([100] * 19), 2_000)]).near_no_op is False  # 1 of 20: 5%
    assert describe([_transcript(*([100] * 20))]).near_no_op is True
    assert describe([]).near_no_op is True


def test_band_edges_are_configurable_and_checked() -> None:
    d = describe([_transcript(500, 1_500)], band_edges=(1_000,))
    assert [(b.label, b.outputs) for b in d.bands] == [("<1,000 B", 1), ("≥1,000 B", 1)]
    with pytest.raises(ValueError, match="strictly increasing"):
        describe([], band_edges=(10_000, 2_000))


def test_summary_is_one_line_and_says_near_no_op_only_where_true() -> None:
    quiet = describe([_transcript(100, corpus="tau-bench")])
    busy = describe([_transcript(50_000, corpus="swe-agent")])
    assert "\n" not in quiet.summary()
    assert quiet.summary().startswith("tau-bench: 1 transcripts, 1 requests, 1 tool outputs")
    assert "near no-op" in quiet.summary()
    assert "near no-op" not in busy.summary()


def test_describe_by_corpus_groups_by_corpus_name() -> None:
    both = describe_by_corpus([_transcript(10, corpus="b"), _transcript(10, corpus="a")])
    assert list(both) == ["a", "b"]
    assert both["a"].corpora == ("a",)
