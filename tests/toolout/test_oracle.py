"""The oracle arm: the cheapest deterministic rewrite schedule, knowing the future."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.offline import OfflineClient
from pipeline.study import UnitContext, UnitSpec
from pipeline.toolout.oracle import ScheduledPolicy, eligible_outputs, oracle_schedule
from pipeline.toolout.replay import replay
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Message, ToolCall, Transcript

MODELS = {
    "deepseek": "deepseek-v4-pro",
    "no-cache": "deepseek-v4-pro",
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5",
}
BIG = "\n".join(f"row {i}: plain output" for i in range(300))


def _transcript() -> Transcript:
    messages = [Message("user", "go")]
    contents = [BIG, "short", f"{BIG}\nTraceback (most recent call last):\n  boom", BIG]
    for i, content in enumerate(contents):
        call = ToolCall(f"c{i}", "bash", f"cmd {i}")
        messages += [
            Message("assistant", f"step {i}", (call,)),
            Message("tool", content, tool_call_id=f"c{i}", name="bash"),
        ]
    messages.append(Message("assistant", "done"))
    return Transcript("t/1", "jsonl", "t.jsonl", tuple(messages))


def test_only_large_outputs_that_are_not_forced_exact_are_eligible() -> None:
    assert eligible_outputs(_transcript()) == [(0, 1), (3, 4)]


def test_scheduled_policy_is_exact_before_its_request_and_stable_after() -> None:
    requests = replay(_transcript(), ScheduledPolicy({0: 2}), estimate_tokens, recheck=False)
    shown = [r.applied[0].rendering for r in requests[1:]]
    assert not shown[0].changed and shown[1].changed and shown[2].text == shown[1].text


def test_search_keeps_the_cheaper_of_first_exposure_and_never_for_each_output() -> None:
    # a cost that prefers output 0 compacted and output 3 kept exact
    tried: list[dict[int, int]] = []

    def cost(schedule: dict[int, int]) -> float:
        tried.append(dict(schedule))
        return (0 if 0 in schedule else 1) + (5 if 3 in schedule else 0)

    assert oracle_schedule(_transcript(), cost) == {0: 1}  # type: ignore[arg-type]
    first = dict(eligible_outputs(_transcript()))
    assert tried and all(s[o] == first[o] for s in tried for o in s)  # no later request tried
    assert any(3 in s for s in tried)  # output 3 was tried compacted and refused


@pytest.mark.parametrize("provider", ["deepseek", "no-cache", "anthropic", "openai"])
def test_oracle_is_never_dearer_than_a_deterministic_policy(provider: str) -> None:
    from pipeline.studies.toolout import DEFINITION

    study = DEFINITION.configure(
        {
            "name": "toolout",
            "corpora": ["swe-agent"],
            "policies": ["control", "deterministic_first_pass"],
        }
    )
    models = {"deepseek": "deepseek-v4-pro", "no-cache": "deepseek-v4-pro"}
    model = models.get(
        provider, {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}.get(provider, "")
    )
    runner = study.runner(EndpointConfig(f"{provider}:{model}", model, provider, provider=provider))

    def cost(arm: str) -> float:
        spec = UnitSpec("r", "c", "m", "f", arm, 0, 0, 0)
        result = asyncio.run(runner.run(spec, OfflineClient("c"), UnitContext(1, 0.0)))
        return float(result.row["replay_cost_usd"])

    oracle = cost("oracle")
    assert oracle <= cost("deterministic_first_pass") + 1e-12
    assert oracle <= cost("control") + 1e-12
