"""Which planted secret survives in which layer: one record per (template, shape, switches, secret).

`matrix(templates)` renders every shape of `shapes.all_shapes(dialects)` through every template
under every switch setting the template tests (`reads.switch_settings`), and returns flat
records (one scalar per column, ready for a Parquet table). The dialects are `DIALECTS` plus
every other reasoning field any of the templates reads (`shapes.planted_dialects`), so each
template meets its reasoning under every field any template reads. A template that crashes on a
shape gives records with `rendered=False` and its error; nothing is skipped. The render is
injected (`renderer`): production passes a `sandbox.RenderSandbox`, bounded in time and memory.

Columns:
- `renderer` (str): `jinja2-hf`, the offline Hugging Face-contract renderer (a live renderer's
  rows use the same columns under another name).
- `template` (str), `template_sha256` (str), `template_chars` (int): the template rendered;
  `template_source` (str): where its text came from, `shipped` (data/chat-templates/), `user`
  (`study.templates` or a local configuration's own file), `gguf` (the weights' metadata) or
  `server` (the live server's own render, whose text is not read).
- `shape` (str), `structure`, `dialect`, `content_form`, `args_form`, `question_in` (str): the
  stored conversation (see `shapes`).
- `switches` (str): the switch kwargs passed, `name=value` joined by `,` in name order; `""`
  for none. `enable_thinking`, `preserve_thinking` (str): `unset`, `true`, `false` (or the
  string passed), kept as columns of their own for queries; any other switch is in `switches`.
  `default_switches` (bool): no switch passed, the template's default behaviour.
- `secret` (str): the token; `secret_message_index` (int), `secret_field` (str): where it is
  stored; `secret_on_tool_call_turn`, `secret_user_after`, `secret_plain_reply_after` (bool):
  its position (a tool-call turn? a user turn after it? a plain assistant reply after it?).
- `in_stored`, `in_wire`, `in_rendered` (bool): the three layers; `wire_field` (str): the
  body paths holding the token, joined by `,` (`""` when absent).
- `rendered` (bool), `error_type`, `error_message` (str, `""` when rendered): the outcome;
  `render_limit` (str): the bound a failed render hit (`recursion`, `output_size`, `memory`,
  `time`; `""` when it rendered or failed by its own error).
- `prompt_sha256` (str), `prompt_chars` (int): of the rendered prompt (`""`, 0 on a crash).
- `has_tool_calls` (bool): the shape has tool-call turns; `tool_calls_rendered` (bool): every
  tool call's argument token is in the prompt (False on a crash or with no tool calls).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.traces.visibility.reads import Setting, setting_label, switch_settings
from pipeline.traces.visibility.render import Rendered, limit_of, render
from pipeline.traces.visibility.sandbox import Renderer
from pipeline.traces.visibility.shapes import SWITCHES, TOOLS, Shape, all_shapes, planted_dialects
from pipeline.traces.visibility.switch_values import SwitchValue
from pipeline.traces.visibility.wire import presence, request_body

RENDERER = "jinja2-hf"

Record = dict[str, object]


@functools.lru_cache(maxsize=256)
def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _switch_value(switches: Mapping[str, SwitchValue], name: str) -> str:
    if name not in switches:
        return "unset"
    return setting_label({name: switches[name]}).split("=", 1)[1]


def shape_body(shape: Shape, *, replay_reasoning: bool = True) -> dict[str, Any]:
    """The request body sent for a shape (messages and the echo tool): what any renderer gets."""
    return request_body(
        shape.messages,
        TOOLS,
        replay_reasoning=replay_reasoning,
        reasoning_fields=(shape.dialect,),
    )


def probe(
    template_name: str,
    template: str,
    shape: Shape,
    switches: Mapping[str, SwitchValue] | None = None,
    *,
    replay_reasoning: bool = True,
    renderer: Renderer = render,
    source: str = "shipped",
) -> list[Record]:
    """Render one shape through one template offline; one record per planted secret."""
    settings = dict(switches or {})
    body = shape_body(shape, replay_reasoning=replay_reasoning)
    outcome = renderer(template, body["messages"], tools=body.get("tools"), extra=settings)
    return records_for(
        template_name,
        template,
        shape,
        switches=settings,
        body=body,
        outcome=outcome,
        source=source,
    )


def records_for(
    template_name: str,
    template: str,
    shape: Shape,
    *,
    switches: Mapping[str, SwitchValue],
    body: Mapping[str, Any],
    outcome: Rendered,
    renderer: str = RENDERER,
    source: str = "shipped",
) -> list[Record]:
    """The records of one render, whoever rendered it (a live server's prompt goes in here)."""
    settings = dict(switches)
    prompt = outcome.prompt
    common: Record = {
        "renderer": renderer,
        "template": template_name,
        "template_sha256": sha256(template),
        "template_chars": len(template),
        "template_source": source,
        "shape": shape.name,
        "structure": shape.structure,
        "dialect": shape.dialect,
        "content_form": shape.content_form,
        "args_form": shape.args_form,
        "question_in": shape.question_in,
        "switches": setting_label(settings),
        **{name: _switch_value(settings, name) for name in SWITCHES},
        "default_switches": not settings,
        "rendered": outcome.ok,
        "error_type": outcome.error_type,
        "error_message": outcome.error_message,
        "render_limit": limit_of(outcome.error_type),
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
    template_name: str,
    template: str,
    shapes: Iterable[Shape] | None = None,
    *,
    renderer: Renderer = render,
    source: str = "shipped",
) -> list[Record]:
    """Every shape under every switch setting the template tests, for one template."""
    chosen = all_shapes(planted_dialects([template])) if shapes is None else tuple(shapes)
    records: list[Record] = []
    settings: tuple[Setting, ...] = switch_settings(template)
    for switches in settings:
        for shape in chosen:
            records += probe(
                template_name, template, shape, switches, renderer=renderer, source=source
            )
    return records


def matrix(
    templates: Mapping[str, str],
    shapes: Iterable[Shape] | None = None,
    *,
    renderer: Renderer = render,
    sources: Mapping[str, str] | None = None,
) -> list[Record]:
    """The visibility matrix of every template (name -> template text), in name order.

    `sources` labels each template (`shipped` when absent); the shapes default to every
    dialect any of the templates reads.
    """
    dialects = planted_dialects(templates.values())
    chosen = all_shapes(dialects) if shapes is None else tuple(shapes)
    records: list[Record] = []
    for name in sorted(templates):
        source = (sources or {}).get(name, "shipped")
        records += template_records(name, templates[name], chosen, renderer=renderer, source=source)
    return records


def column_names() -> tuple[str, ...]:
    """The record columns in order (the table schema's column list)."""
    sample = probe("t", "{{ messages | length }}", all_shapes()[0])
    return tuple(sample[0])
