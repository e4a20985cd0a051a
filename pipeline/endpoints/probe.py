"""Capability probe: one tiny request per request shape, one verdict per (configuration, shape).

A verdict describes the conjunction of model, endpoint and the exact parameters sent (paper
§4.2), never the model alone; it is recorded per configuration and shape. Shapes:

    plain               a tiny text request (the reasoning control and pin are always sent)
    schema              a tiny schema request; the reply must be JSON with the required field
    reasoning_disabled  plain, judged on whether the reasoning switch was accepted
    context_length      configured context_length, else what /models reports, vs. the need

Verdicts:
    ok                                          served as asked
    probe_rejected_no_endpoint_for_parameters   404 / "No endpoints found that support ..."
    probe_rejected_reasoning_not_disableable    the reasoning switch was refused, or the reply
                                                still opened with a <think> block
    schema_advertised_reply_nonconforming       schema sent, reply not JSON / missing required
    schema_unsupported                          deterministic rejection of the schema shape
    context_too_short                           known context below the need, or context 400
    auth_rejected                               401 / 403: the key was refused or is missing;
                                                detail names the key variable (api_key_env),
                                                never the key
    probe_rejected                              any other deterministic rejection (detail says)
    unreachable                                 infrastructure faults persisted through retries;
                                                detail names the URL (e.g. "connection refused
                                                at http://127.0.0.1:9/v1")

After an `unreachable` or `auth_rejected` shape the remaining shapes are not sent (they would
sit through the same retries or the same refusal); they get the same verdict, detail
"not attempted: <verdict> on <shape>".

Repeated evidence (SAMPLE_RULE, decision): a verdict can exclude a whole configuration, so a
shape judged by a request is sampled up to `samples` times (config `probe.samples`, default
3), each sample a fresh request whose text names its sample number (a cached or seeded
endpoint would otherwise repeat the same reply). The shape is `ok` as soon as one sample is;
it fails only when every sample fails, with the most frequent failing verdict (the first seen
on a tie). One empty or malformed reply is therefore never enough. `unreachable` and
`auth_rejected` end the sampling at once: the first already sat through every request retry,
the second is a refused key. Every sample is kept on the verdict (`samples`), and the rule is
recorded with the verdicts in the manifest.

Money (issue 31): a sample judged by a reply keeps the reply's estimate at the configuration's
prices (`cost_usd`, None when the reply reported no usage: no estimate to set beside a charge)
and what the provider said it charged (`billed_usd`, None when it did not say), so the prices
can be checked before a sweep relies on them (`probe_charges`, pipeline/stale_prices.py).

A context length that neither the config nor /models states is "ok" with detail "unverified":
probing it by sending a prompt of the needed size would cost a full-size request per endpoint,
and a too-long prompt during the sweep is a clean RequestRejected anyway.
"""

from __future__ import annotations

import errno
import json
import re
import socket
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from pipeline.chat.errors import (
    HttpStatusFault,
    InfrastructureFault,
    MalformedEnvelope,
    RequestRejected,
    TimeoutFault,
)
from pipeline.chat.messages import (
    ChatClient,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ResponseSchema,
)
from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.usage import cost_usd, spend_of, upper_usage
from pipeline.endpoints.wire import build_body, encode_body
from pipeline.stale_prices import Charges

SHAPES = ("plain", "schema", "reasoning_disabled", "context_length")
OK = "ok"
PROBE_MAX_TOKENS = 24
DEFAULT_SAMPLES = 3
SAMPLE_RULE = (
    "a shape judged by a request is sampled up to N times: ok as soon as one sample is ok; "
    "a failing verdict only when all N fail (the most frequent one); unreachable and "
    "auth_rejected stop the sampling at once"
)

