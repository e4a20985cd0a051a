"""The replay's and the accounting's cheap per-request values behave as the values they
replaced (issue 20, the per-request constant): positions, visible outputs, views, misses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.toolout.accounting import CauseCost, Misses
from pipeline.toolout.importers import import_file
from pipeline.toolout.policies import OutputRef, OutputView, Policy, Rendering, build_policy
from pipeline.toolout.replay import replay
from pipeline.toolout.tokens import estimate_tokens
from tests.toolout import read, shipped

POLICIES = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"


def policy(name: str) -> Policy:
    return build_policy(yaml.safe_load((POLICIES / f"{name}.yaml").read_text()))


class Recording:
    """A shipped policy that keeps every view it is shown."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name
        self.stable = inner.stable
        self.views: list[OutputView] = []

    def render(self, view: OutputView) -> Rendering:
        self.views.append(view)
        return self.inner.render(view)


@pytest.mark.parametrize("name", ["swe_agent_last_5", "deterministic_first_pass", "keyword"])
def test_an_outputs_position_is_the_tokens_before_its_block_in_the_request(name: str) -> None:
    """New outputs take the running sum, rewritten ones add the rewrites' deltas: both equal
    the sum over the request's blocks before the output, as sent."""
    source = max(shipped("swe-agent"), key=lambda s: len(read(s)))
    transcript = import_file(read(source), source).transcripts[0]
    requests = replay(transcript, policy(name), estimate_tokens)
    checked = 0
    for request in requests:
        blocks = request.blocks
        for a in request.applied:
            slot = next(i for i, b in enumerate(blocks) if b.output_index == a.output_index)
            assert a.position_tokens == sum(b.tokens for b in blocks[:slot]), (request.index, a)
            checked += 1
    rewritten = sum(r.outputs_new for r in requests[1:])
    assert checked > 0 and (name != "swe_agent_last_5" or rewritten > 0)


def test_visible_outputs_are_the_first_outputs_of_the_transcript_in_order() -> None:
    source = shipped("swe-agent")[0]
    transcript = import_file(read(source), source).transcripts[0]
    recording = Recording(policy("control"))
    replay(transcript, recording, estimate_tokens, recheck=False)
    tools = [m for m in transcript.messages if m.is_tool_output]
    refs = tuple(OutputRef(i, m.name or "", m.size_bytes) for i, m in enumerate(tools))
    assert recording.views
    for view in recording.views:
        shown = view.visible_outputs
        assert shown is not None
        count = view.output_index + 1 + view.later_outputs
        assert len(shown) == count
        assert tuple(shown) == refs[:count] and shown == refs[:count]
        assert shown[-1] == refs[count - 1] and shown[: count - 1] == refs[: count - 1]
        with pytest.raises(IndexError):
            shown[count]  # the bound is the request's, not the transcript's


def test_a_trusted_view_equals_the_checked_one() -> None:
    fields = {
        "tool_name": "bash",
        "arguments": '{"cmd": "ls"}',
        "content": "a\nb é",
        "output_index": 2,
        "first_request": 3,
        "request_index": 5,
        "exposures": 2,
        "later_outputs": 1,
        "intent": "list",
        "previous": "a",
        "request_bytes": 900,
        "visible_outputs": (),
    }
    checked = OutputView(**fields)  # type: ignore[arg-type]
    trusted = OutputView.trusted({**fields, "size_bytes": checked.size_bytes})
    assert trusted == checked and trusted.size_bytes == len(b"a\nb \xc3\xa9")


def test_misses_add_per_cause_not_as_tuples() -> None:
    one = Misses(cold_start=CauseCost(3, 0.5), granularity=CauseCost(1, 0.25))
    two = Misses(cold_start=CauseCost(2, 0.25), rewrite=CauseCost(4, 1.0))
    total = one + two
    assert isinstance(total, Misses) and len(total) == 5
    assert total.cold_start == CauseCost(5, 0.75) and total.rewrite == CauseCost(4, 1.0)
    assert total.granularity == CauseCost(1, 0.25) and total.ttl_expiry == CauseCost(0, 0.0)
    assert (total.tokens, total.usd) == (10, 2.0)
