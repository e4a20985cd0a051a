"""What a template reads: the switches (template kwargs) it tests, and the message fields it reads.

Read from the template's Jinja syntax tree, not by substring, so `message.thinking` (a field,
gpt-oss) and a bare `thinking` (a kwarg, DeepSeek-V3.1, Kimi-K3) are told apart. Decisions
(docs/traces.md, "Reasoning traces: thinking switches"):

- A *switch* is a name the template reads from its context (Jinja's undeclared variables, so a
  `{% set %}` local is not one) that is a known thinking switch (`KNOWN_SWITCHES`), or a name
  the template defaults itself (`{% if x is not defined %}{% set x = ... %}`: Seed-OSS
  `thinking_budget`, Kimi-K3 `thinking_effort`; issue 32), or appears in the test of an
  `{% if %}` (or an inline `x if c else y`) and is never assigned in the template (a
  `{% set %}` inside a loop is not undeclared to Jinja's analysis, but it is the template's
  own variable), minus the names every caller passes or the contract provides
  (`CONTEXT_NAMES`). A known switch counts even when the template also sets it (DeepSeek-V3.1
  sets `thinking` from `enable_thinking` when `thinking` is not passed).
- A switch's values come from the template's own use of it (`switch_values`: the numbers it is
  compared with, the members of a list it is tested against, the strings it is compared with,
  the default it sets, a list when it is iterated; true and false only for a bare `if x` or
  when nothing else shows a type); every switch may also be left unset (a template tests
  `is defined`, so unset is not the same as false).
- Settings: every combination of the switches' values (unset included) while that is at most
  `MAX_SETTINGS`; past it, the default plus one switch at a time (each value, the rest unset),
  so a template with many switches costs a few dozen renders, not thousands.
- A *reasoning field* is a message field the template reads (`message.X`, `message['X']`,
  `message.get('X')`, on any loop variable) whose name looks like reasoning (`REASONING_NAME`).
- A template that does not parse reads nothing by this route; its renders then record the
  syntax error, and the known switch names found as words still count (`_fallback`).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import jinja2
from jinja2 import nodes

from pipeline.traces.visibility.switch_values import SwitchValue, self_defaults, values_of

KNOWN_SWITCHES = (
    "enable_thinking",
    "preserve_thinking",
    "thinking",
    "clear_thinking",
    "reasoning_effort",
    "keep_cot",
)
CONTEXT_NAMES = frozenset(
    {
        "messages",
        "tools",
        "add_generation_prompt",
        "bos_token",
        "eos_token",
        "pad_token",
        "unk_token",
        "raise_exception",
        "strftime_now",
        "range",
        "dict",
        "lipsum",
        "cycler",
        "joiner",
        "namespace",
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "loop",
    }
)
REASONING_NAME = re.compile(r"reason|think|thought|cot|scratch", re.IGNORECASE)
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
MAX_SETTINGS = 27

Setting = dict[str, SwitchValue]


@dataclass(frozen=True)
class Switch:
    """A kwarg the template tests, and the values worth passing (unset is always tried)."""

    name: str
    values: tuple[SwitchValue, ...]


@dataclass(frozen=True)
class TemplateReads:
    switches: tuple[Switch, ...]
    reasoning_fields: tuple[str, ...]
    message_fields: tuple[str, ...]
    parsed: bool


def _walk(node: nodes.Node) -> Iterator[nodes.Node]:
    yield node
    for child in node.iter_child_nodes():
        yield from _walk(child)


def _names(node: nodes.Node) -> set[str]:
    return {n.name for n in _walk(node) if isinstance(n, nodes.Name) and n.ctx == "load"}


def _tested(tree: nodes.Template) -> set[str]:
    found: set[str] = set()
    for node in _walk(tree):
        if isinstance(node, nodes.If | nodes.CondExpr) and node.test is not None:
            found |= _names(node.test)
    return found


def _assigned(tree: nodes.Template) -> set[str]:
    found = {
        n.name for n in _walk(tree) if isinstance(n, nodes.Name) and n.ctx in ("store", "param")
    }
    found |= {m.name for m in _walk(tree) if isinstance(m, nodes.Macro)}
    return found


def _fields(tree: nodes.Template) -> set[str]:
    found: set[str] = set()
    for node in _walk(tree):
        if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):
            found.add(node.attr)
        elif (
            isinstance(node, nodes.Getitem)
            and isinstance(node.node, nodes.Name)
            and isinstance(node.arg, nodes.Const)
            and isinstance(node.arg.value, str)
        ):
            found.add(node.arg.value)
        elif (
            isinstance(node, nodes.Call)
            and isinstance(node.node, nodes.Getattr)
            and node.node.attr == "get"
            and node.args
            and isinstance(node.args[0], nodes.Const)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def _fallback(template: str) -> TemplateReads:
    names = [s for s in KNOWN_SWITCHES if re.search(rf"(?<![.\w'\"]){s}\b", template)]
    return TemplateReads(tuple(Switch(n, (True, False)) for n in names), (), (), parsed=False)


@functools.lru_cache(maxsize=128)
def template_reads(template: str) -> TemplateReads:
    """The switches and fields `template` reads (see the module docstring)."""
    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    try:
        tree = env.parse(template)  # parsing evaluates nothing
    except (jinja2.TemplateSyntaxError, RecursionError):
        return _fallback(template)
    assigned = _assigned(tree)
    loaded = _names(tree) - CONTEXT_NAMES
    defaults = self_defaults(tree)
    names = sorted(
        n
        for n in loaded
        if n in KNOWN_SWITCHES or n in defaults or (n in _tested(tree) and n not in assigned)
    )
    switches = tuple(Switch(n, values_of(tree, n, defaults.get(n))) for n in names)
    fields = _fields(tree)
    return TemplateReads(
        switches=switches,
        reasoning_fields=tuple(sorted(f for f in fields if REASONING_NAME.search(f))),
        message_fields=tuple(
            sorted(f for f in fields if f in MESSAGE_KEYS or REASONING_NAME.search(f))
        ),
        parsed=True,
    )


def reads_messages(template: str) -> bool:
    """Whether `template` reads `messages`, as every chat template does (issue 32: a README
    classed `never`). A text that does not parse counts when it names `messages` at all, so a
    broken template is still classed (its renders record the syntax error)."""
    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    try:
        tree = env.parse(template)
    except (jinja2.TemplateSyntaxError, RecursionError):
        return re.search(r"\bmessages\b", template) is not None
    return "messages" in _names(tree)


def switch_settings(template: str) -> tuple[Setting, ...]:
    """The settings to render (see the module docstring); the first is `{}`, the default."""
    return settings_of(template_reads(template).switches)


def settings_of(switches: Sequence[Switch]) -> tuple[Setting, ...]:
    choices = [(None, *s.values) for s in switches]
    total = 1
    for c in choices:
        total *= len(c)
    settings: list[Setting] = []
    if total <= MAX_SETTINGS:
        for values in itertools.product(*choices):
            settings.append({s.name: v for s, v in zip(switches, values, strict=True)
                             if v is not None})  # fmt: skip
        return tuple(settings)
    settings.append({})
    for switch in switches:
        settings += [{switch.name: value} for value in switch.values]
    return tuple(settings)


def setting_label(setting: Setting) -> str:
    """`name=value` joined by `,` in name order; `""` for the default (nothing passed)."""
    return ",".join(f"{k}={_text(setting[k])}" for k in sorted(setting))


def _text(value: SwitchValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return json.dumps(list(value))  # a list switch: `image_prompts=["probe"]`
    return str(value)
