"""Probe verdicts rest on repeated evidence (issue 13): the sampling rule over scripted replies.

One bad reply to a probe excluded a whole configuration; now a shape fails only when every
one of its samples fails, and every sample is kept on the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pipeline.endpoints.probe import ProbeVerdict, probe, servable_arms

from .conftest import Reply, chat_reply, endpoint_config, open_test_client

Serve = Callable[..., Any]
NEED = 20_000


async def probe_schema(
    serve: Serve, chat: Sequence[Reply], samples: int
) -> tuple[ProbeVerdict, list[Any]]:
    async with serve(chat=chat) as server:
        config = endpoint_config(server.base_url)
        verdicts = await probe(
            lambda ep: open_test_client(ep, attempts=2),
            config,
            ["schema"],
            context_tokens_needed=NEED,
            samples=samples,
        )
    bodies = [r.body for r in server.requests_to("/v1/chat/completions")]
    return verdicts[0], bodies


async def test_one_empty_reply_then_a_conforming_one_is_ok(serve: Serve) -> None:
    verdict, bodies = await probe_schema(
        serve, [chat_reply(""), chat_reply('{"answer": "OK"}')], samples=3
    )
    assert verdict.verdict == "ok"
    assert [s.verdict for s in verdict.samples] == ["schema_advertised_reply_nonconforming", "ok"]
    assert len(bodies) == 2  # ok on the second sample: the third is not sent


async def test_a_server_that_always_answers_nonconforming_is_still_excluded(
    serve: Serve,
) -> None:
    verdict, bodies = await probe_schema(serve, [chat_reply("not json")] * 3, samples=3)
    assert verdict.verdict == "schema_advertised_reply_nonconforming"
    assert len(verdict.samples) == 3
    assert verdict.detail.startswith("all 3 samples failed")
    needs = {"q": frozenset({"schema"})}
    assert servable_arms([verdict], needs) == {"q": "probe:schema_advertised_reply_nonconforming"}
    assert len(bodies) == 3


async def test_each_sample_is_a_fresh_request(serve: Serve) -> None:
    _, bodies = await probe_schema(serve, [chat_reply("")] * 3, samples=3)
    texts = [b["messages"][-1]["content"] for b in bodies]
    assert len(set(texts)) == 3  # a cache or a seeded endpoint cannot repeat the first reply
    assert "(check 2)" in texts[1]


async def test_an_unreachable_endpoint_is_not_sampled_again(serve: Serve) -> None:
    async with serve(chat=[]) as server:  # unscripted: every request fails with HTTP 599
        verdicts = await probe(
            lambda ep: open_test_client(ep, attempts=2),
            endpoint_config(server.base_url),
            ["plain"],
            context_tokens_needed=NEED,
            samples=3,
        )
    assert verdicts[0].verdict == "unreachable"
    assert len(verdicts[0].samples) == 1  # it already sat through the request retries
    assert len(server.requests_to("/v1/chat/completions")) == 2


def test_a_recorded_verdict_reads_back_with_its_samples() -> None:
    from dataclasses import asdict

    from pipeline.endpoints.probe import ProbeSample

    verdict = ProbeVerdict("c", "schema", "ok", "finish stop", (ProbeSample("ok", "x"),))
    assert ProbeVerdict.from_record(asdict(verdict)) == verdict
    old = {"config_id": "c", "shape": "plain", "verdict": "ok", "detail": ""}  # before samples
    assert ProbeVerdict.from_record(old).samples == ()


async def test_samples_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="samples"):
        await probe(
            open_test_client, endpoint_config(), ["plain"], context_tokens_needed=NEED, samples=0
        )
