"""Every thinking switch, probed with values the template accepts (issue 32, item 13).

`traces classify` missed Seed-OSS's `thinking_budget` and Kimi-K3's `thinking_effort` (each
template defaults the name itself), and probed gpt-oss's string `reasoning_effort` and Kimi-K3's
list-valued `image_prompts` with true/false, reporting "unrenderable (template_error)". The
templates below are small imitations written by hand after those templates' switch handling
(not copies); each pins what the fix must give.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.traces.visibility.offline import classify_offline
from pipeline.traces.visibility.reads import Switch, template_reads
from pipeline.traces.visibility.render import render

_LAST_USER = (
    "{%- set ns = namespace(last_user=-1) -%}"
    "{%- for message in messages -%}{%- if message.role == 'user' -%}"
    "{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}"
)
_LAST_PLAIN = (
    "{%- set ns = namespace(last_plain=-1) -%}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' and not message.tool_calls -%}"
    "{%- set ns.last_plain = loop.index0 -%}{%- endif -%}{%- endfor -%}"
)
_CALLS = (
    "{%- for tc in message.tool_calls or [] -%}<tool_call>{{ tc.function.name }} "
    "{{ tc.function.arguments | tojson }}</tool_call>{%- endfor -%}"
)

# Seed-OSS: the template defaults `thinking_budget` to -1 (no limit) itself, says "no thinking"
# for 0 and a budget band for `<= 512`; budget 0 drops the stored reasoning too.
SEED_OSS_LIKE = (
    "{%- if thinking_budget is not defined -%}{%- set thinking_budget = -1 -%}{%- endif -%}"
    + _LAST_USER
    + "<seed:bos>system\n"
    "{%- if thinking_budget == 0 -%}Answer directly, without thinking."
    "{%- elif thinking_budget > 0 and thinking_budget <= 512 -%}Think briefly."
    "{%- elif thinking_budget > 512 -%}Think within {{ thinking_budget }} tokens.{%- endif -%}"
    "<seed:eos>{%- for message in messages -%}<seed:bos>{{ message.role }}\n"
    "{%- if message.role == 'assistant' and thinking_budget != 0 and message.reasoning_content"
    " and loop.index0 > ns.last_user -%}<seed:think>{{ message.reasoning_content }}</seed:think>"
    "{%- endif -%}{{ message.content or '' }}" + _CALLS + "<seed:eos>{%- endfor -%}"
    "{%- if add_generation_prompt -%}<seed:bos>assistant{%- endif -%}"
)

# Kimi-K3: `thinking_effort` defaults to 'medium' in the template and is tested against a list;
# 'low' drops the stored reasoning; `image_prompts` is a list the template iterates.
KIMI_K3_EFFORT_LIKE = (
    "{%- if thinking_effort is not defined -%}{%- set thinking_effort = 'medium' -%}{%- endif -%}"
    + _LAST_PLAIN
    + "<|im_system|>"
    "{%- if thinking_effort in ['low', 'high', 'max'] -%}effort: {{ thinking_effort }}"
    "{%- endif -%}"
    "{%- if image_prompts is defined and image_prompts -%}"
    "{%- for prompt in image_prompts -%}<|media|>{{ prompt }}{%- endfor -%}{%- endif -%}"
    "<|im_end|>{%- for message in messages -%}<|im_{{ message.role }}|>"
    "{%- if message.role == 'assistant' and thinking_effort != 'low' and message.tool_calls"
    " and loop.index0 > ns.last_plain and message.reasoning_content -%}"
    "<think>{{ message.reasoning_content }}</think>{%- endif -%}"
    "{{ message.content or '' }}" + _CALLS + "<|im_end|>{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>{%- endif -%}"
)

# gpt-oss: `reasoning_effort` is a string the system message concatenates, defaulted to
# 'medium' inside a macro and refused outside ['low', 'medium', 'high'].
GPT_OSS_EFFORT_LIKE = (
    "{%- macro system_message() -%}"
    "{%- if reasoning_effort is not defined -%}{%- set reasoning_effort = 'medium' -%}"
    "{%- endif -%}"
    "{%- if reasoning_effort not in ['low', 'medium', 'high'] -%}"
    "{{- raise_exception('reasoning_effort must be low, medium or high') -}}{%- endif -%}"
    "{{- '<|start|>system<|message|>Reasoning: ' + reasoning_effort + '<|end|>' -}}"
    "{%- endmacro -%}" + _LAST_USER + "{{- system_message() -}}{%- for message in messages -%}"
    "{%- if message.role == 'assistant' -%}"
    "{%- if message.thinking and loop.index0 > ns.last_user -%}"
    "<|start|>assistant<|channel|>analysis<|message|>{{ message.thinking }}<|end|>{%- endif -%}"
    "<|start|>assistant<|channel|>final<|message|>{{ message.content or '' }}" + _CALLS + "<|end|>"
    "{%- else -%}<|start|>{{ message.role }}<|message|>{{ message.content }}<|end|>"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)

# A budget the template refuses below 0: probing -1 must be "value not accepted", not a class.
BUDGET_REFUSES_NEGATIVE = (
    "{%- if thinking_budget is not defined -%}{%- set thinking_budget = 1024 -%}{%- endif -%}"
    "{%- if thinking_budget < 0 -%}"
    "{{- raise_exception('thinking_budget must be 0 or more') -}}{%- endif -%}"
    "{%- for message in messages -%}<{{ message.role }}>"
    "{%- if thinking_budget != 0 and message.reasoning_content -%}"
    "<think>{{ message.reasoning_content }}</think>{%- endif -%}"
    "{{ message.content or '' }}" + _CALLS + "{%- endfor -%}"
)

TEMPLATES = {
    "seed-oss-like": SEED_OSS_LIKE,
    "kimi-k3-effort-like": KIMI_K3_EFFORT_LIKE,
    "gpt-oss-effort-like": GPT_OSS_EFFORT_LIKE,
    "budget-refuses-negative": BUDGET_REFUSES_NEGATIVE,
}


def _switches(template: str) -> tuple[Switch, ...]:
    return template_reads(template).switches


def test_issue_32_a_name_the_template_defaults_itself_is_a_switch_probed_with_numbers() -> None:
    """Seed-OSS: `== 0`, `> 0`, `<= 512` and the default -1: probe 0, -1 and one above 512."""
    assert _switches(SEED_OSS_LIKE) == (Switch("thinking_budget", (-1, 0, 513)),)


def test_issue_32_list_members_and_the_default_are_a_strings_values_never_booleans() -> None:
    assert _switches(GPT_OSS_EFFORT_LIKE) == (
        Switch("reasoning_effort", ("high", "low", "medium")),
    )
    assert _switches(KIMI_K3_EFFORT_LIKE) == (
        Switch("image_prompts", ((), ("probe",))),  # iterated: a list, never true/false
        Switch("thinking_effort", ("high", "low", "max", "medium")),
    )


def test_issue_32_booleans_only_for_a_bare_if() -> None:
    assert _switches("{% if keep_cot %}a{% endif %}{{ messages }}") == (
        Switch("keep_cot", (True, False)),
    )
    defaulted = "{% if not x is defined %}{% set x = true %}{% endif %}{% if x %}{% endif %}"
    assert _switches(defaulted) == (Switch("x", (True, False)),)


def _classes() -> dict[str, dict[str, object]]:
    return {
        str(c["template"]): c
        for c in (x.as_json() for x in classify_offline(TEMPLATES, {}, render))
    }


def _per_setting(c: dict[str, object]) -> dict[str, object]:
    return {s["switches"]: s["class"] for s in c["per_switch_setting"]}  # type: ignore[attr-defined]


def test_issue_32_every_probed_value_renders_and_classes_per_value() -> None:
    classes = _classes()
    seed = classes["seed-oss-like"]
    assert seed["switches_read"] == ["thinking_budget"]
    assert _per_setting(seed) == {
        "(default)": "after_last_user",
        "thinking_budget=-1": "after_last_user",
        "thinking_budget=0": "never",
        "thinking_budget=513": "after_last_user",
    }
    oss = classes["gpt-oss-effort-like"]
    assert _per_setting(oss) == {
        "(default)": "after_last_user",
        **{f"reasoning_effort={v}": "after_last_user" for v in ("high", "low", "medium")},
    }
    kimi = classes["kimi-k3-effort-like"]
    assert kimi["switches_read"] == ["image_prompts", "thinking_effort"]
    kimi_settings = _per_setting(kimi)
    assert len(kimi_settings) == 3 * 5  # unset, [] and ["probe"] x unset and four efforts
    for label, cls in kimi_settings.items():
        assert cls == ("never" if "thinking_effort=low" in str(label) else "until_plain_reply")
    for c in classes.values():
        assert c["cannot_render"] == []
        assert all(s["class"] != "unrenderable" for s in c["per_switch_setting"])  # type: ignore[attr-defined]


def test_issue_32_a_value_the_template_refuses_is_listed_apart_never_a_class() -> None:
    c = _classes()["budget-refuses-negative"]
    assert _per_setting(c) == {
        "(default)": "always",
        "thinking_budget=0": "never",
        "thinking_budget=1": "always",
        "thinking_budget=1024": "always",
    }
    assert c["values_not_accepted"] == [
        {
            "switches": "thinking_budget=-1",
            "error": "RaisedByTemplate: thinking_budget must be 0 or more",
        }
    ]
    assert all(
        not c["values_not_accepted"]
        for n, c in _classes().items()
        if n != "budget-refuses-negative"
    )


def test_issue_32_traces_classify_prints_values_not_accepted_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "budget.jinja"
    path.write_text(BUDGET_REFUSES_NEGATIVE, encoding="utf-8")
    assert main(["traces", "classify", str(path)]) == 0
    out = capsys.readouterr().out
    settings = out.split("  class per switch setting:\n", 1)[1]
    assert "thinking_budget=-1" not in settings.split("  values not accepted:")[0]
    assert (
        "  values not accepted:\n"
        "    thinking_budget=-1: RaisedByTemplate: thinking_budget must be 0 or more"
    ) in out
    assert main(["traces", "classify", str(path), "--json"]) == 0
    [c] = json.loads(capsys.readouterr().out)
    assert [v["switches"] for v in c["values_not_accepted"]] == ["thinking_budget=-1"]
