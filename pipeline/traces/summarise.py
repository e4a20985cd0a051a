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


def summary_request(arm: Arm, item: TraceItem, thinking_in_request: bool) -> ChatRequest:
    built = build_request(arm, item)
    sampling = built.sampling
    return ChatRequest(
        messages=built.messages,
        max_tokens=sampling.max_tokens,
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
) -> CompressionOutcome:
    out = CompressionOutcome()
    tokens = _Tokens(counter, no_counter_reason, out)
    for i, item in enumerate(items):
        if not arm.needs_model:
            summary = finish(arm, item, None)
            out.records.append(
                {**await tokens.score(item, summary), **_NO_REQUEST, "summary": summary}
            )
            continue
        request = summary_request(arm, item, thinking_in_request)
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
        out.records.append({**await tokens.score(item, summary), **sent, "summary": summary})
    return out


class _Tokens:
    """Scores with token counts when a counter is at hand; after `no_tokenize` it stops asking."""

    def __init__(self, counter: TokenCounter | None, reason: str, out: CompressionOutcome) -> None:
        self.counter = counter
        self.reason = reason
        self.out = out
        self.cache: dict[str, int] = {}

    async def _count(self, text: str) -> int | None:
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
        trace_n = await self._count(item.text)
        summary_n = await self._count(summary) if trace_n is not None else None
        if trace_n is None or summary_n is None:
            return {**score(item, summary), "token_counter": None, "token_null_reason": self.reason}
        counts = {item.text: trace_n, summary: summary_n}
        record = score(item, summary, count_tokens=counts.__getitem__)
        return {**record, "token_counter": TOKEN_COUNTER, "token_null_reason": None}
