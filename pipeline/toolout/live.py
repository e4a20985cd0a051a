"""Live cached-token replay: send a policy's replayed requests and read what the cache reports.

Offline, a cache model predicts each request's cached tokens. Live (a panel with endpoints),
the same requests go to a served model with `max_tokens=1`, and the provider's reported cached
tokens (every dialect `pipeline.endpoints.usage` reads) stand beside the prediction. Decisions
the seed leaves open (docs/toolout.md, "Live replay"):

- The chat layer carries role and text only, so a request is flattened: a tool result is a
  user message headed `[tool result]`, an assistant turn's tool calls stay in its text as the
  replay writes them (`[tool call NAME] ARGS`), and consecutive messages of one role are
  joined by a blank line. Every step is a pure function of one message, so a prefix the
  policy keeps stable stays byte-stable on the wire.
- The budget keeps a live run small: at most `max_transcripts` transcripts, each replayed up
  to its first request over `max_prompt_tokens` (estimated) or `max_requests`. Eligible ones
  have an output of 2,000 bytes or more inside the budget that at least one of the run's
  policies rewrites there (a large output every policy keeps exact, like OpenHands'
  `str_replace_editor` reads, gives no contrast); they are taken round-robin over corpora,
  each corpus's in order of the most tokens some policy removes within budget (then by id).
  Requests past the budget are not sent; the turns table says how many were.
- Each (unit, transcript) opens its first message with a salt line, `[replay SALT]`: units of
  one run replay the same transcripts, and without it a unit would read the cache another
  unit (or an earlier run) left on a shared server, which the per-session prediction does not
  model. With it every transcript starts cold on the wire as in the prediction.
- Requests of one transcript go one at a time, in order (a cache hit needs the previous
  request to have finished); transcripts run one after another, so one unit keeps one slot
  of a local server warm.
Pure apart from the ChatClient it is handed: no I/O of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.chat.messages import ChatClient, ChatMessage, ChatRequest, Usage
from pipeline.toolout.replay import ReplayedRequest
from pipeline.toolout.transcript import Transcript

LARGE_OUTPUT_BYTES = 2000
TOOL_RESULT_HEADER = "[tool result]"


@dataclass(frozen=True)
class LiveBudget:
    """How much of the corpus a live run sends (study.live in the config)."""

    max_transcripts: int
    max_prompt_tokens: int
    max_requests: int
    summary_max_tokens: int


@dataclass(frozen=True)
class LiveTurn:
    """One replayed request as sent, and what the endpoint reported for it."""

    request_index: int
    usage: Usage
    cache_discount_usd: float | None
    latency_s: float
    cost_usd: float


def _in_budget(transcript: Transcript, budget: LiveBudget) -> tuple[int, bool]:
    """(requests that fit the budget, whether a large output lies within them), by bytes."""
    limit_bytes = budget.max_prompt_tokens * 4  # the byte estimator's inverse
    seen, requests, large, large_sent = 0, 0, False, False
    for message in transcript.messages:
        if message.role == "assistant":  # a request holds every message before this one
            if seen > limit_bytes or requests == budget.max_requests:
                break
            requests += 1
            large_sent = large_sent or large
        seen += len((message.content or "").encode("utf-8"))
        large = large or (message.is_tool_output and message.size_bytes >= LARGE_OUTPUT_BYTES)
    return requests, large_sent


def choose_transcripts(
    transcripts: Sequence[Transcript],
    budget: LiveBudget,
    removable: Callable[[Transcript, int], int] = lambda _t, _n: 1,
) -> list[Transcript]:
    """The live subset (see the module docstring); deterministic given the corpus.

    `removable(transcript, requests)`: the most input tokens any policy removes on the
    transcript's first `requests` requests (the runner replays its policies to answer); a
    transcript where none removes any is left out, unless none does anywhere (one policy).
    """
    candidates = []
    for t in transcripts:
        requests, eligible = _in_budget(t, budget)
        if eligible:
            candidates.append((-removable(t, requests), -requests, t.id, t))
    if any(c[0] < 0 for c in candidates):  # else one policy alone (or all alike): any will do
        candidates = [c for c in candidates if c[0] < 0]
    by_corpus: dict[str, list[tuple[int, int, str, Transcript]]] = {}
    for c in candidates:
        by_corpus.setdefault(c[3].corpus, []).append(c)
    chosen: list[Transcript] = []
    queues = [[t for *_, t in sorted(v, key=lambda e: e[:3])] for v in by_corpus.values()]
    while len(chosen) < budget.max_transcripts and any(queues):
        for queue in queues:
            if queue and len(chosen) < budget.max_transcripts:
                chosen.append(queue.pop(0))
    return chosen


def within_budget(
    requests: Sequence[ReplayedRequest], budget: LiveBudget
) -> tuple[ReplayedRequest, ...]:
    """The requests sent live: up to the first one over the token budget or the count cap."""
    sent: list[ReplayedRequest] = []
    for request in requests[: budget.max_requests]:
        if request.input_tokens > budget.max_prompt_tokens:
            break
        sent.append(request)
    return tuple(sent)


def wire_messages(request: ReplayedRequest, salt: str = "") -> tuple[ChatMessage, ...]:
    """The request's blocks as role-and-text chat messages (flattened as documented above)."""
    merged: list[ChatMessage] = []
    for i, block in enumerate(request.blocks):
        role, text = block.role, block.text
        if i == 0 and salt:
            text = f"[replay {salt}]\n{text}"
        if role == "tool":
            role, text = "user", f"{TOOL_RESULT_HEADER}\n{text}"
        if merged and merged[-1].role == role:
            merged[-1] = ChatMessage(role, f"{merged[-1].content}\n\n{text}")
        else:
            merged.append(ChatMessage(role, text))
    return tuple(merged)


async def send_live(
    client: ChatClient, requests: Sequence[ReplayedRequest], *, seed: int, salt: str
) -> list[LiveTurn]:
    """Send each request in order with max_tokens=1 and keep what the endpoint reported."""
    turns = []
    for request in requests:
        started = time.monotonic()
        response = await client.complete(
            ChatRequest(
                messages=wire_messages(request, salt),
                max_tokens=1,
                temperature=0.0,
                seed=seed,
                purpose="replay",
            )
        )
        turns.append(
            LiveTurn(
                request_index=request.index,
                usage=response.usage,
                cache_discount_usd=response.cache_discount_usd,
                latency_s=time.monotonic() - started,
                cost_usd=response.cost_usd,
            )
        )
    return turns
