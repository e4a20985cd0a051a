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

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pipeline.toolout.policies.base import OutputRef, OutputView, Policy, Recheck, Rendering
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
    # The cache's match key (accounting.CacheBlock.of's: role and text) and the UTF-8 size,
    # computed once: every later request reads them.
    key: str = field(init=False, repr=False, compare=False)
    size_bytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.role}\x00{self.text}")
        object.__setattr__(self, "size_bytes", len(self.text.encode("utf-8")))


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
    """One request as sent, with running totals (the replay keeps them, nothing re-sums).

    `applied` holds the outputs the policy was asked about on this request: every output on
    its first exposure, and later only where the policy's `recheck` said its text could change
    (every visible output when the replay runs with `recheck=False`). Every other visible
    output shows the same text as on the previous request, so it is counted in
    `outputs_changed` (and as a reuse) but has no `Applied` of its own.
    """

    index: int
    timestamp: float | None
    output_tokens: int
    applied: tuple[Applied, ...]
    input_tokens: int
    input_bytes: int
    outputs_visible: int
    outputs_changed: int  # visible outputs whose shown text differs from their content
    outputs_new: int  # of those, the ones whose text changed on this request (rewrites)
    removed_bytes: int  # original minus shown bytes over every visible output
    unchanged_blocks: int  # leading blocks identical to the previous request's
    output_block: Block | None  # this request's assistant turn as the next request carries it
    block_count: int
    # The request's blocks are slots[:block_count] of a list shared with the requests before
    # and after it, until a rewrite (the replay copies the list before it changes a slot).
    slots: Sequence[Block] = field(repr=False, compare=False)

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(self.slots[: self.block_count])

    @property
    def outputs_reused(self) -> int:
        return self.outputs_changed - self.outputs_new


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


class _PrefixSums:
    """Token sums of the first k blocks under point updates (a Fenwick tree): an output's
    position in the request costs log(blocks), not a walk over the history."""

    def __init__(self, size: int) -> None:
        self.tree = [0] * (size + 1)

    def add(self, slot: int, delta: int) -> None:
        i = slot + 1
        while i < len(self.tree):
            self.tree[i] += delta
            i += i & -i

    def before(self, slot: int) -> int:
        """The sum of slots [0, slot)."""
        total, i = 0, slot
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total


def _due_request(
    check: Recheck, output: int, after: int, visible: Sequence[int], request_bytes: Sequence[int]
) -> int:
    """The first request after `after` that `check` asks about (len(visible): never)."""
    last = len(visible)
    due = last
    if check.next_request:
        return after + 1
    if check.request_index is not None:
        due = min(due, max(check.request_index, after + 1))
    if check.later_outputs is not None:
        due = min(due, bisect_left(visible, output + 1 + check.later_outputs, after + 1, last))
    if check.request_bytes is not None:
        due = min(due, bisect_left(request_bytes, check.request_bytes, after + 1, last))
    return due


