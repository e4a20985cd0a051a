"""Render a chat template offline under the Hugging Face contract (`apply_chat_template`).

The contract, as transformers compiles a template:
- `jinja2.sandbox.ImmutableSandboxedEnvironment` with `trim_blocks=True, lstrip_blocks=True`
  and the `jinja2.ext.loopcontrols` extension (Kimi-K2's template uses `{% break %}`);
- a `tojson` filter that is `json.dumps(ensure_ascii=False)` with `indent`, `separators` and
  `sort_keys` (default False) passed through: no HTML escaping, keys in their given order
  (Jinja's own `tojson` escapes `<`, `>`, `&`, `'` and sorts keys, which changes the prompt);
- globals `raise_exception(message)` (raises a template error) and `strftime_now(format)`.

Decisions where the contract is silent or impure:
- `strftime_now` formats a clock value passed in (`now`, default `FIXED_NOW`), not the wall
  clock, so a render is a pure function of its inputs and its SHA-256 is reproducible.
- Undefined names render empty (Jinja's default `Undefined`, as transformers): a template that
  reads `bos_token` without one being passed writes nothing there.
- A template that fails to compile or raises while rendering is a recorded outcome
  (`Rendered.error_type`, `Rendered.error_message`), not an exception: the errors caught are
  exactly those a template's own code can raise (`TEMPLATE_ERRORS`); anything else is a bug.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
"""The clock `strftime_now` reads unless a render passes its own."""

ERROR_MESSAGE_CHARS = 200

TEMPLATE_ERRORS: tuple[type[Exception], ...] = (
    jinja2.TemplateError,  # syntax, undefined, security, raise_exception
    TypeError,  # 'str' + None, `'x' in None`
    ValueError,
    LookupError,
    ArithmeticError,
    AttributeError,
)


class RaisedByTemplate(jinja2.TemplateError):
    """The template called `raise_exception(message)`."""


@dataclass(frozen=True)
class Rendered:
    """One render: the prompt, or the error the template raised (type and one line)."""

    prompt: str | None
    error_type: str = ""
    error_message: str = ""

    @property
    def ok(self) -> bool:
        return self.prompt is not None


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' `tojson`: plain `json.dumps`, no HTML escaping, key order kept."""
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise RaisedByTemplate(message)


@functools.lru_cache(maxsize=8)
def environment(now: datetime = FIXED_NOW, loopcontrols: bool = True) -> jinja2.Environment:
    """The HF-contract environment; `loopcontrols=False` exists to show which templates need it."""
    extensions: list[type[jinja2.ext.Extension]] = [jinja2.ext.loopcontrols] if loopcontrols else []
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=extensions)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = now.strftime
    return env


@functools.lru_cache(maxsize=64)
def _compile(text: str, now: datetime, loopcontrols: bool) -> jinja2.Template:
    return environment(now, loopcontrols).from_string(text)


def one_line(error: BaseException) -> str:
    """The error's first line, clipped: enough to tell crashes apart in a table."""
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else "")[:ERROR_MESSAGE_CHARS]


def render(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    extra: Mapping[str, Any] | None = None,
    now: datetime = FIXED_NOW,
    loopcontrols: bool = True,
) -> Rendered:
    """Render `messages` (and `tools`) through `template`; switches go in `extra`.

    `extra` holds the template kwargs a caller passes through `apply_chat_template`
    (`enable_thinking`, `preserve_thinking`, `bos_token`, ...). A key the caller leaves out is
    undefined in the template, which templates test with `is defined`: leaving a switch out is
    not the same as passing its default.
    """
    try:
        compiled = _compile(template, now, loopcontrols)
        prompt = compiled.render(
            messages=[dict(m) for m in messages],
            tools=None if tools is None else [dict(t) for t in tools],
            add_generation_prompt=add_generation_prompt,
            **dict(extra or {}),
        )
    except TEMPLATE_ERRORS as error:
        return Rendered(None, type(error).__name__, one_line(error))
    return Rendered(prompt)
