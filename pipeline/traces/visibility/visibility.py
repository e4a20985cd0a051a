"""Which planted secret survives in which layer: one record per (template, shape, switches, secret).

`matrix(templates)` renders every shape of `shapes.all_shapes()` through every template under
every switch setting the template mentions, and returns flat records (one scalar per column,
ready for a Parquet table). A template that crashes on a shape gives records with
`rendered=False` and its error; nothing is skipped.

Columns:
- `renderer` (str): `jinja2-hf`, the offline Hugging Face-contract renderer (a live renderer's
  rows use the same columns under another name).
- `template` (str), `template_sha256` (str), `template_chars` (int): the template rendered.
- `shape` (str), `structure`, `dialect`, `content_form`, `args_form`, `question_in` (str): the
  stored conversation (see `shapes`).
- `switches` (str): the switch kwargs passed, `name=value` joined by `,`; `""` for none.
  `enable_thinking`, `preserve_thinking` (str): `unset`, `true` or `false`.
  `default_switches` (bool): no switch passed, the template's default behaviour.
- `secret` (str): the token; `secret_message_index` (int), `secret_field` (str): where it is
  stored; `secret_on_tool_call_turn`, `secret_user_after`, `secret_plain_reply_after` (bool):
  its position (a tool-call turn? a user turn after it? a plain assistant reply after it?).
- `in_stored`, `in_wire`, `in_rendered` (bool): the three layers; `wire_field` (str): the
  body paths holding the token, joined by `,` (`""` when absent).
- `rendered` (bool), `error_type`, `error_message` (str, `""` when rendered): the outcome.
- `prompt_sha256` (str), `prompt_chars` (int): of the rendered prompt (`""`, 0 on a crash).
- `has_tool_calls` (bool): the shape has tool-call turns; `tool_calls_rendered` (bool): every
  tool call's argument token is in the prompt (False on a crash or with no tool calls).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.traces.visibility.render import Rendered, render
from pipeline.traces.visibility.shapes import (
    SWITCHES,
    TOOLS,
    Shape,
    all_shapes,
    switch_settings,
)
from pipeline.traces.visibility.wire import presence, request_body

RENDERER = "jinja2-hf"

Record = dict[str, object]


@functools.lru_cache(maxsize=256)
def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _switch_value(switches: Mapping[str, bool], name: str) -> str:
    if name not in switches:
        return "unset"
    return "true" if switches[name] else "false"


def shape_body(shape: Shape, *, replay_reasoning: bool = True) -> dict[str, Any]:
    """The request body sent for a shape (messages and the echo tool): what any renderer gets."""
    return request_body(shape.messages, TOOLS, replay_reasoning=replay_reasoning)


def probe(
    template_name: str,
    template: str,
    shape: Shape,
    switches: Mapping[str, bool] | None = None,
    *,
    replay_reasoning: bool = True,
) -> list[Record]:
    """Render one shape through one template offline; one record per planted secret."""
    settings = dict(switches or {})
    body = shape_body(shape, replay_reasoning=replay_reasoning)
    outcome = render(template, body["messages"], tools=body.get("tools"), extra=settings)
    return records_for(
        template_name, template, shape, switches=settings, body=body, outcome=outcome
    )


def records_for(
    template_name: str,
    template: str,
    shape: Shape,
    *,
    switches: Mapping[str, bool],
    body: Mapping[str, Any],
    outcome: Rendered,
    renderer: str = RENDERER,
) -> list[Record]:
    """The records of one render, whoever rendered it (a live server's prompt goes in here)."""
    settings = dict(switches)
    prompt = outcome.prompt
    common: Record = {
        "renderer": renderer,
        "template": template_name,
        "template_sha256": sha256(template),
        "template_chars": len(template),
        "shape": shape.name,
        "structure": shape.structure,
        "dialect": shape.dialect,
        "content_form": shape.content_form,
        "args_form": shape.args_form,
        "question_in": shape.question_in,
        "switches": ",".join(f"{k}={_switch_value(settings, k)}" for k in sorted(settings)),
        **{name: _switch_value(settings, name) for name in SWITCHES},
        "default_switches": not settings,
        "rendered": outcome.ok,
        "error_type": outcome.error_type,
        "error_message": outcome.error_message,
        "prompt_sha256": "" if prompt is None else sha256(prompt),
        "prompt_chars": 0 if prompt is None else len(prompt),
        "has_tool_calls": shape.has_tool_calls,
        "tool_calls_rendered": prompt is not None
        and shape.has_tool_calls
        and all(token in prompt for token in shape.tool_arg_tokens),
    }
    records = []
    for secret in shape.secrets:
        layers = presence(shape.messages, body, prompt, secret.token)
        records.append(
            {
                **common,
                "secret": secret.token,
                "secret_message_index": secret.message_index,
                "secret_field": secret.field,
                "secret_on_tool_call_turn": secret.on_tool_call_turn,
                "secret_user_after": secret.user_after,
                "secret_plain_reply_after": secret.plain_reply_after,
                "in_stored": layers.in_stored,
                "in_wire": layers.in_wire,
                "wire_field": ",".join(layers.wire_fields),
                "in_rendered": layers.in_rendered,
            }
        )
    return records


def template_records(
    template_name: str, template: str, shapes: Iterable[Shape] | None = None
) -> list[Record]:
    """Every shape under every switch setting the template mentions, for one template."""
    chosen = all_shapes() if shapes is None else tuple(shapes)
    records: list[Record] = []
    for switches in switch_settings(template):
        for shape in chosen:
            records += probe(template_name, template, shape, switches)
    return records


def matrix(templates: Mapping[str, str], shapes: Iterable[Shape] | None = None) -> list[Record]:
    """The visibility matrix of every template (name -> template text), in name order."""
    chosen = all_shapes() if shapes is None else tuple(shapes)
    records: list[Record] = []
    for name in sorted(templates):
        records += template_records(name, templates[name], chosen)
    return records


def column_names() -> tuple[str, ...]:
    """The record columns in order (the table schema's column list)."""
    sample = probe("t", "{{ messages | length }}", all_shapes()[0])
    return tuple(sample[0])


def prompt_for(
    template: str, shape: Shape, switches: Mapping[str, bool] | None = None
) -> str | None:
    """The rendered prompt (or None) of one shape, for a report's worked example."""
    body = shape_body(shape)
    return render(template, body["messages"], tools=body.get("tools"), extra=switches).prompt
