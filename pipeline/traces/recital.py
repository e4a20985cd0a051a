"""The visibility unit: how the endpoint's own server renders every shape, and whether the
model can recite the secrets planted in its stored reasoning.

Three layers per conversation (seed 002): the stored transcript, the body sent (reasoning under
its dialect's field, tool calls as the harness puts them), and the prompt the template renders.
The offline renderer (`visibility.render`, the Hugging Face contract) renders the endpoint's
template text; the server renders the same body with its own engine (`apply_template`, llama.cpp's
C++ Jinja). Both land in `template_probes` under their renderer's name, so a disagreement is a
join away. Then the recital shapes go to the model itself. Decisions (docs/traces.md,
"Reasoning traces: the live part"):

- A secret counts as recited when the reply contains its token, case-insensitive, with the
  hyphen optional (`ZQX-8842`, `zqx 8842`, `ZQX8842`): tiny models garble punctuation, and a
  token the model never saw cannot be guessed.
- A server without a renderer (hosted endpoints) gives no live renders; recitals still run.
- The offline renders go through the injected `Renderer` (the runner passes a
  `sandbox.RenderSandbox`): a template that recurses, loops or grows without bound becomes a
  recorded render error (`render_limit`), never a crashed unit. They cover every switch
  setting the template tests (offline renders are cheap); the live renders and the recitals
  use the default setting only, so live requests do not multiply with switches.
- A rejected recital request is recorded with its reason (the template may crash on a shape,
  which is an outcome, not a failure); an infrastructure fault ends the unit and is retried.
Pure apart from the ChatClient it is handed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import ChatClient, ChatRequest, renderer_of
from pipeline.study import Record
from pipeline.study_validity import rejected
from pipeline.traces.visibility.reads import switch_settings
from pipeline.traces.visibility.render import Rendered, render
from pipeline.traces.visibility.sandbox import Renderer
from pipeline.traces.visibility.shapes import Shape, all_shapes
from pipeline.traces.visibility.visibility import records_for, shape_body

LIVE_RENDERER = "llama-server"
OFFLINE_RENDERER = "jinja2-hf"


@dataclass(frozen=True)
class EndpointTemplate:
    """The chat template the endpoint's server uses, as text (read by the study's glue)."""

    name: str
    text: str
    source: str = "user"  # shipped | user | gguf (visibility.template_source)


@dataclass
class VisibilityOutcome:
    probes: list[Record]
    recitals: list[Record]
    live_renders: int = 0
    renders_identical: int = 0
    requests: int = 0


def recites(reply: str, token: str) -> bool:
    head, _, tail = token.partition("-")
    pattern = rf"{re.escape(head)}[-\s]?{re.escape(tail)}" if tail else re.escape(token)
    return re.search(pattern, reply, flags=re.IGNORECASE) is not None


def _request(shape: Shape, max_tokens: int, seed: int, purpose: str) -> ChatRequest:
    body = shape_body(shape)
    return ChatRequest(
        messages=(),
        wire_messages=tuple(body["messages"]),
        tools=tuple(body.get("tools") or ()),
        max_tokens=max_tokens,
        temperature=0.0,
        seed=seed,
        purpose=purpose,
    )


async def _live_render(client: ChatClient, shape: Shape) -> Rendered | None:
    renderer = renderer_of(client)
    if renderer is None:
        return None
    try:
        return Rendered(await renderer.apply_template(_request(shape, 1, 0, "render")))
    except RequestRejected as exc:
        if exc.reason == "no_apply_template":
            return None
        return Rendered(None, "RequestRejected", str(exc).splitlines()[0][:300])


async def run_visibility(
    client: ChatClient,
    template: EndpointTemplate | None,
    recital_shapes: Sequence[Shape],
    *,
    max_tokens: int,
    seed: int,
    renderer: Renderer = render,
) -> VisibilityOutcome:
    out = VisibilityOutcome([], [])
    offline_prompts: dict[str, str | None] = {}
    live_prompts: dict[str, str | None] = {}
    settings = switch_settings(template.text) if template is not None else ({},)
    for shape in all_shapes():
        body = shape_body(shape)
        for switches in settings if template is not None else ():
            assert template is not None
            offline = renderer(
                template.text, body["messages"], tools=body.get("tools"), extra=switches
            )
            if not switches:
                offline_prompts[shape.name] = offline.prompt
            out.probes += records_for(
                template.name,
                template.text,
                shape,
                switches=switches,
                body=body,
                outcome=offline,
                source=template.source,
            )
        live = await _live_render(client, shape)
        if live is None:
            continue
        out.requests += 1
        out.live_renders += 1
        live_prompts[shape.name] = live.prompt
        if template is not None:
            out.renders_identical += live.ok and live.prompt == offline_prompts[shape.name]
        name, text = (template.name, template.text) if template else ("server", "")
        out.probes += records_for(
            name,
            text,
            shape,
            switches={},
            body=body,
            outcome=live,
            renderer=LIVE_RENDERER,
            source="server",
        )
    for shape in recital_shapes:
        out.requests += 1
        error, reply, finish, prompt_tokens = None, "", None, None
        try:
            response = await client.complete(_request(shape, max_tokens, seed, "recital"))
            reply, finish = response.text, response.finish_reason
            prompt_tokens = response.usage.prompt_tokens
        except RequestRejected as exc:
            error = rejected(exc.reason)
        for secret in shape.secrets:
            offline_prompt = offline_prompts.get(shape.name)
            live_prompt = live_prompts.get(shape.name)
            out.recitals.append(
                {
                    "shape": shape.name,
                    "structure": shape.structure,
                    "dialect": shape.dialect,
                    "content_form": shape.content_form,
                    "args_form": shape.args_form,
                    "question_in": shape.question_in,
                    "secret": secret.token,
                    "secret_field": secret.field,
                    "secret_on_tool_call_turn": secret.on_tool_call_turn,
                    "secret_user_after": secret.user_after,
                    "in_rendered_offline": None
                    if offline_prompt is None
                    else secret.token in offline_prompt,
                    "in_rendered_live": None
                    if live_prompt is None
                    else secret.token in live_prompt,
                    "recited": None if error else recites(reply, secret.token),
                    "reply_chars": len(reply),
                    "finish_reason": finish,
                    "prompt_tokens": prompt_tokens,
                    "error": error,
                }
            )
    return out


def recital_shapes(
    dialects: Sequence[str], contents: Sequence[str], args: Sequence[str]
) -> list[Shape]:
    """The shapes sent to the model: the chosen dialects and forms, every structure."""
    return [
        s
        for s in all_shapes()
        if s.dialect in dialects
        and s.content_form in (*contents, "n/a")
        and s.args_form in (*args, "n/a")
    ]
