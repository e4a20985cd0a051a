"""The classification rules, on templates written to obey (or break) each one."""

from __future__ import annotations

from pipeline.traces.visibility.classify import as_rows, classify, visibility_of
from pipeline.traces.visibility.visibility import Record, column_names, matrix

SHOW_ALL = (
    "{% for m in messages %}{{ m.reasoning_content or '' }}{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}{{ c.function.arguments }}{% endfor %}{% endfor %}"
)
SHOW_NONE = "{% for m in messages %}{{ m.content or '' }}{% endfor %}"
ONLY_SECOND_MESSAGE = (
    "{% for m in messages %}{% if loop.index0 == 1 %}{{ m.reasoning_content }}{% endif %}"
    "{{ m.content or '' }}{% endfor %}"
)
ONLY_WHEN_PRESERVED = (
    "{% for m in messages %}{% if preserve_thinking %}{{ m.reasoning_content or '' }}{% endif %}"
    "{{ m.content or '' }}{% endfor %}"
)
ALWAYS_RAISES = "{{ raise_exception('roles must alternate') }}"


def _position(tool: bool, user_after: bool, plain_after: bool, kept: bool) -> Record:
    return {
        "secret_on_tool_call_turn": tool,
        "secret_user_after": user_after,
        "secret_plain_reply_after": plain_after,
        "in_rendered": kept,
    }


def test_a_tool_turn_before_a_user_turn_separates_the_two_middle_rules() -> None:
    open_loop = _position(True, False, False, True)
    plain_before_user = _position(False, True, False, False)
    assert visibility_of([open_loop, plain_before_user, _position(True, True, False, False)]) == (
        "after_last_user"
    )
    assert visibility_of([open_loop, plain_before_user, _position(True, True, False, True)]) == (
        "until_plain_reply"
    )


def test_a_plain_reply_inside_the_open_loop_separates_them_too() -> None:
    before_plain = _position(True, False, True, True)
    the_plain = _position(False, False, False, True)
    assert visibility_of([before_plain, the_plain]) == "always"
    assert visibility_of([before_plain, the_plain, _position(True, True, False, False)]) == (
        "after_last_user"
    )
    assert visibility_of([_position(True, False, True, False), the_plain]) == "irregular"


def test_never_always_and_irregular_on_rendered_templates() -> None:
    classes = classify(matrix({"all": SHOW_ALL, "none": SHOW_NONE, "second": ONLY_SECOND_MESSAGE}))
    assert classes["all"].visibility == "always"
    assert classes["all"].dialects_read == ("reasoning_content",)
    assert not classes["all"].tool_calls_dropped
    assert classes["none"].visibility == "never"
    assert classes["none"].dialects_read == ()
    assert classes["none"].tool_calls_dropped
    assert classes["second"].visibility == "irregular"


def test_a_template_that_always_raises_is_unrenderable_with_every_crash_recorded() -> None:
    (cls,) = classify(matrix({"raises": ALWAYS_RAISES})).values()
    assert cls.visibility == "unrenderable"
    assert (cls.shapes_rendered, cls.shapes_crashed) == (0, 100)
    assert {(c.error_type, c.error_message) for c in cls.crashes} == {
        ("RaisedByTemplate", "roles must alternate")
    }
    assert not cls.tool_calls_dropped


def test_a_switch_that_changes_survival_is_named_and_the_default_is_the_class() -> None:
    records = matrix({"switch": ONLY_WHEN_PRESERVED})
    assert {r["preserve_thinking"] for r in records} == {"unset", "true", "false"}
    (cls,) = classify(records).values()
    assert cls.visibility == "never"
    assert cls.switch_effects == ("preserve_thinking",)
    assert classify(matrix({"no switch": SHOW_ALL}))["no switch"].switch_effects == ()


def test_records_are_flat_scalars_with_the_documented_columns() -> None:
    records = matrix({"all": SHOW_ALL})
    assert all(tuple(r) == column_names() for r in records)
    assert all(isinstance(v, str | int | bool) for r in records for v in r.values())
    rows = as_rows(classify(records))
    assert rows == [
        {
            "template": "all",
            "visibility": "always",
            "dialects_read": "reasoning_content",
            "tool_calls_dropped": False,
            "switch_effects": "",
            "shapes_rendered": 100,
            "shapes_crashed": 0,
            "unrenderable_reason": "",
            "switches_read": "",
            "crash_errors": "",
        }
    ]


def test_every_record_column_is_documented_in_the_module_docstring() -> None:
    from pipeline.traces.visibility import visibility

    doc = visibility.__doc__ or ""
    assert [c for c in column_names() if f"`{c}`" not in doc] == []
