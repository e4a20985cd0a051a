"""Issue 20 defects 1 and 4: what `decisions` says a rewrite costs, and the gate's batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from jobs.toolout.inputs import load_cache_models
from pipeline.endpoints.offline import OfflineClient
from pipeline.study import Record, UnitContext, UnitSpec
from pipeline.toolout.economics import Candidate, preflight, rates_for
from pipeline.toolout.replay import replay
from pipeline.toolout.runner import ToolOutRunner
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Message, ToolCall, Transcript

POLICIES = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"
GREP = "\n".join(
    f"src/mod_{i}.py:{i}: value = apply(rows)" + ("  # needle" if i % 40 == 7 else "")
    for i in range(90)
)


def _spec(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((POLICIES / f"{name}.yaml").read_text())
    return spec


def _decisions(transcript: Transcript, arm: str, cache_model: str, model: str) -> list[Record]:
    runner = ToolOutRunner(
        (transcript,),
        {arm: _spec(arm)},
        load_cache_models()[cache_model],
        model,
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
    )
    spec = UnitSpec("r", "c", model, "f", arm, 0, 0, 0)
    result = asyncio.run(runner.run(spec, OfflineClient("c"), UnitContext(1, 0.0)))
    return list(result.tables["decisions"])


def _transcript(calls_per_turn: int, turns: int) -> Transcript:
    messages = [Message("system", "you are a coding agent"), Message("user", "find the bug")]
    n = 0
    for t in range(turns):
        calls = tuple(ToolCall(f"c{n + k}", "grep", '{"q": "needle"}') for k in range(3))
        calls = calls[:calls_per_turn]
        messages.append(Message("assistant", f"look for the needle, turn {t}", calls))
        for call in calls:
            text = f"{GREP}\nturn {t} call {call.id}"
            messages.append(Message("tool", text, tool_call_id=call.id, name="grep"))
        n += calls_per_turn
    messages.append(Message("assistant", "done"))
    return Transcript("t/gate", "jsonl", "t.jsonl", tuple(messages))


def test_rewritten_tokens_is_the_cached_span_after_the_output_not_the_new_tail() -> None:
    """Defect 1: R excludes the tool output that arrives on the same request (never cached)."""
    transcript = _transcript(1, 4)
    requests = replay(transcript, _policy("keyword"), estimate_tokens)
    records = [
        r
        for r in _decisions(transcript, "keyword", "deepseek", "deepseek-v4-pro")
        if r["mode"] == "keyword"
    ]
    assert records, "keyword compacts on the second exposure"
    for record in records:
        request = requests[record["request_index"]]
        position = next(
            a.position_tokens for a in request.applied if a.output_index == record["output_index"]
        )
        previous = requests[request.index - 1]
        assert record["rewritten_tokens"] == previous.input_tokens - position
        assert record["rewritten_tokens"] < request.input_tokens - position  # the old, too big


def _policy(name: str) -> Any:
    from pipeline.toolout.policies import build_policy

    return build_policy(_spec(name))


def test_the_gate_charges_the_candidates_of_one_request_as_one_batch() -> None:
    """Defect 4: three grep outputs of one turn are gated together, the premium paid once."""
    transcript = _transcript(3, 3)
    gated = [
        r
        for r in _decisions(transcript, "model", "anthropic", "claude-sonnet-4-5")
        if r["gate_reason"] is not None
    ]
    by_request: dict[int, list[Record]] = {}
    for r in gated:
        by_request.setdefault(r["request_index"], []).append(r)
    assert by_request and len(by_request[min(by_request)]) == 3  # the first turn's three
    for batch in by_request.values():
        assert {r["gate_batch_outputs"] for r in batch} == {len(batch)}
        assert len({r["gate_net_usd"] for r in batch}) == 1  # one decision for the batch
    # the batch's net is the seed's: R from the earliest candidate, D summed over the three
    requests = replay(transcript, _policy("control"), estimate_tokens)
    first = min(by_request)
    outputs = sorted(r["output_index"] for r in by_request[first])
    candidates = [Candidate(p, t, 0) for p, t in _positions(transcript, first, outputs)]
    w, c = rates_for(load_cache_models()["anthropic"], "claude-sonnet-4-5")
    want = preflight(
        candidates, requests[first - 1].input_tokens, future_requests=6.0, write_rate=w, read_rate=c
    )
    assert by_request[first][0]["gate_net_usd"] == want.net_usd


def _positions(transcript: Transcript, index: int, outputs: list[int]) -> list[tuple[int, int]]:
    """(position tokens, tokens) of the outputs in request `index` under control."""
    found = []
    request = replay(transcript, _policy("control"), estimate_tokens, recheck=False)[index]
    for a in request.applied:
        if a.output_index in outputs:
            found.append((a.position_tokens, estimate_tokens(a.rendering.text)))
    return found
