"""The model mode's summaries from a summariser endpoint, fetched between pure replays.

A replay is synchronous and pure, and a summary is a network call, so the runner alternates:
replay with a `SummaryBook` that answers from the summaries it holds and notes each output it
was asked about; fetch those summaries; replay again. Each output is summarised at most once,
so the loop ends after at most one pass per output (usually two passes). An output whose
summary the endpoint could not give stays exact (`summary_unavailable`), as Torana's compactor
does. Decisions (docs/toolout.md, "Live replay"):

- The summary is intent-guided: the prompt gives the calling turn's text and arguments (the
  replay's intent) and asks to keep what that intent needs, every path, identifier, number and
  error verbatim, in plain text shorter than the output.
- An output too large for the endpoint's budget is sent as its head and tail (half the budget
  each, by the byte estimator) with the omitted byte count between them.
- The summary's price (the reply's cost) is the gate's S in its final check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.chat.messages import ChatClient, ChatMessage, ChatRequest
from pipeline.toolout.policies.base import OutputView

SYSTEM = (
    "You compress one tool output for a coding agent that will keep reading it. Keep what the "
    "agent's intent below needs. Copy every file path, identifier, number, error message and "
    "failing test verbatim. Drop repetition and boilerplate. Answer with the compressed output "
    "only, in plain text, shorter than the original."
)


@dataclass
class SummaryBook:
    """Summaries by output index; remembers which outputs a replay asked about."""

    summaries: dict[int, str | None] = field(default_factory=dict)
    costs: dict[int, float] = field(default_factory=dict)
    wanted: dict[int, OutputView] = field(default_factory=dict)

    def __call__(self, view: OutputView) -> str | None:
        if view.output_index in self.summaries:
            return self.summaries[view.output_index]
        self.wanted.setdefault(view.output_index, view)
        return None

    def cost_of(self, output_index: int) -> float:
        return self.costs.get(output_index, 0.0)

    def take_wanted(self, last_request: int) -> list[OutputView]:
        """Outputs asked about on requests up to `last_request` (the rest are never sent)."""
        views = [v for v in self.wanted.values() if v.request_index <= last_request]
        self.wanted.clear()
        return sorted(views, key=lambda v: v.output_index)


def summary_request(view: OutputView, budget_bytes: int, max_tokens: int) -> ChatRequest:
    content = view.content
    raw = content.encode("utf-8")
    if len(raw) > budget_bytes:
        half = budget_bytes // 2
        head = raw[:half].decode("utf-8", "ignore")
        tail = raw[-half:].decode("utf-8", "ignore")
        content = f"{head}\n[... {len(raw) - 2 * half} bytes omitted ...]\n{tail}"
    user = (
        f"Intent: {view.intent or '(none recorded)'}\n"
        f"Tool: {view.tool_name}\n"
        f"Output ({len(raw)} bytes):\n{content}"
    )
    return ChatRequest(
        messages=(ChatMessage("system", SYSTEM), ChatMessage("user", user)),
        max_tokens=max_tokens,
        temperature=0.0,
        purpose="summary",
    )


async def fetch(
    client: ChatClient,
    book: SummaryBook,
    views: Sequence[OutputView],
    *,
    budget_bytes: int,
    max_tokens: int,
) -> int:
    """Ask for each view's summary; returns how many requests were made."""
    for view in views:
        response = await client.complete(summary_request(view, budget_bytes, max_tokens))
        text = "" if response.refusal else response.text.strip()
        book.summaries[view.output_index] = text or None
        book.costs[view.output_index] = response.cost_usd
    return len(views)
