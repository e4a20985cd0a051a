"""Peer replicas on synthetic sessions, and the stability contract of every shipped policy."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from pipeline.toolout.policies import (
    ClearToolUses,
    ControlPolicy,
    LastNObservations,
    ModelSummaries,
    ObservationMasking,
    OutputRef,
    OutputView,
    Policy,
    Rendering,
    TruncateOnArrival,
    load_policies,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"
OVERHEAD_BYTES = 1000  # system prompt and turns around the tool outputs


def output(i: int, size: int = 4000, tool: str = "bash") -> tuple[str, str]:
    """A build log of `size` bytes: compiler lines, every tenth naming the target."""
    lines = []
    for j in itertools.count():
        if j % 10 == 0:
            lines.append(f"[{j}] linking target_{i} from cached objects")
        else:
            lines.append(f"[{j}] cc -O2 -c src/unit_{j}.c -o obj/unit_{j}.o")
        if sum(len(x) + 1 for x in lines) > size:
            break
    return tool, "\n".join(lines)[:size]


def session(policy: Policy, outputs: list[tuple[str, str]]) -> list[list[Rendering]]:
    """Request r shows outputs 0..r-1 (output k arrives after request k); renderings per request.

    A minimal replay: the same views the study's replay builds, with `previous` carried over.
    """
    previous: dict[int, str] = {}
    requests = []
    for r in range(len(outputs) + 1):
        refs = tuple(OutputRef(k, outputs[k][0], len(outputs[k][1].encode())) for k in range(r))
        request_bytes = OVERHEAD_BYTES + sum(ref.size_bytes for ref in refs)
        shown = []
        for k in range(r):
            tool, content = outputs[k]
            rendering = policy.render(
                OutputView(
                    tool_name=tool,
                    arguments=f'{{"cmd": "make target_{k}"}}',
                    content=content,
                    output_index=k,
                    first_request=k + 1,
                    request_index=r,
                    exposures=r - (k + 1),
                    later_outputs=r - 1 - k,
                    intent=f"build target_{k} cached objects",
                    previous=previous.get(k),
                    request_bytes=request_bytes,
                    visible_outputs=refs,
                )
            )
            previous[k] = rendering.text
            shown.append(rendering)
        requests.append(shown)
    return requests


def modes(request: list[Rendering]) -> str:
    """One letter per visible output: x exact, c changed."""
    return "".join("c" if r.changed else "x" for r in request)


# -- control ---------------------------------------------------------------------------------


def test_control_never_changes_an_output() -> None:
    requests = session(ControlPolicy("control"), [output(i) for i in range(8)])
    assert all(modes(r) == "x" * len(r) for r in requests)


# -- Anthropic clear_tool_uses ---------------------------------------------------------------


def test_clear_tool_uses_waits_for_the_trigger_then_keeps_the_last_three() -> None:
    # 4,000-byte outputs = 1,000 tokens each; overhead 250 tokens. Trigger 5,000 tokens:
    # request 5 (5 outputs, 5,250 tokens) is the first over it.
    policy = ClearToolUses("a", trigger=5000, keep=3)
    requests = session(policy, [output(i) for i in range(8)])
    assert modes(requests[4]) == "xxxx"
    assert requests[4][0].reason == "below_trigger"
    assert modes(requests[5]) == "ccxxx"
    assert modes(requests[8]) == "cccccxxx"
    assert {r.text for r in requests[8] if r.changed} == {"[cleared]"}
    assert requests[8][7].reason == "kept_recent"


def test_clear_tool_uses_exactly_at_the_trigger_does_not_fire() -> None:
    policy = ClearToolUses("a", trigger=5250, keep=0)
    requests = session(policy, [output(i) for i in range(6)])
    assert modes(requests[5]) == "xxxxx"  # 5,250 tokens: not over the trigger
    assert modes(requests[6]) == "cccccc"


def test_clear_tool_uses_spares_excluded_tools_which_still_count_toward_keep() -> None:
    outputs = [output(i, tool="read_file" if i == 6 else "bash") for i in range(8)]
    policy = ClearToolUses("a", trigger=1, keep=2, exclude_tools=("READ*",))
    last = session(policy, outputs)[8]
    assert modes(last) == "ccccccxx"  # output 6 is excluded and among the last two anyway
    policy_keep1 = ClearToolUses("a", trigger=1, keep=1, exclude_tools=("read*",))
    last = session(policy_keep1, outputs)[8]
    assert modes(last) == "ccccccxx"
    assert last[6].reason == "excluded_tool"


def test_clear_tool_uses_does_nothing_when_clear_at_least_cannot_be_met() -> None:
    policy = ClearToolUses("a", trigger=1, keep=3, clear_at_least=2500)
    requests = session(policy, [output(i) for i in range(8)])
    assert modes(requests[5]) == "xxxxx"  # 2 candidates free 2 x (1,000 - 3) tokens
    assert requests[5][0].reason == "clear_at_least_unmet"
    assert modes(requests[6]) == "cccxxx"  # 3 candidates: 2,991 tokens


def test_clear_tool_uses_needs_the_request_size() -> None:
    tool, content = output(0)
    v = OutputView(
        tool_name=tool,
        arguments="",
        content=content,
        output_index=0,
        first_request=1,
        request_index=1,
        exposures=0,
        later_outputs=0,
        intent="",
    )
    with pytest.raises(ValueError, match="request_bytes"):
        ClearToolUses("a").render(v)


# -- SWE-agent last_n_observations -----------------------------------------------------------


def test_last_five_observations_keeps_exactly_the_last_five() -> None:
    requests = session(LastNObservations("s", n=5), [output(i) for i in range(9)])
    assert modes(requests[5]) == "xxxxx"
    assert modes(requests[6]) == "cxxxxx"
    assert modes(requests[9]) == "ccccxxxxx"
    lines = len(output(0)[1].splitlines())
    assert requests[9][0].text == f"Old environment output: ({lines} lines omitted)"
    assert requests[9][0].mode == "elided"


def test_polling_changes_the_prefix_only_every_polling_steps() -> None:
    requests = session(LastNObservations("s", n=5, polling=5), [output(i) for i in range(16)])
    elided = [sum(r.changed for r in req) for req in requests]
    # K visible, L = ((K + 1) // 5) * 5 - 5, elided = max(0, L - 1)
    assert elided == [0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 9, 9, 9]
    kept = [len(req) - e for req, e in zip(requests, elided, strict=True)]
    assert all(5 <= k <= 9 for k in kept[5:])


# -- OpenHands observation masking -----------------------------------------------------------


def test_observation_masking_masks_outputs_older_than_the_window() -> None:
    requests = session(ObservationMasking("o", attention_window=10), [output(i) for i in range(8)])
    # Two events (action, observation) per later output: masked with 5 or more after it.
    assert modes(requests[5]) == "xxxxx"
    assert modes(requests[6]) == "cxxxxx"
    assert modes(requests[8]) == "cccxxxxx"
    assert requests[8][0].text == "<MASKED>"
    odd = session(ObservationMasking("o", attention_window=9), [output(i) for i in range(8)])
    assert modes(odd[6]) == "cxxxxx"


# -- mini-swe-agent truncate-on-arrival ------------------------------------------------------


def truncation(content: str) -> Rendering:
    return session(TruncateOnArrival("m"), [("bash", content)])[1][0]


def test_truncation_boundary_is_9999_versus_10000_characters() -> None:
    assert truncation("a" * 9999).reason == "below_limit"
    cut = truncation("a" * 5000 + "b" * 5000)
    assert cut.mode == "truncated"
    assert "<output_head>\n" + "a" * 5000 + "\n</output_head>" in cut.text
    assert "<elided_chars>\n0 characters elided\n</elided_chars>" in cut.text
    assert cut.text.endswith("<output_tail>\n" + "b" * 5000 + "\n</output_tail>")


def test_truncation_counts_characters_not_bytes_and_applies_on_first_exposure() -> None:
    assert truncation("é" * 9999).reason == "below_limit"  # 19,998 bytes
    long = truncation("é" * 12_345)
    assert long.changed
    assert long.reason == "transformed"
    assert "2345 characters elided" in long.text


def test_an_already_truncated_mini_swe_agent_output_stays_as_recorded() -> None:
    recorded = truncation("x" * 20_000).text
    assert truncation(recorded).reason == "already_truncated"


# -- stability: the contract of every shipped policy -----------------------------------------


def counting_summaries() -> ModelSummaries:
    """A summariser whose every answer differs: only reuse keeps the bytes stable."""
    calls = itertools.count()
    return ModelSummaries(
        summarise=lambda v: f"summary #{next(calls)} of output {v.output_index}",
        gate=lambda v, candidate_bytes: (True, "approved"),
    )


def mixed_session() -> list[tuple[str, str]]:
    tools = ["grep", "web_search", "read_file", "bash", "grep_files", "apply_patch"]
    outputs = []
    for i in range(30):
        tool, content = output(i, size=4000 + 900 * (i % 10), tool=tools[i % len(tools)])
        outputs.append((tool, content))
    return outputs


# Windows the 30-output synthetic session reaches (the shipped ones are sized for long runs).
SHORT_WINDOWS = {
    "anthropic_clear_tool_uses": {"trigger": 20_000},
    "openhands_masking": {"attention_window": 10},
}


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF.glob("*.yaml")))
def test_a_compacted_output_keeps_identical_bytes_on_every_later_request(name: str) -> None:
    spec = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    spec.update(SHORT_WINDOWS.get(spec.get("kind", ""), {}))
    policy = load_policies([spec], summaries=counting_summaries())[name]
    assert policy.stable
    first_compacted: dict[int, str] = {}
    for request in session(policy, mixed_session()):
        for k, rendering in enumerate(request):
            if k in first_compacted:
                assert rendering.text == first_compacted[k], f"output {k} changed"
                assert rendering.reason == "reused"
            elif rendering.changed:
                first_compacted[k] = rendering.text
                assert rendering.reason == "transformed"
    if name not in ("control", "exact"):
        assert first_compacted, f"{name} compacted nothing on the synthetic session"
