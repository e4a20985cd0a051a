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

Bounds (issue 21; docs/traces.md "Reasoning traces: bounded renders"). A user's template is
code, so a render is bounded here in-process, and in time and memory by the child process of
`visibility.sandbox`:
- recursion: a `RecursionError` (a macro that calls itself) is the outcome `RecursionError`,
  limit `recursion`; the sandbox's `range` refuses more than 100,000 items (Jinja's MAX_RANGE);
- output size: the render's chunks are counted as they are produced and the render stops past
  `MAX_OUTPUT_CHARS` (`OutputTooLarge`, limit `output_size`); a `*` whose string or list result
  would pass that size, a `**` beyond `MAX_POWER_BITS`, or a `%` format width past the bound
  is refused before it is computed, so `'a' * 10**10` never allocates (intercepted operators
  are also never folded as constants when the template compiles);
- memory: a `MemoryError` is the outcome `MemoryError`, limit `memory`.
`limit_of(error_type)` names the limit an outcome hit ("" for a template's own error).
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
"""The clock `strftime_now` reads unless a render passes its own."""

ERROR_MESSAGE_CHARS = 200
MAX_OUTPUT_CHARS = 2_000_000
"""A rendered prompt longer than this is refused (the longest shipped render is ~10k chars)."""
MAX_POWER_BITS = 4096
"""`a ** b` whose result would need more bits than this is refused before it is computed."""

LIMITS: dict[str, str] = {
    "RecursionError": "recursion",
    "OutputTooLarge": "output_size",
    "MemoryError": "memory",
    "RenderTimeout": "time",
}
"""Outcome error type -> the bound it hit (`RenderTimeout` is the sandbox's)."""

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


class OutputTooLarge(Exception):
    """The render (or one `*`/`**` inside it) would pass the output bound."""


CAUGHT: tuple[type[Exception], ...] = (
    *TEMPLATE_ERRORS,
    OutputTooLarge,
    RecursionError,
    MemoryError,
)
"""What a render records as its outcome: the template's own errors and the bounds'."""


def limit_of(error_type: str) -> str:
    """The bound a failed render hit (`recursion`, `output_size`, `memory`, `time`), or ""."""
    return LIMITS.get(error_type, "")


_FORMAT_WIDTH = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d*)(?:\.(\d+))?")


def _sized(value: Any) -> int | None:
    return len(value) if isinstance(value, str | list | tuple) else None


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The HF sandbox, refusing a `*` or `**` whose result would pass the output bound."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        if operator_name == "%":
            if isinstance(left, str):
                widths = [int(w) for pair in _FORMAT_WIDTH.findall(left) for w in pair if w]
                if widths and max(widths) > MAX_OUTPUT_CHARS:
                    raise OutputTooLarge(f"a format width of {max(widths)} passes the output bound")
            return operator.mod(left, right)
        if operator_name == "*":
            for seq, times in ((left, right), (right, left)):
                size = _sized(seq)
                if size is not None and isinstance(times, int) and size * times > MAX_OUTPUT_CHARS:
                    raise OutputTooLarge(
                        f"a repetition of {size} x {times} passes {MAX_OUTPUT_CHARS} items"
                    )
            return operator.mul(left, right)
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and abs(left) > 1
            and right * max(abs(left).bit_length(), 1) > MAX_POWER_BITS
        ):
            raise OutputTooLarge(f"{left} ** {right} passes {MAX_POWER_BITS} bits")
        return operator.pow(left, right)


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
    env = BoundedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=extensions)
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
        chunks = compiled.generate(
            messages=[dict(m) for m in messages],
            tools=None if tools is None else [dict(t) for t in tools],
            add_generation_prompt=add_generation_prompt,
            **dict(extra or {}),
        )
        prompt = _bounded_join(chunks)
    except CAUGHT as error:
        return Rendered(None, type(error).__name__, one_line(error))
    return Rendered(prompt)


def _bounded_join(chunks: Iterable[str]) -> str:
    """The chunks joined, refusing (and stopping the render) past `MAX_OUTPUT_CHARS`."""
    parts: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_OUTPUT_CHARS:
            raise OutputTooLarge(f"the rendered prompt passes {MAX_OUTPUT_CHARS} characters")
        parts.append(chunk)
    return "".join(parts)
