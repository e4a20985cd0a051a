"""Was the summariser really greedy with thinking off? Checked on the wire and in behaviour.

The seed found a harness whose model defaults were merged after the request's fields, so
`temperature: 0` went out as `temperature: 1.0`. So the check reads the body as it was sent
(a dict, after every default was merged), not the request the study meant to send.

(a) `inspect_body(body)` -> `DecodingCheck`, flat columns for the row:
- Greedy holds when `temperature` was sent and is 0, or `top_k` is 1 (both make the argmax
  the only candidate). `top_p` and `seed` are recorded but decide nothing: with temperature 0
  the argmax is always inside the nucleus. A temperature not sent fails: the server's default
  applies (llama.cpp's is 0.8).
- Thinking switches read, each voting off or on: `chat_template_kwargs.enable_thinking`
  (Qwen3-style templates), `chat_template_kwargs.thinking` (DeepSeek V3.1's template), a
  top-level `enable_thinking` or `think`, OpenRouter's `reasoning.enabled` and
  `reasoning.effort`, a top-level `reasoning_effort` (`none` is off, any other effort on), and
  `thinking` as `{"type": "disabled"|"enabled"}` or a boolean. The state is `off` (every vote
  off), `on`, `conflicting` (both) or `unspecified` (no switch sent). Only `off` passes:
  an unspecified switch leaves thinking to the template's default, which the row cannot know.
(b) `compare_runs(first, second)` -> `RepeatCheck`: the two summaries of one item from two
  identical requests, compared by SHA-256 of their UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.traces.compression.metrics import Record, sha256

ThinkingState = Literal["off", "on", "conflicting", "unspecified"]


@dataclass(frozen=True)
class DecodingCheck:
    temperature: float | None
    top_p: float | None
    top_k: int | None
    seed: int | None
    enable_thinking: bool | None  # chat_template_kwargs.enable_thinking, else top-level
    template_thinking: bool | None  # chat_template_kwargs.thinking
    reasoning_enabled: bool | None  # reasoning.enabled
    reasoning_effort: str | None  # reasoning_effort, else reasoning.effort
    thinking: str | None  # the `thinking` field: its type, or true / false
    greedy: bool
    thinking_state: ThinkingState
    problem: str | None  # why the check failed, in words; None when it held

    @property
    def held(self) -> bool:
        return self.greedy and self.thinking_state == "off"

    def as_columns(self) -> Record:
        return {
            "sent_temperature": self.temperature,
            "sent_top_p": self.top_p,
            "sent_top_k": self.top_k,
            "sent_seed": self.seed,
            "sent_enable_thinking": self.enable_thinking,
            "sent_template_thinking": self.template_thinking,
            "sent_reasoning_enabled": self.reasoning_enabled,
            "sent_reasoning_effort": self.reasoning_effort,
            "sent_thinking": self.thinking,
            "sent_greedy": self.greedy,
            "sent_thinking_state": self.thinking_state,
            "decoding_held": self.held,
            "decoding_problem": self.problem,
        }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _sub(body: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = body.get(key)
    return value if isinstance(value, Mapping) else {}


def _thinking_field(value: Any) -> tuple[str | None, bool | None]:
    """(the recorded form, its vote: True on, False off, None no vote)."""
    if isinstance(value, bool):
        return str(value).lower(), value
    if isinstance(value, Mapping) and isinstance(value.get("type"), str):
        kind = value["type"]
        return kind, {"disabled": False, "enabled": True}.get(kind)
    return None, None


def _greedy(temperature: float | None, raw: Any, top_k: int | None) -> tuple[bool, str | None]:
    if top_k == 1 or temperature == 0.0:
        return True, None
    if raw is None:
        return False, "temperature not sent: the server's default applies"
    if temperature is None:
        return False, f"temperature sent as {type(raw).__name__} {raw!r}, not a number"
    return False, f"temperature {temperature:g} sent, not 0 (and top_k is not 1)"


_THINKING_PROBLEMS = {
    "on": "a thinking switch was sent turned on",
    "conflicting": "thinking switches disagree (some off, some on)",
    "unspecified": "no thinking switch sent: the template's default applies",
}


def inspect_body(body: Mapping[str, Any]) -> DecodingCheck:
    """The sampling fields of a sent chat/completions body and whether greedy+off held."""
    kwargs = _sub(body, "chat_template_kwargs")
    reasoning = _sub(body, "reasoning")
    enable = _flag(kwargs.get("enable_thinking"))
    if enable is None:
        enable = _flag(body.get("enable_thinking"))
    template_thinking = _flag(kwargs.get("thinking"))
    reasoning_enabled = _flag(reasoning.get("enabled"))
    effort = _text(body.get("reasoning_effort")) or _text(reasoning.get("effort"))
    thinking, thinking_vote = _thinking_field(body.get("thinking"))
    votes = [enable, template_thinking, reasoning_enabled, thinking_vote, _flag(body.get("think"))]
    if effort is not None:
        votes.append(effort != "none")
    cast = {v for v in votes if v is not None}
    state: ThinkingState = "unspecified"
    if cast:
        state = "conflicting" if len(cast) == 2 else "on" if True in cast else "off"
    temperature = _number(body.get("temperature"))
    top_k = _integer(body.get("top_k"))
    greedy, sampling_problem = _greedy(temperature, body.get("temperature"), top_k)
    problems = [sampling_problem] if sampling_problem else []
    if state != "off":
        problems.append(_THINKING_PROBLEMS[state])
    return DecodingCheck(
        temperature=temperature,
        top_p=_number(body.get("top_p")),
        top_k=top_k,
        seed=_integer(body.get("seed")),
        enable_thinking=enable,
        template_thinking=template_thinking,
        reasoning_enabled=reasoning_enabled,
        reasoning_effort=effort,
        thinking=thinking,
        greedy=greedy,
        thinking_state=state,
        problem="; ".join(problems) or None,
    )


@dataclass(frozen=True)
class RepeatCheck:
    first_sha256: str
    second_sha256: str

    @property
    def deterministic(self) -> bool:
        return self.first_sha256 == self.second_sha256

    def as_columns(self) -> Record:
        return {
            "first_sha256": self.first_sha256,
            "second_sha256": self.second_sha256,
            "deterministic": self.deterministic,
        }


def compare_runs(first: str, second: str) -> RepeatCheck:
    """Two summaries of the same item from identical requests, compared by hash."""
    return RepeatCheck(sha256(first), sha256(second))
