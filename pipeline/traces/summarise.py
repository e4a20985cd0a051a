"""The compression unit: one summariser arm over the sampled traces, scored on every fact.

Greedy decoding with thinking off is checked twice (seed 002 found a harness whose defaults
overwrote temperature 0): in the body actually sent (`ChatResponse.sent_sampling`, read by
`greedy.inspect_body`, on every row) and in behaviour (the first `repeat_check` traces are
summarised twice and the replies compared by hash). The extractive arm sends nothing. Decisions
(docs/traces.md, "Reasoning traces: the live part"):

- Thinking off: by default the request carries `chat_template_kwargs.enable_thinking=false`
  (llama.cpp, vLLM); `study.compression.thinking_off=endpoint` leaves it to the endpoint's
  `reasoning` form for APIs that refuse the field.
- A rejected summary request (the trace too long for the server, say) scores an empty summary
  with the reason in `decoding_problem`; an infrastructure fault ends the unit and is retried.
- Token compression needs the model's own tokenizer. Where the unit's endpoint is a local
  llama-server, every trace and summary is counted with its `/tokenize` (the client's
  `TokenCounter` capability, `counter_of`), filling `trace_tokens`, `summary_tokens` and
  `compression_tokens`, with `token_counter = "llama-server /tokenize"`. Elsewhere (a hosted
  API has no tokenizer route; a server without the route answers `no_tokenize`) they stay
  null and `token_null_reason` says why. A count is not a model request (no generation).
- A summary is never budgeted more tokens than its trace (`summary_cap`): the trace is
  counted before its summary is asked for.
- Each arm's unit starts at its own item (`stagger_start`), so a server's arms share each
  trace's prefill through its prompt cache instead of computing it side by side.
Pure apart from the ChatClient it is handed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import ChatClient, ChatRequest, ChatResponse, TokenCounter
from pipeline.study import Record
from pipeline.study_validity import rejected
from pipeline.traces.compression.arms import Arm, build_request, finish
from pipeline.traces.compression.greedy import compare_runs, inspect_body
from pipeline.traces.compression.items import TraceItem
from pipeline.traces.compression.metrics import score

_NO_REQUEST: Record = {
    "sent_temperature": None,
    "sent_top_p": None,
    "sent_seed": None,
    "sent_enable_thinking": None,
    "greedy": None,
    "thinking_state": None,
    "decoding_problem": None,
    "finish_reason": None,
    "prompt_tokens": None,
    "completion_tokens": None,
    "repeat_identical": None,
}
TOKEN_COUNTER = "llama-server /tokenize"
CHARS_PER_TOKEN_FLOOR = 2  # the local tokenizers spend 3.4-4.2 characters a token on the traces
NOT_LOCAL = "the endpoint is not a local llama-server: no tokenizer of the model is reachable"


@dataclass
class CompressionOutcome:
    records: list[Record] = field(default_factory=list)
    requests: int = 0
    token_requests: int = 0

    @property
    def greedy_ok(self) -> bool | None:
        checked = [r["greedy"] for r in self.records if r["greedy"] is not None]
        states = [r["thinking_state"] for r in self.records if r["thinking_state"] is not None]
        if not checked:
            return None
        return all(checked) and all(s == "off" for s in states)

    @property
    def repeat_identical(self) -> bool | None:
        checked = [r["repeat_identical"] for r in self.records if r["repeat_identical"] is not None]
        return all(checked) if checked else None


def summary_request(
    arm: Arm, item: TraceItem, thinking_in_request: bool, max_tokens: int | None = None
) -> ChatRequest:
    """The summary's request; `max_tokens` (see `summary_cap`) replaces the arm's budget."""
    built = build_request(arm, item)
    sampling = built.sampling
    return ChatRequest(
        messages=built.messages,
        max_tokens=sampling.max_tokens if max_tokens is None else max_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        seed=sampling.seed,
        template_kwargs={"enable_thinking": sampling.enable_thinking}
        if thinking_in_request
        else None,
        purpose="summary",
    )


def _sent(response: ChatResponse) -> Record:
    check = inspect_body(response.sent_sampling)
    return {
        "sent_temperature": check.temperature,
        "sent_top_p": check.top_p,
        "sent_seed": check.seed,
        "sent_enable_thinking": check.enable_thinking,
        "greedy": check.greedy,
        "thinking_state": check.thinking_state,
        "decoding_problem": check.problem,
        "finish_reason": response.finish_reason,
        "prompt_tokens": response.usage.prompt_tokens,
        "completion_tokens": response.usage.completion_tokens,
    }


async def run_compression(
    client: ChatClient,
    arm: Arm,
    items: Sequence[TraceItem],
    *,
    repeat_check: int,
    thinking_in_request: bool,
    counter: TokenCounter | None = None,
    no_counter_reason: str = NOT_LOCAL,
    start: int = 0,
) -> CompressionOutcome:
    """Every item summarised and scored; records in the items' order whatever `start` is.

    The unit works through the items from `start` on, wrapping round, so the units of
    different arms on one server work on different traces at a time: a trace's prefill is
    then computed once and served from the prompt cache to the arms that come later, where
    arms in lockstep prefilled it side by side (docs/traces.md, "Order")."""
    out = CompressionOutcome()
    tokens = _Tokens(counter, no_counter_reason, out)
    records: list[Record | None] = [None] * len(items)
    for i in staggered(len(items), start):
        item = items[i]
        if not arm.needs_model:
            summary = finish(arm, item, None)
            records[i] = {**await tokens.score(item, summary), **_NO_REQUEST, "summary": summary}
            continue
        cap = summary_cap(arm.prompts.max_tokens, item, await tokens.count(item.text))
        request = summary_request(arm, item, thinking_in_request, cap)
        out.requests += 1
        try:
            response = await client.complete(request)
        except RequestRejected as exc:
            summary = ""
            sent = {**_NO_REQUEST, "decoding_problem": rejected(exc.reason)}
        else:
            text = "" if response.refusal else response.text
            summary = finish(arm, item, text)
            sent = {**_NO_REQUEST, **_sent(response)}
            if i < repeat_check:
                out.requests += 1
                again = await client.complete(request)
                sent["repeat_identical"] = compare_runs(text, again.text).deterministic
        records[i] = {**await tokens.score(item, summary), **sent, "summary": summary}
    out.records = [r for r in records if r is not None]
    return out


def staggered(count: int, start: int) -> list[int]:
    """0..count-1 beginning at `start` (modulo count) and wrapping round."""
    if count == 0:
        return []
    first = start % count
    return [*range(first, count), *range(first)]


def stagger_start(arm_name: str, model_arms: Sequence[str], items: int) -> int:
    """Where a model arm's unit starts: the arms spread evenly over the items, by name order."""
    ordered = sorted(model_arms)
    if arm_name not in ordered or not ordered:
        return 0
    return ordered.index(arm_name) * items // len(ordered)


