"""Issue 31: a probe reply's billed charge is kept, and stale panel prices are flagged.

The probe checks the configuration's prices against the provider's own charge before a sweep
relies on them: a sample keeps both numbers, and `python -m pipeline probe` prints the flag.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from pipeline.chat.messages import ChatClient, ChatRequest, ChatResponse, Usage
from pipeline.commands.probe import charge_lines
from pipeline.config.schema import EndpointConfig, Prices
from pipeline.endpoints.probe import ProbeVerdict, probe, probe_charges
from pipeline.stale_prices import prices_stale, stale_prices_line, usd

from .conftest import chat_reply, endpoint_config, open_test_client

Serve = Callable[..., Any]
NEED = 20_000
USAGE = Usage(prompt_tokens=20, completion_tokens=2)


class Scripted:
    """Answers every request with the same reply (estimate and charge as given)."""

    def __init__(self, reply: ChatResponse) -> None:
        self.reply = reply

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self.reply


async def probe_with(reply: ChatResponse, shapes: Sequence[str] = ("plain",)) -> list[ProbeVerdict]:
    @asynccontextmanager
    async def borrowed(_: EndpointConfig) -> AsyncIterator[ChatClient]:
        yield Scripted(reply)

    return list(await probe(borrowed, endpoint_config(), shapes, context_tokens_needed=NEED))


async def test_a_billed_probe_reply_keeps_charge_and_estimate_on_its_sample() -> None:
    reply = ChatResponse("OK", "stop", USAGE, cost_usd=0.00001, billed_usd=0.000012)
    (verdict,) = await probe_with(reply)
    assert verdict.verdict == "ok"
    assert (verdict.samples[0].cost_usd, verdict.samples[0].billed_usd) == (0.00001, 0.000012)
    assert ProbeVerdict.from_record(asdict(verdict)) == verdict  # the manifest's record


async def test_stale_prices_are_flagged_with_the_probe_charge() -> None:
    reply = ChatResponse("OK", "stop", USAGE, cost_usd=0.00001, billed_usd=0.000012)
    verdicts = await probe_with(reply, ("plain", "schema"))  # schema: nonconforming, 3 samples
    charges = probe_charges(verdicts)["cfg-a"]
    assert charges.replies == 4  # every reply judged, failing samples included
    assert charges.billed_usd == 4 * 0.000012
    assert charge_lines(verdicts)[1:] == [
        "cfg-a: 4 probe replies billed $0.0000480, estimated at the panel's prices $0.0000400",
        "prices in the panel are stale for cfg-a: probe billed $0.0000480, estimated $0.0000400",
    ]


async def test_prices_within_five_percent_are_not_flagged() -> None:
    reply = ChatResponse("OK", "stop", USAGE, cost_usd=0.00001, billed_usd=0.0000104)
    lines = charge_lines(await probe_with(reply))
    assert lines == [
        "",
        "cfg-a: 1 probe replies billed $0.0000104, estimated at the panel's prices $0.0000100",
    ]


async def test_a_reply_without_usage_or_without_a_charge_is_not_compared() -> None:
    no_usage = ChatResponse("OK", "stop", Usage(), cost_usd=0.0, billed_usd=0.00002)
    (verdict,) = await probe_with(no_usage)
    assert verdict.samples[0].cost_usd is None  # no estimate to set beside the charge
    assert probe_charges([verdict]) == {} and charge_lines([verdict]) == []
    unbilled = ChatResponse("OK", "stop", USAGE, cost_usd=0.00001)
    assert charge_lines(await probe_with(unbilled)) == []


async def test_openrouter_usage_cost_reaches_the_sample_over_http(serve: Serve) -> None:
    usage = {"prompt_tokens": 1_000, "completion_tokens": 100, "cost": 0.003}
    async with serve(chat=[chat_reply("OK", usage=usage)]) as server:
        config = endpoint_config(server.base_url, prices=Prices(1.0, 10.0))
        verdicts = await probe(
            lambda ep: open_test_client(ep, attempts=1),
            config,
            ["plain"],
            context_tokens_needed=NEED,
        )
    sample = verdicts[0].samples[0]
    assert (sample.billed_usd, sample.cost_usd) == (0.003, 0.002)  # 1000 x $1 + 100 x $10 /M
    assert charge_lines(verdicts)[-1] == (
        "prices in the panel are stale for cfg-a: probe billed $0.00300, estimated $0.00200"
    )


def test_the_rule_is_relative_to_the_billed_charge() -> None:
    assert not prices_stale(1.0, 1.0499) and prices_stale(1.0, 1.0501)
    assert prices_stale(1.0, 0.9499) and not prices_stale(0.0, 0.0) and prices_stale(0.0, 0.01)
    assert stale_prices_line("c", 1.0, 1.02) is None
    assert stale_prices_line("c", 12.5, 10.0) == (
        "prices in the panel are stale for c: billed $12.5000, estimated $10.0000"
    )
    assert (usd(0.0000036), usd(0.0123), usd(0.0)) == ("$0.00000360", "$0.0123", "$0.0000")


async def test_a_probe_sample_spends_the_charge_else_the_estimate() -> None:
    billed = ChatResponse("OK", "stop", USAGE, cost_usd=0.00001, billed_usd=0.000012)
    estimated = ChatResponse("OK", "stop", USAGE, cost_usd=0.00001)
    ((with_charge,), (without,)) = [
        (await probe_with(reply))[0].samples for reply in (billed, estimated)
    ]
    assert with_charge.spent_usd == 0.000012 and without.spent_usd == 0.00001


async def test_a_usageless_probe_reply_spends_an_upper_estimate_never_zero() -> None:
    @asynccontextmanager
    async def borrowed(_: EndpointConfig) -> AsyncIterator[ChatClient]:
        yield Scripted(ChatResponse("OK", "stop", Usage(cached_tokens=None)))

    priced = endpoint_config(prices=Prices(input_per_mtok=1000.0, output_per_mtok=1000.0))
    (verdict,) = await probe(borrowed, priced, ("plain",), context_tokens_needed=NEED)
    assert verdict.samples[0].cost_usd is None  # no usage: nothing to set beside a charge
    assert verdict.samples[0].spent_usd > 0


def test_the_runs_spend_adds_every_recorded_probe_sample() -> None:
    from pipeline.endpoints.probe import spent_by_probes

    records = [
        {"samples": [{"verdict": "ok", "spent_usd": 0.25}, {"verdict": "ok"}]},  # pre-issue-31
        {"samples": [{"verdict": "ok", "spent_usd": 0.5}]},
        {"shape": "context_length"},
    ]
    assert spent_by_probes(records) == 0.75
