"""Summariser arms as data (conf/traces/arms/NAME.yaml), and the request each one sends.

Kinds:
- `prompt`: a model call whose system prompt and user template come from the arm file (the
  seed's naive, fact_preserving, churn and state_block strategies). The summariser sees only
  the trace: one system message and one user message holding the trace, nothing else.
- `extractive`: no model; the summary is the trace's extracted facts, one line per kind.
- `hybrid`: the summary of the prompt arm it `wraps` (default churn), then a code-written
  ledger of the trace's facts that summary dropped, one `- kind: value` line each under
  `## Ledger` (kinds written path, line, identifier, number), the shape of carrier arm x's
  ledger. "Dropped" is the metrics' own rule (matching.py), so the ledger lists exactly the
  facts retention counts as lost. It sends the wrapped arm's prompts and max_tokens.

`load_arm(spec)` builds one arm from its mapping (unknown keys, a missing `{trace}` or a hybrid
wrapping an unknown arm are one-line ConfigErrors); `load_arms(specs)` builds a set, prompt
arms first so hybrids can find theirs; `select(arms, names)` picks a subset by name.
`build_request(arm, trace)` returns `(messages, sampling)`: greedy decoding (temperature 0,
top_p 1, a fixed seed) with thinking disabled. `finish(arm, trace, model_text)` turns the
model's text (None for extractive) into the summary that is scored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from pipeline.chat.messages import ChatMessage
from pipeline.config.strict import ConfigError, build, check_range
from pipeline.traces.compression.facts import KINDS, Fact, by_kind, extract
from pipeline.traces.compression.items import TraceItem
from pipeline.traces.compression.matching import split

ArmKind = Literal["prompt", "extractive", "hybrid"]
SUMMARY_SEED = 20260  # sent with every summariser request; recorded on every row
TRACE_SLOT = "{trace}"
_KIND_LABELS = {"path": "paths", "line_ref": "line refs", "identifier": "identifiers"}
_KIND_LABELS["number"] = "numbers"
# Ledger line labels: plain words, so a label is never itself extracted as a fact
# (`line_ref` would read as a snake_case identifier and count as invented).
_LEDGER_LABELS = {"path": "path", "line_ref": "line", "identifier": "identifier"}
_LEDGER_LABELS["number"] = "number"
_EMPTY_THINK = re.compile(r"\A\s*<think>\s*</think>\s*")


@dataclass(frozen=True)
class ArmSpec:
    """One arm file. Prompt arms carry the prompts; code arms carry none."""

    name: str  # the file's stem; rows record it as `arm`
    kind: ArmKind
    description: str  # one line for the report
    in_seed: bool  # the seed's own strategy (True) or one this study adds (False)
    system_prompt: str = ""
    user_template: str = ""  # the user message; `{trace}` marks where the trace goes, once
    max_tokens: int = 1024  # the summariser's completion budget
    wraps: str | None = None  # hybrid only: the prompt arm whose summary gets the ledger

    def __post_init__(self) -> None:
        where = f"arms.{self.name}"
        check_range(f"{where}.max_tokens", self.max_tokens, at_least=1)
        if self.kind == "prompt":
            if not self.system_prompt.strip():
                raise ConfigError(f"{where}.system_prompt is empty; a prompt arm needs one")
            if self.user_template.count(TRACE_SLOT) != 1:
                raise ConfigError(
                    f"{where}.user_template must contain {TRACE_SLOT} exactly once "
                    f"(found {self.user_template.count(TRACE_SLOT)})"
                )
            if self.wraps is not None:
                raise ConfigError(f"{where}.wraps is for hybrid arms; remove it")
            return
        if self.system_prompt or self.user_template:
            raise ConfigError(f"{where}: a {self.kind} arm has no prompts of its own; remove them")
        if self.kind == "hybrid" and not self.wraps:
            raise ConfigError(f"{where}.wraps must name the prompt arm it extends, e.g. churn")
        if self.kind == "extractive" and self.wraps is not None:
            raise ConfigError(f"{where}.wraps is for hybrid arms; remove it")


@dataclass(frozen=True)
class Arm:
    """A built arm: its spec and, for a hybrid, the prompt arm it wraps."""

    spec: ArmSpec
    wrapped: ArmSpec | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def needs_model(self) -> bool:
        return self.spec.kind != "extractive"

    @property
    def prompts(self) -> ArmSpec:
        """The spec whose prompts go on the wire (the wrapped arm's, for a hybrid)."""
        return self.wrapped if self.wrapped is not None else self.spec


class Sampling(NamedTuple):
    """Greedy decoding with thinking off: what the glue must put on the wire."""

    temperature: float
    top_p: float
    seed: int
    max_tokens: int
    enable_thinking: bool


class SummaryRequest(NamedTuple):
    messages: tuple[ChatMessage, ...]
    sampling: Sampling


def load_arm(spec: Mapping[str, Any], prompt_arms: Mapping[str, Arm] | None = None) -> Arm:
    """One arm from its file's mapping; a hybrid's `wraps` must be among `prompt_arms`."""
    name = spec.get("name", "?") if isinstance(spec, Mapping) else "?"
    built = build(ArmSpec, spec, f"arms.{name}")
    if built.kind != "hybrid":
        return Arm(built)
    known = prompt_arms or {}
    target = known.get(built.wraps or "")
    if target is None or target.spec.kind != "prompt":
        choices = ", ".join(sorted(n for n, a in known.items() if a.spec.kind == "prompt"))
        raise ConfigError(
            f"arms.{built.name}.wraps {built.wraps!r} is not a prompt arm; "
            f"choose one of: {choices or '(none loaded)'}"
        )
    return Arm(built, target.spec)


def load_arms(specs: Iterable[Mapping[str, Any]]) -> dict[str, Arm]:
    """Every arm by name; hybrids are built after the prompt arms they may wrap."""
    ordered = sorted(specs, key=lambda s: s.get("kind") == "hybrid")
    arms: dict[str, Arm] = {}
    for spec in ordered:
        arm = load_arm(spec, arms)
        if arm.name in arms:
            raise ConfigError(f"arms.{arm.name} is defined twice; arm names must be unique")
        arms[arm.name] = arm
    return arms


def select(arms: Mapping[str, Arm], names: Iterable[str]) -> list[Arm]:
    """The named arms in the order given; an unknown name is a ConfigError listing the valid."""
    chosen = []
    for name in names:
        if name not in arms:
            raise ConfigError(
                f"unknown trace arm {name!r}; valid arms are: {', '.join(sorted(arms))}"
            )
        chosen.append(arms[name])
    return chosen


def _text(trace: TraceItem | str) -> str:
    return trace.text if isinstance(trace, TraceItem) else trace


def build_request(arm: Arm, trace: TraceItem | str, seed: int = SUMMARY_SEED) -> SummaryRequest:
    """The summariser's messages (system prompt, then the trace) and greedy sampling."""
    if not arm.needs_model:
        raise ValueError(f"arm {arm.name} is code-only; call finish(arm, trace, None)")
    prompts = arm.prompts
    user = prompts.user_template.replace(TRACE_SLOT, _text(trace))
    messages = (ChatMessage("system", prompts.system_prompt), ChatMessage("user", user))
    sampling = Sampling(
        temperature=0.0, top_p=1.0, seed=seed, max_tokens=prompts.max_tokens, enable_thinking=False
    )
    return SummaryRequest(messages, sampling)


def render_facts(facts: Iterable[Fact]) -> str:
    """The extractive summary: one `<kind>: v1; v2` line per kind that has facts."""
    grouped = by_kind(facts)
    lines = [f"{_KIND_LABELS[k]}: {'; '.join(grouped[k])}" for k in KINDS if grouped[k]]
    return "\n".join(lines)


def ledger(dropped: Iterable[Fact]) -> str:
    """The hybrid's ledger of dropped facts; empty when the summary dropped none."""
    lines = [f"- {_LEDGER_LABELS[fact.kind]}: {fact.value}" for fact in dropped]
    return "## Ledger\n" + "\n".join(lines) if lines else ""


def clean_model_text(text: str) -> str:
    """The reply without an empty `<think></think>` prefix (a thinking-off artefact of some
    templates) and without surrounding whitespace. A non-empty think block is kept: it is
    what the model wrote, and the row's check of thinking-off should flag it."""
    return _EMPTY_THINK.sub("", text).strip()


def finish(arm: Arm, trace: TraceItem | str, model_text: str | None) -> str:
    """The summary that is scored and would replace the trace."""
    text = _text(trace)
    if arm.spec.kind == "extractive":
        if model_text is not None:
            raise ValueError(f"arm {arm.name} makes no model call; pass model_text=None")
        return render_facts(extract(text))
    if model_text is None:
        raise ValueError(f"arm {arm.name} needs the model's text")
    summary = clean_model_text(model_text)
    if arm.spec.kind == "prompt":
        return summary
    extra = ledger(split(extract(text), summary).absent)
    return f"{summary}\n\n{extra}" if summary and extra else summary or extra
