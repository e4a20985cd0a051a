"""Peer replicas and the control: other harnesses' history rewriting, priced the same way.

None of these applies Torana's forced-exact layer: each peer rewrites what its own rule says,
errors and edits included. Each states whether an output's rendering can change after it was
first compacted; none can (so every one is `stable`), though each rewrites *which* outputs it
compacts as the window moves, and that is what costs cache.

- control: no compaction (`control`).
- Anthropic `clear_tool_uses_20250919` (server-side context editing; the client resends the
  full history, so each request is edited on its own): when the request's input exceeds
  `trigger` tokens (ceil(request_bytes / 4)), every tool result but the most recent `keep`
  is replaced by a placeholder, oldest first, skipping `exclude_tools` (case-insensitive globs;
  Anthropic's are names); `keep` counts all tool results, excluded ones included (LangChain's
  ClearToolUsesEdit, which mirrors it). `clear_at_least` is Anthropic's documented reading:
  when the clearable results remove fewer tokens than that, nothing is cleared
  (`clear_at_least_unmet`). Anthropic does not publish the placeholder the model sees; we use
  LangChain's `[cleared]`. Cannot change after first compaction: the uncompacted request only
  grows, so the trigger stays exceeded, the output stays out of the last `keep`, and the
  clearable total only grows.
- SWE-agent `last_n_observations` (sweagent/agent/history_processors.py): SWE-agent counts
  its instance template (the task message) as observation 0 and never elides it, so with
  K tool outputs visible, `L = max(0, ((K + 1) // polling) * polling - n)` and tool output p
  (0-based) is elided iff p + 1 < L: exactly the last n survive when polling = 1, and between
  n and n + polling - 1 with polling, so the prefix changes only when K + 1 reaches a multiple
  of `polling`. The text is SWE-agent's `Old environment output: (N lines omitted)`, N by
  Python's splitlines. Its keep/remove tags are not modelled. Cannot change after first
  compaction: L never falls as K grows, and the line count is the output's own.
- OpenHands `ObservationMaskingCondenser`: an observation followed by `attention_window` or
  more events in the view becomes `<MASKED>`. We count two events per later tool output (its
  action and its observation) and ignore plain messages between them, so an output is masked
  iff 2 * later_outputs >= attention_window. OpenHands turns the masked event into a user
  message; we keep the tool message and replace its text. Cannot change after first compaction.
- mini-swe-agent truncate-on-arrival (its observation template): an output of 10,000
  characters or more becomes a warning, its first 5,000 and last 5,000 characters and the
  elided count, from its first exposure; shorter outputs stay exact. The warning is in our
  words (the template's is not copied), within a few characters of its length. An output
  that already carries the template's elided block (mini-swe-agent's own transcripts) stays
  as recorded (`already_truncated`). A pure function of the output, so it never changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from pipeline.toolout.policies.base import (
    BYTES_PER_TOKEN,
    NEVER,
    NEXT_REQUEST,
    OutputView,
    Policy,
    Recheck,
    Rendering,
    compacted,
    estimate_tokens,
    exact,
    utf8_len,
)
from pipeline.toolout.policies.spec import PolicyConfigError, check_keys, count, names, text


@dataclass(frozen=True)
class ControlPolicy:
    """No compaction: every output as recorded."""

    name: str
    description: str = ""
    stable: bool = True

    def render(self, view: OutputView) -> Rendering:
        return exact(view, "control")

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        return NEVER


@dataclass(frozen=True)
class ClearToolUses:
    """Anthropic `clear_tool_uses_20250919`, replayed client-side on the byte/4 estimate."""

    name: str
    trigger: int = 100_000  # input tokens; Anthropic's default
    keep: int = 3  # most recent tool uses kept; Anthropic's default
    clear_at_least: int = 0  # tokens; Anthropic's default is none
    exclude_tools: tuple[str, ...] = ()
    placeholder: str = "[cleared]"
    description: str = ""
    stable: bool = True

    def excluded(self, tool_name: str) -> bool:
        return any(fnmatchcase(tool_name.lower(), g.lower()) for g in self.exclude_tools)

    def render(self, view: OutputView) -> Rendering:
        if view.request_bytes is None:
            raise ValueError(f"{self.name}: the replay must pass view.request_bytes")
        tokens = estimate_tokens(view.request_bytes)
        if tokens <= self.trigger:
            return exact(view, "below_trigger", f"{tokens} tokens")
        if view.later_outputs < self.keep:
            return exact(view, "kept_recent")
        if self.excluded(view.tool_name):
            return exact(view, "excluded_tool")
        if self.clear_at_least > 0:
            freed = self._clearable_tokens(view)
            if freed < self.clear_at_least:
                return exact(view, "clear_at_least_unmet", f"{freed} tokens")
        return compacted(view, self.placeholder, "cleared")

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        """Below the trigger: once the request passes it; kept recent: once `keep` follow."""
        if rendering.changed or rendering.reason == "excluded_tool":
            return NEVER
        if rendering.reason == "below_trigger":  # ceil(bytes / 4) > trigger
            return Recheck(request_bytes=self.trigger * BYTES_PER_TOKEN + 1)
        if rendering.reason == "kept_recent":
            return Recheck(later_outputs=self.keep)
        return NEXT_REQUEST  # clear_at_least_unmet: the clearable total grows

    def _clearable_tokens(self, view: OutputView) -> int:
        """Tokens clearing every candidate of this request would free (placeholder netted)."""
        if view.visible_outputs is None:
            raise ValueError(f"{self.name}: clear_at_least needs view.visible_outputs")
        outputs = view.visible_outputs
        candidates = outputs[: max(0, len(outputs) - self.keep)]
        placeholder = estimate_tokens(utf8_len(self.placeholder))
        return sum(
            max(0, estimate_tokens(o.size_bytes) - placeholder)
            for o in candidates
            if not self.excluded(o.tool_name)
        )


@dataclass(frozen=True)
class LastNObservations:
    """SWE-agent `last_n_observations`, with its cache-friendly `polling`."""

    name: str
    n: int = 5
    polling: int = 1
    description: str = ""
    stable: bool = True

    def render(self, view: OutputView) -> Rendering:
        visible = view.output_index + 1 + view.later_outputs
        last_removed = max(0, ((visible + 1) // self.polling) * self.polling - self.n)
        if view.output_index + 1 >= last_removed:
            return exact(view, "within_last_n")
        lines = len(view.content.splitlines())
        return compacted(view, f"Old environment output: ({lines} lines omitted)", "elided")

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        """Exact until the visible count K has (K + 1) // polling * polling > p + 1 + n."""
        if rendering.changed:
            return NEVER
        p = view.output_index
        multiple = ((p + 1 + self.n) // self.polling + 1) * self.polling
        return Recheck(later_outputs=multiple - p - 2)


@dataclass(frozen=True)
class ObservationMasking:
    """OpenHands `ObservationMaskingCondenser` (attention window in events)."""

    name: str
    attention_window: int = 100  # OpenHands' ObservationMaskingCondenserConfig default
    placeholder: str = "<MASKED>"
    description: str = ""
    stable: bool = True

    def render(self, view: OutputView) -> Rendering:
        if 2 * view.later_outputs < self.attention_window:
            return exact(view, "within_window")
        return compacted(view, self.placeholder, "masked")

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        if rendering.changed:
            return NEVER
        return Recheck(later_outputs=(self.attention_window + 1) // 2)


_ELIDED_BLOCK = re.compile(r"<elided_chars>\n\d+ characters elided\n</elided_chars>")
# Our wording, close in length to the template's 472-character warning (not copied).
TRUNCATION_WARNING = (
    "<warning>\n"
    "Your last command printed more output than can be shown here in full.\n"
    "Prefer a command that prints less: only the part of the output you need.\n"
    "For a file, show a range of its lines with head, tail or sed instead of all of it.\n"
    "For grep or find, narrow the pattern or the directory so fewer lines match.\n"
    "If you need the whole output, write it to a file and search in that file.\n"
    "Long output fills the context and is sent again with every later request.\n"
    "</warning>"
)


@dataclass(frozen=True)
class TruncateOnArrival:
    """mini-swe-agent's observation template: long outputs become head + tail on arrival."""

    name: str
    limit_chars: int = 10_000
    head_chars: int = 5_000
    tail_chars: int = 5_000
    description: str = ""
    stable: bool = True

    def render(self, view: OutputView) -> Rendering:
        content = view.content
        if len(content) < self.limit_chars:
            return exact(view, "below_limit", f"{len(content)} characters")
        if _ELIDED_BLOCK.search(content):
            return exact(view, "already_truncated")
        elided = len(content) - self.limit_chars
        tail = content[-self.tail_chars :] if self.tail_chars else ""
        shown = (
            f"{TRUNCATION_WARNING}<output_head>\n{content[: self.head_chars]}\n</output_head>\n"
            f"<elided_chars>\n{elided} characters elided\n</elided_chars>\n"
            f"<output_tail>\n{tail}\n</output_tail>"
        )
        return compacted(view, shown, "truncated")

    def recheck(self, view: OutputView, rendering: Rendering) -> Recheck:
        return NEVER  # a pure function of the output


# -- building from data ---------------------------------------------------------------------

_COMMON = ("name", "kind", "description")


def _control(name: str, where: str, spec: Mapping[str, Any]) -> Policy:
    check_keys(where, spec, _COMMON)
    return ControlPolicy(name, text(where, spec, "description"))


def _clear_tool_uses(name: str, where: str, spec: Mapping[str, Any]) -> Policy:
    check_keys(where, spec, (*_COMMON, "trigger", "keep", "clear_at_least", "exclude_tools"))
    return ClearToolUses(
        name,
        trigger=count(where, spec, "trigger", 100_000, at_least=1),
        keep=count(where, spec, "keep", 3, at_least=0),
        clear_at_least=count(where, spec, "clear_at_least", 0, at_least=0),
        exclude_tools=names(where, spec, "exclude_tools"),
        description=text(where, spec, "description"),
    )


def _last_n(name: str, where: str, spec: Mapping[str, Any]) -> Policy:
    check_keys(where, spec, (*_COMMON, "n", "polling"))
    return LastNObservations(
        name,
        n=count(where, spec, "n", 5, at_least=1),
        polling=count(where, spec, "polling", 1, at_least=1),
        description=text(where, spec, "description"),
    )


def _masking(name: str, where: str, spec: Mapping[str, Any]) -> Policy:
    check_keys(where, spec, (*_COMMON, "attention_window"))
    return ObservationMasking(
        name,
        attention_window=count(where, spec, "attention_window", 100, at_least=1),
        description=text(where, spec, "description"),
    )


def _truncate(name: str, where: str, spec: Mapping[str, Any]) -> Policy:
    check_keys(where, spec, (*_COMMON, "limit_chars", "head_chars", "tail_chars"))
    policy = TruncateOnArrival(
        name,
        limit_chars=count(where, spec, "limit_chars", 10_000, at_least=1),
        head_chars=count(where, spec, "head_chars", 5_000, at_least=0),
        tail_chars=count(where, spec, "tail_chars", 5_000, at_least=0),
        description=text(where, spec, "description"),
    )
    if policy.head_chars + policy.tail_chars > policy.limit_chars:
        raise PolicyConfigError(f"{where}: head_chars + tail_chars must not exceed limit_chars")
    return policy


_BUILDERS = {
    "control": _control,
    "anthropic_clear_tool_uses": _clear_tool_uses,
    "swe_agent_last_n": _last_n,
    "openhands_masking": _masking,
    "mini_swe_agent_truncate": _truncate,
}
PEER_KINDS: tuple[str, ...] = tuple(_BUILDERS)


def build_peer(name: str, kind: str, spec: Mapping[str, Any]) -> Policy:
    """A peer replica (or the control) from its file's mapping."""
    return _BUILDERS[kind](name, f"policy {name!r}", spec)
