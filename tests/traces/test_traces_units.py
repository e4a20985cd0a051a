"""The reasoning-trace study's units over scripted chat clients: what is sent, what is kept."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from pipeline.chat.errors import RequestRejected, TransportFault
from pipeline.chat.messages import ChatRequest, ChatResponse, Usage
from pipeline.config.schema import EndpointConfig
from pipeline.studies.traces import DEFINITION, shipped_templates
from pipeline.study import UnitContext, UnitSpec
from pipeline.traces.recital import EndpointTemplate, recites
from pipeline.traces.runner import VISIBILITY
from pipeline.traces.study import TracesStudy
from pipeline.traces.visibility.render import render

QWEN = "Qwen-Qwen3-0.6B"


class ScriptedServer:
    """Answers chats with `reply`, renders templates with the offline renderer (or refuses)."""

    def __init__(self, reply: str = "I have no scratchpad.", template: str | None = None) -> None:
        self.reply = reply
        self.template = template
        self.sent: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.sent.append(request)
        sampling: dict[str, Any] = {"temperature": request.temperature, "seed": request.seed,
                                    "max_tokens": request.max_tokens}  # fmt: skip
        if request.top_p is not None:
            sampling["top_p"] = request.top_p
        if request.template_kwargs:
            sampling["chat_template_kwargs"] = dict(request.template_kwargs)
        text = self.reply
        if request.purpose == "recital" and "echo" in self.reply:  # a model that reads everything
            text = " ".join(
                str(m.get("reasoning_content", "")) for m in request.wire_messages or ()
            )
        return ChatResponse(text, "stop", Usage(50, 5), sent_sampling=sampling)

    async def apply_template(self, request: ChatRequest) -> str:
        if self.template is None:
            raise RequestRejected(404, "not found", reason="no_apply_template")
        rendered = render(self.template, list(request.wire_messages or ()),
                          tools=list(request.tools or ()))  # fmt: skip
        if rendered.prompt is None:
            raise RequestRejected(500, rendered.error_message, reason="template_error")
        return rendered.prompt


def study(**node: Any) -> TracesStudy:
    base = {"name": "traces", "arms": [], "compression": {"real_per_band": 1,
            "synthetic_per_band": 1, "longest_chars": 17000}}  # fmt: skip
    base.update(node)
    return DEFINITION.configure(base)


def run(s: TracesStudy, arm: str, client: object, template: EndpointTemplate | None = None):
    s = replace(s, template_loader=lambda _endpoint: template)
    runner = s.runner(EndpointConfig("c", "m", "f"))
    spec = UnitSpec("r", "c", "m", "f", arm, 0, 0, 0)
    return asyncio.run(runner.run(spec, client, UnitContext(5, 0.0)))  # type: ignore[arg-type]


def test_the_arms_are_visibility_and_every_summariser_strategy() -> None:
    assert list(study().arms()) == [VISIBILITY, "churn", "extractive", "fact_preserving",
                                    "hybrid", "naive", "state_block"]  # fmt: skip
    assert list(study(arms=["naive", "hybrid"]).arms()) == ["hybrid", "naive"]


def test_an_unknown_arm_is_one_line_before_anything_starts() -> None:
    with pytest.raises(Exception, match="unknown arm 'bullets'; available: visibility"):
        study(arms=["bullets"])


def test_recital_counts_a_token_with_or_without_its_hyphen() -> None:
    assert recites("my scratchpad said zqx 8842", "ZQX-8842")
    assert recites("ZQX8842", "ZQX-8842")
    assert not recites("ZQX-8843", "ZQX-8842")


def test_visibility_unit_renders_live_and_offline_and_recites_what_the_model_saw() -> None:
    qwen = shipped_templates()[QWEN]
    server = ScriptedServer(reply="echo", template=qwen)
    result = run(study(), VISIBILITY, server, EndpointTemplate(QWEN, qwen))
    assert result.outcome.valid
    probes = result.tables["template_probes"]
    renderers = {p["renderer"] for p in probes}
    assert renderers == {"jinja2-hf", "llama-server"}
    row = result.row
    assert row["live_renders"] == 100 and row["renders_identical"] >= 1
    recitals = result.tables["recitals"]
    assert {r["structure"] for r in recitals} >= {"plain_user", "tool1_open", "tool1_user"}
    assert row["secrets_sent"] == len(recitals) and row["recited"] == len(recitals)
    open_loop = [r for r in recitals if r["structure"] == "tool1_open"]
    after_user = [r for r in recitals if r["structure"] == "tool1_user"]
    assert all(r["in_rendered_live"] for r in open_loop)  # Qwen3 keeps it while the loop is open
    assert not any(r["in_rendered_live"] for r in after_user)  # and drops it after a user turn
    sent = [r for r in server.sent if r.purpose == "recital"]
    assert all(r.wire_messages and r.tools and r.max_tokens == 64 for r in sent)


def test_a_server_without_a_renderer_still_recites() -> None:
    result = run(study(), VISIBILITY, ScriptedServer(), None)
    assert result.row["live_renders"] == 0 and result.tables["template_probes"] == []
    assert result.row["recited"] == 0 and result.row["secrets_sent"] > 0


def test_a_model_arm_sends_greedy_thinking_off_and_checks_the_repeat() -> None:
    server = ScriptedServer(reply="GOAL: fix it. FACTS: none.")
    result = run(study(), "churn", server)
    records = result.tables["compressions"]
    assert result.outcome.valid and len(records) == len(study().items)
    assert all(r["sent_temperature"] == 0.0 and r["sent_enable_thinking"] is False for r in records)
    assert result.row["greedy_ok"] is True
    assert records[0]["repeat_identical"] is True and records[1]["repeat_identical"] is None
    assert result.row["model_requests"] == len(records) + 1  # one repeat
    assert all(r.template_kwargs == {"enable_thinking": False} for r in server.sent)


def test_thinking_off_left_to_the_endpoint_sends_no_template_switch() -> None:
    server = ScriptedServer()
    s = study(compression={"real_per_band": 1, "synthetic_per_band": 0,
                           "thinking_off": "endpoint"})  # fmt: skip
    result = run(s, "naive", server)
    assert all(r.template_kwargs is None for r in server.sent)
    assert result.row["greedy_ok"] is False  # unspecified thinking fails the check, as it should


def test_the_extractive_arm_sends_nothing_and_keeps_every_fact() -> None:
    server = ScriptedServer()
    result = run(study(), "extractive", server)
    assert server.sent == [] and result.row["model_requests"] == 0
    kept = [r["retention"] for r in result.tables["compressions"] if r["facts_total"]]
    assert kept and all(k == 1.0 for k in kept)


def test_the_hybrid_ledger_restores_the_facts_the_summary_dropped() -> None:
    result = run(study(), "hybrid", ScriptedServer(reply="Nothing concrete."))
    kept = [r["retention"] for r in result.tables["compressions"] if r["facts_total"]]
    assert kept and all(k == 1.0 for k in kept)
    assert all(
        "## Ledger" in r["summary"] for r in result.tables["compressions"] if r["facts_total"]
    )


class Failing:
    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise TransportFault("connection refused")


def test_an_infrastructure_fault_ends_the_unit_retryable() -> None:
    result = run(study(), "naive", Failing())
    assert not result.outcome.valid and result.outcome.retryable
    assert result.outcome.invalid_reason == "infrastructure:transport"


def test_issue21_a_recursive_endpoint_template_is_a_recorded_render_error_not_a_crash() -> None:
    # A local configuration's `local.chat_template_file` that recurses crashed the Ray worker.
    recursive = "{% macro walk(m) %}{{ walk(m) }}{% endmacro %}{{ walk(messages) }}"
    server = ScriptedServer(reply="I have no scratchpad.")
    result = run(study(), VISIBILITY, server, EndpointTemplate("mine", recursive, "user"))
    assert result.outcome.valid
    probes = result.tables["template_probes"]
    assert probes and all(not p["rendered"] for p in probes)
    assert {(p["error_type"], p["render_limit"], p["template_source"]) for p in probes} == {
        ("RecursionError", "recursion", "user")
    }
    assert result.row["recited"] == 0 and result.row["secrets_sent"] > 0  # recitals still ran


def test_the_offline_half_of_a_unit_covers_every_switch_setting_and_the_live_half_the_default() -> (
    None
):
    qwen = shipped_templates()[QWEN]
    server = ScriptedServer(template=qwen)
    result = run(study(), VISIBILITY, server, EndpointTemplate(QWEN, qwen, "shipped"))
    probes = result.tables["template_probes"]
    offline = {p["switches"] for p in probes if p["renderer"] == "jinja2-hf"}
    live = {p["switches"] for p in probes if p["renderer"] == "llama-server"}
    assert offline == {"", "enable_thinking=true", "enable_thinking=false"}
    assert live == {""}
    assert {p["template_source"] for p in probes if p["renderer"] == "llama-server"} == {"server"}


def test_a_hybrid_sends_its_wrapped_arms_requests_in_the_same_order() -> None:
    churn, hybrid, naive = ScriptedServer(), ScriptedServer(), ScriptedServer()
    run(study(), "churn", churn)
    run(study(), "hybrid", hybrid)
    run(study(), "naive", naive)
    assert hybrid.sent == churn.sent  # same bodies at the same positions: the cache's key
    traces = [r.messages[1].content[:60] for r in churn.sent]
    assert [r.messages[1].content[:60] for r in naive.sent] != traces  # naive starts elsewhere
