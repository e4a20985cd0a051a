"""The oracle's fast schedule cost equals a full replay and account, bit for bit (issue 20)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import partial

import pytest

from pipeline.config.schema import EndpointConfig
from pipeline.toolout.accounting import RunningAccount, account_incremental
from pipeline.toolout.oracle import Schedule, ScheduledPolicy, eligible_outputs, oracle_schedule
from pipeline.toolout.replay import replay
from pipeline.toolout.runner import ToolOutRunner
from pipeline.toolout.schedule_cost import ScheduleCost, replayed_cost
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Message, ToolCall, Transcript
from tests.golden.toolout_replay import endpoints, study


def _runners() -> Iterator[tuple[EndpointConfig, ToolOutRunner]]:
    the_study = study()
    for endpoint in endpoints():
        yield endpoint, the_study.runner(endpoint)


RUNNERS = list(_runners())
TRANSCRIPTS = sorted(study().transcripts, key=lambda t: t.requests)


def _slow(runner: ToolOutRunner, transcript: Transcript) -> Callable[[Schedule], float]:
    """The cost the oracle's search read before schedule_cost.py: replay, then account."""
    pricing = {"think_time_s": runner.think_time_s, "estimate": estimate_tokens}
    return partial(
        replayed_cost, transcript, cache_model=runner.cache_model, model=runner.model, **pricing
    )


def _fast(runner: ToolOutRunner, transcript: Transcript) -> ScheduleCost:
    cost = runner._schedule_cost(transcript)
    assert isinstance(cost, ScheduleCost)
    return cost


def _recording(
    cost: ScheduleCost, priced: list[tuple[dict[int, int], float]]
) -> Callable[[Schedule], float]:
    def recorded(schedule: Schedule) -> float:
        value = cost(schedule)
        priced.append((dict(schedule), value))
        return value

    return recorded


def _mid_sized() -> Transcript:
    with_outputs = [t for t in TRANSCRIPTS if len(eligible_outputs(t)) >= 6]
    return with_outputs[len(with_outputs) // 2]


@pytest.mark.parametrize(("endpoint", "runner"), RUNNERS, ids=[e.config_id for e, _ in RUNNERS])
def test_schedules_in_any_order_cost_what_a_full_replay_costs(
    endpoint: EndpointConfig, runner: ToolOutRunner
) -> None:
    # random schedules: each differs anywhere from the last, so the kept state is reused,
    # advanced or thrown away (a change before the kept request restarts from request 0)
    transcript = _mid_sized()
    slow, fast = _slow(runner, transcript), _fast(runner, transcript)
    first = dict(eligible_outputs(transcript))
    rng = random.Random(20)
    schedules: list[dict[int, int]] = [{}, dict(first), {}]
    for _ in range(25):
        schedules.append({o: f for o, f in first.items() if rng.random() < 0.5})
    for i in range(len(first)):  # one output added at a time, in order, as the search does
        schedules.append(dict(list(first.items())[: i + 1]))
    for schedule in schedules:
        assert fast(schedule) == slow(schedule), (endpoint.config_id, schedule)


def test_a_schedule_that_rewrites_later_is_priced_by_the_full_replay() -> None:
    _, runner = RUNNERS[0]
    transcript = _mid_sized()
    output, first = eligible_outputs(transcript)[0]
    later = {output: first + 1}
    assert _fast(runner, transcript)(later) == _slow(runner, transcript)(later)
    assert _slow(runner, transcript)(later) != _slow(runner, transcript)({output: first})


def test_a_fork_bills_on_without_changing_the_account_it_came_from() -> None:
    _, runner = RUNNERS[0]
    transcript = _mid_sized()
    requests = replay(transcript, ScheduledPolicy({}), estimate_tokens)
    whole = account_incremental(requests, runner.cache_model, runner.model).requests
    running = RunningAccount(runner.cache_model, runner.model, requests)
    half = len(requests) // 2
    for i in range(half):
        running.bill(i, requests[i], requests[i].slots)
    twin = running.fork()
    rest = [twin.bill(i, requests[i], requests[i].slots) for i in range(half, len(requests))]
    again = [running.usd(i, requests[i], requests[i].slots) for i in range(half, len(requests))]
    assert rest == list(whole[half:])
    assert again == [r.cost_usd for r in whole[half:]]


@pytest.mark.slow
@pytest.mark.parametrize(("endpoint", "runner"), RUNNERS, ids=[e.config_id for e, _ in RUNNERS])
def test_every_schedule_the_search_prices_on_the_shipped_corpus_costs_what_a_replay_does(
    endpoint: EndpointConfig, runner: ToolOutRunner
) -> None:
    for transcript in TRANSCRIPTS:
        slow, fast = _slow(runner, transcript), _fast(runner, transcript)
        priced: list[tuple[dict[int, int], float]] = []
        oracle_schedule(transcript, _recording(fast, priced))
        for schedule, value in priced:
            assert value == slow(schedule), (endpoint.config_id, transcript.id, schedule)


def _paused_transcript() -> Transcript:
    """Five requests, the fourth after a pause longer than Anthropic's 300 s TTL."""
    messages = [Message("system", "You are a coding agent. " * 400), Message("user", "go")]
    for i, at in enumerate([0.0, 10.0, 20.0, 400.0, 410.0]):
        call = ToolCall(f"c{i}", "bash", f"cmd {i}")
        messages += [
            Message("assistant", f"step {i}", (call,), timestamp=at),
            Message(
                "tool",
                "\n".join(f"{i}: line {j}" for j in range(400)),
                tool_call_id=f"c{i}",
                name="bash",
            ),
        ]
    return Transcript("t/paused", "jsonl", "t.jsonl", tuple(messages))


def test_a_fork_keeps_its_own_cache_times_across_a_pause() -> None:
    # the twin reads the cache at 400 s and 410 s; the account it came from must still see
    # its entries as last used at 20 s, so they have expired by 400 s
    runner = next(r for e, r in RUNNERS if e.provider == "anthropic")
    requests = replay(_paused_transcript(), ScheduledPolicy({}), estimate_tokens)
    whole = account_incremental(requests, runner.cache_model, runner.model).requests
    assert whole[3].misses.ttl_expiry.tokens > 0  # the pause expires the entries
    running = RunningAccount(runner.cache_model, runner.model, requests)
    for i in range(3):
        running.bill(i, requests[i], requests[i].slots)
    twin = running.fork()
    for i in range(3, 5):
        twin.bill(i, requests[i], requests[i].slots)
    assert [running.bill(i, requests[i], requests[i].slots) for i in (3, 4)] == list(whole[3:])