_PLAIN = ChatRequest(
    messages=(ChatMessage("user", "Reply with the single word OK."),),
    max_tokens=PROBE_MAX_TOKENS,
    purpose="probe",
)
_SCHEMA = ResponseSchema(
    name="probe_reply",
    schema={
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": 16}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
_SCHEMA_REQUEST = ChatRequest(
    messages=(
        ChatMessage("user", 'Reply with the JSON object {"answer": "OK"} and nothing else.'),
    ),
    max_tokens=PROBE_MAX_TOKENS,
    schema=_SCHEMA,
    purpose="probe",
)
_LEADING_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)

_REASON_VERDICTS = {
    "no_endpoint_for_parameters": "probe_rejected_no_endpoint_for_parameters",
    "context_too_long": "context_too_short",
    "reasoning_not_disableable": "probe_rejected_reasoning_not_disableable",
    "schema_unsupported": "schema_unsupported",
    "auth": "auth_rejected",
}
# Verdicts after which the remaining shapes are not sent.
_STOPPING_VERDICTS = ("unreachable", "auth_rejected")
_SHAPE_REJECTION_VERDICTS = {
    "schema": "schema_unsupported",
    "reasoning_disabled": "probe_rejected_reasoning_not_disableable",
}


@dataclass(frozen=True)
class ProbeSample:
    """One request's judgement of one shape (a verdict rests on one or more of these)."""

    verdict: str
    detail: str = ""
    cost_usd: float | None = None  # the reply at the configuration's prices (None: no estimate)
    billed_usd: float | None = None  # what the provider said it charged (None: not stated)
    spent_usd: float = 0.0  # what the sample cost the user: billed, else the (upper) estimate


@dataclass(frozen=True)
class ProbeVerdict:
    config_id: str
    shape: str
    verdict: str
    detail: str = ""
    samples: tuple[ProbeSample, ...] = ()  # every sample taken, in order (none: not sent)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ProbeVerdict:
        """A verdict as recorded (events, manifest); samples come back as ProbeSamples."""
        samples = tuple(ProbeSample(**dict(s)) for s in record.get("samples", ()))
        return cls(
            record["config_id"], record["shape"], record["verdict"], record["detail"], samples
        )


@runtime_checkable
class ContextLengthSource(Protocol):
    """A client that can read the served context length (OpenAIChatClient: GET /models)."""

    async def served_context_length(self) -> int | None: ...


# The factory yields any ChatClient; one that is also a ContextLengthSource lets the
# context_length shape ask the server when the config does not state a context length.
ClientFactory = Callable[[EndpointConfig], AbstractAsyncContextManager[ChatClient]]


def _rejection_verdict(shape: str, exc: RequestRejected) -> str:
    if exc.reason in _REASON_VERDICTS:
        return _REASON_VERDICTS[exc.reason]
    return _SHAPE_REJECTION_VERDICTS.get(shape, "probe_rejected")


def schema_reply_problem(text: str) -> str | None:
    """Why a schema probe reply does not conform (None if it does). A leading <think> block is
    skipped: reasoning text is the study's to strip, not a schema failure."""
    body = _LEADING_THINK.sub("", text, count=1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return f"reply is not JSON: {body[:80]!r}"
    if not isinstance(data, dict):
        return f"reply is JSON but not an object: {body[:80]!r}"
    if not isinstance(data.get("answer"), str):
        return "reply JSON lacks the required string property 'answer'"
    return None


def _sampled(request: ChatRequest, sample: int) -> ChatRequest:
    """The request of sample `sample` (0-based): the first is the plain probe; later ones name
    their number, so no cache or seed can hand back the first reply again."""
    if sample == 0:
        return request
    *earlier, last = request.messages
    text = f"{last.content} (check {sample + 1})"
    return replace(request, messages=(*earlier, replace(last, content=text)))


async def _judge_reply(
    shape: str, client: ChatClient, sample: int = 0, endpoint: EndpointConfig | None = None
) -> ProbeSample:
    request = _sampled(_SCHEMA_REQUEST if shape == "schema" else _PLAIN, sample)
    reply = await client.complete(request)
    money = (*_money(reply), _spent(reply, request, endpoint))
    if shape == "schema":
        problem = schema_reply_problem(reply.text)
        if problem is not None:
            detail = f"{problem} (finish {reply.finish_reason})"
            return ProbeSample("schema_advertised_reply_nonconforming", detail, *money)
    if shape == "reasoning_disabled" and _LEADING_THINK.match(reply.text):
        detail = "reply opened with a <think> block"
        return ProbeSample("probe_rejected_reasoning_not_disableable", detail, *money)
    return ProbeSample(OK, f"finish {reply.finish_reason}", *money)


def _spent(reply: ChatResponse, request: ChatRequest, endpoint: EndpointConfig | None) -> float:
    """A probe sample's spend, by the engine's rule (`usage.spend_of`); a reply without usage
    at the same upper estimate the request boundary uses (`usage.upper_usage`)."""
    if not reply.usage.reported and endpoint is not None:
        body = encode_body(build_body(endpoint, request)[0])
        limit = reply.finish_reason == "length"
        upper = upper_usage(reply.usage, len(body), reply.text, request.max_tokens, hit_limit=limit)
        reply = replace(reply, cost_usd=cost_usd(upper, endpoint.prices))
    return spend_of(reply)


def spent_by_probes(verdicts: Sequence[Mapping[str, Any]]) -> float:
    """What the recorded probe verdicts (the manifest's `probes`) spent: the run's spend
    includes it (docs/engine.md, "Spend"). A record from before issue 31 spent 0."""
    return sum(
        float(sample.get("spent_usd") or 0.0)
        for verdict in verdicts
        for sample in verdict.get("samples", ())
    )


def _money(reply: ChatResponse) -> tuple[float | None, float | None]:
    """(estimate, billed charge) of a reply; no estimate when it reported no usage."""
    return (reply.cost_usd if reply.usage.reported else None), reply.billed_usd


async def _known_context(endpoint: EndpointConfig, client: ChatClient) -> tuple[int | None, str]:
    """The context length to judge and where it came from (config first, then /models)."""
    if endpoint.context_length is not None:
        return endpoint.context_length, "configured"
    if not isinstance(client, ContextLengthSource):
        return None, "client cannot list models"
    try:
        served = await client.served_context_length()
    except RequestRejected as exc:
        return None, f"/models rejected ({exc.reason})"
    return served, "/models reports" if served is not None else "/models states none"


async def _judge_context(
    endpoint: EndpointConfig, client: ChatClient, need: int
) -> tuple[str, str]:
    known, source = await _known_context(endpoint, client)
    if known is None:
        return OK, f"unverified: {source}"
    if known < need:
        return "context_too_short", f"{source} {known} < needed {need}"
    return OK, f"{source} {known} >= needed {need}"


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from (the client keeps the aiohttp cause)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def fault_phrase(exc: InfrastructureFault) -> str:
    """A few plain words for an infrastructure fault: "connection refused", "timed out" ..."""
    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == (
            errno.ECONNREFUSED
        ):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "host not found"
    if isinstance(exc, TimeoutFault):
        return "timed out"
    if isinstance(exc, HttpStatusFault):
        return f"HTTP {exc.status}"
    if isinstance(exc, MalformedEnvelope):
        return "malformed replies"
    return "connection failed" if exc.kind == "transport" else exc.kind.replace("_", " ")


def unreachable_detail(endpoint: EndpointConfig, exc: InfrastructureFault) -> str:
    """E.g. "connection refused at http://127.0.0.1:9/v1 (transport: ...)"; the part before
    " (" is the headline a one-line message quotes (jobs.nothing_ran.detail_headline)."""
    return f"{fault_phrase(exc)} at {endpoint.base_url} ({exc.kind}: {exc})"


def auth_detail(endpoint: EndpointConfig, exc: RequestRejected) -> str:
    """Names the variable the key comes from (`api_key_env`), never the key itself."""
    where = f"HTTP {exc.status} at {endpoint.base_url}"
    if endpoint.api_key_env:
        what = f"the key in {endpoint.api_key_env} was refused; check or replace that variable"
    else:
        what = (
            "no key was sent; set api_key_env to the variable holding the key "
            "(endpoint.api_key_env=VAR for +panel=endpoint)"
        )
    return f"{where}: {what} ({exc})"


async def _probe_once(
    endpoint: EndpointConfig, client: ChatClient, shape: str, need: int, sample: int
) -> ProbeSample:
    try:
        if shape == "context_length":
            return ProbeSample(*await _judge_context(endpoint, client, need))
        return await _judge_reply(shape, client, sample, endpoint)
    except RequestRejected as exc:
        verdict = _rejection_verdict(shape, exc)
        if verdict == "auth_rejected":
            return ProbeSample(verdict, auth_detail(endpoint, exc))
        return ProbeSample(verdict, f"{exc.reason}: {exc}")
    except InfrastructureFault as exc:
        return ProbeSample("unreachable", unreachable_detail(endpoint, exc))


async def _probe_shape(
    endpoint: EndpointConfig, client: ChatClient, shape: str, need: int, samples: int
) -> ProbeVerdict:
    """The shape's verdict under SAMPLE_RULE (context_length is read once: it is no reply)."""
    config_id = endpoint.config_id
    if shape == "reasoning_disabled" and endpoint.reasoning == "none":
        return ProbeVerdict(
            config_id, shape, OK, "no reasoning control configured; nothing to disable"
        )
    taken: list[ProbeSample] = []
    for sample in range(1 if shape == "context_length" else samples):
        taken.append(await _probe_once(endpoint, client, shape, need, sample))
        verdict, detail = taken[-1].verdict, taken[-1].detail
        if verdict == OK or verdict in _STOPPING_VERDICTS:
            return ProbeVerdict(config_id, shape, verdict, detail, tuple(taken))
    failing = Counter(s.verdict for s in taken).most_common(1)[0][0]
    last = next(s for s in reversed(taken) if s.verdict == failing)
    detail = last.detail if len(taken) == 1 else f"all {len(taken)} samples failed; {last.detail}"
    return ProbeVerdict(config_id, shape, failing, detail, tuple(taken))


async def probe(
    client_factory: ClientFactory,
    endpoint: EndpointConfig,
    shapes: Sequence[str],
    *,
    context_tokens_needed: int,
    samples: int = DEFAULT_SAMPLES,
) -> tuple[ProbeVerdict, ...]:
    """Probe `endpoint` for each shape, in order, over one client from `client_factory`;
    each shape under SAMPLE_RULE with up to `samples` samples."""
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        raise ValueError(f"unknown probe shapes {unknown}; known: {', '.join(SHAPES)}")
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    verdicts: list[ProbeVerdict] = []
    async with client_factory(endpoint) as client:
        for shape in shapes:
            # An unreachable shape already sat through every retry; a refused key is refused
            # for every shape: the remaining shapes are not sent.
            down = next((v for v in verdicts if v.verdict in _STOPPING_VERDICTS), None)
            if down is not None:
                detail = f"not attempted: {down.verdict} on {down.shape}"
                verdicts.append(ProbeVerdict(endpoint.config_id, shape, down.verdict, detail))
                continue
            verdicts.append(
                await _probe_shape(endpoint, client, shape, context_tokens_needed, samples)
            )
    return tuple(verdicts)


def probe_charges(verdicts: Sequence[ProbeVerdict]) -> dict[str, Charges]:
    """Per configuration, the samples whose reply carried a charge and an estimate (see
    stale_prices: like with like); a configuration with none is absent."""
    charges: dict[str, Charges] = {}
    for v in verdicts:
        for s in v.samples:
            if s.billed_usd is None or s.cost_usd is None:
                continue
            seen = charges.get(v.config_id, Charges(0, 0.0, 0.0))
            charges[v.config_id] = Charges(
                seen.replies + 1, seen.billed_usd + s.billed_usd, seen.estimated_usd + s.cost_usd
            )
    return charges


def servable_arms(
    verdicts: Sequence[ProbeVerdict], arm_needs: Mapping[str, frozenset[str]]
) -> dict[str, str | None]:
    """For one configuration: arm -> None if every shape it needs probed ok, else the not-run
    reason "probe:<verdict>" of the first failing shape (shapes in SHAPES order), or
    "probe:not_probed:<shape>" when a needed shape has no verdict."""
    configs = {v.config_id for v in verdicts}
    if len(configs) > 1:
        raise ValueError(f"servable_arms takes one configuration's verdicts, got {sorted(configs)}")
    by_shape = {v.shape: v.verdict for v in verdicts}
    order = {shape: i for i, shape in enumerate(SHAPES)}
    result: dict[str, str | None] = {}
    for arm, needs in arm_needs.items():
        reason = None
        for shape in sorted(needs, key=lambda s: (order.get(s, len(order)), s)):
            verdict = by_shape.get(shape)
            if verdict is None:
                reason = f"probe:not_probed:{shape}"
                break
            if verdict != OK:
                reason = f"probe:{verdict}"
                break
        result[arm] = reason
    return result
