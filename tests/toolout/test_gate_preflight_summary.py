"""The model mode's preflight from a request's summed batch (GateLog._preflight) gives exactly
the decision `economics.preflight` gives on the whole batch, whichever output is asked."""

from __future__ import annotations

import random

from jobs.toolout.inputs import load_cache_models
from pipeline.toolout.economics import Candidate, preflight
from pipeline.toolout.policies.base import OutputView
from pipeline.toolout.replay import Position
from pipeline.toolout.runner import GateLog


def _view(output: int, request: int, content: str) -> OutputView:
    return OutputView(
        tool_name="grep",
        arguments="{}",
        content=content,
        output_index=output,
        first_request=0,
        request_index=request,
        exposures=1,
        later_outputs=0,
        intent="",
    )


def test_every_question_gets_the_whole_batch_preflight_decision() -> None:
    rng = random.Random(7)
    model = load_cache_models()["anthropic"]
    for trial in range(60):
        where = Position()
        first = GateLog(model, "claude-sonnet-4-5", 6.0, where)
        outputs = rng.sample(range(40), rng.randint(1, 12))
        contents = {o: "x" * rng.randint(1, 40_000) for o in outputs}
        positions = {o: rng.randint(0, 90_000) for o in outputs}
        for o in outputs:  # the first pass learns the request's batch
            where.position_tokens = positions[o]
            first(_view(o, 3, contents[o]), 0)
        where = Position()
        where.cached_prefix_tokens = rng.randint(0, 120_000)
        second = GateLog(model, "claude-sonnet-4-5", 6.0, where, known=first.seen)
        asked = [*outputs, 99] if trial % 3 == 0 else outputs  # and one the batch lacks
        for o in asked:
            content = contents.get(o, "y" * 5_000)
            where.position_tokens = positions.get(o, rng.randint(0, 90_000))
            approved, reason = second(_view(o, 3, content), 0)
            together = dict(first.seen[(3, "preflight")])
            together[o] = second.seen[(3, "preflight")][o]
            want = preflight(
                [together[k] for k in sorted(together)],
                where.cached_prefix_tokens,
                future_requests=6.0,
                write_rate=second.write_rate,
                read_rate=second.read_rate,
            )
            decision, _later = second.decisions[(o, 3)]
            assert decision == want, (trial, o)
            assert (approved, reason) == (want.approved, want.reason)
            assert second.batch_sizes[(o, 3)] == len(together)


def test_a_batch_with_a_reuse_is_judged_by_preflight_itself() -> None:
    model = load_cache_models()["anthropic"]
    where = Position()
    known = {(0, "preflight"): {1: Candidate(10, 500, 0, cached=True)}}
    gate = GateLog(model, "claude-sonnet-4-5", 6.0, where, known=known)
    where.position_tokens, where.cached_prefix_tokens = 20, 4_000
    gate(_view(2, 0, "z" * 8_000), 0)
    want = preflight(
        [known[(0, "preflight")][1], gate.seen[(0, "preflight")][2]],
        4_000,
        future_requests=6.0,
        write_rate=gate.write_rate,
        read_rate=gate.read_rate,
    )
    assert gate.decisions[(2, 0)][0] == want
