"""The offline renderer keeps the Hugging Face contract, and a raising template is an outcome."""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.traces.visibility.render import FIXED_NOW, render, tojson

USER = [{"role": "user", "content": "hi"}]


def test_tojson_does_not_html_escape_or_sort_keys() -> None:
    tools = [{"z": "a<b & c>d", "a": "it's"}]
    out = render("{{ tools[0] | tojson }}", USER, tools=tools)
    assert out.prompt == '{"z": "a<b & c>d", "a": "it\'s"}'


def test_tojson_indent_and_non_ascii_pass_through() -> None:
    out = render("{{ {'k': 'é'} | tojson(indent=2) }}", USER)
    assert out.prompt == '{\n  "k": "é"\n}'
    assert tojson({"b": 1, "a": 2}) == '{"b": 1, "a": 2}'


def test_trim_blocks_and_lstrip_blocks_remove_block_whitespace() -> None:
    template = "A\n    {% if true %}\nB\n    {% endif %}\nC"
    assert render(template, USER).prompt == "A\nB\nC"


def test_loopcontrols_break_works_and_is_a_recorded_syntax_error_without_it() -> None:
    template = "{% for m in [1, 2, 3] %}{{ m }}{% if m == 2 %}{% break %}{% endif %}{% endfor %}"
    assert render(template, USER).prompt == "12"
    without = render(template, USER, loopcontrols=False)
    assert without.prompt is None
    assert without.error_type == "TemplateSyntaxError"
    assert "break" in without.error_message


def test_raise_exception_is_recorded_with_its_message() -> None:
    out = render("{{ raise_exception('only user and assistant roles\nsecond line') }}", USER)
    assert not out.ok
    assert out.error_type == "RaisedByTemplate"
    assert out.error_message == "only user and assistant roles"


def test_a_type_error_in_the_template_is_recorded_not_raised() -> None:
    out = render("{{ 'x' + messages[0].content }}", [{"role": "assistant", "content": None}])
    assert (out.prompt, out.error_type) == (None, "TypeError")


def test_strftime_now_reads_the_clock_passed_in() -> None:
    assert render("{{ strftime_now('%Y-%m-%d') }}", USER).prompt == FIXED_NOW.strftime("%Y-%m-%d")
    other = datetime(2030, 5, 6, tzinfo=UTC)
    assert render("{{ strftime_now('%d %b %Y') }}", USER, now=other).prompt == "06 May 2030"


def test_switches_are_undefined_unless_passed() -> None:
    template = "{% if enable_thinking is defined %}{{ enable_thinking }}{% else %}unset{% endif %}"
    assert render(template, USER).prompt == "unset"
    assert render(template, USER, extra={"enable_thinking": False}).prompt == "False"


def test_undefined_names_render_empty_and_generation_prompt_is_passed() -> None:
    template = "[{{ bos_token }}]{% if add_generation_prompt %}go{% endif %}"
    assert render(template, USER).prompt == "[]go"
    assert render(template, USER, add_generation_prompt=False).prompt == "[]"


def test_the_sandbox_refuses_mutation_and_records_it() -> None:
    out = render("{{ messages.append(1) }}", USER)
    assert out.error_type == "SecurityError"
