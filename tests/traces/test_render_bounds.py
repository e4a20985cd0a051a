"""Issue 21 defect 1: a template that recurses, loops or grows without bound is `unrenderable`
with a reason, in-process (recursion, output size) and in the sandbox (time, memory)."""

from __future__ import annotations

import time

import pytest

from pipeline.traces.visibility import classify, matrix
from pipeline.traces.visibility.render import MAX_OUTPUT_CHARS, limit_of, render
from pipeline.traces.visibility.sandbox import RenderSandbox
from pipeline.traces.visibility.shapes import all_shapes

USER = [{"role": "user", "content": "hi"}]
RECURSIVE = "{% macro walk(m) %}{{ walk(m) }}{% endmacro %}{{ walk(messages) }}"
HUGE = "{{ 'a' * 10**10 }}"
LOOP_1E9 = "{% for i in range(10**9) %}x{% endfor %}"
NESTED = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
WIDE = (
    "{% for i in range(100000) %}{% for j in range(100) %}{{ 'abcdefghij' * 3 }}"
    "{% endfor %}{% endfor %}"
)


def test_a_recursive_macro_is_a_recorded_recursion_error_not_a_crash() -> None:
    out = render(RECURSIVE, USER)
    assert (out.ok, out.error_type, limit_of(out.error_type)) == (
        False,
        "RecursionError",
        "recursion",
    )


def test_a_ten_gigabyte_repetition_is_refused_before_it_allocates() -> None:
    started = time.monotonic()
    out = render(HUGE, USER)
    assert (out.error_type, limit_of(out.error_type)) == ("OutputTooLarge", "output_size")
    assert time.monotonic() - started < 1


def test_a_loop_of_a_billion_is_refused_by_the_sandbox_range_bound() -> None:
    out = render(LOOP_1E9, USER)
    assert not out.ok and out.error_type == "OverflowError" and "MAX_RANGE" in out.error_message


def test_output_past_the_cap_stops_the_render() -> None:
    out = render(WIDE, USER)
    assert out.error_type == "OutputTooLarge" and str(MAX_OUTPUT_CHARS) in out.error_message


def test_small_repetitions_and_powers_still_render() -> None:
    assert render("{{ 'ab' * 3 }}{{ [0] * 2 }}{{ 2 ** 10 }}", USER).prompt == "ababab[0, 0]1024"


def test_the_sandbox_times_out_two_nested_range_loops_then_stops_trying() -> None:
    with RenderSandbox(seconds=0.5) as sandbox:
        started = time.monotonic()
        first = sandbox(NESTED, USER)
        second = sandbox(NESTED, USER)
        third = sandbox(NESTED, USER)
        elapsed = time.monotonic() - started
        after = sandbox("{{ messages[0].content }}", USER)
    assert [first.error_type, second.error_type, third.error_type] == ["RenderTimeout"] * 3
    assert limit_of(first.error_type) == "time"
    assert "not attempted" in third.error_message
    assert elapsed < 5
    assert after.prompt == "hi"  # a fresh child renders the next template


def test_the_sandbox_answers_like_the_in_process_renderer() -> None:
    with RenderSandbox() as sandbox:
        assert sandbox(RECURSIVE, USER).error_type == "RecursionError"
        assert sandbox(HUGE, USER).error_type == "OutputTooLarge"
        ok = sandbox("{{ x }}{{ messages[0].content }}", USER, extra={"x": True})
    assert ok.prompt == "Truehi"


def test_the_sandbox_memory_limit_is_a_recorded_memory_error() -> None:
    grow = (
        "{% set xs = [] %}{% for i in range(100000) %}"
        "{% set _ = xs.append('y' * 1000000) %}{% endfor %}"
    )
    with RenderSandbox(memory_bytes=300 << 20, seconds=10) as sandbox:
        out = sandbox(grow, USER)
    # the immutable sandbox refuses `append`; either way nothing crashes the caller
    assert not out.ok and out.error_type in {"SecurityError", "MemoryError"}


@pytest.mark.parametrize(
    ("template", "reason"),
    [(RECURSIVE, "recursion"), (HUGE, "output_size"), (NESTED, "time")],
)
def test_a_bounded_template_is_unrenderable_with_its_reason_and_the_rest_of_the_matrix_intact(
    template: str, reason: str
) -> None:
    shapes = all_shapes()[:6]
    good = "{% for m in messages %}{{ m.content }}{{ m.reasoning_content }}{% endfor %}"
    with RenderSandbox(seconds=0.3) as sandbox:
        records = matrix({"bad": template, "good": good}, shapes, renderer=sandbox)
    classes = classify(records)
    assert (classes["bad"].visibility, classes["bad"].unrenderable_reason) == (
        "unrenderable",
        reason,
    )
    assert classes["good"].visibility != "unrenderable"
    assert {r["render_limit"] for r in records if r["template"] == "bad"} == {reason}
