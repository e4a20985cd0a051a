"""Fixed-transcript replay: every request a harness would send, with a policy applied.

A harness that resends visible history sends one request before each assistant turn: all
messages before that turn. The replay rebuilds those requests in order and asks the policy, for
every tool output visible in a request, which text it shows (`Policy.render`). Decisions:

- Request k holds every message before the k-th assistant message; its output tokens are the
  assistant turn's (recorded usage where the corpus has it, else the estimate of its text and
  tool-call arguments).
- A tool output's rendering is asked for on every request that shows it; a policy keeps a
  compacted output's bytes identical on later requests (its contract), and the replay counts a
  changed text on a later request as a new transformation (a rewrite), an unchanged compacted
  text as a cache reuse.
- The intent a policy may rank by is the text of the assistant turn that made the call plus
  the call's arguments (the seed's intent plugin asked the model for a reason per call; a
  transcript has only what the model wrote).
- Messages are blocks of the request (one per message), the unit the cache models account in;
  tool-call arguments are part of the assistant block's text.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.toolout.policies.base import OutputRef, OutputView, Policy, Rendering
from pipeline.toolout.transcript import Message, Transcript

Estimate = Callable[[str], int]


class Position:
    """Where the output being rendered sits, for an economic gate that prices its rewrite.

    The replay updates it before every `Policy.render` call (a model-mode gate reads it); it is
    the one mutable value of a replay and belongs to that replay alone.
    """

    def __init__(self) -> None:
        self.position_tokens = 0  # tokens of the request before the output, as sent
        self.cached_prefix_tokens = 0  # tokens the previous request sent (the cached prefix)
        self.later_requests = 0  # requests the transcript still sends after this one


@dataclass(frozen=True)
class Block:
    """One message of a request, as sent."""

    role: str
    text: str
    tokens: int
    output_index: int | None = None  # which tool output this block shows, if any


@dataclass(frozen=True)
class Applied:
    """What the policy did to one visible tool output on one request."""

    output_index: int
    tool_name: str
    rendering: Rendering
    original_bytes: int
    position_tokens: int  # tokens of the request before this output, as sent
    new: bool  # a new transformation (first compacted form, or a changed one): a rewrite
    reuse: bool  # the same compacted bytes as on the previous request: a cache reuse


@dataclass(frozen=True)
class ReplayedRequest:
    index: int
    blocks: tuple[Block, ...]
    timestamp: float | None
    output_tokens: int
    applied: tuple[Applied, ...]

    @property
    def input_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    @property
    def input_bytes(self) -> int:
        return sum(len(b.text.encode("utf-8")) for b in self.blocks)


@dataclass(frozen=True)
class _Output:
    index: int
    message: Message
    position: int  # index of the message in the transcript
    intent: str
    arguments: str


def _message_text(message: Message) -> str:
    text = message.content or ""
    for call in message.tool_calls:
        text += f"\n[tool call {call.name}] {call.arguments}"
    return text


def _outputs(transcript: Transcript) -> list[_Output]:
    """Tool outputs with the intent of the call they answer."""
    calls: dict[str, tuple[str, str]] = {}
    found: list[_Output] = []
    for position, message in enumerate(transcript.messages):
        if message.role == "assistant":
            for call in message.tool_calls:
                calls[call.id] = (message.content or "", call.arguments)
        elif message.is_tool_output:
            said, arguments = calls.get(message.tool_call_id or "", ("", ""))
            intent = f"{said}\n{arguments}".strip()
            found.append(_Output(len(found), message, position, intent, arguments))
    return found


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _output_tokens(message: Message, estimate: Estimate) -> int:
    usage = message.usage
    if usage is not None and usage.completion_tokens is not None:
        return usage.completion_tokens
    return estimate(_message_text(message))


def replay(
    transcript: Transcript,
    policy: Policy,
    estimate: Estimate,
    where: Position | None = None,
) -> list[ReplayedRequest]:
    """Every request of the transcript under `policy`, in order; `where` is kept up to date."""
    where = where if where is not None else Position()
    total_requests = transcript.requests
    outputs = {o.position: o for o in _outputs(transcript)}
    exposures: dict[int, int] = {}
    previous: dict[int, str] = {}
    first_request: dict[int, int] = {}
    requests: list[ReplayedRequest] = []
    messages = transcript.messages
    # Every message's uncompacted bytes, as a running total: request k's `request_bytes`.
    prefix_bytes = [0]
    for message in messages:
        prefix_bytes.append(prefix_bytes[-1] + _bytes(_message_text(message)))
    all_refs = tuple(
        OutputRef(o.index, o.message.name or "", o.message.size_bytes) for o in outputs.values()
    )
    static: dict[int, Block] = {}  # non-output messages: the same block on every request
    tokens_of: dict[int, tuple[str, int]] = {}  # output -> (its last text, that text's tokens)
    for position, message in enumerate(messages):
        if message.role != "assistant":
            continue
        index = len(requests)
        visible = [o for p, o in outputs.items() if p < position]
        refs = all_refs[: len(visible)]
        request_bytes = prefix_bytes[position]
        where.cached_prefix_tokens = requests[-1].input_tokens if requests else 0
        where.later_requests = total_requests - index - 1
        blocks: list[Block] = []
        applied: list[Applied] = []
        sent_tokens = 0
        for p in range(position):
            shown = messages[p]
            output = outputs.get(p)
            if output is None:
                block = static.get(p)
                if block is None:
                    text = _message_text(shown)
                    block = static[p] = Block(shown.role, text, estimate(text))
                blocks.append(block)
                sent_tokens += block.tokens
                continue
            first_request.setdefault(output.index, index)
            view = OutputView(
                tool_name=shown.name or "",
                arguments=output.arguments,
                content=shown.content or "",
                output_index=output.index,
                first_request=first_request[output.index],
                request_index=index,
                exposures=exposures.get(output.index, 0),
                later_outputs=len(visible) - output.index - 1,  # visible: indices 0..n-1
                intent=output.intent,
                previous=previous.get(output.index),
                request_bytes=request_bytes,
                visible_outputs=refs,
            )
            where.position_tokens = sent_tokens
            rendering = policy.render(view)
            before = previous.get(output.index)
            changed_now = rendering.changed and rendering.text != before
            applied.append(
                Applied(
                    output_index=output.index,
                    tool_name=view.tool_name,
                    rendering=rendering,
                    original_bytes=shown.size_bytes,
                    position_tokens=where.position_tokens,
                    new=changed_now,
                    reuse=rendering.changed and rendering.text == before,
                )
            )
            previous[output.index] = rendering.text
            exposures[output.index] = exposures.get(output.index, 0) + 1
            last = tokens_of.get(output.index)
            if last is None or last[0] != rendering.text:
                last = tokens_of[output.index] = (rendering.text, estimate(rendering.text))
            blocks.append(Block("tool", rendering.text, last[1], output.index))
            sent_tokens += last[1]
        requests.append(
            ReplayedRequest(
                index=index,
                blocks=tuple(blocks),
                timestamp=message.timestamp,
                output_tokens=_output_tokens(message, estimate),
                applied=tuple(applied),
            )
        )
    return requests


def removed_bytes(requests: Sequence[ReplayedRequest]) -> int:
    """Bytes the policy removed over all requests (a removed byte counts once per request)."""
    return sum(
        a.original_bytes - len(a.rendering.text.encode("utf-8"))
        for r in requests
        for a in r.applied
    )
