"""The capability probe against scripted servers, and the pure servable_arms rule."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from jobs.nothing_ran import detail_headline
from pipeline.chat.messages import ChatClient, ChatRequest, ChatResponse
from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.probe import (
    ProbeVerdict,
    probe,
    schema_reply_problem,
    servable_arms,
)

from .conftest import Reply, chat_reply, endpoint_config, open_test_client

Serve = Callable[..., Any]
NEED = 20_000
ALL = ("plain", "schema", "reasoning_disabled", "context_length")


def factory(attempts: int = 2) -> Callable[[EndpointConfig], Any]:
    def make(endpoint: EndpointConfig) -> Any:
        return open_test_client(endpoint, attempts=attempts)

    return make


async def run_probe(
    serve: Serve,
    shapes: Sequence[str],
    chat: Sequence[Reply] = (),
    models: Sequence[Reply] = (),
    samples: int = 1,  # one sample: these tests map one reply to its verdict
    **endpoint: Any,
) -> tuple[dict[str, ProbeVerdict], Any]:
    async with serve(chat=chat, models=models) as server:
        config = endpoint_config(server.base_url, **endpoint)
        verdicts = await probe(
            factory(), config, shapes, context_tokens_needed=NEED, samples=samples
        )
    assert [v.shape for v in verdicts] == list(shapes)
    assert {v.config_id for v in verdicts} == {"cfg-a"}
    return {v.shape: v for v in verdicts}, server


async def test_a_healthy_endpoint_is_ok_on_every_shape(serve: Serve) -> None:
    verdicts, server = await run_probe(
        serve,
        ALL,
        chat=[chat_reply("OK"), chat_reply('{"answer": "OK"}'), chat_reply("OK")],
        reasoning="openrouter",
        context_length=131_072,
    )
    assert {s: v.verdict for s, v in verdicts.items()} == dict.fromkeys(ALL, "ok")
    bodies = [r.body for r in server.requests_to("/v1/chat/completions")]
    assert all(b["max_tokens"] <= 32 for b in bodies)  # probes stay tiny
    assert "response_format" in bodies[1]


async def test_no_endpoint_for_parameters_404(serve: Serve) -> None:
    reply = Reply(
        status=404,
        json_body={
            "error": {"message": "No endpoints found that support the requested parameters"}
        },
    )
    verdicts, _ = await run_probe(serve, ["plain"], chat=[reply])
    assert verdicts["plain"].verdict == "probe_rejected_no_endpoint_for_parameters"


async def test_mandatory_reasoning_is_not_disableable(serve: Serve) -> None:
    reply = Reply(
        status=400,
        json_body={
            "error": {"message": "Reasoning is mandatory for this endpoint and cannot be disabled."}
        },
    )
    verdicts, _ = await run_probe(
        serve, ["reasoning_disabled"], chat=[reply], reasoning="openrouter"
    )
    assert verdicts["reasoning_disabled"].verdict == "probe_rejected_reasoning_not_disableable"


async def test_any_rejection_of_the_reasoning_shape_is_not_disableable(serve: Serve) -> None:
    reply = Reply(status=400, json_body={"error": "unrecognised parameter"})
    verdicts, _ = await run_probe(
        serve, ["reasoning_disabled"], chat=[reply], reasoning="chat_template_kwargs"
    )
    assert verdicts["reasoning_disabled"].verdict == "probe_rejected_reasoning_not_disableable"


async def test_think_block_despite_the_switch_is_not_disableable(serve: Serve) -> None:
    verdicts, _ = await run_probe(
        serve,
        ["reasoning_disabled"],
        chat=[chat_reply("<think>hmm</think>OK")],
        reasoning="chat_template_kwargs",
    )
    assert verdicts["reasoning_disabled"].verdict == "probe_rejected_reasoning_not_disableable"


async def test_no_reasoning_control_is_ok_without_a_request(serve: Serve) -> None:
    verdicts, server = await run_probe(serve, ["reasoning_disabled"], reasoning="none")
    assert verdicts["reasoning_disabled"].verdict == "ok"
    assert server.received == []


@pytest.mark.parametrize(
    "text",
    ['{"reply": "OK"}', "OK", '["OK"]', '{"answer": 7}', '{"answer": "O'],
    ids=["missing-required", "not-json", "not-object", "wrong-type", "truncated"],
)
async def test_schema_reply_without_the_required_property_is_nonconforming(
    serve: Serve, text: str
) -> None:
    verdicts, _ = await run_probe(serve, ["schema"], chat=[chat_reply(text)])
    assert verdicts["schema"].verdict == "schema_advertised_reply_nonconforming"


async def test_schema_reply_after_a_think_block_conforms(serve: Serve) -> None:
    verdicts, _ = await run_probe(
        serve, ["schema"], chat=[chat_reply('<think>x</think>{"answer": "OK"}')]
    )
    assert verdicts["schema"].verdict == "ok"


async def test_llama_cpp_json_schema_500_is_schema_unsupported(serve: Serve) -> None:
    body = {
        "error": {
            "message": "1 validation error for CreateChatCompletionRequest "
            "response_format ... json_schema"
        }
    }
    verdicts, server = await run_probe(
        serve, ["schema"], chat=[Reply(status=500, json_body=body)], response_format="json_schema"
    )
    assert verdicts["schema"].verdict == "schema_unsupported"
    assert len(server.received) == 1  # deterministic: not retried


async def test_no_schema_endpoint_is_schema_unsupported_without_a_request(serve: Serve) -> None:
    verdicts, server = await run_probe(serve, ["schema"], response_format="none")
    assert verdicts["schema"].verdict == "schema_unsupported"
    assert server.received == []


async def test_configured_context_below_the_need_is_too_short(serve: Serve) -> None:
    verdicts, server = await run_probe(serve, ["context_length"], context_length=8192)
    assert verdicts["context_length"].verdict == "context_too_short"
    assert server.received == []


async def test_models_reported_context_below_the_need_is_too_short(serve: Serve) -> None:
    listing = Reply(json_body={"data": [{"id": "test-model", "context_length": 16_384}]})
    verdicts, _ = await run_probe(serve, ["context_length"], models=[listing])
    assert verdicts["context_length"].verdict == "context_too_short"
    assert "16384" in verdicts["context_length"].detail


async def test_unknown_context_is_ok_but_marked_unverified(serve: Serve) -> None:
    verdicts, _ = await run_probe(
        serve, ["context_length"], models=[Reply(status=404, raw=b"Not Found")]
    )
    assert verdicts["context_length"].verdict == "ok"
    assert "unverified" in verdicts["context_length"].detail


async def test_context_length_400_is_too_short(serve: Serve) -> None:
    reply = Reply(
        status=400,
        json_body={"error": {"message": "This endpoint's maximum context length is 4096 tokens"}},
    )
    verdicts, _ = await run_probe(serve, ["plain"], chat=[reply])
    assert verdicts["plain"].verdict == "context_too_short"


async def test_other_rejections_are_recorded_with_their_reason(serve: Serve) -> None:
    verdicts, _ = await run_probe(serve, ["plain"], chat=[Reply(status=400, raw=b"bad request")])
    assert verdicts["plain"].verdict == "probe_rejected"
    assert verdicts["plain"].detail.startswith("http_400: ")  # the status, not "rejected"


SECRET = "sk-test-not-a-real-key-31337"


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("first_shape", ["plain", "schema"])
async def test_a_refused_key_is_auth_rejected_naming_the_variable_not_the_key(
    serve: Serve, status: int, first_shape: str
) -> None:
    # The body echoes the key, as some gateways do: the client scrubs it before any message.
    refused = Reply(status=status, json_body={"error": {"message": f"invalid key {SECRET}"}})
    shapes = [first_shape, "reasoning_disabled", "context_length"]
    async with serve(chat=[refused]) as server:
        config = endpoint_config(
            server.base_url, api_key_env="FOLDSWEEP_TEST_KEY", reasoning="openrouter"
        )

        def with_key(endpoint: EndpointConfig) -> Any:
            return open_test_client(endpoint, attempts=3, api_key=SECRET)

        verdicts = await probe(with_key, config, shapes, context_tokens_needed=NEED)
    first = verdicts[0]
    assert first.verdict == "auth_rejected"  # not schema_unsupported, not probe_rejected
    assert first.detail.startswith(f"HTTP {status} at {server.base_url}: the key in ")
    assert "FOLDSWEEP_TEST_KEY" in first.detail
    assert all(SECRET not in v.detail for v in verdicts)
    # A refused key is refused for every shape: the others are not sent, and not retried.
    assert [v.verdict for v in verdicts[1:]] == ["auth_rejected", "auth_rejected"]
    assert all(v.detail == f"not attempted: auth_rejected on {first_shape}" for v in verdicts[1:])
    assert len(server.received) == 1
    assert server.received[0].headers["Authorization"] == f"Bearer {SECRET}"


async def test_auth_rejected_without_a_key_variable_says_to_set_one(serve: Serve) -> None:
    verdicts, _ = await run_probe(serve, ["plain"], chat=[Reply(status=401, raw=b"no key")])
    assert verdicts["plain"].verdict == "auth_rejected"
    assert "no key was sent; set api_key_env" in verdicts["plain"].detail


async def test_a_refused_connection_is_unreachable_with_the_url() -> None:
    config = endpoint_config("http://127.0.0.1:9/v1")  # nothing listens on the discard port
    verdicts = await probe(
        factory(attempts=1), config, ["plain", "schema"], context_tokens_needed=NEED
    )
    assert [v.verdict for v in verdicts] == ["unreachable", "unreachable"]
    assert verdicts[0].detail.startswith("connection refused at http://127.0.0.1:9/v1 (")
    assert detail_headline(verdicts[0].detail) == "connection refused at http://127.0.0.1:9/v1"
    assert verdicts[1].detail == "not attempted: unreachable on plain"


async def test_persistent_infrastructure_faults_are_unreachable(serve: Serve) -> None:
    busy = Reply(status=503, raw=b"overloaded")
    verdicts, server = await run_probe(serve, ["plain", "schema"], chat=[busy, busy])
    assert verdicts["plain"].verdict == "unreachable"
    assert verdicts["plain"].detail.startswith(f"HTTP 503 at {server.base_url} (")
    assert verdicts["schema"].verdict == "unreachable"
    assert "not attempted" in verdicts["schema"].detail
    assert len(server.received) == 2  # plain's two attempts; schema was not sent


async def test_a_client_without_model_listing_leaves_context_unverified() -> None:
    class Scripted:
        async def complete(self, request: ChatRequest) -> ChatResponse:
            return ChatResponse("OK", "stop")

    @asynccontextmanager
    async def borrowed(_: EndpointConfig) -> AsyncIterator[ChatClient]:
        yield Scripted()

    verdicts = await probe(
        borrowed, endpoint_config(), ["context_length"], context_tokens_needed=NEED
    )
    assert verdicts[0].verdict == "ok"
    assert "unverified" in verdicts[0].detail


async def test_unknown_shape_is_a_bug() -> None:
    with pytest.raises(ValueError, match="unknown probe shapes"):
        await probe(factory(), endpoint_config(), ["tools"], context_tokens_needed=NEED)


def test_schema_reply_problem_accepts_a_conforming_object() -> None:
    assert schema_reply_problem('  {"answer": "OK"} ') is None


def v(shape: str, verdict: str, config_id: str = "cfg-a") -> ProbeVerdict:
    return ProbeVerdict(config_id, shape, verdict)


def test_servable_arms_names_the_first_failing_shape() -> None:
    verdicts = [
        v("plain", "ok"),
        v("schema", "schema_unsupported"),
        v("reasoning_disabled", "ok"),
        v("context_length", "ok"),
    ]
    needs = {
        "j": frozenset({"plain", "context_length"}),
        "m": frozenset({"schema", "context_length"}),
        "x": frozenset({"schema", "plain"}),
    }
    assert servable_arms(verdicts, needs) == {
        "j": None,
        "m": "probe:schema_unsupported",
        "x": "probe:schema_unsupported",
    }


def test_servable_arms_reports_a_shape_never_probed() -> None:
    result = servable_arms([v("plain", "ok")], {"q": frozenset({"plain", "schema"})})
    assert result == {"q": "probe:not_probed:schema"}


def test_servable_arms_uses_shape_order_for_the_reason() -> None:
    verdicts = [v("plain", "unreachable"), v("context_length", "context_too_short")]
    needs = {"j": frozenset({"context_length", "plain"})}
    assert servable_arms(verdicts, needs) == {"j": "probe:unreachable"}


def test_servable_arms_refuses_mixed_configurations() -> None:
    with pytest.raises(ValueError, match="one configuration"):
        servable_arms([v("plain", "ok"), v("plain", "ok", "cfg-b")], {})
