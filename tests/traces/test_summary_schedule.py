"""How a compression unit schedules its summaries: staggered per arm, budgeted by the trace."""

from __future__ import annotations

import asyncio
from typing import Any

from pipeline.chat.messages import ChatRequest, ChatResponse, Usage
from pipeline.traces.compression.arms import load_arm
from pipeline.traces.compression.items import TraceItem
from pipeline.traces.summarise import run_compression, stagger_start, staggered, summary_cap

SPEC = {"name": "p", "kind": "prompt", "description": "d", "in_seed": True, "max_tokens": 300}
ARM = load_arm({**SPEC, "system_prompt": "s", "user_template": "{trace} go"})


def item(n: int, chars: int) -> TraceItem:
    return TraceItem(f"t{n}", "x" * chars, "jsonl", "test", False, "b")


ITEMS = [item(0, 40), item(1, 2000), item(2, 90), item(3, 700)]


class Server:
    """Counts a text as one token per 4 characters, replies 'ok'; logs every call in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        trace = request.messages[1].content.removesuffix(" go")
        self.calls.append(("summary", (len(trace), request.max_tokens)))
        return ChatResponse("ok", "stop", Usage(10, 1), sent_sampling={"temperature": 0.0})

    async def count_tokens(self, text: str) -> int:
        self.calls.append(("count", len(text)))
        return len(text) // 4


def summaries(server: Server) -> list[tuple[int, int]]:
    """(trace length, max_tokens) of each summary request, in the order sent."""
    return [value for kind, value in server.calls if kind == "summary"]


def compress(server: Server, *, start: int = 0, counter: bool = True) -> list[dict[str, Any]]:
    run = run_compression(
        server,
        ARM,
        ITEMS,
        repeat_check=1,
        thinking_in_request=True,
        counter=server if counter else None,
        start=start,
    )
    return asyncio.run(run).records


def test_a_unit_works_from_its_start_round_the_items_and_records_them_in_item_order() -> None:
    server = Server()
    records = compress(server, start=2)
    sent = [length for length, _cap in summaries(server)]
    assert sent == [90, 700, 40, 40, 2000]  # from item 2, round to item 1; item 0 twice
    assert [r["summary"] for r in records] == ["ok"] * 4
    assert [r["repeat_identical"] for r in records] == [True, None, None, None]
    assert records[1]["trace_tokens"] == 500 and records[2]["trace_tokens"] == 22


def test_the_arms_of_a_server_start_at_spread_items() -> None:
    arms = ["churn", "fact_preserving", "hybrid", "naive", "state_block"]
    starts = [stagger_start(a, list(reversed(arms)), 7) for a in arms]
    assert starts == [0, 1, 2, 4, 5]
    assert staggered(4, 6) == [2, 3, 0, 1] and staggered(0, 3) == []
    assert stagger_start("extractive", arms, 7) == 0


def test_a_summary_is_budgeted_no_more_tokens_than_its_trace_counted_before_it() -> None:
    server = Server()
    compress(server)
    first_summary = server.calls.index(("summary", (40, 10)))
    assert server.calls[first_summary - 1] == ("count", 40)  # the trace is counted first
    caps = dict(summaries(server))
    assert caps == {40: 10, 2000: 300, 90: 22, 700: 175}  # the arm's 300 stays the ceiling


def test_without_a_counter_the_budget_is_one_token_per_two_characters() -> None:
    server = Server()
    compress(server, counter=False)
    assert summaries(server)[:2] == [(40, 20), (40, 20)]
    assert summary_cap(300, item(9, 2000), None) == 300
    assert summary_cap(300, item(9, 0), 0) == 1  # an empty trace still gets one token