def replay(  # noqa: PLR0912, PLR0915 - one pass over the transcript, its steps commented
    transcript: Transcript,
    policy: Policy,
    estimate: Estimate,
    where: Position | None = None,
    *,
    recheck: bool = True,
) -> list[ReplayedRequest]:
    """Every request of the transcript under `policy`, in order; `where` is kept up to date.

    Work per request is proportional to what changes: the new messages, the outputs the
    policy is asked about (`Policy.recheck`; a policy without it is asked about every visible
    output on every request, as with `recheck=False`) and a log-time position per asked output.
    """
    where = where if where is not None else Position()
    messages = transcript.messages
    outputs = _outputs(transcript)
    by_position = {o.position: o for o in outputs}
    ask_again = getattr(policy, "recheck", None) if recheck else None
    # Per request: its transcript position, visible outputs and uncompacted bytes.
    starts = [p for p, m in enumerate(messages) if m.role == "assistant"]
    total_requests = len(starts)
    prefix_bytes = [0]
    for message in messages:
        prefix_bytes.append(prefix_bytes[-1] + _bytes(_message_text(message)))
    visible_counts: list[int] = []
    seen = 0
    for position in starts:
        while seen < len(outputs) and outputs[seen].position < position:
            seen += 1
        visible_counts.append(seen)
    request_bytes = [prefix_bytes[p] for p in starts]
    all_refs = tuple(
        OutputRef(o.index, o.message.name or "", o.message.size_bytes) for o in outputs
    )

    slots: list[Block] = []
    sums = _PrefixSums(len(messages))
    shown: dict[int, Block] = {}  # output -> its block as last sent
    changed: set[int] = set()  # outputs whose shown text differs from their content
    due: dict[int, list[int]] = {}  # request -> outputs to ask about again
    first_request: dict[int, int] = {}
    input_tokens = input_bytes = removed = 0
    requests: list[ReplayedRequest] = []
    shared = False  # the slots list is referenced by an emitted request (copy before a rewrite)
    statics: dict[int, Block] = {}
    for index, position in enumerate(starts):
        previous_count = len(slots)
        unchanged = previous_count
        # the messages since the previous request: static blocks now, outputs when rendered
        for p in range(previous_count, position):
            shown_message = messages[p]
            if p in by_position:
                slots.append(_PLACEHOLDER)
                continue
            block = statics.get(p)
            if block is None:
                text = _message_text(shown_message)
                block = statics[p] = Block(shown_message.role, text, estimate(text))
            slots.append(block)
            sums.add(p, block.tokens)
            input_tokens += block.tokens
            input_bytes += block.size_bytes
        visible = visible_counts[index]
        newly = range(visible_counts[index - 1] if index else 0, visible)
        asked = sorted({*due.pop(index, ()), *newly}) if ask_again is not None else range(visible)
        where.cached_prefix_tokens = requests[-1].input_tokens if requests else 0
        where.later_requests = total_requests - index - 1
        refs = all_refs[:visible]
        applied: list[Applied] = []
        new_count = 0
        for o in asked:
            output = outputs[o]
            message = output.message
            first_request.setdefault(o, index)
            before = shown.get(o)
            view = OutputView(
                tool_name=message.name or "",
                arguments=output.arguments,
                content=message.content or "",
                output_index=o,
                first_request=first_request[o],
                request_index=index,
                exposures=index - first_request[o],
                later_outputs=visible - o - 1,
                intent=output.intent,
                previous=None if before is None else before.text,
                request_bytes=request_bytes[index],
                visible_outputs=refs,
            )
            slot = output.position
            where.position_tokens = sums.before(slot)
            rendering = policy.render(view)
            changed_now = rendering.changed and (before is None or rendering.text != before.text)
            new_count += changed_now
            applied.append(
                Applied(
                    output_index=o,
                    tool_name=view.tool_name,
                    rendering=rendering,
                    original_bytes=message.size_bytes,
                    position_tokens=where.position_tokens,
                    new=changed_now,
                    reuse=rendering.changed
                    and before is not None
                    and rendering.text == before.text,
                )
            )
            if rendering.changed:
                changed.add(o)
            else:
                changed.discard(o)
            if before is None or before.text != rendering.text:
                block = Block("tool", rendering.text, estimate(rendering.text), o)
                old_tokens = old_bytes = 0
                if before is not None:
                    old_tokens, old_bytes = before.tokens, before.size_bytes
                    if shared:
                        slots = list(slots)
                        shared = False
                    unchanged = min(unchanged, slot)
                shown[o] = block
                slots[slot] = block
                sums.add(slot, block.tokens - old_tokens)
                input_tokens += block.tokens - old_tokens
                input_bytes += block.size_bytes - old_bytes
                removed += (message.size_bytes - block.size_bytes) - (
                    0 if before is None else message.size_bytes - old_bytes
                )
            if ask_again is not None:
                check: Recheck = ask_again(view, rendering)
                later = _due_request(check, o, index, visible_counts, request_bytes)
                if later < total_requests:
                    due.setdefault(later, []).append(o)
        output_block = statics.get(position) if index + 1 < total_requests else None
        if output_block is None and index + 1 < total_requests:
            text = _message_text(messages[position])
            output_block = statics[position] = Block(messages[position].role, text, estimate(text))
        requests.append(
            ReplayedRequest(
                index=index,
                timestamp=messages[position].timestamp,
                output_tokens=_output_tokens(messages[position], estimate),
                applied=tuple(applied),
                input_tokens=input_tokens,
                input_bytes=input_bytes,
                outputs_visible=visible,
                outputs_changed=len(changed),
                outputs_new=new_count,
                removed_bytes=removed,
                unchanged_blocks=unchanged,
                output_block=output_block,
                block_count=len(slots),
                slots=slots,
            )
        )
        shared = True
    return requests


_PLACEHOLDER = Block("tool", "", 0)  # an output's slot before its first rendering


def removed_bytes(requests: Sequence[ReplayedRequest]) -> int:
    """Bytes the policy removed over all requests (a removed byte counts once per request)."""
    return sum(r.removed_bytes for r in requests)
