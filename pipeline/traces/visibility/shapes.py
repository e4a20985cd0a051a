"""The conversation-shape matrix: stored conversations with secrets planted in their reasoning.

A shape is one stored conversation (OpenAI chat form) in which every assistant turn carries a
reasoning string holding a unique secret token (`ZQX-8842`, ...) under one field dialect. The
question that asks the model to recite the tokens is the last message: inside the last tool
result (the tool loop still open) or as a new user turn.

Axes (seed 002 and issue 12), combined as a product where an axis applies:
- structure (`STRUCTURES`): reasoning on a plain assistant turn then a user turn (the seed's
  first probe); on tool-call turns with 1 and 2 tool rounds, the question inside the tool result
  (the seed's second and third probes) or as a new user turn; a plain reply between tool loop
  and question, and a plain reply inside the loop (does a plain reply reset what is kept?);
- dialect: the field the reasoning travels under (`DIALECTS`: the three the seed's harness
  writes, and `thinking`, the field gpt-oss's template reads; `all_shapes(dialects)` adds any
  other reasoning field a template reads, see `reads.template_reads`);
- content of tool-call turns: `null` or `""` (plain turns always have text);
- tool-call arguments: a JSON string (the OpenAI wire form) or an object (what HF users pass).
Template switches are the render-time axis: `reads.switch_settings` lists the settings for
each switch a template tests (`SWITCHES` are the two with their own record columns).

Decisions: every shape starts with the same first user turn and has no system message; each
tool call's arguments carry their own token (`ECHO-100n`) so a template that drops tool calls
is seen in the prompt; a secret's position (tool-call turn? user turn after it? plain reply
after it?) is computed from the messages, never declared by hand.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.traces.visibility.switch_values import SwitchValue

DIALECTS = ("reasoning_content", "reasoning", "reasoning_text", "thinking")
CONTENT_FORMS = ("null", "empty")
ARGS_FORMS = ("string", "object")
SWITCHES = ("enable_thinking", "preserve_thinking")

SECRET_TOKENS = ("ZQX-8842", "KPL-3107", "MVR-5529")
FIRST_USER = "Use the echo tool when you need it, then answer my question."
QUESTION = "Which scratchpad tokens did your earlier reasoning contain? List every one."
PLAIN_REPLY = "I do not know it yet."
TOOL_DONE = "echo done"
TOOLS: tuple[Mapping[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo the text back.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    },
)

# Steps after the first user turn: "P" plain assistant turn with reasoning, "C" tool-call turn
# with reasoning, "T" tool result, "Q" the question (a tool result if the step before is a
# tool-call turn, else a user turn). Each P and C plants the next secret.
STRUCTURES: Mapping[str, str] = {
    "plain_user": "PQ",
    "tool1_open": "CQ",
    "tool2_open": "CTCQ",
    "tool1_user": "CTQ",
    "tool2_user": "CTCTQ",
    "tool_plain_user": "CTPQ",
    "tool_plain_tool_open": "CTPCQ",
}


@dataclass(frozen=True)
class Secret:
    """A planted token, where it lives, and what follows it in the conversation."""

    token: str
    message_index: int
    field: str
    on_tool_call_turn: bool
    user_after: bool
    plain_reply_after: bool


@dataclass(frozen=True)
class Shape:
    """One stored conversation of the matrix; `messages` must not be mutated."""

    name: str
    structure: str
    dialect: str
    content_form: str  # "null" | "empty" | "n/a" (no tool-call turn)
    args_form: str  # "string" | "object" | "n/a"
    question_in: str  # "tool_result" | "user_turn"
    messages: tuple[dict[str, Any], ...]
    secrets: tuple[Secret, ...]
    tool_arg_tokens: tuple[str, ...]

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_arg_tokens)


def _tool_call(number: int, args_form: str) -> tuple[dict[str, Any], str]:
    token = f"ECHO-{1000 + number}"
    arguments = {"text": f"note {token}"}
    wire_args: Any = json.dumps(arguments) if args_form == "string" else arguments
    call = {
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": "echo", "arguments": wire_args},
    }
    return call, token


def _messages(
    steps: str, dialect: str, content_form: str, args_form: str
) -> tuple[list[dict[str, Any]], list[str]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": FIRST_USER}]
    arg_tokens: list[str] = []
    secrets = iter(SECRET_TOKENS)
    for step in steps:
        last = messages[-1]
        if step == "P":
            reasoning = f"scratchpad token {next(secrets)}"
            messages.append({"role": "assistant", "content": PLAIN_REPLY, dialect: reasoning})
        elif step == "C":
            call, token = _tool_call(len(arg_tokens) + 1, args_form)
            arg_tokens.append(token)
            reasoning = f"scratchpad token {next(secrets)}"
            content = None if content_form == "null" else ""
            messages.append(
                {"role": "assistant", "content": content, dialect: reasoning, "tool_calls": [call]}
            )
        elif step in "TQ" and last.get("tool_calls"):
            text = TOOL_DONE if step == "T" else f"{TOOL_DONE}\n{QUESTION}"
            call_id = last["tool_calls"][0]["id"]
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        elif step == "Q":
            messages.append({"role": "user", "content": QUESTION})
        else:
            raise ValueError(f"structure step {step!r} has no tool call before it")
    return messages, arg_tokens


def _secrets(messages: Sequence[Mapping[str, Any]], dialect: str) -> tuple[Secret, ...]:
    found = []
    for index, message in enumerate(messages):
        reasoning = message.get(dialect)
        if message["role"] != "assistant" or not isinstance(reasoning, str):
            continue
        later = messages[index + 1 :]
        found.append(
            Secret(
                token=reasoning.rsplit(" ", 1)[-1],
                message_index=index,
                field=dialect,
                on_tool_call_turn=bool(message.get("tool_calls")),
                user_after=any(m["role"] == "user" for m in later),
                plain_reply_after=any(
                    m["role"] == "assistant" and not m.get("tool_calls") for m in later
                ),
            )
        )
    return tuple(found)


def build_shape(structure: str, dialect: str, content_form: str, args_form: str) -> Shape:
    """One shape; `content_form`/`args_form` are "n/a" for a structure with no tool call."""
    steps = STRUCTURES[structure]
    messages, arg_tokens = _messages(steps, dialect, content_form, args_form)
    parts = [structure, dialect]
    if "C" in steps:
        parts += [f"content={content_form}", f"args={args_form}"]
    return Shape(
        name="/".join(parts),
        structure=structure,
        dialect=dialect,
        content_form=content_form,
        args_form=args_form,
        question_in="tool_result" if messages[-1]["role"] == "tool" else "user_turn",
        messages=tuple(messages),
        secrets=_secrets(messages, dialect),
        tool_arg_tokens=tuple(arg_tokens),
    )


def all_shapes(dialects: Sequence[str] = DIALECTS) -> tuple[Shape, ...]:
    """The whole matrix, in a fixed order (structure, dialect, content, arguments)."""
    shapes = []
    for structure, steps in STRUCTURES.items():
        has_calls = "C" in steps
        contents = CONTENT_FORMS if has_calls else ("n/a",)
        args = ARGS_FORMS if has_calls else ("n/a",)
        for dialect, content_form, args_form in itertools.product(dialects, contents, args):
            shapes.append(build_shape(structure, dialect, content_form, args_form))
    return tuple(shapes)


def planted_dialects(templates: Iterable[str]) -> tuple[str, ...]:
    """`DIALECTS` plus every other reasoning field any of `templates` reads, in that order."""
    from pipeline.traces.visibility.reads import template_reads

    extra = sorted(
        {f for t in templates for f in template_reads(t).reasoning_fields} - set(DIALECTS)
    )
    return (*DIALECTS, *extra)


def switch_settings(template: str) -> tuple[dict[str, SwitchValue], ...]:
    """Every setting of the switches the template tests (`reads.switch_settings`)."""
    from pipeline.traces.visibility.reads import switch_settings as settings

    return settings(template)
