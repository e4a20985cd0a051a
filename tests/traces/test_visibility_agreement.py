"""Records of a second renderer pair with the offline ones; disagreements are found."""

from __future__ import annotations

from pipeline.traces.visibility.agreement import disagreements, prompt_agreement
from pipeline.traces.visibility.render import Rendered, render
from pipeline.traces.visibility.shapes import build_shape
from pipeline.traces.visibility.visibility import Record, probe, records_for, shape_body
from tests.traces.templates import QWEN3, shipped


def _live(shape_name_parts: tuple[str, str, str, str], prompt: Rendered) -> list[Record]:
    shape = build_shape(*shape_name_parts)
    return records_for(
        QWEN3,
        shipped()[QWEN3],
        shape,
        switches={},
        body=shape_body(shape),
        outcome=prompt,
        renderer="llama.cpp",
    )


def test_a_live_render_that_keeps_what_offline_drops_is_a_disagreement() -> None:
    parts = ("tool1_user", "reasoning_content", "empty", "string")
    offline = probe(QWEN3, shipped()[QWEN3], build_shape(*parts))
    live = _live(parts, Rendered("...scratchpad token ZQX-8842..."))
    assert live[0]["renderer"] == "llama.cpp" and live[0]["in_rendered"]
    (row,) = disagreements(offline + live)
    assert (row["shape"], row["secret"], row["renderer"]) == (
        offline[0]["shape"],
        "ZQX-8842",
        "llama.cpp",
    )
    assert (row["baseline_in_rendered"], row["in_rendered"]) == (False, True)
    assert prompt_agreement(offline + live) == [
        {"renderer": "llama.cpp", "template": QWEN3, "renders": 1, "identical": 0}
    ]


def test_the_same_prompt_agrees_and_a_live_crash_where_offline_rendered_does_not() -> None:
    parts = ("tool1_open", "reasoning_content", "empty", "string")
    shape = build_shape(*parts)
    offline = probe(QWEN3, shipped()[QWEN3], shape)
    body = shape_body(shape)
    same = render(shipped()[QWEN3], body["messages"], tools=body["tools"])
    assert disagreements(offline + _live(parts, same)) == []
    assert prompt_agreement(offline + _live(parts, same))[0]["identical"] == 1
    crashed = _live(parts, Rendered(None, "HTTP400", "template error"))
    (row,) = disagreements(offline + crashed)
    assert (row["baseline_rendered"], row["rendered"], row["error"]) == (True, False, "HTTP400")