def summary_cap(arm_max: int, item: TraceItem, trace_tokens: int | None) -> int:
    """The completion budget: the arm's, and never more than the trace itself.

    A summary longer than its trace compresses nothing, and the tiny local models run on to
    any budget they are given; capping at the trace's length keeps every summary that
    compresses and saves the decoding of those that would not. The trace's length is its
    count in the served vocabulary where the server can count, else an upper estimate of
    one token per `CHARS_PER_TOKEN_FLOOR` characters."""
    if trace_tokens is None:
        trace_tokens = -(-len(item.text) // CHARS_PER_TOKEN_FLOOR)
    return max(1, min(arm_max, trace_tokens))


class _Tokens:
    """Scores with token counts when a counter is at hand; after `no_tokenize` it stops asking."""

    def __init__(self, counter: TokenCounter | None, reason: str, out: CompressionOutcome) -> None:
        self.counter = counter
        self.reason = reason
        self.out = out
        self.cache: dict[str, int] = {}

    async def count(self, text: str) -> int | None:
        if self.counter is None:
            return None
        if text not in self.cache:
            try:
                self.out.token_requests += 1
                self.cache[text] = await self.counter.count_tokens(text)
            except RequestRejected as exc:
                self.counter = None
                self.reason = f"the server refused /tokenize ({exc.reason})"
                return None
        return self.cache[text]

    async def score(self, item: TraceItem, summary: str) -> Record:
        trace_n = await self.count(item.text)
        summary_n = await self.count(summary) if trace_n is not None else None
        if trace_n is None or summary_n is None:
            return {**score(item, summary), "token_counter": None, "token_null_reason": self.reason}
        counts = {item.text: trace_n, summary: summary_n}
        record = score(item, summary, count_tokens=counts.__getitem__)
        return {**record, "token_counter": TOKEN_COUNTER, "token_null_reason": None}
