"""The fixed-transcript replay: requests rebuilt in order, policies applied, bytes kept stable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.offline import OfflineClient
from pipeline.study import UnitContext, UnitSpec
from pipeline.toolout.policies import Policy, build_policy
from pipeline.toolout.replay import removed_bytes, replay
from pipeline.toolout.runner import ToolOutRunner
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Message, ToolCall, Transcript
from tests.toolout import read, shipped

POLICIES = Path(__file__).resolve().parents[2] / "conf" / "toolout" / "policies"
BIG = "\n".join(f"line {i}: build output, nothing failed here, step {i}" for i in range(200))


def policy(name: str) -> Policy:
    return build_policy(yaml.safe_load((POLICIES / f"{name}.yaml").read_text()))


def transcript(outputs: int = 3) -> Transcript:
    messages = [Message("system", "you are a coding agent"), Message("user", "fix the bug")]
    for i in range(outputs):
        call = ToolCall(f"c{i}", "web_search", f'{{"q": "step {i}"}}')
        messages.append(Message("assistant", f"searching {i}", (call,)))
        messages.append(
            Message("tool", f"{BIG}\nresult {i}", tool_call_id=f"c{i}", name="web_search")
        )
    messages.append(Message("assistant", "done"))
    return Transcript("t/0", "jsonl", "t.jsonl", tuple(messages))


def test_one_request_per_assistant_turn_holding_every_earlier_message() -> None:
    requests = replay(transcript(3), policy("control"), estimate_tokens)
    assert [len(r.blocks) for r in requests] == [2, 4, 6, 8]
    assert [r.outputs_visible for r in requests] == [0, 1, 2, 3]
    # control never changes an output: it is asked once, on its first exposure
    assert [[a.output_index for a in r.applied] for r in requests] == [[], [0], [1], [2]]
    every = replay(transcript(3), policy("control"), estimate_tokens, recheck=False)
    assert [len(r.applied) for r in every] == [0, 1, 2, 3]


def test_first_pass_compacts_on_first_exposure_and_reuses_the_same_bytes_later() -> None:
    requests = replay(transcript(3), policy("deterministic"), estimate_tokens)
    first = requests[1].applied[0]
    assert first.rendering.changed and first.new and not first.reuse
    every = replay(transcript(3), policy("deterministic"), estimate_tokens, recheck=False)
    later = [r.applied[0] for r in every[2:]]
    assert all(a.reuse and not a.new and a.rendering.text == first.rendering.text for a in later)
    assert [r.outputs_reused for r in requests] == [0, 0, 1, 2]
    assert removed_bytes(requests) > 0


def test_keyword_waits_for_one_exact_exposure() -> None:
    requests = replay(transcript(2), policy("keyword"), estimate_tokens)
    assert not requests[1].applied[0].rendering.changed  # first exposure: exact
    assert requests[2].applied[0].rendering.mode in ("keyword", "exact")


def test_control_changes_nothing_and_removes_no_bytes() -> None:
    requests = replay(transcript(3), policy("control"), estimate_tokens)
    assert removed_bytes(requests) == 0
    assert not any(a.rendering.changed for r in requests for a in r.applied)


@pytest.mark.parametrize("name", sorted(p.stem for p in POLICIES.glob("*.yaml")))
def test_asking_only_when_recheck_says_shows_the_same_text_as_asking_every_time(name: str) -> None:
    """Issue 20: skipping the outputs a policy's `recheck` says cannot change alters nothing."""
    from pipeline.toolout.importers import import_file

    chosen = policy(name)
    files = [f for corpus in ("swe-agent", "openhands", "tau-bench") for f in shipped(corpus)[:4]]
    for source in files:
        for t in import_file(read(source), source).transcripts[:3]:
            fast = replay(t, chosen, estimate_tokens)
            every = replay(t, chosen, estimate_tokens, recheck=False)
            assert [r.blocks for r in fast] == [r.blocks for r in every], t.id
            fields = ("outputs_changed", "outputs_new", "removed_bytes", "input_tokens")
            for a, b in zip(fast, every, strict=True):
                assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]


def test_swe_agent_last_n_recheck_wakes_exactly_when_the_output_is_elided() -> None:
    from pipeline.toolout.policies import LastNObservations, OutputView

    for n, polling in ((5, 1), (5, 5), (3, 2), (1, 4)):
        rule = LastNObservations("w", n=n, polling=polling)
        for p in range(12):

            def view(later: int, p: int = p) -> OutputView:
                return OutputView(
                    tool_name="bash", arguments="", content="x\ny", output_index=p,
                    first_request=0, request_index=0, exposures=0, later_outputs=later, intent="",
                )  # fmt: skip

            elided = [rule.render(view(k)).changed for k in range(40)]
            wake = rule.recheck(view(0), rule.render(view(0))).later_outputs
            first = elided.index(True) if not elided[0] else 0
            assert elided[0] or wake == first, (n, polling, p)


def _cost(corpus_file: str, cache_model: str, model: str, arm: str) -> float:
    from jobs.toolout.inputs import load_cache_models
    from pipeline.toolout.importers import import_file

    transcripts = import_file(read(corpus_file), corpus_file).transcripts
    specs = {n: yaml.safe_load((POLICIES / f"{n}.yaml").read_text()) for n in ("control", arm)}
    runner = ToolOutRunner(
        transcripts,
        specs,
        load_cache_models()[cache_model],
        model,
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
    )
    spec = UnitSpec("r", "c", "m", "f", arm, 0, 0, 0)
    result = asyncio.run(runner.run(spec, OfflineClient("c"), UnitContext(1, 0.0)))
    return float(result.row["replay_cost_usd"])


@pytest.mark.parametrize(
    ("cache_model", "model", "dearer"),
    [("deepseek", "deepseek-v4-pro", True), ("no-cache", "deepseek-v4-pro", False)],
)
def test_a_moving_window_costs_more_under_a_cheap_cache_and_less_without_one(
    cache_model: str, model: str, dearer: bool
) -> None:
    """The seed's thesis on a shipped SWE-agent transcript: rewriting history pays only when
    cached input is not nearly free (SWE-agent's last-5 window rewrites on every turn)."""
    source = max(shipped("swe-agent"), key=lambda s: len(read(s)))
    control = _cost(source, cache_model, model, "control")
    window = _cost(source, cache_model, model, "swe_agent_last_5")
    assert (window > control) is dearer, (control, window)


def test_runner_for_an_unknown_provider_names_the_cache_models() -> None:
    from pipeline.studies.toolout import DEFINITION

    study = DEFINITION.configure({"name": "toolout", "corpora": ["mini-swe-agent"]})
    with pytest.raises(Exception, match="no cache model 'acme'"):
        study.runner(EndpointConfig("acme:x", "x", "acme", provider="acme"))
