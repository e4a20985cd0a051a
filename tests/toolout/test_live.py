"""Live cached-token replay over scripted chat clients: what is sent, what is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from jobs.toolout.inputs import load_cache_models
from pipeline.chat.errors import TransportFault
from pipeline.chat.messages import ChatRequest, ChatResponse, Usage
from pipeline.endpoints.offline import OfflineClient
from pipeline.study import UnitContext, UnitSpec
from pipeline.toolout.live import (
    TOOL_RESULT_HEADER,
    LiveBudget,
    choose_transcripts,
    wire_messages,
    within_budget,
)
from pipeline.toolout.policies import build_policy
from pipeline.toolout.replay import replay
from pipeline.toolout.runner import ToolOutRunner
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Message, ToolCall, Transcript

POLICIES = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"
BIG = "\n".join(f"line {i}: build output, nothing failed here, step {i}" for i in range(120))
BUDGET = LiveBudget(max_transcripts=2, max_prompt_tokens=20_000, max_requests=50,
                    summary_max_tokens=64)  # fmt: skip


def transcript(tid: str = "t/0", corpus: str = "jsonl", outputs: int = 3, tool: str = "grep"):
    messages = [Message("system", "you are a coding agent"), Message("user", "fix the bug")]
    for i in range(outputs):
        call = ToolCall(f"c{i}", tool, f'{{"pattern": "step {i}"}}')
        messages.append(Message("assistant", f"searching {i}", (call,)))
        messages.append(Message("tool", f"{BIG}\nresult {i}", tool_call_id=f"c{i}", name=tool))
    messages.append(Message("assistant", "done"))
    return Transcript(tid, corpus, f"{tid}.jsonl", tuple(messages))


class PrefixCacheClient:
    """A scripted server with a one-slot prefix cache: cached = characters shared with the
    previous replay request, a quarter per token (the study's estimator), like llama-server."""

    def __init__(self, summary: str = "grep found step lines; nothing failed") -> None:
        self.sent: list[ChatRequest] = []
        self.previous = ""
        self.summary = summary

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.sent.append(request)
        if request.purpose == "summary":
            return ChatResponse(self.summary, "stop", Usage(100, 10), cost_usd=0.0)
        prompt = "".join(f"<{m.role}>{m.content}" for m in request.messages)
        shared = 0
        for a, b in zip(prompt, self.previous, strict=False):
            if a != b:
                break
            shared += 1
        self.previous = prompt
        return ChatResponse("x", "length", Usage(len(prompt) // 4, 1, cached_tokens=shared // 4))


def runner(arm: str, cache_model: str, model: str, transcripts: list[Transcript]):
    spec = yaml.safe_load((POLICIES / f"{arm}.yaml").read_text())
    return ToolOutRunner(
        transcripts,
        {arm: spec},
        load_cache_models()[cache_model],
        model,
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
        live=BUDGET,
    )


def run(r: ToolOutRunner, arm: str, client: object):
    spec = UnitSpec("r", "c", "m", "f", arm, 0, 0, 0)
    return asyncio.run(r.run(spec, client, UnitContext(7, 0.0)))  # type: ignore[arg-type]


def test_choice_is_round_robin_over_corpora_and_needs_a_large_output_in_budget() -> None:
    small = Transcript(
        "s/0", "jsonl", "s.jsonl", (Message("user", "hi"), Message("assistant", "ok"))
    )
    pool = [transcript("a/0", "swe-agent"), transcript("a/1", "swe-agent"), small,
            transcript("b/0", "openhands")]  # fmt: skip
    chosen = choose_transcripts(pool, BUDGET)
    assert [t.id for t in chosen] == ["a/0", "b/0"]
    tight = LiveBudget(2, 100, 50, 64)  # the first large output lies past 400 bytes
    assert choose_transcripts(pool, tight) == []


def test_budget_stops_at_the_first_request_over_the_token_limit_and_caps_the_count() -> None:
    requests = replay(
        transcript(outputs=4),
        build_policy({"name": "exact", "rules": [{"match": "*", "mode": "exact"}]}),
        estimate_tokens,
    )
    limit = requests[2].input_tokens
    sent = within_budget(requests, LiveBudget(1, limit, 50, 64))
    assert [r.index for r in sent] == [0, 1, 2]
    assert [r.index for r in within_budget(requests, LiveBudget(1, 10**6, 2, 64))] == [0, 1]


def test_wire_messages_flatten_tool_results_into_headed_user_turns() -> None:
    requests = replay(
        transcript(outputs=1),
        build_policy({"name": "exact", "rules": [{"match": "*", "mode": "exact"}]}),
        estimate_tokens,
    )
    messages = wire_messages(requests[1])
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1].content.startswith(TOOL_RESULT_HEADER + "\n")
    assert "[tool call grep]" in messages[2].content


def test_two_tool_results_in_a_row_join_one_user_turn() -> None:
    t = transcript(outputs=1)
    extra = Message("tool", "second result", tool_call_id="c0", name="grep")
    t = Transcript(t.id, t.corpus, t.source, (*t.messages[:-1], extra, t.messages[-1]))
    last = wire_messages(
        replay(
            t,
            build_policy({"name": "exact", "rules": [{"match": "*", "mode": "exact"}]}),
            estimate_tokens,
        )[-1]
    )
    assert [m.role for m in last] == ["system", "user", "assistant", "user"]
    assert last[-1].content.count(TOOL_RESULT_HEADER) == 2


def test_live_unit_sends_every_budgeted_request_with_one_output_token_and_records_hits() -> None:
    client = PrefixCacheClient()
    result = run(runner("control", "llama-server", "SmolLM2-135M-Instruct", [transcript()]),
                 "control", client)  # fmt: skip
    assert result.outcome.valid
    turns = result.tables["turns"]
    assert len(client.sent) == len(turns) == 4
    assert all(r.max_tokens == 1 and r.purpose == "replay" and r.seed == 7 for r in client.sent)
    assert all(t["live_sent"] for t in turns)
    assert [t["reported_cached_tokens"] > 0 for t in turns] == [False, True, True, True]
    row = result.row
    assert row["live"] and row["reported_cached_tokens"] == sum(
        t["reported_cached_tokens"] for t in turns
    )
    assert row["replay_cached_tokens"] > 0  # the prediction for the same requests
    assert row["summaries_requested"] == 0
    assert len(client.sent) == 4  # the engine bills them (tests/sweep/test_budget_per_request.py)


def test_a_priced_gate_that_approves_gets_one_summary_per_output_reused_afterwards() -> None:
    client = PrefixCacheClient()
    result = run(runner("model", "no-cache", "deepseek-v4-pro", [transcript(outputs=3)]),
                 "model", client)  # fmt: skip
    summaries = [r for r in client.sent if r.purpose == "summary"]
    assert result.row["summaries_requested"] == len(summaries) >= 1
    assert len({r.messages[1].content for r in summaries}) == len(summaries)  # once per output
    assert "Intent: searching 0" in summaries[0].messages[1].content
    shown = [d for d in result.tables["decisions"] if d["mode"] == "model"]
    assert shown and all(d["gate_approved"] for d in shown if d["gate_approved"] is not None)
    replays = [r for r in client.sent if r.purpose == "replay"]
    assert any(client.summary in m.content for r in replays for m in r.messages)


def test_at_deepseek_prices_the_gate_makes_no_summariser_call() -> None:
    client = PrefixCacheClient()
    result = run(runner("model", "deepseek", "deepseek-v4-pro", [transcript(outputs=3)]),
                 "model", client)  # fmt: skip
    assert not [r for r in client.sent if r.purpose == "summary"]
    reasons = {d["reason"] for d in result.tables["decisions"] if d["gate_reason"] is not None}
    assert reasons == {"preflight_rejected"}


def test_on_a_free_local_cache_the_gate_finds_no_saving_and_asks_nothing() -> None:
    client = PrefixCacheClient()
    result = run(runner("model", "llama-server", "SmolLM2-135M-Instruct", [transcript()]),
                 "model", client)  # fmt: skip
    assert result.row["summaries_requested"] == 0
    gated = [d for d in result.tables["decisions"] if d["gate_reason"] is not None]
    assert gated and {d["gate_reason"] for d in gated} == {"no_saving"}


class FailingClient:
    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise TransportFault("connection refused")


def test_an_infrastructure_fault_ends_the_unit_retryable_with_its_kind() -> None:
    result = run(runner("control", "llama-server", "SmolLM2-135M-Instruct", [transcript()]),
                 "control", FailingClient())  # fmt: skip
    assert not result.outcome.valid and result.outcome.retryable
    assert result.outcome.invalid_reason == "infrastructure:transport"


def test_offline_rows_say_nothing_was_sent() -> None:
    spec = yaml.safe_load((POLICIES / "control.yaml").read_text())
    models = load_cache_models()
    r = ToolOutRunner(
        [transcript()],
        {"control": spec},
        models["deepseek"],
        "deepseek-v4-pro",
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
    )
    result = run(r, "control", OfflineClient("c"))
    assert result.row["live"] is False and result.row["reported_cached_tokens"] is None
    assert result.row["summaries_requested"] is None
    assert not any(t["live_sent"] for t in result.tables["turns"])
    assert all(t["reported_prompt_tokens"] is None for t in result.tables["turns"])


def test_choice_prefers_transcripts_a_policy_rewrites_and_ranks_by_tokens_removed() -> None:
    pool = [transcript("a/0", "swe-agent"), transcript("a/1", "swe-agent"),
            transcript("a/2", "swe-agent")]  # fmt: skip
    removed = {"a/0": 0, "a/1": 50, "a/2": 500}
    chosen = choose_transcripts(pool, BUDGET, lambda t, _n: removed[t.id])
    assert [t.id for t in chosen] == ["a/2", "a/1"]  # a/0: no policy changes anything there
    alike = choose_transcripts(pool, BUDGET, lambda _t, _n: 0)  # one policy: any will do
    assert [t.id for t in alike] == ["a/0", "a/1"]


def test_offline_an_approved_model_candidate_stays_exact_for_want_of_a_summariser() -> None:
    spec = yaml.safe_load((POLICIES / "model.yaml").read_text())
    r = ToolOutRunner(
        [transcript(outputs=3)],
        {"model": spec},
        load_cache_models()["no-cache"],
        "deepseek-v4-pro",
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
    )
    result = run(r, "model", OfflineClient("c"))
    gated = [d for d in result.tables["decisions"] if d["gate_approved"]]
    assert gated and {d["reason"] for d in gated} == {"no_summariser"}
